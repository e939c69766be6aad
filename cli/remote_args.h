/* remote_args.h: the options of 'commap jobs', 'commap apps [forget]'
 * and 'commap report' (remote_args.c; docs/cli.md). */
#ifndef COMMAP_CLI_REMOTE_ARGS_H
#define COMMAP_CLI_REMOTE_ARGS_H

enum remote_format { FMT_TEXT, FMT_JSON, FMT_SVG, FMT_HTML };

struct remote_args {
	const char *service;
	const char *user, *app, *since, *until;
	int limit;			/* 0: the service's default */
	enum remote_format format;
	long long step;			/* -1: all */
	const char *node;
	const char *output;
	int color;			/* -1 auto, 0 never, 1 always */
	const char *id;			/* report: JOBID operand */
	char since_utc[32], until_utc[32];	/* --since/--until, UTC */
};

/* Parse the options and operands of cmd ("jobs", "apps", "forget" for
 * 'apps forget', "report") into *a (zeroed by the caller).  0;
 * CLI_EXIT_USAGE after a usage error naming the option as typed; -1
 * after --help was printed. */
int remote_parse(const char *cmd, int argc, char *argv[],
		 struct remote_args *a);

#endif
