/* sample_rate.c: adaptive sampling period (see sample_rate.h). */
#include "config.h"

#include <string.h>

#include "sample_rate.h"

void cm_rate_config_default(struct cm_rate_config *cfg)
{
	cfg->target = CM_RATE_DEFAULT_TARGET;
	cfg->min_period_ns = CM_RATE_DEFAULT_MIN_NS;
	cfg->max_period_ns = CM_RATE_DEFAULT_MAX_NS;
	cfg->sample_cost_ns = CM_RATE_DEFAULT_COST_NS;
	cfg->min_dwell_ns = CM_RATE_DEFAULT_DWELL_NS;
	cfg->min_app_cpu_ns = CM_RATE_DEFAULT_MIN_APP_NS;
	cfg->factor = CM_RATE_DEFAULT_FACTOR;
}

static uint64_t clamp(const struct cm_rate_config *cfg, double p)
{
	if (!(p >= (double)cfg->min_period_ns))	/* also NaN */
		return cfg->min_period_ns;
	if (p >= (double)cfg->max_period_ns)
		return cfg->max_period_ns;
	return (uint64_t)p;
}

void cm_rate_init(struct cm_rate_state *st, const struct cm_rate_config *cfg,
		  uint64_t period_ns, uint64_t now_ns)
{
	(void)cfg;
	memset(st, 0, sizeof(*st));
	st->period_ns = period_ns;	/* as in use, even out of bounds */
	st->window_start_ns = now_ns;
	st->last_overhead = -1;
}

double cm_rate_overhead(const struct cm_rate_config *cfg, uint64_t app_cpu_ns,
			uint64_t agent_cpu_ns, uint64_t samples)
{
	if (!app_cpu_ns)
		return -1;
	return ((double)samples * (double)cfg->sample_cost_ns +
		(double)agent_cpu_ns) / (double)app_cpu_ns;
}

/* The unclamped ideal: overhead scales as 1/period. */
static double ideal_raw(const struct cm_rate_config *cfg, uint64_t period_ns,
			double overhead)
{
	if (overhead < 0)
		return (double)cfg->max_period_ns;
	if (!(cfg->target > 0))
		return (double)period_ns;
	return (double)period_ns * overhead / cfg->target;
}

uint64_t cm_rate_ideal(const struct cm_rate_config *cfg, uint64_t period_ns,
		       uint64_t app_cpu_ns, uint64_t agent_cpu_ns,
		       uint64_t samples)
{
	double ov = cm_rate_overhead(cfg, app_cpu_ns, agent_cpu_ns, samples);

	return clamp(cfg, ideal_raw(cfg, period_ns, ov));
}

static void new_window(struct cm_rate_state *st, uint64_t now_ns)
{
	st->window_start_ns = now_ns;
	st->app_cpu_ns = 0;
	st->agent_cpu_ns = 0;
	st->samples = 0;
}

uint64_t cm_rate_update(struct cm_rate_state *st,
			const struct cm_rate_config *cfg,
			uint64_t app_cpu_ns, uint64_t agent_cpu_ns,
			uint64_t samples, uint64_t now_ns)
{
	double ov, raw, ratio;
	uint64_t next;

	st->app_cpu_ns += app_cpu_ns;
	st->agent_cpu_ns += agent_cpu_ns;
	st->samples += samples;
	/* Too early, or too little application work to judge (an idle
	 * application makes the agent's fixed costs look huge). */
	if (now_ns - st->window_start_ns < cfg->min_dwell_ns ||
	    st->app_cpu_ns < cfg->min_app_cpu_ns)
		return 0;
	ov = cm_rate_overhead(cfg, st->app_cpu_ns, st->agent_cpu_ns,
			      st->samples);
	raw = ideal_raw(cfg, st->period_ns, ov);
	st->last_overhead = ov;
	st->decisions++;
	new_window(st, now_ns);
	ratio = raw / (double)st->period_ns;
	if (ratio < cfg->factor && ratio * cfg->factor > 1.0)
		return 0;	/* within the hysteresis band */
	next = clamp(cfg, raw);
	return next == st->period_ns ? 0 : next;	/* already at a bound */
}

void cm_rate_applied(struct cm_rate_state *st, uint64_t period_ns,
		     uint64_t now_ns)
{
	if (period_ns != st->period_ns)
		st->changes++;
	st->period_ns = period_ns;
	new_window(st, now_ns);
}
