/* sample_rate.h: the sampling period of the sample backend, chosen from a
 * budget: a pure policy (no clock, no system call: the caller measures).
 *
 * The sampling period is the overhead knob (docs/detection.md): each
 * sample costs the application the timer interrupt and the register dump
 * (~15 µs on a VM with a slow timer, a few µs on bare metal), and the agent ~1-2 µs more
 * reading, decoding and counting it, on the same CPUs.  The user gives a
 * budget, a fraction of the application's CPU time (--overhead, 1%), and
 * the agent spends it on samples:
 *
 * 1. At start the agent measures the cost of one sample on a thread of
 *    its own (cm_collect_measure_sample_cost: the same work timed in
 *    thread CPU time with and without sampling, cm_rate_cost_estimate
 *    below) and starts at
 *
 *        period = (sample cost + agent cost per sample) / target
 *
 *    (cm_rate_initial_period), so the overhead is on budget from the
 *    first sample on any machine.
 * 2. While the job runs it measures over windows (the first of ~1 s, then
 *    ~4 s)
 *
 *        overhead = (samples × sample_cost + agent CPU time) / app CPU
 *
 *    and, since both terms scale as 1/period, the period that would hold
 *    the target is
 *
 *        ideal = period × overhead / target        (clamped to [min, max]).
 *
 *    Changing the period re-creates the samplers (cm_collect_set_period:
 *    one perf_event_open per thread and CPU), so it changes only when the
 *    budget is missed: overhead above target × over (1.1: over budget, the
 *    user's promise is broken, change at once) or below target × under
 *    (0.7: budget left unspent, fewer samples than we could have; change
 *    when two decisions in a row say so, as a noisy window costs only some
 *    accuracy there).  The model gives the same ideal again after a
 *    change, so this does not oscillate.
 * 3. The budget is spent over the run, not at a flat rate (struct
 *    cm_rate_budget): evidence is needed most at the start of a step and
 *    after a phase change, so the run begins in a learning phase at
 *    learn_target (3% of the application's CPU time, "several percent")
 *    until the application has used learn_app_cpu_ns of CPU time (2 s),
 *    then watches at target (the budget × CM_RATE_AIM).  The learning
 *    phase's excess is repaid by the watching phase's margin under the
 *    budget: 2 s at 3% are 60 ms, which 0.6% under the budget repays in
 *    10 s of application CPU time (5 s of a run on 2 busy CPUs).  A
 *    phase change asks for another learning phase (cm_rate_budget_learn),
 *    half as long.  Each phase's spending is accounted from the CPU time
 *    really used (the application's, the agent's) and the samples taken.
 * 4. A learning phase ends on evidence, not on time alone: past its
 *    application CPU time it goes on while the samples that became
 *    evidence (the caller counts them: data references, not the stack,
 *    spins or system calls) are fewer than it needs
 *    (cm_rate_budget_evidence: CM_RATE_LEARN_EVIDENCE per thread that
 *    works, none once the structure is clear), up to
 *    CM_RATE_LEARN_MAX_FACTOR times its length.  Kernels
 *    whose samples land mostly on register spills, and large arrays whose
 *    sharing shows only in many samples, get them; the excess stays
 *    bounded (6 s of CPU at 3% for a 1% budget: 120 ms, repaid within
 *    20 s of application CPU time watching).
 */
#ifndef COMMAP_NODEAGENT_SAMPLE_RATE_H
#define COMMAP_NODEAGENT_SAMPLE_RATE_H

#include <stdint.h>

#define CM_RATE_DEFAULT_TARGET 0.01		/* 1% of the application */
/* The share of the user's budget the period aims at (the collector gives
 * the policy target = budget x CM_RATE_AIM).  The model does not see all
 * that the application pays: the cost measured at start runs register
 * arithmetic, which the interrupt does not disturb, and real code pays
 * more per sample (17 us per sample against 13.6 measured, +25%, on
 * one VM; on a quiet one: 3.7 us measured, and an elapsed
 * ratio of 1.008 (interquartile 0.996-1.025, 15 pairs) at 0.8 of the
 * budget, 4-6 us per sample, and the agent's own CPU on the same cores).
 * The cost per sample also grows as samples get sparser: from the
 * application's CPU ratios, ~4 us at 250 us periods but ~8-10 us at
 * 1 ms, while the calibration runs at 100 us.  At 0.5 and 0.6 of the
 * budget the elapsed ratio was 1.009-1.017 in six sets on a quiet
 * machine (at the promise, not under it); at 0.4 (1.4 ms here) it was
 * 1.001, and every accuracy workload still gave a cosine >= 0.92
 * (docs/PERFORMANCE.md, "Detection overhead"). */
