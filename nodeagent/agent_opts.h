/* agent_opts.h: the command line of commap-agent (docs/agent.md).
 *
 *   commap-agent --mode off|dynamic|learned|static[:FILE] [--static FILE]
 *                (--pid PID[:RANK] ... | --tasks-from-stdin)
 *                [--job N --step N --uid N --stepd-pid PID]
 *                [--gid N] [--groups G,G,...] [--cwd DIR] [--cluster NAME]
 *                [--spool DIR] [--service URL] [--output FILE]
 *                [--backend auto|sample|fault|hw|sample+fault|hw+fault]
 *                [--period-us N] [--topology SPEC | --topology-xml FILE]
 *                [--ready-fd FD] [--alpha X] [--gain X] [--verbose]
 *                [--numa-balancing manage|leave] [--overhead PCT]
 *                [--mpi-traffic DIR] [--place-nodes TEXT]
 *
 * Parsing is pure (no printing, no exit): every error is -1/EINVAL with a
 * message naming the option and the value, so the table of good and bad
 * command lines is unit-tested (tests/agent/test_agent_opts.c).
 */
#ifndef COMMAP_AGENT_OPTS_H
#define COMMAP_AGENT_OPTS_H

#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"

enum cm_agent_mode {
	CM_AGENT_MODE_OFF = 0,
	CM_AGENT_MODE_DYNAMIC,
	CM_AGENT_MODE_STATIC,
	CM_AGENT_MODE_LEARNED,
};

enum cm_agent_backend {
	CM_AGENT_BACKEND_AUTO = 0,	/* hw where supported, else sample */
	CM_AGENT_BACKEND_SAMPLE,
	CM_AGENT_BACKEND_HW,
	CM_AGENT_BACKEND_FAULT,		/* fault only */
};

/* Root processes given on the command line. */
#define CM_AGENT_MAX_PIDS 256

struct cm_agent_root {
	pid_t pid;
	int rank;		/* -1: from the process's environment */
};

/* Supplementary groups given with --groups. */
#define CM_AGENT_MAX_GROUPS 256
/* Longest --cluster (Slurm's ClusterName is short). */
#define CM_AGENT_CLUSTER_MAX 63

#define CM_AGENT_PERIOD_US_DEFAULT 1000u
#define CM_AGENT_PERIOD_US_MIN 10u
#define CM_AGENT_PERIOD_US_MAX 1000000u
#define CM_AGENT_SCAN_MS_DEFAULT 25u
#define CM_AGENT_GAIN_DEFAULT 0.05

struct cm_agent_opts {
	enum cm_agent_mode mode;
	const char *static_file;	/* --static or --mode static:FILE */
	enum cm_agent_backend backend;
	int add_fault;			/* "+fault" */
	unsigned period_us;		/* sampling period, CPU time */
	long long job, step;		/* -1: not in Slurm */
	uid_t uid;			/* (uid_t)-1: any owner */
	gid_t gid;			/* (gid_t)-1: the user's primary */
	gid_t groups[CM_AGENT_MAX_GROUPS];	/* the job's supplementary */
	int ngroups;			/* -1: not given (look them up) */
	const char *cwd;		/* the job's working directory */
	const char *cluster;		/* Slurm's ClusterName, NULL */
	pid_t stepd_pid;		/* 0: none */
	const char *spool;		/* NULL: none */
	const char *service;		/* NULL: none */
	const char *output;		/* NULL: deliver (service/spool) */
	const char *record;		/* NULL, or record what detection
					 * consumes there (record.h) */
	const char *replay;		/* NULL, or replay that recording
					 * (replay.h) instead of following */
	int tasks_from_stdin;
	struct cm_agent_root roots[CM_AGENT_MAX_PIDS];
	int nroots;
	const char *topology;		/* dry run on a synthetic machine */
	const char *topology_xml;	/* dry run on an XML machine */
	int ready_fd;			/* -1: none; "ready\n" once attached */
	double alpha;			/* aging, LHMapping §3.4.1 */
	double gain;			/* relative cost gain needed to remap */
	unsigned scan_ms;		/* thread rescan period */
	int verbose;
	int numa_leave;			/* fault: leave kernel.numa_balancing
					 * alone (default: manage it) */
	double overhead_pct;		/* adaptive period target, % of the
					 * app's CPU; 0: fixed period.  1 by
					 * default, 0 when --period-us is
					 * given without --overhead */
	int overhead_given, period_given;
	const char *mpi_traffic;	/* NULL, or the step's directory of
					 * Open MPI monitoring files, read
					 * and removed at the end */
	const char *place_nodes;	/* NULL, or how srun placed the
					 * ranks across nodes: "learned|block
					 * BLOCK LEARNED RUNS" (spank/
					 * place_nodes.h), kept in
					 * rank_traffic.placement */
};

/* Defaults: mode dynamic, backend auto, 1 ms, alpha 0.75, gain 0.05,
 * job/step -1, uid any, no fds, no roots. */
void cm_agent_opts_default(struct cm_agent_opts *o);

/* Parse argv[1..argc-1] into o (which must hold the defaults).  Strings
 * point into argv.  0 on success; -1/EINVAL with err naming the option
 * and value: unknown option, missing or malformed value, out of range,
 * conflicting options (--topology with --topology-xml, static without a
 * file), no root source (neither --pid nor --tasks-from-stdin), operands.
 * Not reentrant (getopt_long); resets optind. */
int cm_agent_opts_parse(struct cm_agent_opts *o, int argc, char *argv[],
			struct cm_error *err);

/* "PID" or "PID:RANK" (PID > 0, 0 <= RANK < 2^31).  0 or -1/EINVAL. */
int cm_agent_parse_pid(const char *s, struct cm_agent_root *out,
		       struct cm_error *err);

/* Longest CPU list accepted on a task line. */
#define CM_AGENT_CPULIST_MAX 1024

/* One line of the stdin protocol, without its newline:
 *   "task PID RANK [CPULIST]"   a task of the step (rank >= 0) and the
 *                               CPUs Slurm bound it to ("0-3,8"), read by
 *                               the plugin when the binding is final
 * Leading/trailing blanks and empty lines are allowed (returns 0 with
 * *pid = 0: nothing to do).  1 with pid/rank filled and cpus set to the
 * list, or to "" when the line has none (cpus has CM_AGENT_CPULIST_MAX
 * bytes); -1/EINVAL naming the line otherwise. */
int cm_agent_parse_task_line(const char *line, pid_t *pid, int *rank,
			     char *cpus, struct cm_error *err);

const char *cm_agent_mode_name(enum cm_agent_mode m);
/* "sample", "hw", "fault", "sample+fault", ... */
const char *cm_agent_backend_name(enum cm_agent_backend b, int add_fault);

#endif
