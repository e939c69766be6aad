/* test_sample_rate_collect.c: the sampling period in the collector
 * (collect.h, sample_rate.h), with perf on this thread: the real
 * measurement of a sample's cost (cm_collect_measure_sample_cost), the
 * collector's phases and its first period with period_auto
 * (cm_collect_new), and the cost cache.  The model alone:
 * test_sample_rate.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "proc_track.h"
#include "sample_rate.h"
#include "tap.h"

#define US 1000ull
#define MS 1000000ull
#define S 1000000000ull

/* ---- the real measurement (perf on this thread) ----------------------- */

static void test_measure(void)
{
	struct cm_collect_opts o;
	struct cm_rate_calib cal;
	struct cm_error e = { "" };
	uint64_t cost = 0, samples = 0, with = 0;
	int rv;

	cm_collect_opts_default(&o);
	rv = cm_collect_measure_sample_cost(&o, &cost, &cal, &e);
	if (rv < 0) {
		ok(1, "# SKIP perf sampling unavailable: %s", e.text);
		return;
	}
	ok(cost >= CM_RATE_COST_MIN_NS && cost <= CM_RATE_COST_MAX_NS,
	   "measured: %.2f us per sample", (double)cost / 1e3);
	is_int(cm_rate_cost_estimate(&cal), cost,
	       "the cost is the estimate of the raw measurements");
	for (int r = 0; r < cal.rounds; r++) {
		samples += cal.samples[r];
		for (int k = 0; k < cal.chunks; k++)
			with += cal.with_ns[r][k];
	}
	/* The sampled chunks ran every 100 us of CPU time: about one
	 * sample per 100 us (the samples of the unsampled chunks and of
	 * the sampler's set-up are not counted). */
	ok(samples > 0 && (double)with / (double)samples > 50e3 &&
	   (double)with / (double)samples < 200e3,
	   "%llu samples in %.1f ms of sampled CPU: one per %.0f us",
	   (unsigned long long)samples, (double)with / 1e6,
	   samples ? (double)with / (double)samples / 1e3 : 0.0);
	is_int(cm_collect_measure_sample_cost(NULL, &cost, NULL, &e), -1,
	       "NULL options refused");
}

/* cm_collect_new with period_auto: the first period is the one the
 * measured cost gives; a given period is kept; without a budget nothing
 * is measured. */
/* The collector's phases, driven by the application CPU time given to
 * cm_collect_adapt_period (no thread: the samplers attach nothing). */
