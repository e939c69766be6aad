/* remap_policy.h: when the dynamic agent recomputes and applies a mapping.
 *
 * Pure functions over matrices and numbers, unit-tested
 * (tests/agent/test_remap_policy.c):
 *
 *  - LHMapping §3.4.2, periodic control: the interval between two grouping
 *    computations starts at 200 ms; if the communication pattern did not
 *    change it grows by 50 ms, if it did it shrinks by 50 ms, and it stays
 *    within 50 ms .. 1 s.
 *  - SPCD §IV-A, communication filter: each thread's partner is the thread
 *    it communicates with most; the pattern changed when at least
 *    `partner_threshold` (2) threads changed partner since the last check.
 *  - A new mapping is applied only when its predicted cost (commap/cost.h)
 *    is lower than the current mapping's by more than a relative `gain`
 *    (default 5%), or when threads are not placed yet.
 *  - LHMapping §3.4.1, matrix aging: after each grouping computation every
 *    weight is multiplied by alpha (0.75).
 */
#ifndef COMMAP_REMAP_POLICY_H
#define COMMAP_REMAP_POLICY_H

#include "commap/matrix.h"

#define CM_REMAP_INTERVAL_MS_START 200
#define CM_REMAP_INTERVAL_MS_STEP 50
#define CM_REMAP_INTERVAL_MS_MIN 50
#define CM_REMAP_INTERVAL_MS_MAX 1000
#define CM_REMAP_PARTNER_THRESHOLD 2
#define CM_REMAP_ALPHA 0.75
/* Communication events (matrix weight) below which nothing is mapped: a
 * stray event between independent threads (two threads touching one
 * block once, a sample mis-keyed) must not move anyone. */
#define CM_REMAP_MIN_EVIDENCE 8.0

/* Next interval: cur - 50 ms when the pattern changed, cur + 50 ms when
 * not, clamped to [50, 1000] ms (LHMapping §3.4.2). */
int cm_remap_next_interval(int cur_ms, int pattern_changed);

/* partner[i] = the heaviest partner of thread i in m (ties: lower index),
 * -1 for threads without communication; i < n (threads beyond the
 * matrix's size get -1).  SPCD §IV-A. */
void cm_remap_partners(const struct cm_matrix *m, int n, int *partner);

/* How many of threads 0..n-1 have a partner in now[] different from
 * before[] (before has nbefore entries; threads beyond it count as
 * changed when they have a partner now). */
int cm_remap_partners_changed(const int *before, int nbefore,
			      const int *now, int n);

/* Is the candidate worth applying?  1 when cost_new < cost_cur *
 * (1 - gain) (cost_cur > 0), 0 otherwise (including cost_cur == 0:
 * nothing to gain). */
int cm_remap_worth(double cost_cur, double cost_new, double gain);

/* What to do at the end of an interval. */
struct cm_remap_input {
	int interval_ms;	/* current interval */
	int partners_changed;	/* cm_remap_partners_changed() */
	int partner_threshold;	/* SPCD: 2 */
	int unplaced;		/* live communicating threads not pinned yet */
	int have_mapping;	/* a mapping was applied before */
	double comm_total;	/* total weight of the matrix */
};

struct cm_remap_decision {
	int compute;		/* compute a candidate mapping */
	int pattern_changed;
	int next_interval_ms;
	const char *reason;	/* "initial", "pattern", "new-threads", or
				 * why not: "no-communication",
				 * "little-evidence", "stable" */
};

/* Decide whether to compute a candidate mapping this interval; the caller
 * then applies it only if cm_remap_worth() (or unplaced threads). */
void cm_remap_decide(const struct cm_remap_input *in,
		     struct cm_remap_decision *out);

#endif
