/* agent_internal.h: the node agent's state, shared by its parts.
 *
 * agent_loop.c runs the loop (input, scans, detection);
 * agent_identity.c follows the application's identity (exe, argv, hash);
 * agent_interval.c the interval clock (fold, age, checkpoints, the remap
 * decision); agent_place.c applies placements (pins, the placement
 * invariant, the progress guard, static and dynamic mapping);
 * agent_model.c learned mappings; agent_fill.c the result.  Private to
 * commap-agent.
 */
#ifndef COMMAP_AGENT_INTERNAL_H
#define COMMAP_AGENT_INTERNAL_H

#include <stdint.h>
#include <time.h>

#include <hwloc.h>

#include "agent.h"
#include "agent_result.h"
#include "app_identity.h"
#include "collect.h"
#include "commap/matrix.h"
#include "commap/topology.h"
#include "model_fetch.h"
#include "placement.h"
#include "progress_guard.h"
#include "proc_track.h"
#include "remap_decide.h"
#include "remap_policy.h"

#define MAX_POLLFDS 256
#define IDENTITY_REFRESH_NS 1000000000ull	/* follow exec for 1 s */
/* Learned mappings (docs/agent.md "Learned mappings"). */
#define FAST_SCAN_MS 5		/* while expected threads are missing */
#define FAST_SCAN_QUIET_NS 3000000000ull	/* ... and appearing */
#define TASK_LINES_QUIET_NS 30000000ull	/* all tasks of the step seen */
#define LEARNED_DISAGREE_GAIN 0.20	/* detection "clearly disagrees" */
#define LEARNED_DISAGREE_INTERVALS 2
#define CRED_FRESH_NS 60000000000ull	/* a credential made at start */
#define LEARNED_HOLD_NS 2000000000ull	/* learned pins read back */

#define COST_CACHE_DIR "/run/commap"
#define CHECKPOINT_MIN_INTERVAL_MS 400	/* checkpoint() only above */
#define CHECKPOINT_NS (CM_REMAP_INTERVAL_MS_START * 1000000ull)

struct agent {
	int cost_logged;	/* the measured sampling cost was logged */
	int time_sampled;	/* the sample backend: CPU-time sampling */
	const struct cm_agent_opts *o;
	enum cm_agent_mode mode;	/* learned runs as dynamic for now */
	struct cm_tracker *tr;
	struct cm_collector *col;	/* NULL: no detection */
	struct cm_recorder *rec;	/* --record (record.h); NULL none */
	struct cm_topo *topo;		/* restricted to the allowed PUs */
	hwloc_bitmap_t allowed;		/* NULL in a dry run */
	int dry_run;
	int pin_ok;			/* pinning not disabled by a failure */
	struct cm_matrix *fresh;	/* this interval's events */
	struct cm_matrix *live;		/* aged (LHMapping §3.4.1) */
	struct cm_matrix *total;	/* everything, for the result */
	int *cur_os;			/* per tracker thread: OS PU, -1 */
	double *cpu_s;			/* per tracker thread */
	int cap;
	struct cm_decide dec;		/* the dynamic decisions' state */
	uint64_t t0_ns, next_scan_ns, next_interval_ns;
	/* The time of the interval end or checkpoint being handled (0:
	 * none): its decisions, aging and timeline entries all use it, as
	 * its recording does (record.h), so that a replay makes them the
	 * same. */
	uint64_t decide_ns;
	uint64_t next_checkpoint_ns;	/* inside a long interval */
	/* The step's progress clock (cm_remap_progress, from t0_ns): its
	 * value, the wall time it was read, its credit, each tracker
	 * thread's CPU seconds then (-1 unread); the interval's start
	 * (wall, app) and whether a checkpoint ended it early. */
	uint64_t app_ns, app_read_ns, app_credit_ns;
	uint64_t interval_start_ns, interval_app_ns;
	double *app_cpu;
	int end_early;
	int stdin_open;
	/* A line longer than this is refused whole by the parser: it is
	 * kept one byte longer than the longest valid line. */
	char line[CM_AGENT_CPULIST_MAX + 64];
	size_t linelen;
	int roots_added;
	struct agent_static st;
	int *static_os;			/* static mode: OS PU of thread k */
	int nstatic;
	int static_applied;		/* threads handled by static mode */
	struct cm_agent_result res;
	double mapping_ms;
	char problem_logged[CM_ERROR_TEXT_MAX];
	/* learned mappings */
	int app_settled;		/* exe hash and argv shape known */
	struct cm_exe_hash_cache hash_cache;
	struct cm_exe_hash_job hash_job;	/* a large executable */
	int hashing;			/* hash_job is running */
	int model_wanted;		/* fetch a model at step start */
	int model_active;		/* pin new threads from the model */
	struct cm_model model;
	int *model_os;			/* per identity: OS PU, -1 */
	int model_applied;		/* threads before it all handled */
	char *model_done;		/* per tracker thread: handled */
	int model_done_cap;
	uint64_t model_pin_ns;		/* the last learned pin */
	int model_pending;		/* targets not pinned yet */
	double model_cost;		/* cm_cost of the learned mapping */
	char *cred;			/* munge credential made at start */
	uint64_t cred_ns;
	int disagree;			/* intervals detection disagreed */
	uint64_t last_new_thread_ns, last_task_line_ns;
	/* the progress guard (remap_decide.h): schedstat snapshots per
	 * tracker thread, the placement before the mapping judged */
	struct cm_decide_guard g;
};

