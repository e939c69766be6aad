/* test_remap_policy.c: the adaptive interval (LHMapping §3.4.2), the
 * partner filter (SPCD §IV-A), the cost-gain threshold and the decision;
 * the stability rules: per-thread evidence, the noise of a gain,
 * incremental placement of new threads (lib/map_incremental.c) and the
 * remap plan that keeps placed threads unless a complete remap is worth
 * it. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/matrix.h"
#include "commap/rand.h"
#include "remap_policy.h"
#include "tap.h"

static void test_interval(void)
{
	is_int(cm_remap_next_interval(200, 0), 250, "stable: +50 ms");
	is_int(cm_remap_next_interval(200, 1), 150, "changed: -50 ms");
	is_int(cm_remap_next_interval(50, 1), 50, "never below 50 ms");
	is_int(cm_remap_next_interval(75, 1), 50, "clamped to 50 ms");
	is_int(cm_remap_next_interval(1000, 0), 1000, "never above 1 s");
	is_int(cm_remap_next_interval(980, 0), 1000, "clamped to 1 s");
	is_int(cm_remap_next_interval(10, 0), 60, "from below the range");

	int t = CM_REMAP_INTERVAL_MS_START;

	for (int i = 0; i < 100; i++)
		t = cm_remap_next_interval(t, 0);
	is_int(t, 1000, "a stable pattern settles at 1 s");
	for (int i = 0; i < 100; i++)
		t = cm_remap_next_interval(t, 1);
	is_int(t, 50, "a changing pattern settles at 50 ms");
}

static void test_aging(void)
{
	double a = CM_REMAP_ALPHA, kept200 = 1, kept1000 = 1;

	ok(fabs(cm_remap_aging(a, 200) - a) < 1e-12, "200 ms ages by alpha");
	ok(fabs(cm_remap_aging(a, 1000) - pow(a, 5)) < 1e-12,
	   "1 s ages by alpha^5 (%.4f)", cm_remap_aging(a, 1000));
	ok(fabs(cm_remap_aging(a, 100) - sqrt(a)) < 1e-12,
	   "100 ms by sqrt(alpha)");
	ok(cm_remap_aging(a, 0) == 1 && cm_remap_aging(a, -5) == 1,
	   "an empty interval ages nothing");
	ok(cm_remap_aging(1, 1000) == 1 && cm_remap_aging(0, 1000) == 0,
	   "alpha 1 keeps, alpha 0 forgets");
	/* The point: 2 s of a stable pattern leave the same memory in 200 ms
	 * intervals as in 1 s ones. */
	for (int i = 0; i < 10; i++)
		kept200 *= cm_remap_aging(a, 200);
	for (int i = 0; i < 2; i++)
		kept1000 *= cm_remap_aging(a, 1000);
	ok(fabs(kept200 - kept1000) < 1e-12, "2 s remembered alike in 200 ms "
	   "and 1 s intervals (%.4f, %.4f)", kept200, kept1000);
}

/* The progress clock: a step ages by its own progress, so a starved
 * one keeps its evidence; one at full speed ages by wall time as ever. */
static void test_progress(void)
{
	const uint64_t ms = 1000000, wall = 200 * ms;
	double a = CM_REMAP_ALPHA, full, starved;
	uint64_t p, sum = 0;

	ok(cm_remap_progress(wall, wall, 1, 2, wall, NULL) == wall,
	   "one thread at full speed: wall time");
	ok(cm_remap_progress(wall, 4 * 190 * ms, 4, 4, 190 * ms, NULL) == wall,
	   "4 threads at 95%% of their CPUs: full speed, wall time exactly");
	ok(cm_remap_progress(wall, 2 * wall, 12, 2, wall / 5, NULL) == wall,
	   "12 threads sharing 2 CPUs fully: wall time");
	ok(cm_remap_progress(wall, wall, 4, 8, wall, NULL) == wall,
	   "one busy thread, three waiting for it: full speed");
	p = cm_remap_progress(wall, wall / 20, 1, 2, wall / 20, NULL);
	ok(p == wall / 20, "a thread with 1/20 of a CPU: 1/20 of the wall "
	   "time (%llu ms)", (unsigned long long)(p / ms));
	full = cm_remap_aging(a, (int)(wall / ms));
	starved = cm_remap_aging(a, (int)(p / ms));
	ok(fabs(log(full) / log(starved) - 20) < 1e-9, "... ages 20 times "
	   "slower (%.4f per interval, %.4f at full speed)", starved, full);
	for (int i = 0; i < 20; i++)
		sum += cm_remap_progress(wall, wall / 20, 1, 2, wall / 20, NULL);
	ok(fabs(cm_remap_aging(a, (int)(sum / ms)) - full) < 1e-12,
	   "... and after 20 intervals as much as one at full speed");
	p = cm_remap_progress(wall, 12 * wall / 40, 12, 2, wall / 40, NULL);
	ok(p == 3 * wall / 20, "12 threads on 2 CPUs with 3/20 of them: "
	   "3/20 (%llu ms)", (unsigned long long)(p / ms));
	ok(cm_remap_progress(wall, 0, 0, 2, 0, NULL) == 0,
	   "no thread ran: no progress, no aging");
	ok(cm_remap_progress(wall, 0, -1, 2, 0, NULL) == wall,
	   "nothing readable: wall time, as before");
	ok(cm_remap_progress(wall, 3 * wall, 3, 0, wall, NULL) == wall,
	   "CPUs unknown: the threads that ran");
	ok(cm_remap_progress(0, 5, 1, 1, 5, NULL) == 0, "no wall time: nothing");
}