#define CM_RATE_AIM 0.4
#define CM_RATE_DEFAULT_MIN_NS 250000ull	/* 250 µs */
#define CM_RATE_DEFAULT_MAX_NS 10000000ull	/* 10 ms */
#define CM_RATE_DEFAULT_COST_NS 15000ull	/* per sample when not
						 * measured (a slow-timer VM) */
#define CM_RATE_DEFAULT_AGENT_COST_NS 2000ull	/* agent per sample, until
						 * measured (-O2, docs) */
#define CM_RATE_DEFAULT_FIRST_DWELL_NS 1000000000ull	/* 1 s */
#define CM_RATE_DEFAULT_DWELL_NS 4000000000ull	/* 4 s */
#define CM_RATE_DEFAULT_MIN_APP_NS 200000000ull	/* 0.2 s of CPU */
#define CM_RATE_DEFAULT_OVER 1.1
#define CM_RATE_DEFAULT_UNDER 0.7
#define CM_RATE_DEFAULT_UNDER_CONFIRM 2
/* The learning phase (point 3): its target and length in application CPU
 * time; a later one (a phase change) lasts half as long. */
#define CM_RATE_DEFAULT_LEARN_TARGET 0.03
/* The collector's learning target: the user's budget times this (3% for
 * a 1% budget: the spend of a 1 s window stays under 5% even when real
 * code pays 25% more per sample than the model, and the agent's own CPU
 * comes on top). */
#define CM_RATE_LEARN_FACTOR 3.0
/* A phase change learns again only after this much application CPU time
 * of watching (a noisy pattern must not keep the rate at 3×: at most
 * 1 s in 11 s of CPU time at 3×, 0.2% of it above the budget). */
#define CM_RATE_RELEARN_GAP_NS 10000000000ull	/* 10 s of CPU */
/* The agent's CPU time per sample that the period is charged with at
 * most: its per-sample work (decoding from the cache, the table, the
 * overlap) is 1-2 us; what a drain costs beyond that (reading empty
 * rings, maps and code read once per new mapping or IP) does not shrink
 * with the period.  Charged in full it drove the period to its cap on a
 * busy node (100 us a sample at 10 ms, load 50), and kept it there. */
#define CM_RATE_AGENT_COST_MAX_NS 20000ull
#define CM_RATE_DEFAULT_LEARN_CPU_NS 2000000000ull	/* 2 s of CPU */
/* A learning phase lasts at most this many times its application CPU
 * time while its evidence is thin (point 4). */
#define CM_RATE_LEARN_MAX_FACTOR 3
/* Samples that became evidence a learning phase needs per thread that
 * works: a 64 MiB stencil's 8 threads gave cosine 0.95 from ~70 each
 * and 0.98 from ~140 (replayed); 256 leaves room for threads that got
 * less CPU than others on a busy node. */
#define CM_RATE_LEARN_EVIDENCE 256
/* ... unless the overlap's structure already repeats this well between
 * the halves of its permutation test (the collector then reports that
 * no more evidence is needed): clear patterns learn for their time only
 * (wl-progress's pairs on 256 KiB buffers went on to 4.9 s of CPU time
 * without this, its 60 s run's overhead 1.015x on a loaded machine). */
#define CM_RATE_LEARN_CLEAR_R 0.9

/* A measured sample cost is kept within these: below 0.5 µs is noise (an
 * interrupt and a register dump cost more), above 1 ms is no sampling
 * timer at all. */
#define CM_RATE_COST_MIN_NS 500ull
#define CM_RATE_COST_MAX_NS 1000000ull

