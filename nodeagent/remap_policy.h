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
 *  - A new mapping moves placed threads only when its predicted cost
 *    (commap/cost.h) is lower than the current mapping's by more than a
 *    relative `gain` (default 5%) and more (below).
 *  - LHMapping §3.4.1, matrix aging: after each grouping computation every
 *    weight is multiplied by alpha (0.75).
 *  - Stability (cm_remap_plan): threads that start communicating late are
 *    placed around the placed ones (cm_map_incremental), which stay; a
 *    complete remap moves placed threads only when its gain is above the
 *    threshold AND above the sampling noise (z = 3 standard deviations of
 *    the cost difference, weights taken as event counts), so two
 *    placements that are equally good in truth rarely alternate, and a
 *    remap back to where the previous one took the threads from waits a
 *    hold that doubles with each such undo; threads with too little
 *    evidence of their own are not mapped at all.
 *  - Co-location bias: under real pinning, the events of pairs pinned near
 *    each other are corrected for being seen less (cm_remap_correct_near,
 *    CM_REMAP_NEAR_SEEN) before any of the above compares placements.
 */
#ifndef COMMAP_REMAP_POLICY_H
#define COMMAP_REMAP_POLICY_H

#include <stdint.h>

#include "commap/error.h"
#include "commap/matrix.h"
#include "commap/topology.h"

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
/* A thread takes part in the mapping only with this much communication
 * of its own (aged weight), and at least CM_REMAP_MIN_THREAD_SHARE of the
 * busiest thread's: MPI progress threads and other helpers with a handful
 * of events are left where they are (placed or not). */
#define CM_REMAP_MIN_THREAD_EVIDENCE 4.0
#define CM_REMAP_MIN_THREAD_SHARE 0.05
/* After a pattern change, the partner filter says "stable" as soon as the
 * new partners are established, but the candidate computed at the change
 * may not have been worth it yet (the aged matrix still mixed both
 * phases, or the gain was within the noise): candidates are computed for
 * this many more intervals, until one is applied. */
#define CM_REMAP_RECHECK_INTERVALS 4
/* A remap back to the placement the previous remap left (up to tree
 * automorphisms) is an oscillation unless the pattern really went back:
 * on this machine the communication of threads sharing a PU was detected
 * at about half the rate of the same threads on two PUs (MPI ring, 2 PUs),
 * so the grouping not in use looked better after a few seconds; that bias
 * is now corrected (CM_REMAP_NEAR_SEEN), and the hold stays as a bound on
 * what noise and other biases can still do.  Such an undo waits CM_REMAP_UNDO_HOLD_MS after the previous remap,
 * doubled for each undo in a row: churn grows with the log of the run
 * time, and a real return to an earlier phase is still followed. */
#define CM_REMAP_UNDO_HOLD_MS 4000.0
#define CM_REMAP_UNDO_DOUBLINGS_MAX 8
/* Standard deviations of sampling noise a gain must exceed.  Events are
 * burstier than Poisson (one sample gives an event with each recent
 * sharer; threads sharing a PU run in time slices): the two equally good
 * groupings of a 4-thread ring on 2 PUs showed apparent gains of 1.1 to
 * 3.5 of these deviations (MPI ring, 0.5 - 1 ms period), real phase
 * changes 2.7 - 8.5 at their first detection (t0730's phases, 250 us).
 * 3 keeps most noise out; what passes is bounded by the undo hold. */
#define CM_REMAP_NOISE_Z 3.0
/* Co-location bias of the sample backend (docs/detection.md, "Co-location
 * bias"): samples are taken in CPU time, and a thread spends less CPU time
 * per byte on data it shares with a thread near it (same PU or a cache
 * below the L3: the lines stay in that cache) than with a thread on
 * another core (every line crosses between private caches).  An event
 * needs a sample of each of the two threads on the block, so the bias
 * enters twice: the same pair pinned to one PU was detected at 0.40 - 0.61
 * (median 0.49) of its rate on two PUs, with the same buffer passes
 * (4-thread ring pinned in both groupings, 12 pairs in 6 runs; per
 * buffer the samples were 0.72 - 0.75 of the remote buffer's).  Uncorrected, the grouping in
 * use always looked about twice worse than the alternative.  The agent
 * divides what a pair pinned near each other shows by this factor, the
 * lowest ratio measured, so a candidate must be better even if the near
 * pairs were seen at the least rate measured. */