/* CPU time is accounted at the kernel's ticks: a reading late by 30 ms
 * shows a thread at full speed 230 ms then 170 ms in two 200 ms pieces;
 * the first one's surplus carries over, so both are full speed. */
static void test_progress_credit(void)
{
	const uint64_t ms = 1000000, wall = 200 * ms;
	uint64_t credit = 0, p1, p2, p;

	p1 = cm_remap_progress(wall, 230 * ms, 1, 2, 230 * ms, &credit);
	ok(p1 == wall && credit == 30 * ms, "230 ms in 200: full speed, 30 ms "
	   "carried (%llu ms)", (unsigned long long)(credit / ms));
	p2 = cm_remap_progress(wall, 170 * ms, 1, 2, 170 * ms, &credit);
	ok(p2 == wall && credit == 0, "then 170 ms in 200: with the 30 ms, "
	   "full speed (%llu ms)", (unsigned long long)(p2 / ms));
	ok(cm_remap_progress(wall, 170 * ms, 1, 2, 170 * ms, NULL) < wall,
	   "without the carry 170 of 200 ms would not be");
	credit = 0;
	cm_remap_progress(wall, 2 * wall, 1, 2, 2 * wall, &credit);
	ok(credit == CM_REMAP_PROGRESS_CREDIT_NS, "a thread seen first with "
	   "all its past CPU time: the carry is bounded (%llu ms)",
	   (unsigned long long)(credit / ms));
	p = cm_remap_progress(wall, 10 * ms, 1, 2, 10 * ms, &credit);
	ok(p == 110 * ms && credit == 0, "below full speed the carry is spent "
	   "(%llu ms)", (unsigned long long)(p / ms));
	credit = 5 * ms;
	ok(cm_remap_progress(wall, 0, -1, 2, 0, &credit) == wall &&
	   credit == 0, "nothing readable: wall time, no carry");
}

static void test_partners(void)
{
	struct cm_matrix *m = cm_matrix_new(6);
	int p[8], before[8];

	cm_matrix_add(m, 0, 1, 10);
	cm_matrix_add(m, 2, 3, 5);
	cm_matrix_add(m, 0, 2, 1);
	cm_matrix_add(m, 4, 5, 2);
	cm_matrix_add(m, 4, 3, 2);	/* tie for 4: lower index wins */
	cm_remap_partners(m, 8, p);
	is_int(p[0], 1, "0's partner is 1");
	is_int(p[1], 0, "1's partner is 0");
	is_int(p[2], 3, "2's partner is 3 (5 > 1)");
	is_int(p[4], 3, "tie broken by the lower index");
	is_int(p[6], -1, "beyond the matrix: no partner");
	is_int(cm_remap_partners_changed(p, 8, p, 8), 0, "same: 0 changed");
	for (int i = 0; i < 8; i++)
		before[i] = p[i];
	/* Phase change: 0 now talks to 2 more than to 1 (SPCD §V-B). */
	cm_matrix_add(m, 0, 2, 50);
	cm_remap_partners(m, 8, p);
	is_int(cm_remap_partners_changed(before, 8, p, 8), 2,
	       "0 and 2 changed partner");
	is_int(cm_remap_partners_changed(before, 3, p, 6), 5,
	       "threads beyond the old list count when they have a partner");
	is_int(cm_remap_partners_changed(NULL, 0, p, 0), 0, "empty");
	cm_remap_partners(NULL, 3, p);
	ok(p[0] == -1 && p[2] == -1, "no matrix: no partners");
	cm_matrix_free(m);
}

