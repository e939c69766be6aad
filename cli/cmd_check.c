/* cmd_check.c: 'commap check', what this node and the service allow
 * commap to do (docs/cli.md).
 *
 * The Slurm part reads plugstack.conf and tries the plugin, its agent and
 * its spool (check_plugin.c).
 * The node part is the agent's own probe (commap-agent --check: topology,
 * decoder, sampling backends, kernel knobs), run as the calling user, so
 * an admin sees what root's agents can do and a user what 'commap run'
 * can.  The service part asks the configured service whether it answers
 * (/healthz) and accepts the caller's munge credential (/v1/jobs).
 * Exit 0 when everything needed works, 1 otherwise, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <config.h>

#include <getopt.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli_common.h"
#include "commands.h"
#include "plugstack.h"
#include "remote.h"

extern char **environ;

void cmd_check_help(FILE *f)
{
	fputs("usage: commap check [--service URL | --no-service]\n"
	      "                    [--plugstack FILE | --no-plugin]\n\n"
	      "Check what commap can do here: the node agent's probes (topology,\n"
	      "instruction decoder, sampling backends, kernel settings), Slurm's\n"
	      "plugstack.conf (names the plugin with settings it accepts; the\n"
	      "plugin loads; its agent and spool are fit for root) and the\n"
	      "service (reachable, accepts your munge credential).  Exit 0 when\n"
	      "all of them work, else 1.\n\n"
	      "  --service URL     the service to check (default: as 'commap "
	      "jobs')\n"
	      "  --no-service      do not check the service\n"
	      "  --plugstack FILE  the plugstack.conf to check (default: "
	      "slurm.conf's\n"
	      "                    PlugStackConfig, or plugstack.conf beside "
	      "it;\n"
	      "                    $SLURM_CONF or /etc/slurm/slurm.conf)\n"
	      "  --no-plugin       do not check the Slurm plugin ('commap run' "
	      "only)\n", f);
}

/* commap-agent --check, its output passed through; its exit status. */
static int check_node(void)
{
#ifdef COMMAP_HAVE_AGENT
	char agent[PATH_MAX];
	char *argv[] = { agent, (char *)"--check", NULL };
	pid_t pid;
	int st;

	if (cli_find_agent(agent, sizeof(agent)) < 0) {
		printf("node: FAIL  no commap-agent found ($COMMAP_AGENT, the "
		       "build tree, the installed one): jobs run unpinned\n");
		return 1;
	}
	fflush(stdout);
	if (posix_spawn(&pid, agent, NULL, NULL, argv, environ) != 0 ||
	    waitpid(pid, &st, 0) < 0) {
		printf("node: FAIL  cannot run %s\n", agent);
		return 1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
#else
	printf("node: FAIL  this commap was built without the node agent "
	       "(libcapstone-dev): jobs run unpinned\n");
	return 1;
#endif
}

/* GET path; 1 when the service answers 200 with its JSON, else 0 after
 * one line saying why: what answered when it is not a commap service
 * (never its page), else the status and the service's message. */
static int service_answers(const char *base, const char *path,
			   const char *what)
{
	struct remote_answer ans;
	char how[160], *msg;
	int ok;

	if (remote_get(base, path, &ans) < 0) {
		printf("  FAIL  %-16s %s does not answer\n", what, base);
		return 0;
	}
	ok = ans.code == 200 && remote_answer_is_json(&ans);
	msg = ok ? NULL : remote_answer_error(&ans);
	if (ok) {
		printf("  ok    %-16s %s%s\n", what, base, path);
	} else if (!msg) {
		remote_describe_answer(&ans, how, sizeof(how));
		printf("  FAIL  %-16s %s%s answered %s: not a commap "
		       "service\n", what, base, path, how);
	} else {
		printf("  FAIL  %-16s %s%s: HTTP %ld: %s\n", what, base, path,
		       ans.code, msg);
	}
	free(msg);
	remote_answer_free(&ans);
	return ok;
}

static int check_service(const char *given)
{
	char *base = remote_service_url(given);
	int ok;

	if (!base)
		return 1;
	printf("service %s:\n", base);
	ok = service_answers(base, "/healthz", "reachable") &&
	     service_answers(base, "/v1/jobs?limit=1", "munge credential");
	free(base);
	return ok ? 0 : 1;
}

int cmd_check(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "service", required_argument, NULL, 's' },
		{ "no-service", no_argument, NULL, 'n' },
		{ "plugstack", required_argument, NULL, 'p' },
		{ "no-plugin", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *service = NULL, *plugstack = NULL;
	int c, no_service = 0, no_plugin = 0, node, plug = 0, svc = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			service = optarg;
			break;
		case 'n':
			no_service = 1;
			break;
		case 'p':
			plugstack = optarg;
			break;
		case 'P':
			no_plugin = 1;
			break;
		case 'h':
			cmd_check_help(stdout);
			return CLI_EXIT_OK;
		default:
			return cli_getopt_error("check", c, argv);
		}
	}
	if ((c = cli_no_operands("check", argc, argv, optind)) != 0)
		return c;
	if (service && no_service)
		return cli_usage_error("check", "--service and --no-service "
				       "exclude each other");
	if (plugstack && no_plugin)
		return cli_usage_error("check", "--plugstack and --no-plugin "
				       "exclude each other");
	node = check_node();
	if (!no_plugin)
		plug = check_plugin(plugstack);
	if (!no_service)
		svc = check_service(service);
	return node || plug || svc ? CLI_EXIT_RUNTIME : CLI_EXIT_OK;
}
