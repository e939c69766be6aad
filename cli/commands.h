/* commands.h: the subcommands of commap.  Each takes its own argv (argv[0]
 * is the subcommand's name), parses it with getopt_long and returns an exit
 * code (enum cli_exit).  The *_help functions print the usage text. */
#ifndef COMMAP_CLI_COMMANDS_H
#define COMMAP_CLI_COMMANDS_H

#include <stdio.h>

int cmd_map(int argc, char *argv[]);
void cmd_map_help(FILE *f);

int cmd_cost(int argc, char *argv[]);
void cmd_cost_help(FILE *f);

int cmd_matrix(int argc, char *argv[]);
void cmd_matrix_help(FILE *f);

int cmd_run(int argc, char *argv[]);
void cmd_run_help(FILE *f);

int cmd_report(int argc, char *argv[]);
void cmd_report_help(FILE *f);
int cmd_jobs(int argc, char *argv[]);
void cmd_jobs_help(FILE *f);
int cmd_apps(int argc, char *argv[]);
void cmd_apps_help(FILE *f);
int cmd_web(int argc, char *argv[]);
void cmd_web_help(FILE *f);

int cmd_check(int argc, char *argv[]);
void cmd_check_help(FILE *f);

int cmd_replay(int argc, char *argv[]);
void cmd_replay_help(FILE *f);

#ifdef COMMAP_HAVE_AGENT
/* The node agent's path into out (cmd_run.c): 0, or -1 if none found. */
int cli_find_agent(char *out, size_t len);
#endif

#endif