struct cm_rate_config {
	double target;		/* overhead, fraction of app CPU, > 0 */
	uint64_t min_period_ns, max_period_ns;
	uint64_t sample_cost_ns;	/* cost of a sample to the app:
					 * measured at start, or the default */
	uint64_t agent_cost_ns;	/* the agent's CPU per sample, for the
				 * initial period (then measured) */
	uint64_t first_dwell_ns;	/* wall time before the first decision */
	uint64_t min_dwell_ns;	/* ... between later decisions */
	uint64_t min_app_cpu_ns;	/* app CPU needed to decide */
	double over, under;	/* change when overhead > target × over
				 * (> 1) or < target × under (< 1) */
	int under_confirm;	/* ... the latter only at this many
				 * decisions in a row (>= 1) */
	double learn_target;	/* while learning (point 3); <= target:
				 * no learning phase */
	uint64_t learn_app_cpu_ns;	/* application CPU time of the first
					 * learning phase */
};

void cm_rate_config_default(struct cm_rate_config *cfg);

/* The period that spends the target on samples of cfg->sample_cost_ns
 * plus cfg->agent_cost_ns each, clamped to [min, max]. */
uint64_t cm_rate_initial_period(const struct cm_rate_config *cfg);

/* The same for another target (a phase's, point 3). */
uint64_t cm_rate_period_for(const struct cm_rate_config *cfg, double target);

/* The measurements of the current window, accumulated by the policy. */
struct cm_rate_state {
	uint64_t period_ns;	/* period in use */
	uint64_t window_start_ns;	/* wall time of the last decision */
	uint64_t app_cpu_ns, agent_cpu_ns, samples;	/* in the window */
	double last_overhead;	/* estimate at the last decision, -1 */
	uint64_t decisions, changes;
	int under_streak;	/* decisions in a row under budget */
};

/* Start with the period in use, period_ns, at time now_ns. */
void cm_rate_init(struct cm_rate_state *st, const struct cm_rate_config *cfg,
		  uint64_t period_ns, uint64_t now_ns);

/* The overhead fraction of a window: (samples × sample_cost + agent) /
 * app; -1 when app_cpu_ns is 0. */
double cm_rate_overhead(const struct cm_rate_config *cfg, uint64_t app_cpu_ns,
			uint64_t agent_cpu_ns, uint64_t samples);

/* The period that would hold the target for a window measured at
 * period_ns, clamped; max_period_ns when there is no application CPU
 * time, min_period_ns when the overhead is 0. */
uint64_t cm_rate_ideal(const struct cm_rate_config *cfg, uint64_t period_ns,
		       uint64_t app_cpu_ns, uint64_t agent_cpu_ns,
		       uint64_t samples);

/* Add one interval's measurements (deltas) and decide at time now_ns:
 * first_dwell_ns after cm_rate_init, then min_dwell_ns after each
 * decision, with at least min_app_cpu_ns in the window.  Returns the new
 * period when the period should change now (the caller applies it, then
 * calls cm_rate_applied), 0 otherwise.  A decision (a change or not)
 * starts a new window. */
uint64_t cm_rate_update(struct cm_rate_state *st,
			const struct cm_rate_config *cfg,
			uint64_t app_cpu_ns, uint64_t agent_cpu_ns,
			uint64_t samples, uint64_t now_ns);

/* The period period_ns is in use from now_ns (also after a failed change:
 * pass the old one). */
void cm_rate_applied(struct cm_rate_state *st, uint64_t period_ns,
		     uint64_t now_ns);

/* ---- The budget over the run (point 3) ------------------------------ */

enum cm_rate_phase {
	CM_RATE_LEARN = 0,	/* at cfg->learn_target */
	CM_RATE_WATCH,		/* at cfg->target */
};

/* Name of a phase ("learn", "watch"); "?" if out of range. */
const char *cm_rate_phase_name(enum cm_rate_phase p);

/* One phase as it was spent: its start, and what it used. */
struct cm_rate_spend {
	enum cm_rate_phase phase;
	uint64_t start_ns;	/* caller's clock (the collector: ns since
				 * it started) */
	uint64_t period_ns;	/* period at its start */
	uint64_t app_cpu_ns;	/* application CPU time during it */
	uint64_t agent_cpu_ns;	/* the agent's per-sample CPU time */
	uint64_t samples;
};

/* Phases kept: the first, then the latest ones. */
#define CM_RATE_SPEND_MAX 8

