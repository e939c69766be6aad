/* remap_decide.h: the dynamic mode's decisions, one code for the live
 * agent and for the replay of a recording.
 *
 * What the agent decides at an interval's end (the partner filter, the
 * decision to compute, the plan within the placement invariant, the hold
 * against undoing a remap, "nothing to gain"), how it ages the live
 * matrix and corrects co-located pairs, and how the progress guard
 * judges a mapping, as functions of the state they need: the placement
 * (OS PU per thread, -1 none), which threads run, the decision's time,
 * the matrices.  The callers keep only the side effects: the agent pins
 * (agent_place.c), reads schedstat, records and logs; the replay
 * (replay_clock.c) moves its threads in a placement of its own and reads
 * the recorded snapshots.  So a replay makes the agent's decisions with
 * the agent's code, not with a copy of it.
 *
 * Pure: no I/O, no clock; every time is the caller's (CLOCK_MONOTONIC
 * ns).  Not thread-safe.
 */
#ifndef COMMAP_NODEAGENT_REMAP_DECIDE_H
#define COMMAP_NODEAGENT_REMAP_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "agent_result.h"
#include "commap/matrix.h"
#include "commap/topology.h"
#include "progress_guard.h"
#include "remap_policy.h"

/* The decisions' state between intervals. */
struct cm_decide {
	const struct cm_topo *topo;	/* the PUs mapped onto (not owned) */
	double alpha;			/* aging per 200 ms of progress */
	double gain;			/* what a remap must bring */
	int interval_ms;		/* the current interval's length */
	int recheck;			/* remap_policy.h: intervals left */
	int *partner, npartner;		/* the last kept heaviest partners */
	/* the placement before the last complete remap (OS PU per thread),
	 * which an undo would return to; undos in a row; its time */
	int *undo_os, nundo, undos;
	uint64_t last_full_ns;
	uint64_t last_aged_ns;		/* progress clock: live last aged */
};

/* An interval's end as the caller sees it. */
struct cm_decide_in {
	int n;			/* threads of the step (indices < n) */
	const int *alive;	/* per thread: 1 while it runs */
	const int *cur_os;	/* per thread: OS PU, -1 not placed */
	uint64_t t_ns;		/* the decision's time */
	int holding;		/* the progress guard backs off: no remap */
	int have_mapping;	/* a mapping was made before */
	double near_seen;	/* remap_policy.h, CM_REMAP_NEAR_SEEN or 1 */
};

/* What was decided. */
struct cm_decide_out {
	struct cm_remap_input in;	/* the policy's input (for logs) */
	struct cm_remap_decision d;	/* the policy's decision */
	int nset;			/* threads that communicate */
	int computed;			/* a plan was computed */
	struct cm_remap_plan plan;	/* ... the plan (kind KEEP: none) */
	int repaired;			/* moved by the invariant */
	int avoided_undo;		/* plan.avoided: the hold applied */
	int apply;		/* 1: move every thread to target[i] */
	int *target;		/* n PU indices (-1 leave), when apply */
	double cost;		/* the new placement's cost */
	const char *why;	/* the timeline's reason */
	char not_pinned[256];	/* set: nothing to gain, this is why */
	char error[CM_ERROR_TEXT_MAX];	/* set: the plan failed */
};

/* Start: nothing placed, the first interval's length, aged at t0_ns. */
void cm_decide_init(struct cm_decide *d, const struct cm_topo *topo,
		    double alpha, double gain, uint64_t t0_ns);
void cm_decide_free(struct cm_decide *d);
void cm_decide_out_free(struct cm_decide_out *o);

/* The partner filter (SPCD §IV-A) over live for n threads: how many
 * threads' heaviest partner changed since the last kept ones; keep: these
 * become the kept ones (an interval's end), else only look (a
 * checkpoint).  0 on ENOMEM. */
int cm_decide_partners(struct cm_decide *d, const struct cm_matrix *live,
		       int n, int keep);

