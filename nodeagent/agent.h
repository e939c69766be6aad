/* agent.h: what the parts of commap-agent share (agent_main.c: options,
 * logging, signals; agent_loop.c: following, detecting, mapping, pinning;
 * agent_static.c: static mapping files).  Not a library interface.
 */
#ifndef COMMAP_AGENT_H
#define COMMAP_AGENT_H

#include <signal.h>
#include <stdio.h>

#include "agent_opts.h"
#include "commap/error.h"
#include "commap/matrix.h"

/* Logging to stderr with a "commap-agent: " prefix (the SPANK plugin sends
 * it to the step's log file).  Warnings always; info only with --verbose,
 * debug with -vv. */
void agent_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void agent_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void agent_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void agent_log_set_verbosity(int v);

/* Set by SIGTERM/SIGINT/SIGHUP: finish (result, delivery) and exit. */
extern volatile sig_atomic_t agent_stop_requested;

/* Run the agent until its processes are gone, stdin ends, slurmstepd
 * disappears or a signal arrives; then write or deliver the result.
 * Returns the exit status: 0, or 1 when the result could be neither
 * written nor spooled.  Any failure to detect or pin is logged once and
 * the agent goes on tracking (the job is never harmed). */
int agent_run(const struct cm_agent_opts *o, int argc, char *argv[]);

/* commap-agent --check: probe what this node allows, one line per probe
 * on out (agent_check.c).  0 when the sample or hw backend works, else 1. */
int agent_check(FILE *out);

/* A static mapping file (docs/agent.md): either a mapping, a JSON object
 * with "pu_of_thread": [OS PU, ...] (what `commap map --format json`
 * writes), or a matrix (commap-matrix JSON, CSV or a commap-result), which
 * the agent maps itself.  Entry k is for the agent's thread k (order of
 * appearance; for one process, its creation index). */
struct agent_static {
	int *os_pu;		/* mapping: n entries, or NULL */
	int n;
	struct cm_matrix *matrix;	/* matrix file, or NULL */
};

/* 0, or -1 with errno/err naming the file (ENOENT, EINVAL). */
int agent_static_load(const char *path, struct agent_static *out,
		      struct cm_error *err);
void agent_static_free(struct agent_static *s);
/* Whose rights the file is read with, and the directory a relative path
 * is taken from (NULL: ours); set before agent_run(). */
struct cm_user_cred;
void agent_static_set_reader(const struct cm_user_cred *cred,
			     const char *dir);

#endif