/* ---- time --------------------------------------------------------- */

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double elapsed_s(const struct agent *a)
{
	return (double)(now_ns() - a->t0_ns) / 1e9;
}

static inline double ms_since(uint64_t t)
{
	return (double)(now_ns() - t) / 1e6;
}

/* Now, or the time of the decision being made (decide_ns). */
static inline uint64_t ag_now(const struct agent *a)
{
	return a->decide_ns ? a->decide_ns : now_ns();
}

static inline double ag_elapsed_s(const struct agent *a)
{
	return (double)(ag_now(a) - a->t0_ns) / 1e9;
}

/* ---- agent_place.c ------------------------------------------------ */

/* Record the step's placement in the timeline (exited threads -1, the
 * live count); the entry, or NULL on ENOMEM. */
struct cm_result_mapping *ag_record_mapping(struct agent *a, double cost,
					    const char *why);
/* Pin the threads of want (PU indices, -1: no wish) within the
 * placement invariant; the threads moved, -1 on error. */
int ag_apply_within_invariant(struct agent *a, int *want);
/* The progress guard: the window before the next mapping starts (an
 * interval's end); no mapping while it backs off; judge the last
 * mapping once its window has passed (every loop turn). */
void ag_guard_mark(struct agent *a);
int ag_guard_holding(const struct agent *a);
void ag_guard_poll(struct agent *a);
/* Static mode: map the file once; pin threads seen since the last call. */
int ag_static_prepare(struct agent *a, struct cm_error *err);
void ag_static_apply_new(struct agent *a);
/* Dynamic mode: the current PUs of a set (the number unplaced); the
 * co-location correction of this interval's events; the remap at an
 * interval's end (remap_decide.h) applied. */
int ag_current_pus(struct agent *a, const struct cm_place_set *s, int *pu);
void ag_correct_colocation(struct agent *a);
/* The share of the events of pairs pinned near each other that sampling
 * sees (CM_REMAP_NEAR_SEEN under real pinning in CPU time, else 1). */
double ag_near_seen(const struct agent *a);
void ag_remap(struct agent *a);

/* ---- agent_identity.c --------------------------------------------- */

/* The first root's executable and command line (while it may exec). */
void ag_refresh_identity(struct agent *a);
/* Is the application's identity worth taking now (exec'ed, and under
 * SPANK every task of the node announced, or 1 s passed)? */
int ag_app_identity_ready(struct agent *a);
/* exe_hash and argv_shape of the first root, once (wait: end of run). */
void ag_settle_app_identity(struct agent *a, int wait);

/* ---- agent_loop.c ------------------------------------------------- */

/* The sampling period and its cost, once measured. */
void ag_log_sampling(struct agent *a, const struct cm_collect_stats *st);

/* ---- agent_interval.c --------------------------------------------- */

/* Each live thread's CPU time so far (a->cpu_s). */
void ag_read_thread_cpu(struct agent *a);
/* Age the live matrix for the step's progress since it was last aged. */
void ag_age_live(struct agent *a);
/* Advance the step's progress clock to wall time now (a->app_ns). */
void ag_app_clock(struct agent *a, uint64_t now);
/* Has the interval run its length in the step's progress (or a wall
 * bound, or a checkpoint ended it)?  If not, the next look is set. */
int ag_interval_due(struct agent *a, uint64_t now);
/* Inside a long interval: fold and age; end the interval early when the
 * partners changed. */
void ag_checkpoint(struct agent *a);
/* End of an interval: merge, decide, map, age. */
void ag_interval_end(struct agent *a);

/* ---- agent_model.c ------------------------------------------------ */

/* The model is not (or no longer) used: the result says why. */
void ag_model_drop(struct agent *a, const char *why);
/* libcurl and a credential ready before the program runs. */
void ag_prepare_model_fetch(struct agent *a);
/* Ask the service for a model, once the application is known. */
void ag_model_fetch_now(struct agent *a);
/* Pin threads whose identity is final to their learned PU. */
void ag_model_apply_new(struct agent *a);
/* Set again learned pins the program undid, shortly after they were made. */
void ag_model_hold_pins(struct agent *a);
/* Learned mode at an interval's end: 1 when detection disagreed and the
 * run goes on as dynamic, else 0. */
int ag_learned_interval(struct agent *a);

/* ---- agent_fill.c ------------------------------------------------- */

/* Fill in the result and write or deliver it; the exit status. */
int ag_write_result(struct agent *a);

#endif
