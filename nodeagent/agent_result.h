/* agent_result.h: the agent's result document, commap-result version 1
 * (docs/result-format.md), built while the agent runs and written at the
 * end.
 *
 * The agent records every mapping it applies (timeline) and every thread it
 * moves (migrations) as they happen; cm_agent_result_json() turns the whole
 * record, the thread list and the matrix into the JSON text.  Additions to
 * version 1 (readers ignore unknown keys): "warnings", a list of the
 * one-line reasons the agent could not do what it was asked (perf not
 * permitted, no capstone, ...), and stats.decode_rate / stats.threads_seen;
 * for learned mappings: identity.exe_hash / argv_shape /
 * threads_per_rank, the top-level "model" and stats.pin_latency_ms.
 */
#ifndef COMMAP_AGENT_RESULT_H
#define COMMAP_AGENT_RESULT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "commap/error.h"
#include "commap/matrix.h"
#include "ompi_monitoring.h"

struct cm_result_thread {
	int rank;
	int index;		/* creation index within its process */
	pid_t tid, pid;
	double cpu_s;		/* CPU time used, -1 if unknown */
};

struct cm_result_mapping {
	double t;		/* seconds since started_at */
	int n;			/* entries in os_pu */
	int *os_pu;		/* OS PU of each thread, -1 not placed */
	double cost;		/* predicted cost (commap/cost.h), < 0 none */
	char reason[24];	/* "initial", "pattern", "static", ... */
	int live;		/* live threads of the step; 0 unknown */
	int forced;		/* an explicit user placement (static
				 * mapping file): exempt from the
				 * placement invariant */
	char note[160];		/* "" or why (progress guard) */
};

struct cm_result_migration {
	double t;
	int thread;
	int from, to;		/* OS PUs; from -1: was not pinned */
};

/* One phase of the sampling budget (sample_rate.h, point 3). */
struct cm_result_spend {
	double t;		/* seconds since the collector started */
	char phase[8];		/* "learn" | "watch" */
	unsigned period_us;	/* at its start */
	double app_cpu_s;	/* application CPU time during it */
	double agent_cpu_s;	/* the agent's CPU time on its samples */
	uint64_t samples;
	double overhead;	/* (samples x cost + agent) / app; < 0 none */
};

#define CM_RESULT_SPEND_MAX 8

struct cm_result_stats {
	uint64_t samples, lost, decoded, faults;
	double agent_cpu_s, mapping_ms;
	uint64_t pins, intervals;
	unsigned sample_period_us;
	/* "sample_periods": [[t, us], ...], the initial sampling period
	 * and each change of the adaptive one (collect.h); absent when 0 */
	int nperiods;
	double period_t[8];
	unsigned period_us[8];
	/* "sample_budget": [{"t", "phase", "period_us", "app_cpu_s",
	 * "agent_cpu_s", "samples", "overhead"}, ...], what each phase of
	 * the sampling budget spent (the first and the latest ones);
	 * absent when nbudget is 0 */
	int nbudget;
	struct cm_result_spend budget[CM_RESULT_SPEND_MAX];
	/* "dropped": {"spin", "syscall", "repeat", "stack"}, samples and
	 * references that say nothing about sharing, left out of the
	 * evidence; absent when drops_on is 0 */
	int drops_on;
	uint64_t drop_spin, drop_syscall, drop_repeat, drop_stack;
};

#define CM_RESULT_MAX_WARNINGS 16

/* Whether the run started from a learned model (result key "model"). */
enum cm_result_model_state {
	CM_RESULT_MODEL_NONE = 0,	/* no "model" key (not asked) */
	CM_RESULT_MODEL_USED,		/* {"used": true, "id", "runs", ...} */
	CM_RESULT_MODEL_UNUSED,		/* {"used": false, "reason"} */
};

struct cm_result_model {
	enum cm_result_model_state state;
	long long id;
	int runs;
	double distance;	/* 1 - cosine(detected, model); < 0 unknown */
	char reason[256];	/* why not used / abandoned */
};