static void test_collect_phases(struct cm_collector *c,
				const struct cm_rate_config *rc)
{
	uint64_t learn = cm_rate_period_for(rc, rc->learn_target);
	uint64_t watch = cm_rate_period_for(rc, rc->target);
	struct cm_collect_stats st;
	struct cm_error e = { "" };
	double cpu;

	cpu = 0.5;
	cm_collect_adapt_period(c, &cpu, 1, NULL, &e);	/* the baseline */
	cpu = 2.0;
	cm_collect_adapt_period(c, &cpu, 1, NULL, &e);
	cm_collect_stats(c, &st);
	ok(st.budget.phase == CM_RATE_LEARN && st.period == learn,
	   "1.5 s of application CPU: still learning");
	/* no thread here, no sample: the evidence stays thin, and the
	 * phase goes on to CM_RATE_LEARN_MAX_FACTOR times its length */
	cpu = 2.6;
	is_int(cm_collect_adapt_period(c, &cpu, 1, NULL, &e), 0,
	       "2.1 s without evidence: still learning");
	cpu = 6.4;
	cm_collect_adapt_period(c, &cpu, 1, NULL, &e);
	cm_collect_stats(c, &st);
	ok(st.budget.phase == CM_RATE_LEARN && st.period == learn &&
	   st.budget.useful_need == CM_RATE_LEARN_EVIDENCE,
	   "5.9 s: still learning (needs %llu references of evidence)",
	   (unsigned long long)st.budget.useful_need);
	cpu = 6.6;
	is_int(cm_collect_adapt_period(c, &cpu, 1, NULL, &e), 1,
	       "6.1 s: the period changes");
	cm_collect_stats(c, &st);
	ok(st.budget.phase == CM_RATE_WATCH && st.period == watch &&
	   st.budget.nspend == 2 &&
	   st.budget.spend[0].app_cpu_ns == (uint64_t)(6.1 * S) &&
	   st.budget.spend[1].period_ns == watch,
	   "then watching at %llu us; the learning phase's 6.1 s accounted",
	   (unsigned long long)(watch / US));
	is_int(cm_collect_relearn(c, NULL, &e), 0,
	       "a phase change right away: no learning yet");
	cpu = 16.6;
	cm_collect_adapt_period(c, &cpu, 1, NULL, &e);
	is_int(cm_collect_relearn(c, NULL, &e), 1,
	       "a phase change after 10 s of CPU watching: learn");
	is_int(cm_collect_relearn(c, NULL, &e), 0, "... once");
	cm_collect_stats(c, &st);
	ok(st.budget.phase == CM_RATE_LEARN && st.period == learn &&
	   st.budget.nspend == 3, "at the learning period again");
	cpu = 17.5;
	cm_collect_adapt_period(c, &cpu, 1, NULL, &e);
	cm_collect_stats(c, &st);
	ok(st.budget.phase == CM_RATE_LEARN, "0.9 s later: still learning");
	cpu = 19.5;
	cm_collect_adapt_period(c, &cpu, 1, NULL, &e);
	cm_collect_stats(c, &st);
	ok(st.budget.phase == CM_RATE_LEARN, "2.9 s later, no evidence: "
	   "still learning");
	cpu = 19.7;
	cm_collect_adapt_period(c, &cpu, 1, NULL, &e);
	cm_collect_stats(c, &st);
	ok(st.budget.phase == CM_RATE_WATCH && st.period == watch &&
	   st.budget.total[CM_RATE_LEARN].app_cpu_ns ==
	   (uint64_t)(6.1 * S) + (uint64_t)(3.1 * S),
	   "half as long as the first: watching after 3.1 s");
}

static void test_collect_auto(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_collect_opts o;
	struct cm_collect_stats st;
	struct cm_collector *c;
	struct cm_rate_config rc;
	struct cm_error e = { "" };

	cm_collect_opts_default(&o);
	o.backend = CM_COLLECT_SAMPLE;
	o.overhead_target = 0.01;
	o.period_auto = 1;
	c = t ? cm_collect_new(&o, t, &e) : NULL;
	ok(c != NULL, "collector with period_auto: %s", e.text);
	cm_collect_stats(c, &st);
	cm_rate_config_default(&rc);
	/* The collector aims at CM_RATE_AIM of the budget (sample_rate.h),
	 * and learns at CM_RATE_LEARN_FACTOR times it first. */
	rc.target = 0.01 * CM_RATE_AIM;
	rc.learn_target = 0.01 * CM_RATE_LEARN_FACTOR;
	ok(st.sample_cost_pending == 1 && st.sample_cost_measured == 0 &&
	   st.budget_on && st.budget.phase == CM_RATE_LEARN &&
	   st.period == cm_rate_period_for(&rc, rc.learn_target),
	   "the cost is measured on a thread of its own: the default cost's "
	   "learning period meanwhile (%llu us)",
	   (unsigned long long)(st.period / US));
	ok(c && cm_collect_calibration_wait(c, NULL, &e) == 0,
	   "the measured cost applied: %s", e.text);
	cm_collect_stats(c, &st);
	rc.sample_cost_ns = st.sample_cost_ns;
	ok(st.sample_cost_measured == 1 && st.calib_cpu_ns > 0,
	   "the cost was measured: %.2f us in %.1f ms of CPU",
	   (double)st.sample_cost_ns / 1e3, (double)st.calib_cpu_ns / 1e6);
	ok(st.period == cm_rate_period_for(&rc, rc.learn_target) &&
	   st.nperiods >= 1 && st.nperiods <= 2 &&
	   st.periods[st.nperiods - 1].period == st.period &&
	   st.sample_cost_pending == 0 &&
	   st.budget.spend[st.budget.nspend - 1].period_ns == st.period,
	   "the first period spends 3%% of the application's CPU time "
	   "(learning): %llu us", (unsigned long long)(st.period / US));
	test_collect_phases(c, &rc);
	cm_collect_free(c);

	o.period_auto = 0;
	o.period_ns = 700 * US;
	c = cm_collect_new(&o, t, &e);
	cm_collect_calibration_wait(c, NULL, &e);
	cm_collect_stats(c, &st);
	ok(c && st.period == 700 * US && st.sample_cost_measured == 1 &&
	   st.sample_cost_ns >= CM_RATE_COST_MIN_NS && st.calib_cpu_ns > 0 &&
	   st.budget.phase == CM_RATE_WATCH,
	   "a given period is kept (no learning phase), the cost measured "
	   "for the online model");
	is_int(cm_collect_relearn(c, NULL, &e), 0,
	       "a given period: no learning after a phase change either");
	cm_collect_free(c);

	o.period_auto = 1;
	o.overhead_target = 0;
	c = cm_collect_new(&o, t, &e);
	cm_collect_stats(c, &st);
	ok(c && st.period == 700 * US && st.calib_cpu_ns == 0 &&
	   st.sample_cost_ns == 0,
	   "no budget: nothing measured, the given period");
	cm_collect_free(c);
	cm_tracker_free(t);
}

