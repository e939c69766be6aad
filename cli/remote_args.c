/* remote_args.c: the options of 'commap jobs', 'commap apps [forget]'
 * and 'commap report', their help texts and their checks before any
 * request (docs/cli.md).  Another command's option is named as the user
 * wrote it, with the help that explains the command typed. */
#define _GNU_SOURCE
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "commands.h"
#include "remote.h"
#include "remote_args.h"
#ifdef CLI_HAVE_RENDER
#include "render.h"	/* cm_report_step_parse */
#endif

enum {
	OPT_SERVICE = 256, OPT_USER, OPT_APP, OPT_SINCE, OPT_UNTIL,
	OPT_LIMIT, OPT_FORMAT, OPT_STEP, OPT_NODE, OPT_OUTPUT, OPT_COLOR,
};

static const struct option remote_options[] = {
	{ "service", required_argument, NULL, OPT_SERVICE },
	{ "user", required_argument, NULL, OPT_USER },
	{ "app", required_argument, NULL, OPT_APP },
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "step", required_argument, NULL, OPT_STEP },
	{ "node", required_argument, NULL, OPT_NODE },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "color", required_argument, NULL, OPT_COLOR },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char service_help[] =
	"  --service URL      the service (default: $COMMAP_SERVICE, the "
	"'service' key of\n"
	"                     /etc/commap/commap.conf, then "
	REMOTE_DEFAULT_URL ")\n";

void cmd_jobs_help(FILE *f)
{
	fputs("usage: commap jobs [--user U] [--app A] [--since T] "
	      "[--until T] [--limit N]\n"
	      "                   [--format text|json] [--service URL]\n\n"
	      "List the jobs the service has results of, newest first "
	      "(your own only,\nunless you are an admin of the service).\n\n"
	      "  --user U           only jobs of user U\n"
	      "  --app A            only runs of application A (basename or "
	      "path)\n"
	      "  --since T, --until T  start time from/before T, in UTC: "
	      "YYYY-MM-DD,\n"
	      "                     YYYY-MM-DDTHH:MM[:SS], now, today, "
	      "yesterday,\n"
	      "                     now-COUNT[seconds|minutes|hours|days|"
	      "weeks]\n"
	      "  --limit N          at most N jobs (1..1000, default 100)\n"
	      "  --format text|json text table (default) or the service's "
	      "JSON\n", f);
	fputs(service_help, f);
}

void cmd_apps_help(FILE *f)
{
	fputs("usage: commap apps [--limit N] [--format text|json] "
	      "[--service URL]\n"
	      "       commap apps forget MODEL_ID [--service URL]\n\n"
	      "List the applications the service has results of, most "
	      "recently run first,\nand your learned models.  'forget' "
	      "deletes a learned model (yours; an admin's\nany): the next "
	      "run of that application starts dynamic and builds a new one.\n\n"
	      "  --limit N          at most N applications (1..1000)\n"
	      "  --format text|json text table (default) or the service's "
	      "JSON\n", f);
	fputs(service_help, f);
}

void cmd_report_help(FILE *f)
{
	fputs("usage: commap report JOBID[.STEP] [--step S] [--node N]\n"
	      "                     [--format text|json|svg|html] "
	      "[--output FILE]\n"
	      "                     [--color auto|always|never] "
	      "[--service URL]\n\n"
	      "A job's report from the service.  JOBID is a Slurm job id, "
	      "or rID for a\nresult stored without a job (see 'commap "
	      "jobs'); JOBID.STEP as sacct writes it\n(6.0, 6.batch) "
	      "is JOBID --step STEP.\n\n"
	      "  --step S, --node N only the results of this step (a "
	      "number, batch,\n"
	      "                     extern, interactive) / node\n"
	      "  --format FORMAT    text (default): summary, heatmap of the "
	      "communication\n"
	      "                     matrix, final mapping per core; json: "
	      "the service's\n"
	      "                     document; svg: the heatmap; html: the "
	      "job page\n"
	      "  --output FILE      write to FILE instead of standard output\n"
	      "  --color WHEN       24-bit colour heatmap: auto (a terminal "
	      "and NO_COLOR\n"
	      "                     unset, the default), always, never\n", f);
	fputs(service_help, f);
}

/* ---- options ------------------------------------------------------------- */

static int parse_format(const char *cmd, const char *s, int allow_render,
			enum remote_format *out)
{
	static const char *const names[] = { "text", "json", "svg", "html" };
	int i, n = allow_render ? 4 : 2;

	for (i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum remote_format)i;
			return 0;
		}
	return cli_usage_error(cmd, "--format: unknown format '%s' (%s)", s,
			       allow_render ? "text, json, svg, html" :
					      "text, json");
}

