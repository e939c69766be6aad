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
};

void cm_rate_config_default(struct cm_rate_config *cfg);

/* The period that spends the target on samples of cfg->sample_cost_ns
 * plus cfg->agent_cost_ns each, clamped to [min, max]. */
uint64_t cm_rate_initial_period(const struct cm_rate_config *cfg);

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
