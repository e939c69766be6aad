/* collect_calib.c: the cost of one sample to the thread it interrupts,
 * measured on a thread of the collector's own and kept per boot for the
 * node's later agents (sample_rate.h, "Measuring the cost of a sample").
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collect_internal.h"

/* ---- measuring the cost of a sample (sample_rate.h) ----------------- */

#define CALIB_PERIOD_NS 100000ull	/* 100 µs: ~10 samples per chunk */
#define CALIB_CHUNK_NS 1000000ull	/* ~1 ms of CPU per chunk */
#define CALIB_RING_PAGES 8u		/* ~40 samples per round fit */

/* Fixed work: register arithmetic, no memory traffic to be disturbed by
 * other jobs' caches; the asm keeps the compiler from folding the loop. */
static uint64_t spin(uint64_t n)
{
	uint64_t x = 1;

	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

/* Thread CPU time of n iterations. */
static uint64_t timed_spin(uint64_t n)
{
	uint64_t t = cm_collect_clock_ns(CLOCK_THREAD_CPUTIME_ID);

	spin(n);
	return cm_collect_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t;
}

/* Iterations for about CALIB_CHUNK_NS of CPU (the first run warms up). */
static uint64_t chunk_work(void)
{
	const uint64_t probe = 100000;
	uint64_t t;

	timed_spin(probe);
	t = timed_spin(probe);
	return probe * CALIB_CHUNK_NS / (t ? t : 1) + 1;
}

static uint64_t sampler_samples(const struct cm_perf_sampler *s)
{
	struct cm_perf_stats ps;

	cm_perf_sampler_stats(s, &ps);
	return ps.samples;
}

/* Round r: the chunks without sampling, then with a sampler attached to
 * this thread, counting the samples of the sampled chunks only. */
static int calib_round(const struct cm_perf_config *cfg, uint64_t work,
		       struct cm_rate_calib *cal, int r, struct cm_error *err)
{
	struct cm_perf_sampler *s;
	uint64_t before;

	for (int k = 0; k < cal->chunks; k++)
		cal->without_ns[r][k] = timed_spin(work);
	s = cm_perf_sampler_new(cfg, err);
	if (!s)
		return -1;
	if (cm_perf_sampler_attach(s, (pid_t)syscall(SYS_gettid), err)) {
		cm_perf_sampler_free(s);
		return -1;
	}
	cm_perf_sampler_read(s, NULL, NULL);
	before = sampler_samples(s);
	for (int k = 0; k < cal->chunks; k++)
		cal->with_ns[r][k] = timed_spin(work);
	cm_perf_sampler_read(s, NULL, NULL);
	cal->samples[r] = sampler_samples(s) - before;
	cm_perf_sampler_free(s);
	return 0;
}

int cm_collect_measure_sample_cost(const struct cm_collect_opts *o,
				   uint64_t *cost_ns,
				   struct cm_rate_calib *cal,
				   struct cm_error *err)
{
	struct cm_rate_calib local;
	struct cm_perf_config cfg;
	uint64_t work;

	if (!o || !cost_ns)
		return cm_errorf(err, EINVAL, "collect: NULL argument");
	if (!cal)
		cal = &local;
	memset(cal, 0, sizeof(*cal));
	cal->rounds = CM_RATE_CALIB_ROUNDS;
	cal->chunks = CM_RATE_CALIB_CHUNKS;
	cm_perf_config_default(&cfg);
	cfg.clock = o->clock;
	cfg.period_ns = CALIB_PERIOD_NS;
	cfg.ring_pages = CALIB_RING_PAGES;
	work = chunk_work();
	for (int r = 0; r < cal->rounds; r++)
		if (calib_round(&cfg, work, cal, r, err))
			return -1;
	*cost_ns = cm_rate_cost_estimate(cal);
	if (!*cost_ns)
		return cm_errorf(err, EAGAIN, "collect: no sample in %d ms of "
				 "CPU time: the sampling timer does not fire",
				 CM_RATE_CALIB_ROUNDS * CM_RATE_CALIB_CHUNKS);
	return 0;
}

/* ---- the measured cost kept per node (o->cost_cache) --------------- */

#define COST_CACHE_MAX_AGE_S 3600

/* This boot's id: a cost measured before a reboot (another kernel,
 * perhaps other hardware under the VM) is not reused. */
static int boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ok && buf[0] ? 0 : -1;
}

/* The cached cost for this boot and clock, measured less than an hour
 * ago; 0 when there is none (missing, stale, malformed). */
static uint64_t cost_cache_read(const struct cm_collect_opts *o)
{
	char boot[64], line[256], want[64];
	unsigned long long cost = 0, at = 0;
	unsigned clk = 0;
	time_t now = time(NULL);
	FILE *f;

	if (!o->cost_cache || boot_id(want, sizeof(want)) < 0)
		return 0;
	f = fopen(o->cost_cache, "r");
	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "commap-sample-cost 1 %63s %u %llu %llu", boot, &clk,
		   &cost, &at) != 4)
		cost = 0;
	fclose(f);
	if (cost < CM_RATE_COST_MIN_NS || cost > CM_RATE_COST_MAX_NS ||
	    strcmp(boot, want) != 0 || clk != (unsigned)o->clock ||
	    (time_t)at > now || now - (time_t)at > COST_CACHE_MAX_AGE_S)
		return 0;
	return cost;
}