static void test_worth(void)
{
	ok(cm_remap_worth(100, 90, 0.05), "10%% better than a 5%% threshold");
	ok(!cm_remap_worth(100, 96, 0.05), "4%% better: not worth it");
	ok(!cm_remap_worth(100, 95, 0.05), "exactly 5%%: not worth it");
	ok(!cm_remap_worth(100, 120, 0.05), "worse: never");
	ok(!cm_remap_worth(0, 0, 0.05), "zero cost: nothing to gain");
	ok(!cm_remap_worth(-1, 0, 0.05), "unknown current cost: no");
	ok(cm_remap_worth(1, 0.5, 0), "threshold 0: any gain");
	ok(!cm_remap_worth(1, 0, 1), "threshold 1: never");
}

static void test_decide(void)
{
	struct cm_remap_input in = { .interval_ms = 200,
				     .partner_threshold = 2 };
	struct cm_remap_decision d;

	cm_remap_decide(&in, &d);
	ok(!d.compute && d.next_interval_ms == 250, "no communication: "
	   "nothing, interval grows (%s)", d.reason);
	in.comm_total = 1;
	in.partners_changed = 2;
	cm_remap_decide(&in, &d);
	ok(!d.compute && !d.pattern_changed,
	   "one stray event moves nobody (%s)", d.reason);
	in.partners_changed = 0;
	in.comm_total = 10;
	cm_remap_decide(&in, &d);
	ok(d.compute, "first communication: initial mapping (%s)", d.reason);
	in.have_mapping = 1;
	in.partners_changed = 1;
	cm_remap_decide(&in, &d);
	ok(!d.compute && !d.pattern_changed && d.next_interval_ms == 250,
	   "one partner changed is below SPCD's threshold (%s)", d.reason);
	in.partners_changed = 2;
	cm_remap_decide(&in, &d);
	ok(d.compute && d.pattern_changed && d.next_interval_ms == 150,
	   "two changed: remap, interval shrinks (%s)", d.reason);
	in.partners_changed = 0;
	in.unplaced = 3;
	cm_remap_decide(&in, &d);
	ok(d.compute && !d.pattern_changed, "new threads: map them (%s)",
	   d.reason);
	in.partner_threshold = 0;
	in.unplaced = 0;
	in.partners_changed = 2;
	cm_remap_decide(&in, &d);
	ok(d.pattern_changed, "threshold 0 means SPCD's default 2");
	in.partners_changed = 0;
	in.recheck = 2;
	cm_remap_decide(&in, &d);
	ok(d.compute && !d.pattern_changed && d.next_interval_ms == 250,
	   "stable partners, a pattern change still to recheck: compute, "
	   "interval grows (%s)", d.reason);
	in.comm_total = 1;
	cm_remap_decide(&in, &d);
	ok(!d.compute, "recheck without evidence: nothing (%s)", d.reason);
	in.comm_total = 10;
	in.recheck = 0;
	cm_remap_decide(&in, &d);
	ok(!d.compute, "recheck over: stable (%s)", d.reason);
}

static struct cm_topo *load(const char *spec)
{
	struct cm_topo *t = NULL;

	if (cm_topo_load_synthetic(&t, spec, NULL) < 0) {
		printf("Bail out! cannot load synthetic topology %s\n", spec);
		exit(1);
	}
	return t;
}

