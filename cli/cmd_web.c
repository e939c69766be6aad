/* cmd_web.c: 'commap web': a one-time link that logs a browser into the
 * service's web pages as the calling user (docs/cli.md, docs/service.md
 * "Web identity").  The link is asked for with munge, like every other
 * request of the client; it works once and for a few minutes, so it is
 * printed, never stored. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli_common.h"
#include "commands.h"
#include "remote.h"

void cmd_web_help(FILE *f)
{
	fputs("usage: commap web [--service URL]\n\n"
	      "Print a link that opens the service's web reports in a "
	      "browser as you:\nyour own jobs (every job if you are an admin "
	      "of the service).  The link\nworks once, for a few minutes "
	      "(the service's web_login_ttl, 10 by default);\nthe browser "
	      "then stays logged in for 8 hours or until the service "
	      "restarts.\nAnyone who opens the link first is you: do not "
	      "share it.\n\n"
	      "  --service URL      the service (default: $COMMAP_SERVICE, the "
	      "'service' key of\n"
	      "                     /etc/commap/commap.conf, then "
	      REMOTE_DEFAULT_URL ")\n", f);
}

/* "10 minutes", "45 seconds". */
static void say_duration(long long s, char *out, size_t size)
{
	if (s >= 120 && s % 60 == 0)
		snprintf(out, size, "%lld minutes", s / 60);
	else
		snprintf(out, size, "%lld second%s", s, s == 1 ? "" : "s");
}

/* The answer's path and lifetime: 0, or -1 when it is not the service's. */
static int parse_link(const struct remote_answer *ans, char *path,
		      size_t size, long long *ttl)
{
	json_t *j = json_loadb(ans->body, ans->len, 0, NULL);
	const char *p = json_string_value(json_object_get(j, "path"));
	json_t *e = json_object_get(j, "expires_in");
	int rv = -1;

	if (p && p[0] == '/' && strlen(p) < size && json_is_integer(e) &&
	    strspn(p, "/abcdefghijklmnopqrstuvwxyz0123456789?=") ==
	    strlen(p)) {
		strcpy(path, p);
		*ttl = (long long)json_integer_value(e);
		rv = 0;
	}
	json_decref(j);
	return rv;
}

static int ask_link(const char *base)
{
	struct remote_answer ans;
	char path[256], dur[64];
	long long ttl;
	size_t bl = strlen(base);

	if (remote_request(base, "POST", "/v1/web-login", &ans))
		return CLI_EXIT_RUNTIME;
	if (ans.code != 200) {
		remote_http_error(base, "a login link", &ans);
		remote_answer_free(&ans);
		return CLI_EXIT_RUNTIME;
	}
	if (parse_link(&ans, path, sizeof(path), &ttl) < 0) {
		remote_not_service(base, &ans);
		remote_answer_free(&ans);
		return CLI_EXIT_RUNTIME;
	}
	remote_answer_free(&ans);
	while (bl && base[bl - 1] == '/')
		bl--;
	say_duration(ttl, dur, sizeof(dur));
	printf("open in a browser on this machine: %.*s%s (valid %s, once)\n",
	       (int)bl, base, path, dur);
	if (fflush(stdout) == EOF || ferror(stdout)) {
		cli_error("writing standard output failed");
		return CLI_EXIT_RUNTIME;
	}
	return CLI_EXIT_OK;
}

int cmd_web(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "service", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *service = NULL;
	char *base;
	int c, rv;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			service = optarg;
			break;
		case 'h':
			cmd_web_help(stdout);
			return CLI_EXIT_OK;
		default:
			return cli_getopt_error("web", c, argv);
		}
	}
	if (cli_no_operands("web", argc, argv, optind))
		return CLI_EXIT_USAGE;
	base = remote_service_url(service);
	if (!base)
		return CLI_EXIT_RUNTIME;
	rv = ask_link(base);
	free(base);
	return rv;
}
