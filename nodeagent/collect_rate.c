/* collect_rate.c: the sampling period of the collector: changing it
 * (a new sampler) and the adaptive policy of sample_rate.h.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "collect_internal.h"

/* Record a period in use from now (the latest CM_COLLECT_PERIODS_MAX). */
void cm_collect_periods_push(struct cm_collector *c, uint64_t period)
{
	struct cm_collect_stats *st = &c->st;

	if (st->nperiods == CM_COLLECT_PERIODS_MAX) {
		memmove(st->periods, st->periods + 1,
			(CM_COLLECT_PERIODS_MAX - 1) * sizeof(st->periods[0]));
		st->nperiods--;
	}
	st->periods[st->nperiods].t =
		(double)(cm_collect_clock_ns(CLOCK_MONOTONIC) - c->t0_ns) / 1e9;
	st->periods[st->nperiods].period = period;
	st->nperiods++;
}

/* ---- period, accessors ----------------------------------------------- */

void cm_collect_perf_add(struct cm_perf_stats *a, const struct cm_perf_stats *b)
{
	a->samples += b->samples;
	a->no_regs += b->no_regs;
	a->lost += b->lost;
	a->throttle += b->throttle;
	a->unthrottle += b->unthrottle;
	a->other += b->other;
	a->kernel += b->kernel;
	a->malformed += b->malformed;
	a->bytes += b->bytes;
}

/* Attach every live thread to sampler s one by one. */
static int attach_all_live(struct cm_collector *c, struct cm_perf_sampler *s,
			   struct cm_error *err)
{
	int n = cm_tracker_nthreads(c->tr);

	for (int i = 0; i < n; i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(c->tr, i);
		struct cm_error e;

		if (!th->alive || cm_perf_sampler_attach(s, th->tid, &e) == 0)
			continue;
		if (errno != ESRCH)
			return cm_errorf(err, errno, "%s", e.text);
	}
	return 0;
}

int cm_collect_set_period(struct cm_collector *c, uint64_t period,
			  struct cm_matrix *m, struct cm_error *err)
{
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_perf_stats old;
	struct cm_drain_ctx d = { c, m, 0 };
	int n;

	if (!c || !period)
		return cm_errorf(err, EINVAL, "collect: bad period");
	if (!c->s)
		return cm_errorf(err, EINVAL, "collect: the fault backend has "
				 "no sampling period");
	cfg = c->pcfg;
	if (c->backend == CM_COLLECT_HW)
		cfg.hw_period = period;
	else
		cfg.period_ns = period;
	s = cm_perf_sampler_new(&cfg, err);
	if (!s)
		return -1;
	if (attach_all_live(c, s, err)) {
		cm_perf_sampler_free(s);
		return -1;
	}
	c->gen++;
	cm_perf_sampler_read(c->s, m ? cm_collect_on_sample : NULL, &d);
	cm_perf_sampler_stats(c->s, &old);
	cm_collect_perf_add(&c->perf_base, &old);
	cm_perf_sampler_free(c->s);
	c->s = s;
	c->pcfg = cfg;
	c->st.samplers++;
	n = cm_tracker_nthreads(c->tr);
	if (cm_collect_ensure(c, n, cm_tracker_nprocs(c->tr)))
		return cm_errorf(err, ENOMEM, "collect: out of memory");
	for (int i = 0; i < n; i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(c->tr, i);

		c->threads[i].state = th->alive ? TH_ATTACHED : TH_GONE;
	}
	if (d.nomem)
		return cm_errorf(err, ENOMEM, "collect: the matrix cannot "
				 "grow (out of memory)");
	return 0;
}

static uint64_t samples_so_far(const struct cm_collector *c)
{
	struct cm_perf_stats ps;

	cm_perf_sampler_stats(c->s, &ps);
	return ps.samples + c->perf_base.samples;
}

uint64_t cm_collect_phase_period(const struct cm_collector *c)
{
	return cm_rate_period_for(&c->rcfg,
				  cm_rate_budget_target(&c->budget, &c->rcfg));
}

/* The policy's configuration in the current phase: its target. */
static struct cm_rate_config phase_config(const struct cm_collector *c)
{
	struct cm_rate_config cfg = c->rcfg;

	cfg.target = cm_rate_budget_target(&c->budget, &c->rcfg);
	return cfg;
}

static uint64_t since_start(const struct cm_collector *c)
{
	return cm_collect_clock_ns(CLOCK_MONOTONIC) - c->t0_ns;
}

/* Begin phase p at its period: a new sampler when the period differs,
 * a new window of the policy.  0, or -1 when the period cannot be set
 * (the old one stays, the phase begins all the same). */
static int phase_begin(struct cm_collector *c, enum cm_rate_phase p,
		       struct cm_matrix *m, struct cm_error *err)
{
	uint64_t now = cm_collect_clock_ns(CLOCK_MONOTONIC), next;
	int rv = 0;

	if (p == CM_RATE_WATCH)
		cm_rate_budget_begin(&c->budget, p, c->pcfg.period_ns,
				     now - c->t0_ns);
	next = cm_collect_phase_period(c);
	if (next != c->pcfg.period_ns) {
		rv = cm_collect_set_period(c, next, m, err);
		if (rv == 0) {
			c->st.period_changes++;
			cm_collect_periods_push(c, next);
		}
	}
	c->budget.spend[c->budget.nspend - 1].period_ns = c->pcfg.period_ns;
	cm_rate_init(&c->rate, &c->rcfg, c->pcfg.period_ns,
		     cm_collect_clock_ns(CLOCK_MONOTONIC));
	c->rate_started = true;
	return rv;
}

