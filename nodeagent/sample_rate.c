/* sample_rate.c: the sampling period from a budget (see sample_rate.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "sample_rate.h"

void cm_rate_config_default(struct cm_rate_config *cfg)
{
	cfg->target = CM_RATE_DEFAULT_TARGET;
	cfg->min_period_ns = CM_RATE_DEFAULT_MIN_NS;
	cfg->max_period_ns = CM_RATE_DEFAULT_MAX_NS;
	cfg->sample_cost_ns = CM_RATE_DEFAULT_COST_NS;
	cfg->agent_cost_ns = CM_RATE_DEFAULT_AGENT_COST_NS;
	cfg->first_dwell_ns = CM_RATE_DEFAULT_FIRST_DWELL_NS;
	cfg->min_dwell_ns = CM_RATE_DEFAULT_DWELL_NS;
	cfg->min_app_cpu_ns = CM_RATE_DEFAULT_MIN_APP_NS;
	cfg->over = CM_RATE_DEFAULT_OVER;
	cfg->under = CM_RATE_DEFAULT_UNDER;
	cfg->under_confirm = CM_RATE_DEFAULT_UNDER_CONFIRM;
}

static uint64_t clamp(const struct cm_rate_config *cfg, double p)
{
	if (!(p >= (double)cfg->min_period_ns))	/* also NaN */
		return cfg->min_period_ns;
	if (p >= (double)cfg->max_period_ns)
		return cfg->max_period_ns;
	return (uint64_t)p;
}

uint64_t cm_rate_initial_period(const struct cm_rate_config *cfg)
{
	double per_sample = (double)cfg->sample_cost_ns +
			    (double)cfg->agent_cost_ns;

	if (!(cfg->target > 0))
		return cfg->max_period_ns;
	return clamp(cfg, per_sample / cfg->target);
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

/* Over budget, or budget left unspent at under_confirm decisions in a
 * row (sample_rate.h, point 2)? */
static int off_budget(struct cm_rate_state *st,
		      const struct cm_rate_config *cfg, double overhead)
{
	if (overhead < cfg->target * cfg->under)
		st->under_streak++;
	else
		st->under_streak = 0;
	return overhead > cfg->target * cfg->over ||
	       st->under_streak >= cfg->under_confirm;
}

uint64_t cm_rate_update(struct cm_rate_state *st,
			const struct cm_rate_config *cfg,
			uint64_t app_cpu_ns, uint64_t agent_cpu_ns,
			uint64_t samples, uint64_t now_ns)
{
	uint64_t dwell = st->decisions ? cfg->min_dwell_ns
				       : cfg->first_dwell_ns;
	uint64_t next;
	double ov;

	st->app_cpu_ns += app_cpu_ns;
	st->agent_cpu_ns += agent_cpu_ns;
	st->samples += samples;
	/* Too early, or too little application work to judge (an idle
	 * application makes the agent's fixed costs look huge). */
	if (now_ns - st->window_start_ns < dwell ||
	    st->app_cpu_ns < cfg->min_app_cpu_ns)
		return 0;
	ov = cm_rate_overhead(cfg, st->app_cpu_ns, st->agent_cpu_ns,
			      st->samples);
	next = clamp(cfg, ideal_raw(cfg, st->period_ns, ov));
	st->last_overhead = ov;
	st->decisions++;
	new_window(st, now_ns);
	if (!off_budget(st, cfg, ov))
		return 0;
	return next == st->period_ns ? 0 : next;	/* already at a bound */
}

void cm_rate_applied(struct cm_rate_state *st, uint64_t period_ns,
		     uint64_t now_ns)
{
	if (period_ns != st->period_ns)
		st->changes++;
	st->under_streak = 0;
	st->period_ns = period_ns;
	new_window(st, now_ns);
}

/* ---- the cost of a sample ------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static double median_u64(const uint64_t *v, int n)
{
	uint64_t s[CM_RATE_CALIB_CHUNKS];

	memcpy(s, v, (size_t)n * sizeof(*v));
	qsort(s, (size_t)n, sizeof(*s), cmp_u64);
	return n % 2 ? (double)s[n / 2] :
	       ((double)s[n / 2 - 1] + (double)s[n / 2]) / 2;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

uint64_t cm_rate_cost_estimate(const struct cm_rate_calib *cal)
{
	double est[CM_RATE_CALIB_ROUNDS], m;
	int n = 0;

	if (!cal || cal->rounds < 1 || cal->rounds > CM_RATE_CALIB_ROUNDS ||
	    cal->chunks < 1 || cal->chunks > CM_RATE_CALIB_CHUNKS)
		return 0;
	for (int r = 0; r < cal->rounds; r++) {
		if (!cal->samples[r])
			continue;	/* the timer did not fire: no data */
		est[n++] = (double)cal->chunks *
			   (median_u64(cal->with_ns[r], cal->chunks) -
			    median_u64(cal->without_ns[r], cal->chunks)) /
			   (double)cal->samples[r];
	}
	if (!n)
		return 0;
	qsort(est, (size_t)n, sizeof(*est), cmp_double);
	m = n % 2 ? est[n / 2] : (est[n / 2 - 1] + est[n / 2]) / 2;
	if (!(m >= (double)CM_RATE_COST_MIN_NS))
		return CM_RATE_COST_MIN_NS;
	if (m > (double)CM_RATE_COST_MAX_NS)
		return CM_RATE_COST_MAX_NS;
	return (uint64_t)m;
}