/* o.cost_cache: the first collector measures and keeps the cost, the next
 * takes it at once; a cache of another boot or clock, or malformed, is
 * ignored (measured again). */
static void test_cost_cache(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	char path[] = "/tmp/commap-cost-XXXXXX";
	struct cm_collect_opts o;
	struct cm_collect_stats st;
	struct cm_collector *c;
	struct cm_error e = { "" };
	uint64_t measured;
	int fd = mkstemp(path);
	FILE *f;

	if (fd < 0 || !t) {
		ok(0, "temporary cache file");
		return;
	}
	close(fd);
	unlink(path);
	cm_collect_opts_default(&o);
	o.backend = CM_COLLECT_SAMPLE;
	o.overhead_target = 0.01;
	o.period_auto = 1;
	o.cost_cache = path;
	c = cm_collect_new(&o, t, &e);
	cm_collect_calibration_wait(c, NULL, &e);
	cm_collect_stats(c, &st);
	measured = st.sample_cost_ns;
	ok(c && st.sample_cost_measured && !st.sample_cost_cached &&
	   access(path, R_OK) == 0, "no cache: measured (%.2f us) and kept",
	   (double)measured / 1e3);
	cm_collect_free(c);

	c = cm_collect_new(&o, t, &e);
	cm_collect_stats(c, &st);
	ok(c && st.sample_cost_cached && !st.sample_cost_pending &&
	   st.sample_cost_ns == measured && st.calib_cpu_ns == 0,
	   "the next collector takes the kept cost at once, measures nothing");
	cm_collect_free(c);

	f = fopen(path, "w");
	if (f) {
		fprintf(f, "commap-sample-cost 1 not-this-boot %u 7000 %llu\n",
			(unsigned)o.clock, (unsigned long long)time(NULL));
		fclose(f);
	}
	c = cm_collect_new(&o, t, &e);
	cm_collect_stats(c, &st);
	ok(c && !st.sample_cost_cached && st.sample_cost_pending,
	   "a cost kept before a reboot is measured again");
	cm_collect_free(c);

	f = fopen(path, "w");
	if (f) {
		fputs("commap-sample-cost 1 garbage\n", f);
		fclose(f);
	}
	c = cm_collect_new(&o, t, &e);
	cm_collect_stats(c, &st);
	ok(c && !st.sample_cost_cached && st.sample_cost_pending,
	   "a malformed cache is ignored");
	cm_collect_free(c);
	unlink(path);
	cm_tracker_free(t);
}

int main(void)
{
	test_measure();
	test_collect_auto();
	test_cost_cache();
	return done_testing();
}
