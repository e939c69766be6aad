/* sample_rate.c: the sampling period from a budget (see sample_rate.h). */
#include "config.h"

#include <stdbool.h>
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
	cfg->learn_target = CM_RATE_DEFAULT_LEARN_TARGET;
	cfg->learn_app_cpu_ns = CM_RATE_DEFAULT_LEARN_CPU_NS;
}

static uint64_t clamp(const struct cm_rate_config *cfg, double p)
{
	if (!(p >= (double)cfg->min_period_ns))	/* also NaN */
		return cfg->min_period_ns;
	if (p >= (double)cfg->max_period_ns)
		return cfg->max_period_ns;
	return (uint64_t)p;
}

uint64_t cm_rate_period_for(const struct cm_rate_config *cfg, double target)
{
	double per_sample = (double)cfg->sample_cost_ns +
			    (double)cfg->agent_cost_ns;

	if (!(target > 0))
		return cfg->max_period_ns;
	return clamp(cfg, per_sample / target);
}

uint64_t cm_rate_initial_period(const struct cm_rate_config *cfg)
{
	return cm_rate_period_for(cfg, cfg->target);
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

/* ---- the budget over the run --------------------------------------- */

const char *cm_rate_phase_name(enum cm_rate_phase p)
{
	return p == CM_RATE_LEARN ? "learn" : p == CM_RATE_WATCH ? "watch"
	       : "?";
}

static bool learning_on(const struct cm_rate_config *cfg)
{
	return cfg->learn_target > cfg->target && cfg->learn_app_cpu_ns > 0;
}

void cm_rate_budget_begin(struct cm_rate_budget *b, enum cm_rate_phase p,
			  uint64_t period_ns, uint64_t now_ns)
{
	struct cm_rate_spend *sp;

	if (b->nspend == CM_RATE_SPEND_MAX) {
		/* keep the first (the start of the run) and the latest */
		memmove(b->spend + 1, b->spend + 2,
			(CM_RATE_SPEND_MAX - 2) * sizeof(b->spend[0]));
		b->nspend--;
	}
	sp = &b->spend[b->nspend++];
	memset(sp, 0, sizeof(*sp));
	sp->phase = p;
	sp->start_ns = now_ns;
	sp->period_ns = period_ns;
	b->phase = p;
	b->phases++;
	b->useful_base = b->useful;
	if (p != CM_RATE_LEARN)
		b->learn_left_ns = b->learn_extra_ns = 0;
}

/* A learning phase of learn_ns application CPU time from now. */
static void learn_for(struct cm_rate_budget *b, uint64_t learn_ns)
{
	b->learn_left_ns = learn_ns;
	b->learn_extra_ns = learn_ns * (CM_RATE_LEARN_MAX_FACTOR - 1);
}

void cm_rate_budget_init(struct cm_rate_budget *b,
			 const struct cm_rate_config *cfg, uint64_t period_ns,
			 uint64_t now_ns)
{
	bool learn = learning_on(cfg);

	memset(b, 0, sizeof(*b));
	b->total[CM_RATE_LEARN].phase = CM_RATE_LEARN;
	b->total[CM_RATE_WATCH].phase = CM_RATE_WATCH;
	cm_rate_budget_begin(b, learn ? CM_RATE_LEARN : CM_RATE_WATCH,
			     period_ns, now_ns);
	learn_for(b, learn ? cfg->learn_app_cpu_ns : 0);
}

void cm_rate_budget_evidence(struct cm_rate_budget *b, uint64_t useful,
			     int threads)
{
	b->useful = useful;
	b->useful_need = threads > 0 ?
			 (uint64_t)threads * CM_RATE_LEARN_EVIDENCE : 0;
}

double cm_rate_budget_target(const struct cm_rate_budget *b,
			     const struct cm_rate_config *cfg)
{
	return b->phase == CM_RATE_LEARN ? cfg->learn_target : cfg->target;
}

static void spend_add(struct cm_rate_spend *sp, uint64_t app_cpu_ns,
		      uint64_t agent_cpu_ns, uint64_t samples)
{
	sp->app_cpu_ns += app_cpu_ns;
	sp->agent_cpu_ns += agent_cpu_ns;
	sp->samples += samples;
}

int cm_rate_budget_account(struct cm_rate_budget *b, uint64_t app_cpu_ns,
			   uint64_t agent_cpu_ns, uint64_t samples)
{
	if (!b->nspend)
		return 0;
	spend_add(&b->spend[b->nspend - 1], app_cpu_ns, agent_cpu_ns,
		  samples);
	spend_add(&b->total[b->phase == CM_RATE_LEARN ? 0 : 1], app_cpu_ns,
		  agent_cpu_ns, samples);
	if (b->phase != CM_RATE_LEARN)
		return 0;
	if (app_cpu_ns < b->learn_left_ns) {
		b->learn_left_ns -= app_cpu_ns;
		return 0;
	}
	app_cpu_ns -= b->learn_left_ns;
	b->learn_left_ns = 0;
	/* its time is up: over with the evidence it needs, or at most
	 * CM_RATE_LEARN_MAX_FACTOR times as long without */
	if (b->useful >= b->useful_base + b->useful_need ||
	    app_cpu_ns >= b->learn_extra_ns) {
		b->learn_extra_ns = 0;
		return 1;
	}
	b->learn_extra_ns -= app_cpu_ns;
	return 0;
}

int cm_rate_budget_learn(struct cm_rate_budget *b,
			 const struct cm_rate_config *cfg, uint64_t period_ns,
			 uint64_t now_ns)
{
	if (!learning_on(cfg) || b->phase == CM_RATE_LEARN || !b->nspend ||
	    b->spend[b->nspend - 1].app_cpu_ns < CM_RATE_RELEARN_GAP_NS)
		return 0;
	cm_rate_budget_begin(b, CM_RATE_LEARN, period_ns, now_ns);
	learn_for(b, cfg->learn_app_cpu_ns / 2);
	return 1;
}

double cm_rate_spend_overhead(const struct cm_rate_config *cfg,
			      const struct cm_rate_spend *sp)
{
	return cm_rate_overhead(cfg, sp->app_cpu_ns, sp->agent_cpu_ns,
				sp->samples);
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
