/* cmd_replay.c: `commap replay FILE [--output OUT]`: a recording made with
 * `commap run --record` (or commap-agent --record) replayed offline by
 * the node agent (replay.h): the same matrix, a mapping, a commap-result.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_common.h"
#include "commands.h"

void cmd_replay_help(FILE *f)
{
	fputs("usage: commap replay FILE [--output RESULT]\n"
	      "Replay a recording (commap run --record FILE): detection "
	      "rebuilds the\n"
	      "matrix from the recorded accesses, the communicating threads "
	      "are mapped\n"
	      "once onto the recorded topology and CPU set, and the "
	      "commap-result is\n"
	      "written to RESULT (default: standard output).  The same "
	      "recording gives\n"
	      "the same bytes.\n"
	      "  --output RESULT   write the result there\n", f);
}

#ifdef COMMAP_HAVE_AGENT
int cmd_replay(int argc, char *argv[])
{
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	char path[4096];
	char *av[8];
	int c, ac = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
		if (c == 'h') {
			cmd_replay_help(stdout);
			return CLI_EXIT_OK;
		}
		if (c == 'o' && *optarg) {
			output = optarg;
			continue;
		}
		return cli_usage_error("replay", c == ':' ? "%s: missing value"
				       : c == 'o' ? "%s: empty value" :
				       "unknown option '%s'",
				       argv[optind - 1]);
	}
	if (argc - optind != 1)
		return cli_usage_error("replay", "%s", argc - optind ?
				       "one recording at a time" :
				       "no recording (commap replay FILE)");
	if (cli_find_agent(path, sizeof(path)) < 0) {
		fprintf(stderr, "commap: replay: the node agent was not found "
			"($COMMAP_AGENT)\n");
		return CLI_EXIT_RUNTIME;
	}
	av[ac++] = path;
	av[ac++] = "--replay";
	av[ac++] = argv[optind];
	if (output) {
		av[ac++] = "--output";
		av[ac++] = (char *)output;
	}
	av[ac] = NULL;
	execv(path, av);
	fprintf(stderr, "commap: replay: cannot execute the agent %s: %s\n",
		path, strerror(errno));
	return CLI_EXIT_RUNTIME;
}
#else
int cmd_replay(int argc, char *argv[])
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "commap: replay: this commap was built without the "
		"node agent (capstone missing)\n");
	return CLI_EXIT_RUNTIME;
}
#endif