int cm_collect_relearn(struct cm_collector *c, struct cm_matrix *m,
		       struct cm_error *err)
{
	if (!c || !c->s || !c->budget_on ||
	    !cm_rate_budget_learn(&c->budget, &c->rcfg, c->pcfg.period_ns,
				  since_start(c)))
		return 0;
	if (phase_begin(c, CM_RATE_LEARN, m, err) < 0)
		return -1;
	c->rate_samples = samples_so_far(c);
	c->rate_agent_ns = c->drain_cpu_ns;
	return 1;
}

/* The agent's drain CPU time since the last call that the period is
 * charged with (sample_rate.h, CM_RATE_AGENT_COST_MAX_NS). */
static uint64_t agent_charged(const struct cm_collector *c,
			      uint64_t samples)
{
	uint64_t used = c->drain_cpu_ns - c->rate_agent_ns;
	uint64_t most = (samples - c->rate_samples) *
			CM_RATE_AGENT_COST_MAX_NS;

	return used < most ? used : most;
}

/* Feed one interval's use to the budget (the agent's CPU time as used,
 * agent_d) and the policy (as charged); 1 when the period changed, 0
 * not, -1 a change failed. */
static int adapt_step(struct cm_collector *c, uint64_t app_d,
		      uint64_t agent_d, uint64_t charged, uint64_t samples_d,
		      struct cm_matrix *m, struct cm_error *err)
{
	struct cm_rate_config cfg = phase_config(c);
	uint64_t now = cm_collect_clock_ns(CLOCK_MONOTONIC), next;
	int rv;

	if (c->budget_on &&
	    cm_rate_budget_account(&c->budget, app_d, agent_d, samples_d))
		return phase_begin(c, CM_RATE_WATCH, m, err) < 0 ? -1 : 1;
	if (!c->rate_started) {
		cm_rate_init(&c->rate, &c->rcfg, c->pcfg.period_ns, now);
		c->rate_started = true;
		return 0;
	}
	next = cm_rate_update(&c->rate, &cfg, app_d, charged, samples_d,
			      now);
	c->st.overhead = c->rate.last_overhead;
	if (!next)
		return 0;
	rv = cm_collect_set_period(c, next, m, err);
	cm_rate_applied(&c->rate, c->pcfg.period_ns,
			cm_collect_clock_ns(CLOCK_MONOTONIC));
	if (rv < 0)
		return -1;
	c->st.period_changes++;
	cm_collect_periods_push(c, next);
	return 1;
}

/* Threads that work: those with at least a tenth of the busiest one's
 * CPU time (an idle main thread or a helper does not need evidence). */
static int threads_working(const double *cpu_s, int n)
{
	double most = 0;
	int k = 0;

	for (int i = 0; cpu_s && i < n; i++)
		if (cpu_s[i] > most)
			most = cpu_s[i];
	for (int i = 0; cpu_s && i < n; i++)
		if (cpu_s[i] > 0 && cpu_s[i] >= most / 10)
			k++;
	return k;
}

/* Tell the budget how much evidence there is: the references the overlap
 * estimator took (data, not the stack, spins, repeats or system calls),
 * or that it needs no more: the last overlap's structure repeated between
 * its halves (trusted, r >= CM_RATE_LEARN_CLEAR_R over enough threads
 * for the test), so more samples would add little (pairs, groups,
 * neighbours on small buffers: their learning phase stays at its time). */
static void report_evidence(struct cm_collector *c, const double *cpu_s,
			    int n)
{
	struct cm_overlap_stats os;

	cm_overlap_stats(c->ov, &os);
	cm_rate_budget_evidence(&c->budget, os.accesses,
				cm_overlap_structure_clear(&os,
							   CM_RATE_LEARN_CLEAR_R) ?
				0 : threads_working(cpu_s, n));
}

int cm_collect_adapt_period(struct cm_collector *c, const double *cpu_s,
			    int n, struct cm_matrix *m, struct cm_error *err)
{
	uint64_t app = 0, app_d, samples;
	double app_s = 0;
	int changed = 0, rv;

	if (!c || !c->s || c->backend != CM_COLLECT_SAMPLE ||
	    !(c->o.overhead_target > 0))
		return 0;
	rv = cm_collect_calib_apply(c, false, m, err);
	if (rv < 0)
		return -1;
	changed = rv;
	for (int i = 0; cpu_s && i < n; i++)
		if (cpu_s[i] > 0)
			app_s += cpu_s[i];
	app = (uint64_t)(app_s * 1e9);
	samples = samples_so_far(c);
	/* Counters only grow; a thread that vanished from cpu_s could make
	 * app shrink: count nothing then. */
	app_d = app > c->rate_app_ns ? app - c->rate_app_ns : 0;
	rv = 0;
	if (c->budget_on)
		report_evidence(c, cpu_s, n);
	if (c->budget_base)
		rv = adapt_step(c, app_d, c->drain_cpu_ns - c->rate_agent_ns,
				agent_charged(c, samples),
				samples - c->rate_samples, m, err);
	c->budget_base = true;
	c->rate_app_ns = app;
	c->rate_agent_ns = c->drain_cpu_ns;
	c->rate_samples = samples_so_far(c);
	if (rv < 0)
		return -1;
	return changed || rv;
}