struct cm_rate_budget {
	enum cm_rate_phase phase;	/* current */
	uint64_t learn_left_ns;	/* application CPU left to learn */
	uint64_t learn_extra_ns;	/* ... then more while the evidence
					 * is thin (point 4) */
	uint64_t useful, useful_base;	/* evidence so far (the caller's
					 * count), at the phase's start */
	uint64_t useful_need;	/* evidence the phase needs; 0: none */
	int nspend;
	struct cm_rate_spend spend[CM_RATE_SPEND_MAX];	/* oldest first */
	uint64_t phases;	/* begun so far (also those not kept) */
	struct cm_rate_spend total[2];	/* per phase kind, whole run */
};

/* Begin the run: learning when cfg->learn_target > cfg->target and
 * learn_app_cpu_ns > 0, else watching at once. */
void cm_rate_budget_init(struct cm_rate_budget *b,
			 const struct cm_rate_config *cfg, uint64_t period_ns,
			 uint64_t now_ns);

/* The target of the current phase. */
double cm_rate_budget_target(const struct cm_rate_budget *b,
			     const struct cm_rate_config *cfg);

/* The evidence so far: useful, the caller's count of samples that became
 * evidence since the run began (it only grows), and threads, those that
 * work now: the learning phase needs CM_RATE_LEARN_EVIDENCE of them per
 * thread since it began (point 4).  Never called: the learning phase
 * ends on its CPU time alone. */
void cm_rate_budget_evidence(struct cm_rate_budget *b, uint64_t useful,
			     int threads);

/* Account one interval's use to the current phase.  Returns 1 when the
 * learning phase is over now: it has used its application CPU time and
 * has the evidence it needs, or it has used CM_RATE_LEARN_MAX_FACTOR
 * times that time (the caller then switches:
 * cm_rate_budget_begin(b, CM_RATE_WATCH, ...)), 0 otherwise. */
int cm_rate_budget_account(struct cm_rate_budget *b, uint64_t app_cpu_ns,
			   uint64_t agent_cpu_ns, uint64_t samples);

/* Begin phase p at now_ns with period period_ns. */
void cm_rate_budget_begin(struct cm_rate_budget *b, enum cm_rate_phase p,
			  uint64_t period_ns, uint64_t now_ns);

/* A phase change: learn again for half the first phase's CPU time (and
 * up to CM_RATE_LEARN_MAX_FACTOR times that while the evidence is thin).
 * Returns 1 when a learning phase begins now, 0 when it is off, already
 * learning, or the watching phase has not yet had
 * CM_RATE_RELEARN_GAP_NS of application CPU time. */
int cm_rate_budget_learn(struct cm_rate_budget *b,
			 const struct cm_rate_config *cfg, uint64_t period_ns,
			 uint64_t now_ns);

/* The overhead fraction of a spend, as cm_rate_overhead; -1 no app CPU. */
double cm_rate_spend_overhead(const struct cm_rate_config *cfg,
			      const struct cm_rate_spend *sp);

/* ---- Measuring the cost of a sample ---------------------------------
 *
 * The calibration (cm_collect_measure_sample_cost) runs the same fixed
 * work in chunks on one thread, in rounds: `chunks` chunks not sampled,
 * then `chunks` chunks sampled at a short period, each timed in thread CPU
 * time (the clock that also charges the application for its samples:
 * CPU time, not wall time, so a preempted chunk is not slower).  Per
 * round, cost = chunks × (median sampled − median not sampled) / samples
 * taken in the sampled chunks; the estimate is the median over the rounds
 * (medians: a chunk disturbed by another job's cache traffic or an
 * interrupt does not move it). */
#define CM_RATE_CALIB_ROUNDS 4
#define CM_RATE_CALIB_CHUNKS 4

struct cm_rate_calib {
	int rounds, chunks;	/* used, <= the maxima above */
	uint64_t without_ns[CM_RATE_CALIB_ROUNDS][CM_RATE_CALIB_CHUNKS];
	uint64_t with_ns[CM_RATE_CALIB_ROUNDS][CM_RATE_CALIB_CHUNKS];
	uint64_t samples[CM_RATE_CALIB_ROUNDS];	/* in the sampled chunks */
};

/* The cost of one sample from a calibration, ns, within
 * [CM_RATE_COST_MIN_NS, CM_RATE_COST_MAX_NS]; 0 when it cannot say (no
 * round with samples, bad sizes). */
uint64_t cm_rate_cost_estimate(const struct cm_rate_calib *cal);

#endif