#define CM_REMAP_NEAR_SEEN 0.4

/* Next interval: cur - 50 ms when the pattern changed, cur + 50 ms when
 * not, clamped to [50, 1000] ms (LHMapping §3.4.2). */
int cm_remap_next_interval(int cur_ms, int pattern_changed);

/* The aging factor after an interval of interval_ms: alpha per
 * CM_REMAP_INTERVAL_MS_START of it, alpha^(interval_ms / 200 ms), so the
 * matrix remembers the same wall time whatever the interval has grown to
 * (LHMapping §3.4.1 ages once per grouping, and with §3.4.2's 1 s
 * intervals that remembered ~4 s: a change of partners after a long
 * stable phase took 2.6 s to show).  1 for an empty interval. */
double cm_remap_aging(double alpha, int interval_ms);

/* The application's progress clock (LHMapping §3.4 ages per grouping
 * interval: what matters is the program's progress, not the clock).  On
 * a busy node a starved program gets its samples per CPU-second as
 * usual but few CPU-seconds per wall second: aged by wall time, its
 * evidence decayed before it could decide anything.  The step's progress
 * in wall_ns of wall time, in which its threads used cpu_ns of CPU time
 * together, `ran` of them some, the busiest max_ns, on at most `cpus`
 * CPUs: the larger of cpu_ns / min(ran, cpus) (the CPUs it could use,
 * the share it got) and max_ns (one thread at full speed while the
 * others wait is full speed too), plus *credit_ns.  At
 * CM_REMAP_FULL_SPEED of wall_ns or more the program runs at full speed:
 * wall_ns exactly, so that it ages as by wall time (quiet machines and
 * time slices change nothing); below, the progress itself (0 when no
 * thread ran: a blocked program's evidence did not change).  The kernel
 * accounts a running thread's CPU time at its ticks, so one reading may
 * show more than the wall time and the next as much less: what full
 * speed measured beyond wall_ns is carried in *credit_ns (up to
 * CM_REMAP_PROGRESS_CREDIT_NS) to the next call, below full speed it is
 * spent (credit_ns NULL: none).  ran < 0: nothing could be measured (no
 * thread readable), wall_ns as before. */
#define CM_REMAP_FULL_SPEED 0.9
#define CM_REMAP_PROGRESS_CREDIT_NS 100000000ull
uint64_t cm_remap_progress(uint64_t wall_ns, uint64_t cpu_ns, int ran,
			   int cpus, uint64_t max_ns, uint64_t *credit_ns);

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
	int recheck;		/* intervals left to recheck a pattern
				 * change whose candidate was not (yet)
				 * worth it (CM_REMAP_RECHECK_INTERVALS) */
};

struct cm_remap_decision {
	int compute;		/* compute a candidate mapping */
	int pattern_changed;
	int next_interval_ms;
	const char *reason;	/* "initial", "pattern", "new-threads",
				 * "recheck", or why not:
				 * "no-communication", "little-evidence",
				 * "stable" */
};

/* Decide whether to compute a candidate mapping this interval; the caller
 * then applies it only if cm_remap_worth() (or unplaced threads). */
void cm_remap_decide(const struct cm_remap_input *in,
		     struct cm_remap_decision *out);

/* Does a thread whose row of the aged matrix sums to row_sum, the
 * busiest thread's to max_row_sum, have enough evidence to be mapped? */
int cm_remap_thread_has_evidence(double row_sum, double max_row_sum);

/* Are PUs a and b (indices) near for the co-location bias: both placed
 * and closer than the L3's distance weight (the same PU, SMT siblings, a
 * shared L1 or L2)? */
int cm_remap_near(const struct cm_topo *topo, int a, int b);