struct cm_agent_result {
	/* identity; job/step -1 outside Slurm */
	long long job, step;
	char node[256];
	char cluster[64];	/* Slurm's ClusterName; "" unknown (omitted) */
	char user[64];
	uid_t uid;
	char executable[4096];
	char **argv;		/* owned, NULL-terminated */
	int ranks;		/* distinct ranks on this node */
	char exe_hash[129];	/* "" : null (app_identity.h) */
	char argv_shape[1024];	/* "" : absent */
	int threads_per_rank;	/* 0: absent */
	const char *mode;	/* off | dynamic | learned | static */
	const char *backend;	/* NULL: none ran */
	struct timespec started_at, ended_at;	/* CLOCK_REALTIME */
	/* topology */
	char *cpuset;		/* owned */
	int pus;
	char *synthetic;	/* owned, may be NULL */
	int dry_run;
	/* what happened */
	struct cm_result_thread *threads;
	int nthreads, threads_cap;
	struct cm_result_mapping *timeline;
	int ntimeline, timeline_cap;
	struct cm_result_migration *migrations;
	int nmigrations, migrations_cap;
	char *warnings[CM_RESULT_MAX_WARNINGS];
	int nwarnings;
	struct cm_result_stats stats;
	struct cm_result_model model;
	char not_pinned[256];	/* "" or why nothing was pinned */
	int guard_checked;	/* mappings the progress guard judged */
	int guard_undone;	/* ... and undid */
	/* creation-to-first-pin latency of each thread, ms (stats.
	 * pin_latency_ms: p50, p90, max, n) */
	double *pin_latency_ms;
	int npin_latency, pin_latency_cap;
	/* "rank_traffic": what the MPI library counted between ranks
	 * (ompi_monitoring.h); written when traffic_on, owned */
	int traffic_on;
	struct cm_rank_traffic traffic;
	/* how srun placed the ranks across nodes (--place-nodes), NULL */
	const char *place_nodes;
};

/* Zero the record (job/step -1, times now). */
void cm_agent_result_init(struct cm_agent_result *r);
void cm_agent_result_free(struct cm_agent_result *r);

/* Copy argv[0..argc-1]; 0 or -1/ENOMEM. */
int cm_agent_result_set_argv(struct cm_agent_result *r, int argc,
			     char *const argv[]);
/* Replace the thread list by a copy of th[0..n-1]. */
int cm_agent_result_set_threads(struct cm_agent_result *r,
				const struct cm_result_thread *th, int n);
/* Record a mapping (os_pu copied).  0 or -1/ENOMEM. */
int cm_agent_result_add_mapping(struct cm_agent_result *r, double t,
				const int *os_pu, int n, double cost,
				const char *reason);
int cm_agent_result_add_migration(struct cm_agent_result *r, double t,
				  int thread, int from, int to);
/* Record one thread's creation-to-first-pin latency.  0 or -1/ENOMEM. */
int cm_agent_result_add_pin_latency(struct cm_agent_result *r, double ms);
/* The q-quantile (0..1, nearest rank) of the recorded latencies; -1 if
 * none. */
double cm_agent_result_pin_latency_quantile(const struct cm_agent_result *r,
					    double q);

/* Keep a one-line reason (first CM_RESULT_MAX_WARNINGS only). */
void cm_agent_result_warn(struct cm_agent_result *r, const char *text);

/* The document as JSON text (malloc'd, NUL-terminated, one object, a
 * final newline); m may be NULL (no edges); edge indices beyond the thread
 * list are dropped.  NULL with errno/err (ENOMEM). */
char *cm_agent_result_json(const struct cm_agent_result *r,
			   const struct cm_matrix *m, struct cm_error *err);

/* "2026-11-22T14:00:00.123Z" into out (>= 32 bytes). */
void cm_result_format_time(const struct timespec *ts, char *out, size_t len);

/* Write text to path atomically (path.tmp.PID, then rename), mode 0644.
 * 0 or -1 with errno/err naming the file. */
int cm_result_write_file(const char *path, const char *text,
			 struct cm_error *err);

#endif
