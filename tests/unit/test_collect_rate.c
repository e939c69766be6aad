/* test_collect_rate.c: the collector's glue between the overlap estimator
 * and the budget's stopping rule (collect_rate.c): which threads count as
 * working, the evidence the learning phase then needs, the references the
 * overlap took as that evidence, and a clear structure that needs none.
 * A real collector (perf sampling, no thread attached) driven by the
 * application CPU times given to cm_collect_adapt_period; the overlap fed
 * directly.  The budget's rule alone: test_sample_rate.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "collect.h"
#include "collect_internal.h"
#include "detect_overlap.h"
#include "proc_track.h"
#include "sample_rate.h"
#include "tap.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define MS 1000000ull

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A collector that learns first (period_auto, a 1% budget), its cost
 * measured; NULL when perf sampling is not there. */
static struct cm_collector *learning_collector(struct cm_tracker *t)
{
	struct cm_collect_opts o;
	struct cm_collector *c;
	struct cm_error e = { "" };

	cm_collect_opts_default(&o);
	o.backend = CM_COLLECT_SAMPLE;
	o.overhead_target = 0.01;
	o.period_auto = 1;
	c = cm_collect_new(&o, t, &e);
	if (c && cm_collect_calibration_wait(c, NULL, &e) < 0) {
		cm_collect_free(c);
		c = NULL;
	}
	return c;
}

/* n references of thread th: pairs (0,1), (2,3), ... each on a 256 KiB
 * buffer of their own, or (spread) anywhere in 16 MiB. */
static void feed(struct cm_collector *c, struct cm_matrix *m, int th, int n,
		 int spread, uint64_t *now)
{
	const uint64_t R = 0x40000000ull;

	for (int s = 0; s < n; s++, *now += MS / 4) {
		uint64_t a = spread ? R + rnd() % (16 * MIB) :
			     R + (uint64_t)(th / 2) * MIB + rnd() % (256 * KIB);

		if (cm_overlap_add(c->ov, m, th, 1, 0, R, a, *now) < 0)
			ok(0, "cm_overlap_add failed");
	}
}

static struct cm_collect_stats stats(struct cm_collector *c)
{
	struct cm_collect_stats st;

	cm_collect_stats(c, &st);
	return st;
}

/* Threads that work: those with a tenth of the busiest one's CPU time or
 * more; an idle main thread, a helper, a thread gone (no CPU time) need
 * no evidence.  The learning phase needs CM_RATE_LEARN_EVIDENCE
 * references per working thread past its CPU time, and ends when the
 * overlap has taken them. */
static void test_working_threads(struct cm_tracker *t)
{
	struct cm_collector *c = learning_collector(t);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_error e = { "" };
	/* main thread, 4 workers (one slowed to an eighth), a helper at a
	 * twentieth, one gone */
	double cpu[7] = { 0.01, 0.5, 0.5, 0.5, 0.0625, 0.025, 0 };
	uint64_t now = MS;
	int rv;

	if (!c) {
		ok(1, "# SKIP perf sampling unavailable");
		cm_matrix_free(m);
		return;
	}
	cm_collect_adapt_period(c, cpu, 7, m, &e);	/* the baseline */
	ok(stats(c).budget.useful_need == 4 * CM_RATE_LEARN_EVIDENCE,
	   "4 of 7 threads work: %llu references needed",
	   (unsigned long long)stats(c).budget.useful_need);
	for (int i = 1; i <= 4; i++)
		feed(c, m, i, 200, 1, &now);
	cpu[1] = cpu[2] = cpu[3] = 1.5;
	cpu[4] = 0.1875;
	rv = cm_collect_adapt_period(c, cpu, 7, m, &e);
	ok(rv == 0 && stats(c).budget.phase == CM_RATE_LEARN &&
	   stats(c).budget.useful == 800,
	   "past its 2 s of CPU time with 800 references: still learning");
	cpu[0] = cpu[1] = cpu[2] = cpu[3] = 1.6;	/* the main thread too */
	cm_collect_adapt_period(c, cpu, 7, m, &e);
	ok(stats(c).budget.useful_need == 5 * CM_RATE_LEARN_EVIDENCE &&
	   stats(c).budget.phase == CM_RATE_LEARN,
	   "the main thread at work as well: 5 threads, %llu needed",
	   (unsigned long long)stats(c).budget.useful_need);
	for (int i = 0; i <= 4; i++)
		feed(c, m, i, 100, 1, &now);
	cpu[0] = cpu[1] = cpu[2] = cpu[3] = 1.7;
	rv = cm_collect_adapt_period(c, cpu, 7, m, &e);
	ok(rv == 1 && stats(c).budget.phase == CM_RATE_WATCH &&
	   stats(c).budget.useful >= 5 * CM_RATE_LEARN_EVIDENCE,
	   "%llu references: the learning phase is over, watching",
	   (unsigned long long)stats(c).budget.useful);
	cm_collect_free(c);
	cm_matrix_free(m);
}

/* A structure the overlap already finds clear (8 threads in pairs, the
 * halves correlated by CM_RATE_LEARN_CLEAR_R or more) needs no more
 * evidence: learning ends at its CPU time, with fewer references than 8
 * working threads would need; the same number of references without
 * structure keeps it learning. */
static void test_clear_structure(struct cm_tracker *t)
{
	for (int spread = 0; spread <= 1; spread++) {
		struct cm_collector *c = learning_collector(t);
		struct cm_matrix *m = cm_matrix_new(0);
		struct cm_overlap_stats os;
		struct cm_error e = { "" };
		double cpu[8];
		uint64_t now = MS;
		int clear, rv;

		if (!c) {
			ok(1, "# SKIP perf sampling unavailable");
			cm_matrix_free(m);
			return;
		}
		for (int i = 0; i < 8; i++)
			cpu[i] = 0.1;
		cm_collect_adapt_period(c, cpu, 8, m, &e);
		for (int r = 0; r < 150; r++)
			for (int i = 0; i < 8; i++)
				feed(c, m, i, 1, spread, &now);
		cm_overlap_flush(c->ov, m);
		cm_overlap_stats(c->ov, &os);
		clear = cm_overlap_structure_clear(&os, CM_RATE_LEARN_CLEAR_R);
		for (int i = 0; i < 8; i++)
			cpu[i] = 0.4;
		rv = cm_collect_adapt_period(c, cpu, 8, m, &e);
		if (!spread)
			ok(clear && rv == 1 &&
			   stats(c).budget.phase == CM_RATE_WATCH &&
			   stats(c).budget.useful < 8 * CM_RATE_LEARN_EVIDENCE,
			   "pairs, clear (r %.3f): learning over at its CPU "
			   "time with %llu references", os.last_r,
			   (unsigned long long)stats(c).budget.useful);
		else
			ok(!clear && rv == 0 &&
			   stats(c).budget.phase == CM_RATE_LEARN &&
			   stats(c).budget.useful_need ==
			   8 * CM_RATE_LEARN_EVIDENCE,
			   "noise (r %.3f): still learning, %llu references "
			   "needed", os.last_r,
			   (unsigned long long)stats(c).budget.useful_need);
		cm_collect_free(c);
		cm_matrix_free(m);
	}
}

int main(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);

	ok(t != NULL, "tracker");
	test_working_threads(t);
	test_clear_structure(t);
	cm_tracker_free(t);
	return done_testing();
}