/* Correct the events m (n threads, indexed like pu) observed while the
 * threads were pinned to pu (PU indices, -1: not pinned, its edges are
 * left alone) for the co-location bias: every edge between two threads
 * pinned near each other (cm_remap_near) is divided by seen (0 < seen <=
 * 1; CM_REMAP_NEAR_SEEN).  Returns the number of edges corrected, -1 with
 * errno EINVAL on bad arguments. */
int cm_remap_correct_near(const struct cm_topo *topo, struct cm_matrix *m,
			  int n, const int *pu, double seen);

/* Sampling noise of the cost difference between placements a and b (PU
 * indices, n threads, all placed): sqrt(sum over edges of w * (d_a -
 * d_b)^2), each weight taken as a Poisson count of events (an aged
 * weight has less variance than that: the bound is conservative).
 * Edges whose distance is the same in both contribute nothing.  With
 * near_seen < 1 the weights of pairs near in a were corrected by
 * cm_remap_correct_near (w = events / near_seen): their variance is
 * w / near_seen.  near_seen = 1: uncorrected weights. */
double cm_remap_cost_noise(const struct cm_topo *topo,
			   const struct cm_matrix *m, int n, const int *a,
			   const int *b, double near_seen);

/* Is moving from a placement of cost cost_cur to one of cost_new worth
 * its migrations?  cm_remap_worth() and the gain exceeds
 * CM_REMAP_NOISE_Z * noise (cm_remap_cost_noise of the two). */
int cm_remap_accept(double cost_cur, double cost_new, double noise,
		    double gain);

/* What cm_remap_plan chose. */
enum cm_remap_plan_kind {
	CM_REMAP_KEEP = 0,	/* nothing worth changing */
	CM_REMAP_INCREMENTAL,	/* new threads placed, placed ones stay */
	CM_REMAP_FULL,		/* everyone remapped (from scratch) */
};

struct cm_remap_plan {
	enum cm_remap_plan_kind kind;
	double cost_cur;	/* current placement, -1 if incomplete */
	double cost_base;	/* current, completed incrementally */
	double cost_full;	/* the complete candidate */
	double cost_new;	/* of the plan's mapping */
	double noise;		/* cm_remap_cost_noise(base, full) */
	int placed_new;		/* threads placed for the first time */
	int moved;		/* placed threads that change PU */
	int avoided;		/* the complete candidate was worth it but
				 * equivalent to `avoid`: not taken */
};

/* Are placements a and b of n threads the same up to automorphisms of the
 * tree (cm_map_align)?  0 when a thread is unplaced in either (or on
 * error). */
int cm_remap_equivalent(const struct cm_topo *topo, int n, const int *a,
			const int *b);

/* May a remap that undoes the previous one happen since_ms after it,
 * after `undos` undos in a row?  since_ms >= CM_REMAP_UNDO_HOLD_MS x
 * 2^min(undos, CM_REMAP_UNDO_DOUBLINGS_MAX). */
int cm_remap_undo_allowed(double since_ms, int undos);

/* The mapping to apply for the n threads of m, currently on cur (PU
 * indices, -1 not placed yet), written to pu:
 *  - no thread placed: the complete candidate (cm_map, auto);
 *  - otherwise the base is cur with the unplaced threads placed by
 *    cm_map_incremental; the complete candidate, aligned to the base
 *    (cm_map_align), replaces it only if cm_remap_accept(base, full)
 *    with the relative gain `gain`, and it is not equivalent to `avoid`
 *    (PU indices, n entries; NULL: nothing to avoid), the placement an
 *    undo would return to while the hold is on (cm_remap_undo_allowed);
 *    near_seen: as for cm_remap_cost_noise (the weights of m were
 *    corrected for the co-location bias under cur, or 1).
 * 0 on success (plan filled); -1 with errno/err when no mapping could be
 * made (then pu is unspecified). */
int cm_remap_plan(const struct cm_topo *topo, const struct cm_matrix *m,
		  int n, const int *cur, const int *avoid, double gain,
		  double near_seen, int *pu, struct cm_remap_plan *plan,
		  struct cm_error *err);

#endif