/* Age live for the step's progress since it was last aged (app_ns, the
 * progress clock; whole milliseconds; a clock that stands or goes back
 * ages by nothing). */
void cm_decide_age(struct cm_decide *d, struct cm_matrix *live,
		   uint64_t app_ns);

/* The events in fresh were observed with the threads where they are now
 * (cur_os, ncur of them): correct pairs pinned near each other for being
 * seen less (cm_remap_correct_near) unless near_seen >= 1.  0, -1 ENOMEM. */
int cm_decide_correct_colocation(const struct cm_topo *topo,
				 struct cm_matrix *fresh, const int *cur_os,
				 int ncur, double near_seen);

/* An interval's end: the partner filter (kept), the policy's decision,
 * the recheck count, and unless in->holding, the plan and what it
 * leaves (for an undo); the next interval's length.  out (freed by
 * cm_decide_out_free) says what to apply and why, or why not.  0, or -1
 * ENOMEM (the state then as before but for the partners). */
int cm_decide_interval(struct cm_decide *d, const struct cm_matrix *live,
		       const struct cm_decide_in *in,
		       struct cm_decide_out *out);

/* The timeline entry of a placement at at_s: exited threads -1, the live
 * count with it (so the placement invariant can be checked from the
 * result alone).  The entry, or NULL on ENOMEM. */
struct cm_result_mapping *cm_decide_timeline_add(struct cm_agent_result *res,
						 double at_s, int n,
						 const int *alive,
						 const int *cur_os,
						 double cost, const char *why);

/* ---- the progress guard (progress_guard.h) ------------------------- */

/* Snapshots per thread (cpu, wait: -1 unread) of the window before a
 * mapping and at it, the placement it left, whether it is being judged,
 * and the backoff after an undo. */
struct cm_decide_guard {
	double *cpu, *wait, *cpu_a, *wait_a;
	int cap;
	uint64_t snap_ns, apply_ns, hold_until_ns;
	int pending, have_before, undos;
	int unjudged;	/* mappings since the last kept one not judged */
	struct cm_progress before;
	int *prev_os, nprev;
};

/* Room for n threads' snapshots (new ones -1).  0, -1 ENOMEM. */
int cm_decide_guard_grow(struct cm_decide_guard *g, int n);
void cm_decide_guard_free(struct cm_decide_guard *g);
/* Does the backoff after an undo still hold at t? */
int cm_decide_guard_holding(const struct cm_decide_guard *g, uint64_t t);
/* A mapping was applied at t, g->cpu_a/wait_a read then for n threads;
 * leaving (nleaving) is the placement it moved from.  The placement an
 * undo returns to is the last one judged good (or the one before any
 * mapping): a mapping while one is being judged restarts the window
 * after it, and one after a mapping not judged (-1 below) keeps the way
 * back of that one, so an undo of the pieces of one mapping returns to
 * before the first piece. */
void cm_decide_guard_applied(struct cm_decide_guard *g, uint64_t t, int n,
			     const int *leaving, int nleaving);
/* The window after the mapping has passed, g->cpu/wait read at t for n
 * threads: 1 undo it (why says the measures), 0 keep it, -1 not judged
 * (no reading, or no window before and nothing stacked).  stacked: some
 * PU holds more live threads than the placement invariant allows; npus
 * of the machine.  A stacked placement is undone when it is worse than
 * the window before or than the unpinned model (cm_guard_baseline). */
int cm_decide_guard_judge(struct cm_decide_guard *g, uint64_t t, int n,
			  int stacked, int npus, char *why, size_t len);
/* The mapping was undone at t: no mapping for the backoff. */
void cm_decide_guard_undone(struct cm_decide_guard *g, uint64_t t);
/* Some PU holds more of the n threads that run (alive) than the
 * placement invariant allows (cur_os: OS PU, -1 none)? */
int cm_decide_stacked(const struct cm_topo *topo, int n, const int *alive,
		      const int *cur_os);

#endif