/* Keep a measured cost for the next agents (best effort: written to a
 * temporary file and renamed, so readers never see half a line). */
static void cost_cache_write(const struct cm_collect_opts *o, uint64_t cost)
{
	char boot[64], tmp[4096];
	FILE *f;

	if (!o->cost_cache || boot_id(boot, sizeof(boot)) < 0 ||
	    snprintf(tmp, sizeof(tmp), "%s.%d", o->cost_cache,
		     (int)getpid()) >= (int)sizeof(tmp))
		return;
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "commap-sample-cost 1 %s %u %llu %llu\n", boot,
		(unsigned)o->clock, (unsigned long long)cost,
		(unsigned long long)time(NULL));
	if (fclose(f) != 0 || rename(tmp, o->cost_cache) != 0)
		unlink(tmp);
}

static void *calib_main(void *arg)
{
	struct cm_collector *c = arg;
	uint64_t t0 = cm_collect_clock_ns(CLOCK_THREAD_CPUTIME_ID), cost = 0;
	struct cm_error e;
	int rc = cm_collect_measure_sample_cost(&c->o, &cost, NULL, &e);

	c->calib_cost = rc == 0 ? cost : 0;
	c->calib_cpu = cm_collect_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	atomic_store(&c->calib_state, rc == 0 ? 1 : 2);
	return NULL;
}

/* Take the measured cost once it is there (wait: block for it); with
 * period_auto, switch to the period it gives and restart the adaptive
 * window from there.  1 when applied now. */
int cm_collect_calib_apply(struct cm_collector *c, bool wait,
			   struct cm_matrix *m, struct cm_error *err)
{
	uint64_t next;

	if (!c->calib_running ||
	    (!wait && atomic_load(&c->calib_state) == 0))
		return 0;
	pthread_join(c->calib_th, NULL);
	c->calib_running = false;
	c->st.sample_cost_pending = 0;
	c->st.calib_cpu_ns = c->calib_cpu;
	if (atomic_load(&c->calib_state) != 1)
		return 0;	/* the default cost stays */
	c->rcfg.sample_cost_ns = c->calib_cost;
	c->st.sample_cost_ns = c->calib_cost;
	c->st.sample_cost_measured = 1;
	c->rate_started = false;
	cost_cache_write(&c->o, c->calib_cost);
	if (!c->o.period_auto || !c->s)
		return 1;
	next = cm_collect_phase_period(c);
	if (next == c->pcfg.period_ns)
		return 1;
	if (cm_collect_set_period(c, next, m, err) < 0)
		return -1;
	cm_collect_periods_push(c, next);
	c->budget.spend[c->budget.nspend - 1].period_ns = next;
	return 1;
}

int cm_collect_calibration_wait(struct cm_collector *c, struct cm_matrix *m,
				struct cm_error *err)
{
	if (!c)
		return cm_errorf(err, EINVAL, "collect: NULL collector");
	return cm_collect_calib_apply(c, true, m, err) < 0 ? -1 : 0;
}

/* The adaptive period's configuration: the cost of a sample (the online
 * model needs it too, also from a given period) and, with period_auto,
 * the first period from it.  The cost is measured on a thread of its own
 * (~35 ms of CPU, more under load) so that nothing waits for it; until
 * it is known the default cost and its period are used.  A cost another
 * agent measured on this node within the hour (o->cost_cache) is taken
 * at once instead.  When it cannot
 * be measured the default cost stays; the sampler's own attach says why
 * perf refuses, if it does. */
void cm_collect_rate_setup(struct cm_collector *c)
{
	uint64_t cached;

	cm_rate_config_default(&c->rcfg);
	if (!(c->o.overhead_target > 0) || c->backend != CM_COLLECT_SAMPLE)
		return;
	/* Aim below the budget by the model's measured error
	 * (sample_rate.h, CM_RATE_AIM). */
	c->rcfg.target = c->o.overhead_target * CM_RATE_AIM;
	/* Learn fast first (sample_rate.h, point 3), from the period the
	 * budget gives only: a period the user chose is kept. */
	c->rcfg.learn_target = c->o.period_auto ?
			       c->o.overhead_target * CM_RATE_LEARN_FACTOR : 0;
	cached = cost_cache_read(&c->o);
	if (cached) {
		c->rcfg.sample_cost_ns = cached;
		c->st.sample_cost_measured = 1;
		c->st.sample_cost_cached = 1;
	}
	c->st.sample_cost_ns = c->rcfg.sample_cost_ns;
	cm_rate_budget_init(&c->budget, &c->rcfg, c->pcfg.period_ns, 0);
	c->budget_on = true;
	if (c->o.period_auto)
		c->pcfg.period_ns = cm_collect_phase_period(c);
	c->budget.spend[0].period_ns = c->pcfg.period_ns;
	if (cached)
		return;
	atomic_init(&c->calib_state, 0);
	if (pthread_create(&c->calib_th, NULL, calib_main, c) == 0) {
		c->calib_running = true;
		c->st.sample_cost_pending = 1;
	}
}
