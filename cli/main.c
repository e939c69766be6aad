/* main.c: the commap command: dispatch to the subcommands (docs/cli.md). */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"

struct command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char *argv[]);
	void (*help)(FILE *f);
};

static const struct command commands[] = {
	{ "map", "place the threads of a communication matrix on a topology",
	  cmd_map, cmd_map_help },
	{ "cost", "evaluate a given mapping", cmd_cost, cmd_cost_help },
	{ "matrix", "generate test matrices (matrix gen)", cmd_matrix,
	  cmd_matrix_help },
	{ "run", "run a program under the node agent (without Slurm)",
	  cmd_run, cmd_run_help },
	{ "report", "a job's report from the service", cmd_report,
	  cmd_report_help },
	{ "jobs", "list jobs known to the service", cmd_jobs, cmd_jobs_help },
	{ "apps", "list applications and their learned models", cmd_apps,
	  cmd_apps_help },
	{ "web", "a one-time link to the web reports for a browser", cmd_web,
	  cmd_web_help },
	{ "check", "what this node and the service allow commap to do",
	  cmd_check, cmd_check_help },
	{ "replay", "replay a recording of the agent's detection offline",
	  cmd_replay, cmd_replay_help },
};
#define NCOMMANDS ((int)(sizeof(commands) / sizeof(commands[0])))

static void print_help(FILE *f)
{
	int i;

	fputs("usage: commap COMMAND [OPTIONS]\n"
	      "       commap help COMMAND | --help | --version\n\n"
	      "Communication-aware placement of threads and ranks.\n\n"
	      "Commands:\n", f);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fputs("\nExit status: 0 success, 1 runtime error (file, topology, "
	      "cpuset, mapping),\n2 usage error (bad option or value).  "
	      "See commap(1) and " COMMAP_DOCDIR "/cli.md.\n", f);
}

static const struct command *find_command(const char *name)
{
	int i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static int unknown_command(const char *name)
{
	cli_error("unknown command '%s' (commands: map, cost, matrix, run, "
		  "report, jobs, apps, web, check; see 'commap --help')", name);
	return CLI_EXIT_USAGE;
}

static int help_command(int argc, char *argv[])
{
	const struct command *c;

	if (argc < 2) {
		print_help(stdout);
		return CLI_EXIT_OK;
	}
	if (argc > 2) {
		cli_error("help: takes one command name");
		return CLI_EXIT_USAGE;
	}
	c = find_command(argv[1]);
	if (!c)
		return unknown_command(argv[1]);
	c->help(stdout);
	return CLI_EXIT_OK;
}

int main(int argc, char *argv[])
{
	const struct command *c;
	const char *name = argc > 1 ? argv[1] : NULL;

	if (!name) {
		print_help(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		print_help(stdout);
		return CLI_EXIT_OK;
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
		printf("commap %s\n", PACKAGE_VERSION);
		return CLI_EXIT_OK;
	}
	if (strcmp(name, "help") == 0)
		return help_command(argc - 1, argv + 1);
	if (name[0] == '-') {
		cli_error("unknown option '%s' (see 'commap --help')", name);
		return CLI_EXIT_USAGE;
	}
	c = find_command(name);
	if (!c)
		return unknown_command(name);
	return c->run(argc - 1, argv + 1);
}
