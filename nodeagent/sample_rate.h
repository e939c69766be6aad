/* sample_rate.h: the adaptive sampling period of the sample backend, a
 * pure policy (no clock, no system call: the caller measures).
 *
 * The sampling period is the overhead knob (docs/detection.md): each
 * sample costs the application ~15 µs on this VM (timer interrupt and
 * register dump, platform notes), and the agent spends ~1-2 µs more per
 * sample reading, decoding and counting it, on the same CPUs.  Like SPCD,
 * which adapts its fault rate to hold a cost target, the agent measures
 * over a window of a few seconds
 *
 *     overhead = (samples × sample_cost + agent CPU time) / application CPU
 *
 * and, since both terms scale as 1/period, the period that would hold the
 * target is
 *
 *     ideal = period × overhead / target        (clamped to [min, max]).
 *
 * Changing the period re-creates the samplers (cm_collect_set_period: one
 * perf_event_open per thread and CPU), so it changes rarely: only after
 * min_dwell_ns since the last decision, with at least min_app_cpu_ns of
 * application CPU time measured, and only when ideal differs from the
 * current period by at least `factor` (2×) either way.  The factor is the
 * hysteresis: the model gives the same ideal again after a change, and
 * noise must double the estimate to move it.
 */
#ifndef COMMAP_NODEAGENT_SAMPLE_RATE_H
#define COMMAP_NODEAGENT_SAMPLE_RATE_H

#include <stdint.h>

#define CM_RATE_DEFAULT_TARGET 0.01		/* 1% of the application */
#define CM_RATE_DEFAULT_MIN_NS 250000ull	/* 250 µs */
#define CM_RATE_DEFAULT_MAX_NS 10000000ull	/* 10 ms */
#define CM_RATE_DEFAULT_COST_NS 15000ull	/* per sample, this VM */
#define CM_RATE_DEFAULT_DWELL_NS 5000000000ull	/* 5 s */
#define CM_RATE_DEFAULT_MIN_APP_NS 200000000ull	/* 0.2 s of CPU */
#define CM_RATE_DEFAULT_FACTOR 2.0

struct cm_rate_config {
	double target;		/* overhead, fraction of app CPU, > 0 */
	uint64_t min_period_ns, max_period_ns;
	uint64_t sample_cost_ns;	/* cost of a sample to the app */
	uint64_t min_dwell_ns;	/* wall time between decisions */
	uint64_t min_app_cpu_ns;	/* app CPU needed to decide */
	double factor;		/* change only for ideal/period >= factor
				 * or <= 1/factor; > 1 */
};

void cm_rate_config_default(struct cm_rate_config *cfg);

/* The measurements of the current window, accumulated by the policy. */
struct cm_rate_state {
	uint64_t period_ns;	/* period in use */
	uint64_t window_start_ns;	/* wall time of the last decision */
	uint64_t app_cpu_ns, agent_cpu_ns, samples;	/* in the window */
	double last_overhead;	/* estimate at the last decision, -1 */
	uint64_t decisions, changes;
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

/* Add one interval's measurements (deltas) and decide at time now_ns.
 * Returns the new period when the period should change now (the caller
 * applies it, then calls cm_rate_applied), 0 otherwise.  A decision (a
 * change or not) starts a new window. */
uint64_t cm_rate_update(struct cm_rate_state *st,
			const struct cm_rate_config *cfg,
			uint64_t app_cpu_ns, uint64_t agent_cpu_ns,
			uint64_t samples, uint64_t now_ns);

/* The period period_ns is in use from now_ns (also after a failed change:
 * pass the old one). */
void cm_rate_applied(struct cm_rate_state *st, uint64_t period_ns,
		     uint64_t now_ns);

#endif