static void test_thread_evidence(void)
{
	static const struct {
		double row, max;
		int want;
		const char *what;
	} cases[] = {
		{ 0, 0, 0, "no communication" },
		{ 3.9, 10, 0, "below 4 events" },
		{ 4, 10, 1, "4 events" },
		{ 4, 100, 0, "4 events beside a thread of 100: a helper" },
		{ 5, 100, 1, "5% of the busiest" },
		{ 1e9, 1e9, 1, "the busiest itself" },
		{ 3, 3, 0, "the busiest, but a handful of events" },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		ok(cm_remap_thread_has_evidence(cases[k].row, cases[k].max) ==
		   cases[k].want, "evidence: %s", cases[k].what);
}

static void test_noise_and_accept(void)
{
	struct cm_topo *t = load("pack:2 core:2 pu:2");
	struct cm_matrix *m = cm_matrix_new(3);
	int a[3] = { 0, 1, 4 }, b[3] = { 0, 4, 1 };
	int d_core = cm_topo_distance(t, 0, 1);
	int d_pack = cm_topo_distance(t, 0, 4);
	double want;

	cm_matrix_add(m, 0, 1, 9);
	cm_matrix_add(m, 0, 2, 16);
	is_double(cm_remap_cost_noise(t, m, 3, a, a, 1.0), 0, 1e-12,
		  "noise: same placement, 0");
	want = sqrt(9.0 * (d_core - d_pack) * (d_core - d_pack) +
		    16.0 * (d_pack - d_core) * (d_pack - d_core));
	ok(fabs(cm_remap_cost_noise(t, m, 3, a, b, 1.0) - want) < 1e-9,
	   "noise: sqrt(sum w * (d_a - d_b)^2) = %.3f", want);
	cm_matrix_add(m, 1, 2, 100);
	is_double(cm_remap_cost_noise(t, m, 3, a, b, 1.0), want, 1e-9,
		  "noise: an edge at the same distance in both adds nothing");
	ok(cm_remap_accept(100, 65, 10, 0.05), "accept: gain 35 > 3 x 10");
	ok(!cm_remap_accept(100, 75, 10, 0.05), "accept: gain 25 is not "
	   "above 3 x noise 10");
	ok(!cm_remap_accept(100, 97, 0, 0.05), "accept: no noise, but below "
	   "the 5%% threshold");
	ok(cm_remap_accept(100, 94, 0, 0.05), "accept: no noise, 6%%");
	ok(!cm_remap_accept(0, 0, 0, 0.05), "accept: nothing to gain");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* Threads placed in cur whose PU differs in pu. */
static int moves(int n, const int *cur, const int *pu)
{
	int k = 0;

	for (int t = 0; t < n; t++)
		k += cur[t] >= 0 && cur[t] != pu[t];
	return k;
}

static void test_incremental_errors(void)
{
	struct cm_topo *t = load("core:2 pu:1");
	struct cm_matrix *m = cm_matrix_new(3);
	struct cm_error err;
	int pu[3] = { -1, -1, -1 };

	is_int(cm_map_incremental(t, m, 0, NULL, 0, &err), 0,
	       "incremental: no threads, nothing placed");
	errno = 0;
	ok(cm_map_incremental(NULL, m, 1, pu, 0, &err) < 0 && errno == EINVAL,
	   "incremental: no topology: EINVAL");
	ok(cm_map_incremental(t, m, 4, pu, 1, &err) < 0 && errno == EINVAL,
	   "incremental: more threads than the matrix: EINVAL (%s)",
	   err.text);
	pu[1] = 2;
	ok(cm_map_incremental(t, m, 2, pu, 0, &err) < 0 && errno == EINVAL,
	   "incremental: PU index 2 of 2 PUs: EINVAL (%s)", err.text);
	pu[1] = -2;
	ok(cm_map_incremental(t, m, 2, pu, 0, &err) < 0 && errno == EINVAL,
	   "incremental: PU index -2: EINVAL");
	pu[1] = -1;
	ok(cm_map_incremental(t, m, 3, pu, 0, &err) < 0 && errno == ENOSPC,
	   "incremental: 3 threads on 2 PUs without oversubscribe: ENOSPC "
	   "(%s)", err.text);
	is_int(cm_map_incremental(t, m, 3, pu, 1, &err), 3,
	       "incremental: with oversubscribe, 3 placed");
	ok(pu[0] >= 0 && pu[1] >= 0 && pu[2] >= 0 && pu[0] != pu[1],
	   "incremental: no communication: spread before doubling up");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* PU index on "pack:2 core:2 pu:2" = 4 pack + 2 core + pu. */
static void test_incremental_known(void)
{
	struct cm_topo *t = load("pack:2 core:2 pu:2");
	struct cm_topo *t2 = load("core:2 pu:1");
	struct cm_matrix *m = cm_matrix_new(6);
	struct cm_error err;
	int pu[6];

	/* A placed pair on core 0; a new pair 2-3, a new thread 4 talking
	 * to placed thread 0, a new thread 5 talking to nobody. */
	cm_matrix_add(m, 0, 1, 50);
	cm_matrix_add(m, 2, 3, 40);
	cm_matrix_add(m, 0, 4, 5);
	pu[0] = 0;
	pu[1] = 1;
	for (int k = 2; k < 6; k++)
		pu[k] = -1;
	is_int(cm_map_incremental(t, m, 6, pu, 0, &err), 4,
	       "incremental: 4 new threads placed");
	ok(pu[0] == 0 && pu[1] == 1, "incremental: the placed pair stays");
	ok(pu[2] / 2 == pu[3] / 2 && pu[2] / 2 != 0,
	   "incremental: the new pair shares a free core (PUs %d %d)",
	   pu[2], pu[3]);
	ok(pu[4] / 4 == 0 && pu[4] / 2 != pu[2] / 2,
	   "incremental: thread 4 goes to its partner's package (PU %d)",
	   pu[4]);
	ok(pu[5] >= 0 && cm_map_validate(t, 6, pu, 0, &err) == 0,
	   "incremental: one thread per PU (%s)", "valid");

	/* 2 PUs, pairs 0-1 and 2-3 placed one per PU; a new pair 4-5:
	 * 3 threads per PU at most, so it is split, and nobody else moves. */
	for (int k = 0; k < 6; k++)
		pu[k] = k < 4 ? k / 2 : -1;
	cm_matrix_add(m, 4, 5, 100);
	is_int(cm_map_incremental(t2, m, 6, pu, 1, &err), 2,
	       "incremental, 2 PUs: the new pair placed");
	ok(pu[0] == 0 && pu[1] == 0 && pu[2] == 1 && pu[3] == 1,
	   "incremental, 2 PUs: the placed pairs stay");
	ok(pu[4] != pu[5], "incremental, 2 PUs: 3 per PU at most: the new "
	   "pair is split");
	cm_matrix_free(m);
	cm_topo_free(t);
	cm_topo_free(t2);
}

/* Random partial mappings: the placed threads never move, every thread
 * ends on a PU, within the load limit. */
static void test_incremental_random(void)
{
	static const char *specs[] = { "pack:2 core:2 pu:2", "core:2 pu:1",
				       "pack:2 l3:2 core:3 pu:1" };
	uint64_t r = 7;
	int bad = 0, runs = 0;

	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		struct cm_topo *t = load(specs[s]);
		int npus = cm_topo_npus(t);

		for (int n = 1; n <= 2 * npus + 1; n++) {
			struct cm_matrix *m = cm_matrix_new(n);
			int *cur = malloc(sizeof(int) * (size_t)n);
			int *pu = malloc(sizeof(int) * (size_t)n);
			int *load = calloc((size_t)npus, sizeof(int));
			int cap = n <= npus ? 1 : (n + npus - 1) / npus;
			struct cm_error err;
			int ok_run;

			for (int i = 0; i < n; i++)
				for (int j = i + 1; j < n; j++)
					if (cm_rand_below(&r, 3) == 0)
						cm_matrix_add(m, i, j, 1 +
						    cm_rand_below(&r, 100));
			/* A valid placement of a random subset. */
			for (int i = 0; i < n; i++) {
				int p = (int)cm_rand_below(&r, (uint64_t)npus);

				cur[i] = -1;
				if (cm_rand_below(&r, 2) == 0)
					continue;
				while (load[p] >= cap)
					p = (p + 1) % npus;
				cur[i] = p;
				load[p]++;
			}
			memcpy(pu, cur, sizeof(int) * (size_t)n);
			memset(load, 0, sizeof(int) * (size_t)npus);
			ok_run = cm_map_incremental(t, m, n, pu, n > npus,
						    &err) >= 0 &&
				 moves(n, cur, pu) == 0;
			for (int i = 0; ok_run && i < n; i++) {
				ok_run = pu[i] >= 0 && pu[i] < npus &&
					 ++load[pu[i]] <= cap;
			}
			bad += !ok_run;
			runs++;
			free(cur);
			free(pu);
			free(load);
			cm_matrix_free(m);
		}
		cm_topo_free(t);
	}
	ok(bad == 0, "incremental: %d random partial mappings completed, "
	   "placed threads kept, load limits held (%d bad)", runs, bad);
}

/* A ring of 4 on 2 PUs, placed {0,1} {2,3}; the other half of the ring
 * (1-2, 3-0) is a little heavier, as sampling noise makes it: the
 * from-scratch candidate is the other grouping, about 9% cheaper. */
static struct cm_matrix *noisy_ring(int n, double scale)
{
	struct cm_matrix *m = cm_matrix_new(n);

	cm_matrix_add(m, 0, 1, 10 * scale);
	cm_matrix_add(m, 1, 2, 11 * scale);
	cm_matrix_add(m, 2, 3, 10 * scale);
	cm_matrix_add(m, 3, 0, 11 * scale);
	return m;
}

static void test_plan_stability(void)
{
	struct cm_topo *t = load("core:2 pu:1");
	struct cm_matrix *m = noisy_ring(4, 1);
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1,
				     .oversubscribe = 1 };
	struct cm_remap_plan plan;
	struct cm_error err;
	int cur[6] = { 0, 0, 1, 1, -1, -1 }, pu[6], full[6];

	is_int(cm_remap_plan(t, m, 4, cur, NULL, 0.05, 1.0, pu, &plan, &err), 0,
	       "plan: noisy ring, all placed");
	ok(plan.kind == CM_REMAP_KEEP && moves(4, cur, pu) == 0,
	   "plan: a 9%% gain within the noise (%.3g vs %.3g, noise %.3g) "
	   "moves nobody", plan.cost_full, plan.cost_base, plan.noise);
	ok(plan.cost_full < plan.cost_base * 0.95,
	   "plan: ... although it passes the 5%% gain threshold alone");
	cm_matrix_free(m);

	/* Two new threads start communicating, 4 with 0 and 5 with 2 (a
	 * helper thread of each MPI rank, say). */
	m = noisy_ring(6, 1);
	cm_matrix_add(m, 4, 0, 30);
	cm_matrix_add(m, 5, 2, 30);
	is_int(cm_remap_plan(t, m, 6, cur, NULL, 0.05, 1.0, pu, &plan, &err), 0,
	       "plan: 2 new threads");
	is_int(plan.kind, CM_REMAP_INCREMENTAL, "plan: incremental");
	is_int(plan.moved, 0, "plan: new threads placed, placed threads "
	       "kept (moved = 0)");
	ok(pu[4] == cur[0] && pu[5] == cur[2] && plan.placed_new == 2,
	   "plan: both new threads placed beside their partners");
	/* What the agent did before: the complete mapping from scratch,
	 * aligned to the current placement, applied because threads were
	 * new.  It moves placed threads: this test is the regression test
	 * of that behaviour. */
	cm_map(t, m, &mo, full, &err);
	cm_map_align(t, 6, cur, full);
	ok(moves(6, cur, full) > 0, "plan: (the complete candidate would "
	   "have moved %d placed threads)", moves(6, cur, full));
	cm_matrix_free(m);

	/* The same 9% with 1000 times the evidence is real: remap. */
	m = noisy_ring(4, 1000);
	is_int(cm_remap_plan(t, m, 4, cur, NULL, 0.05, 1.0, pu, &plan, &err), 0,
	       "plan: the same gain, 1000x the events");
	ok(plan.kind == CM_REMAP_FULL && plan.moved == 2 &&
	   plan.cost_new < plan.cost_base && !plan.avoided,
	   "plan: significant now: complete remap, 2 threads move "
	   "(noise %.3g, gain %.3g)", plan.noise,
	   plan.cost_base - plan.cost_full);
	/* ... unless that is where the previous remap took them from
	 * (given with the PUs swapped: equivalent all the same). */
	memcpy(full, pu, sizeof(int) * 4);
	for (int k = 0; k < 4; k++)
		full[k] = 1 - full[k];
	is_int(cm_remap_plan(t, m, 4, cur, full, 0.05, 1.0, pu, &plan, &err), 0,
	       "plan: the same, as an undo of the last remap");
	ok(plan.kind == CM_REMAP_KEEP && plan.avoided && moves(4, cur, pu) == 0,
	   "plan: an undo during the hold: kept");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* SPCD §V-B phase change on "pack:2 core:2 pu:2": pairs placed on
 * cores; now threads 0-2 and 1-3 communicate. */
static void test_equivalent_and_undo(void)
{
	struct cm_topo *t = load("pack:2 core:2 pu:2");
	int a[4] = { 0, 1, 4, 5 }, b[4] = { 5, 4, 1, 0 }, c[4] = { 0, 4, 1, 5 };
	int d[4] = { 0, 1, 4, -1 };

	ok(cm_remap_equivalent(t, 4, a, a), "equivalent: itself");
	ok(cm_remap_equivalent(t, 4, a, b), "equivalent: packages and PUs "
	   "swapped");
	ok(!cm_remap_equivalent(t, 4, a, c), "not equivalent: other pairs "
	   "share cores");
	ok(!cm_remap_equivalent(t, 4, a, d) && !cm_remap_equivalent(t, 4, d, d),
	   "not equivalent: a thread unplaced");
	ok(cm_remap_equivalent(t, 0, NULL, NULL), "equivalent: no threads");
	ok(!cm_remap_undo_allowed(3999, 0) && cm_remap_undo_allowed(4000, 0),
	   "undo: held for 4 s after the remap");
	ok(!cm_remap_undo_allowed(7999, 1) && cm_remap_undo_allowed(8000, 1),
	   "undo: 8 s after one undo");
	ok(!cm_remap_undo_allowed(4000.0 * 256 - 1, 100) &&
	   cm_remap_undo_allowed(4000.0 * 256, 100),
	   "undo: the hold stops doubling at 2^8");
	ok(!cm_remap_undo_allowed(0, -1) && cm_remap_undo_allowed(4000, -1),
	   "undo: a negative count is 0");
	cm_topo_free(t);
}

static void test_plan_phase_change(void)
{
	struct cm_topo *t = load("pack:2 core:2 pu:2");
	struct cm_matrix *m = cm_matrix_new(4);
	struct cm_remap_plan plan;
	struct cm_error err;
	int cur[4] = { 0, 1, 4, 5 }, pu[4];

	cm_matrix_add(m, 0, 1, 2);
	cm_matrix_add(m, 2, 3, 2);
	cm_matrix_add(m, 0, 2, 40);
	cm_matrix_add(m, 1, 3, 40);
	is_int(cm_remap_plan(t, m, 4, cur, NULL, 0.05, 1.0, pu, &plan, &err), 0,
	       "plan: phase change");
	ok(plan.kind == CM_REMAP_FULL &&
	   pu[0] / 2 == pu[2] / 2 && pu[1] / 2 == pu[3] / 2,
	   "plan: phase change remapped, new partners share cores");
	ok(plan.moved > 0 && plan.moved < 4, "plan: aligned: %d of 4 "
	   "threads move", plan.moved);
	ok(plan.cost_cur > plan.cost_new && plan.placed_new == 0,
	   "plan: cost %.4g -> %.4g", plan.cost_cur, plan.cost_new);
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_plan_edges(void)
{
	struct cm_topo *t = load("pack:2 core:2 pu:2");
	struct cm_matrix *m = cm_matrix_new(4);
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	struct cm_remap_plan plan;
	struct cm_error err;
	int cur[4] = { -1, -1, -1, -1 }, pu[4], ref[4];

	cm_matrix_add(m, 0, 1, 10);
	cm_matrix_add(m, 2, 3, 10);
	is_int(cm_remap_plan(t, m, 4, cur, NULL, 0.05, 1.0, pu, &plan, &err), 0,
	       "plan: nothing placed");
	cm_map(t, m, &mo, ref, &err);
	ok(plan.kind == CM_REMAP_FULL && !memcmp(pu, ref, sizeof(pu)) &&
	   plan.placed_new == 4 && plan.cost_cur == -1,
	   "plan: nothing placed: the complete mapping (cm_map)");
	memcpy(cur, pu, sizeof(cur));
	is_int(cm_remap_plan(t, m, 4, cur, NULL, 0.05, 1.0, pu, &plan, &err), 0,
	       "plan: optimal already");
	ok(plan.kind == CM_REMAP_KEEP && !memcmp(pu, cur, sizeof(pu)) &&
	   plan.moved == 0, "plan: optimal: keep");
	is_int(cm_remap_plan(t, m, 0, cur, NULL, 0.05, 1.0, pu, &plan, &err), -1,
	       "plan: n other than the matrix's: refused");
	is_int(cm_remap_plan(NULL, m, 4, cur, NULL, 0.05, 1.0, pu, &plan, &err), -1,
	       "plan: no topology: refused");
	cm_matrix_free(m);
	m = cm_matrix_new(0);
	is_int(cm_remap_plan(t, m, 0, NULL, NULL, 0.05, 1.0, NULL, &plan, &err), 0,
	       "plan: no threads");
	is_int(plan.kind, CM_REMAP_KEEP, "plan: no threads: keep");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* The co-location bias (remap_policy.h, CM_REMAP_NEAR_SEEN): the MPI ring
 * of the demo, 4 threads on this machine's 2 PUs (one L3, a private L2
 * each), pinned as {0,1} {2,3}.  Pinned that way the near pairs 0-1 and
 * 2-3 were detected at about half the rate of 1-2 and 0-3, with the same
 * traffic on every edge. */
static struct cm_matrix *ring_seen(double near, double far)
{
	struct cm_matrix *m = cm_matrix_new(4);

	cm_matrix_add(m, 0, 1, near);
	cm_matrix_add(m, 2, 3, near);
	cm_matrix_add(m, 1, 2, far);
	cm_matrix_add(m, 0, 3, far);
	return m;
}

static void test_colocation(void)
{
	struct cm_topo *t = load("pack:1 l3:1 core:2 pu:1");
	struct cm_topo *t8 = load("pack:2 core:2 pu:2");
	struct cm_remap_plan plan;
	struct cm_error err;
	struct cm_matrix *m;
	int cur[4] = { 0, 0, 1, 1 }, pu[4], loose[4] = { 0, -1, 1, 1 };
	int a[2] = { 0, 0 }, b[2] = { 0, 1 };
	double want;

	ok(cm_remap_near(t, 0, 0) && !cm_remap_near(t, 0, 1),
	   "near: one PU; not across the L3 (distance %d)",
	   cm_topo_distance(t, 0, 1));
	ok(cm_remap_near(t8, 0, 1) && !cm_remap_near(t8, 0, 2) &&
	   !cm_remap_near(t8, 0, 4), "near: SMT siblings; not other cores");
	ok(!cm_remap_near(t, -1, 0) && !cm_remap_near(t, 0, -1),
	   "near: an unplaced thread is near nothing");

	m = ring_seen(500, 1000);
	is_int(cm_remap_correct_near(t, m, 4, cur, CM_REMAP_NEAR_SEEN), 2,
	       "correct: the two near pairs");
	is_double(cm_matrix_get(m, 0, 1), 500 / CM_REMAP_NEAR_SEEN, 1e-9,
		  "correct: a near pair divided by CM_REMAP_NEAR_SEEN");
	is_double(cm_matrix_get(m, 1, 2), 1000, 1e-9,
		  "correct: a pair across cores as seen");
	cm_matrix_free(m);
	m = ring_seen(500, 1000);
	is_int(cm_remap_correct_near(t, m, 4, loose, CM_REMAP_NEAR_SEEN), 1,
	       "correct: a pair with an unpinned thread is left alone");
	is_double(cm_matrix_get(m, 0, 1), 500, 1e-9, "correct: 0-1 as seen");
	is_int(cm_remap_correct_near(t, m, 4, cur, 1.0), 2,
	       "correct: seen 1 changes nothing");
	errno = 0;
	ok(cm_remap_correct_near(t, m, 4, cur, 0) < 0 && errno == EINVAL &&
	   cm_remap_correct_near(t, m, 4, cur, 1.5) < 0 &&
	   cm_remap_correct_near(NULL, m, 4, cur, 0.5) < 0 &&
	   cm_remap_correct_near(t, m, 4, NULL, 0.5) < 0,
	   "correct: bad arguments refused (EINVAL)");
	cm_matrix_free(m);

	/* A corrected weight w is w * seen events: variance w / seen. */
	m = cm_matrix_new(2);
	cm_matrix_add(m, 0, 1, 9);
	want = sqrt(9.0 / CM_REMAP_NEAR_SEEN * 3 * 3);
	is_double(cm_remap_cost_noise(t, m, 2, a, b, CM_REMAP_NEAR_SEEN), want,
		  1e-9, "noise: a corrected near pair counts w / seen");
	is_double(cm_remap_cost_noise(t, m, 2, b, a, CM_REMAP_NEAR_SEEN), 3.0 *
		  3, 1e-9, "noise: a pair across cores counts w");
	cm_matrix_free(m);

	/* What the agent did before: the grouping in use looks twice worse
	 * than the other one, and it regroups. */
	m = ring_seen(500, 1000);
	is_int(cm_remap_plan(t, m, 4, cur, NULL, 0.05, 1.0, pu, &plan, &err),
	       0, "plan, ring as seen: planned");
	ok(plan.kind == CM_REMAP_FULL && plan.moved == 2,
	   "plan, ring as seen, uncorrected: regrouped (the old bias: cost "
	   "%.4g -> %.4g)", plan.cost_base, plan.cost_full);
	/* Corrected for where the events were seen: both groupings are
	 * worth the same, nobody moves; at the measured extremes too. */
	for (double r = 0.40; r < 0.63; r += 0.11) {
		cm_matrix_free(m);
		m = ring_seen(1000 * r, 1000);
		cm_remap_correct_near(t, m, 4, cur, CM_REMAP_NEAR_SEEN);
		ok(cm_remap_plan(t, m, 4, cur, NULL, 0.05,
				 CM_REMAP_NEAR_SEEN, pu, &plan, &err) == 0,
		   "plan, ring seen near at %.2f: planned", r);
		ok(plan.kind == CM_REMAP_KEEP && moves(4, cur, pu) == 0,
		   "plan, ring seen near at %.2f, corrected: kept (cost %.4g, "
		   "candidate %.4g, noise %.3g)", r, plan.cost_base,
		   plan.cost_full, plan.noise);
	}
	/* A real change is still followed: the near pairs stopped. */
	cm_matrix_free(m);
	m = ring_seen(20, 1000);
	cm_remap_correct_near(t, m, 4, cur, CM_REMAP_NEAR_SEEN);
	is_int(cm_remap_plan(t, m, 4, cur, NULL, 0.05, CM_REMAP_NEAR_SEEN,
			     pu, &plan, &err), 0, "plan, real change: planned");
	ok(plan.kind == CM_REMAP_FULL && plan.moved == 2,
	   "plan, real change, corrected: regrouped");
	is_int(cm_remap_plan(t, m, 4, cur, NULL, 0.05, 0, pu, &plan, &err), -1,
	       "plan: near_seen 0 refused");
	cm_matrix_free(m);
	cm_topo_free(t);
	cm_topo_free(t8);
}

int main(void)
{
	test_interval();
	test_aging();
	test_progress();
	test_progress_credit();
	test_colocation();
	test_partners();
	test_worth();
	test_decide();
	test_thread_evidence();
	test_noise_and_accept();
	test_incremental_errors();
	test_incremental_known();
	test_incremental_random();
	test_plan_stability();
	test_equivalent_and_undo();
	test_plan_phase_change();
	test_plan_edges();
	return done_testing();
}