static int parse_color(const char *cmd, const char *s, int *out)
{
	if (!strcmp(s, "auto"))
		*out = -1;
	else if (!strcmp(s, "always"))
		*out = 1;
	else if (!strcmp(s, "never"))
		*out = 0;
	else
		return cli_usage_error(cmd, "--color: '%s' is not auto, "
				       "always or never", s);
	return 0;
}

/* --since/--until in sacct's forms, sent to the service as UTC. */
static int parse_time(const char *cmd, const char *opt, char buf[32],
		      const char **out)
{
	char why[256];

	if (remote_parse_time(optarg, time(NULL), buf, 32, why, sizeof(why)))
		return cli_usage_error(cmd, "%s: %s", opt, why);
	*out = buf;
	return 0;
}

/* The command as the user typed it, and the help that explains it
 * ('commap apps forget' is explained by 'commap help apps'). */
static const char *typed_name(const char *cmd)
{
	return strcmp(cmd, "forget") ? cmd : "apps forget";
}

static const char *help_name(const char *cmd)
{
	return strcmp(cmd, "forget") ? cmd : "apps";
}

static const char *option_name(int c)
{
	const struct option *o;

	for (o = remote_options; o->name; o++)
		if (o->val == c)
			return o->name;
	return "?";
}

static int remote_option(const char *cmd, int c, struct remote_args *a,
			 char *argv[])
{
	switch (c) {
	case OPT_SERVICE: a->service = optarg; return 0;
	case OPT_USER: a->user = optarg; return 0;
	case OPT_APP: a->app = optarg; return 0;
	case OPT_SINCE:
		return parse_time(cmd, "--since", a->since_utc, &a->since);
	case OPT_UNTIL:
		return parse_time(cmd, "--until", a->until_utc, &a->until);
	case OPT_NODE: a->node = optarg; return 0;
	case OPT_OUTPUT: a->output = optarg; return 0;
	case OPT_LIMIT:
		return cli_parse_int("--limit", optarg, 1, 1000, &a->limit) ?
			CLI_EXIT_USAGE : 0;
	case OPT_STEP:
		a->step = cm_report_step_parse(optarg);
		if (a->step < 0)
			return cli_usage_error(cmd, "--step: '%s' is not a "
					       "step (a number, batch, extern "
					       "or interactive)", optarg);
		return 0;
	case OPT_FORMAT:
		return parse_format(cmd, optarg, !strcmp(cmd, "report"),
				    &a->format);
	case OPT_COLOR:
		return parse_color(cmd, optarg, &a->color);
	case 'h':
		if (!strcmp(cmd, "jobs"))
			cmd_jobs_help(stdout);
		else if (!strcmp(cmd, "apps") || !strcmp(cmd, "forget"))
			cmd_apps_help(stdout);
		else
			cmd_report_help(stdout);
		return -1;
	default:
		return cli_getopt_error(help_name(cmd), c, argv);
	}
}

/* Which options each command takes (others are usage errors). */
static int option_allowed(const char *cmd, int c)
{
	if (c == OPT_SERVICE || c == 'h' || c == '?' || c == ':')
		return 1;
	if (c == OPT_FORMAT)
		return strcmp(cmd, "forget") != 0;
	if (!strcmp(cmd, "jobs"))
		return c == OPT_USER || c == OPT_APP || c == OPT_SINCE ||
		       c == OPT_UNTIL || c == OPT_LIMIT;
	if (!strcmp(cmd, "apps"))
		return c == OPT_LIMIT;
	if (!strcmp(cmd, "forget"))
		return 0;
	return c == OPT_STEP || c == OPT_NODE || c == OPT_OUTPUT ||
	       c == OPT_COLOR;
}

int remote_parse(const char *cmd, int argc, char *argv[],
		 struct remote_args *a)
{
	int c, rv;

	a->step = -1;
	a->color = -1;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", remote_options, NULL)) !=
	       -1) {
		/* Another command's option: named as the user wrote it
		 * (argv[optind - 1] may be its value). */
		if (!option_allowed(cmd, c))
			return cli_usage_error(help_name(cmd), "--%s is not an "
					       "option of 'commap %s'",
					       option_name(c), typed_name(cmd));
		if ((rv = remote_option(cmd, c, a, argv)) != 0)
			return rv;
	}
	if (!strcmp(cmd, "report")) {
		if (optind >= argc)
			return cli_usage_error(cmd, "a JOBID is required");
		a->id = argv[optind++];
	}
	if (!strcmp(cmd, "forget")) {
		if (optind >= argc)
			return cli_usage_error("apps", "forget: a MODEL_ID is "
					       "required");
		a->id = argv[optind++];
	}
	return cli_no_operands(help_name(cmd), argc, argv, optind);
}
