/* test_map_exact.c: exhaustive search (lib/map_exact.c): known optima,
 * tie-breaking by spreading, optimality against brute force, and never
 * worse than a baseline. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/rand.h"
#include "map_internal.h"
#include "tap.h"
#include "map_test_util.h"

static int exact(const struct cm_topo *t, const struct cm_matrix *m,
		 int oversubscribe, int *map)
{
	struct cm_map_options opts = {
		.algorithm = CM_MAP_EXACT, .oversubscribe = oversubscribe,
	};
	struct cm_error err = { "" };
	int n = cm_matrix_nthreads(m);

	if (cm_map_exact(t, m, &opts, map, &err) < 0) {
		diag("exact: %s", err.text);
		return -1;
	}
	if (cm_map_validate(t, n, map, oversubscribe, &err) < 0) {
		diag("exact gave an invalid mapping: %s", err.text);
		return -1;
	}
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* n threads in pairs (2k, 2k+1) of weight w. */
static struct cm_matrix *pairs(int n, double w)
{
	struct cm_matrix *m = cm_matrix_new(n);

	for (int i = 0; i + 1 < n; i += 2)
		cm_matrix_add(m, i, i + 1, w);
	return m;
}

static struct cm_matrix *random_matrix(uint64_t *seed, int n, int density)
{
	struct cm_matrix *m = cm_matrix_new(n);

	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if ((int)cm_rand_below(seed, 100) < density)
				cm_matrix_add(m, i, j, 1 + (double)
					      cm_rand_below(seed, 50));
	return m;
}

static void test_pairs_small(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *m = pairs(8, 10);
	int map[8], siblings = 1;

	ok(exact(t, m, 0, map) == 0, "8 threads in 4 pairs on 8 PUs");
	for (int i = 0; i < 8; i += 2)
		siblings &= cm_topo_distance(t, map[i], map[i + 1]) == 1;
	ok(siblings, "every pair on sibling PUs");
	is_double(cm_cost(t, m, map), 40, 1e-9, "cost 4 * 10 * 1");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* 4 pairs on 128 PUs: each pair on SMT siblings (they share), and the pairs
 * spread over the four NUMA nodes (they do not). */
static void test_pairs_spread(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	struct cm_matrix *m = pairs(8, 3);
	int map[8], siblings = 1, numa_seen[4] = { 0 }, spread = 1;

	ok(exact(t, m, 0, map) == 0, "4 pairs on 128 PUs");
	for (int i = 0; i < 8; i += 2) {
		siblings &= map[i] / 2 == map[i + 1] / 2;
		numa_seen[map[i] / 32]++;
	}
	for (int k = 0; k < 4; k++)
		spread &= numa_seen[k] == 1;
	ok(siblings, "each pair shares a core");
	ok(spread, "the pairs sit on four different NUMA nodes");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* Threads that do not communicate are spread like scatter, never doubled
 * up on SMT siblings while cores are free. */
static void test_idle_threads_spread(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *zero = cm_matrix_new(4), *m = cm_matrix_new(3);
	int map[4], cores = 1, per_pack[2] = { 0 };

	ok(exact(t, zero, 0, map) == 0, "zero matrix, 4 threads");
	for (int i = 0; i < 4; i++) {
		per_pack[map[i] / 4]++;
		for (int j = 0; j < i; j++)
			cores &= map[i] / 2 != map[j] / 2;
	}
	ok(cores, "four silent threads on four different cores");
	ok(per_pack[0] == 2 && per_pack[1] == 2, "two per package");
	cm_matrix_add(m, 0, 1, 1);
	ok(exact(t, m, 0, map) == 0, "a pair and a silent thread");
	ok(map[0] / 2 == map[1] / 2, "the pair shares a core");
	ok(map[2] / 4 != map[0] / 4, "the silent thread in the other package");
	cm_matrix_free(zero);
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* Does every PU hold exactly the load cm_map_capacity() gives it (which
 * the mappers follow: extra threads spread over the tree)? */
static int loads_as_capacity(const struct cm_topo *t, int n, const int *map)
{
	int cap[16], load[16] = { 0 };

	cm_map_capacity(t, n, 1, cap, NULL);
	for (int i = 0; i < n; i++)
		load[map[i]]++;
	for (int p = 0; p < cm_topo_npus(t); p++)
		if (load[p] != cap[p])
			return 0;
	return 1;
}

/* Brute force: the least cost over all valid mappings (with
 * oversubscription, those whose loads are cm_map_capacity()'s). */
static double brute_force(const struct cm_topo *t, const struct cm_matrix *m,
			  int oversubscribe)
{
	int n = cm_matrix_nthreads(m), npus = cm_topo_npus(t), map[8] = { 0 };
	double best = INFINITY;

	for (;;) {
		int i = 0;

		if (cm_map_validate(t, n, map, oversubscribe, NULL) == 0 &&
		    (n <= npus || loads_as_capacity(t, n, map))) {
			double c = cm_cost(t, m, map);

			if (c < best)
				best = c;
		}
		while (i < n && ++map[i] == npus)
			map[i++] = 0;
		if (i == n)
			return best;
	}
}

static void test_brute_force(void)
{
	static const struct {
		const char *spec, *cpulist;
		int oversubscribe, nmin, nmax;
	} trees[] = {
		{ "pack:2 core:2 pu:2", NULL, 0, 2, 5 },
		{ "pack:2 core:2 pu:2", "0,2,3,6,7", 0, 2, 5 },
		{ "core:2 pu:2", NULL, 1, 5, 6 },
	};
	uint64_t seed = 11;
	int all = 1, rounds = 0;

	for (size_t k = 0; k < sizeof(trees) / sizeof(trees[0]); k++) {
		struct cm_topo *t = map_test_topo(trees[k].spec, trees[k].cpulist);

		for (int r = 0; r < 6; r++) {
			int n = trees[k].nmin + r % (trees[k].nmax -
						     trees[k].nmin + 1);
			struct cm_matrix *m = random_matrix(&seed, n, 60);
			int map[8];
			double bf = brute_force(t, m, trees[k].oversubscribe);

			if (exact(t, m, trees[k].oversubscribe, map) < 0 ||
			    fabs(cm_cost(t, m, map) - bf) > 1e-9 * (bf + 1)) {
				all = 0;
				diag("  %s n=%d: exact %g, brute force %g",
				     trees[k].spec, n, cm_cost(t, m, map), bf);
			}
			rounds++;
			cm_matrix_free(m);
		}
		cm_topo_free(t);
	}
	ok(all, "exact equals brute force on %d small instances", rounds);
}

static void test_never_worse_than_baselines(void)
{
	static const enum cm_map_algorithm base[] = {
		CM_MAP_COMPACT, CM_MAP_SCATTER, CM_MAP_ROUNDROBIN,
		CM_MAP_RANDOM,
	};
	static const char *const specs[] = {
		"pack:2 core:2 pu:2", "pack:2 numa:2 l3:2 core:8 pu:2",
		"pack:2 l3:2 core:2 pu:2",
	};
	uint64_t seed = 3;
	int all = 1, rounds = 0;

	for (int r = 0; r < 24; r++) {
		struct cm_topo *t = map_test_topo(specs[r % 3], NULL);
		int n = 1 + (int)cm_rand_below(&seed, r % 3 == 0 ? 8 : 10);
		struct cm_matrix *m = random_matrix(&seed, n, 20 + 3 * r);
		int map[12], bmap[12];
		double c;

		if (exact(t, m, 0, map) < 0) {
			all = 0;
			continue;
		}
		c = cm_cost(t, m, map);
		for (size_t b = 0; b < sizeof(base) / sizeof(base[0]); b++) {
			struct cm_map_options o = {
				.algorithm = base[b], .seed = (uint64_t)r,
			};

			cm_map_baseline(t, m, &o, bmap, NULL);
			if (c > cm_cost(t, m, bmap) + 1e-9) {
				all = 0;
				diag("  %s n=%d: exact %g > %s %g",
				     specs[r % 3], n, c,
				     cm_map_algorithm_name(base[b]),
				     cm_cost(t, m, bmap));
			}
		}
		rounds++;
		cm_matrix_free(m);
		cm_topo_free(t);
	}
	ok(all, "exact <= compact, scatter, roundrobin, random on %d "
	   "random instances", rounds);
}

/* Twelve threads on 128 PUs: dense random weights (the hardest case for
 * the bound) and three groups of four. */
static void test_twelve_on_128(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	uint64_t seed = 5;
	struct cm_matrix *dense = random_matrix(&seed, 12, 100);
	struct cm_matrix *quads = cm_matrix_new(12);
	struct cm_map_options o = { .algorithm = CM_MAP_COMPACT };
	int map[12], cmap[12], l3s = 1;
	double t0, t1;

	t0 = now_ms();
	ok(exact(t, dense, 0, map) == 0, "12 threads, dense, on 128 PUs");
	t1 = now_ms();
	diag("  dense n=12 on 128 PUs: %.1f ms, cost %g", t1 - t0,
	     cm_cost(t, dense, map));
	cm_map_baseline(t, dense, &o, cmap, NULL);
	ok(cm_cost(t, dense, map) <= cm_cost(t, dense, cmap) + 1e-9,
	   "dense: no worse than compact");
	for (int i = 0; i < 12; i++)
		for (int j = i + 1; j < 12; j++)
			if (i / 4 == j / 4)
				cm_matrix_add(quads, i, j, 10);
	t0 = now_ms();
	ok(exact(t, quads, 0, map) == 0, "three groups of four on 128 PUs");
	t1 = now_ms();
	diag("  quads n=12 on 128 PUs: %.1f ms", t1 - t0);
	/* Optimum per group: two sibling pairs in one L3: 2 * 1 + 4 * 3. */
	is_double(cm_cost(t, quads, map), 3 * 10 * (2 + 12), 1e-9,
		  "each group in two cores of one L3");
	for (int g = 0; g < 3; g++)
		for (int h = 0; h < g; h++)
			l3s &= map[4 * g] / 16 != map[4 * h] / 16;
	ok(l3s, "the groups in different L3s");
	cm_matrix_free(dense);
	cm_matrix_free(quads);
	cm_topo_free(t);
}

/* Almost uniform all-to-all weights on a tree with few spare PUs: many
 * near-equal optima, where the search budget may end the proof early.
 * The result is still valid and no worse than any baseline. */
static void test_near_uniform(void)
{
	struct cm_topo *t = map_test_topo("pack:2 l3:2 core:2 pu:2", NULL);
	struct cm_matrix *m = cm_matrix_new(12);
	struct cm_map_options o = { .algorithm = CM_MAP_COMPACT };
	uint64_t seed = 1;
	int map[12], bmap[12], no_worse = 1;
	double t0, t1;

	for (int i = 0; i < 12; i++)
		for (int j = i + 1; j < 12; j++)
			cm_matrix_add(m, i, j, 1 + 1e-6 * (double)
				      cm_rand_below(&seed, 1000));
	t0 = now_ms();
	ok(exact(t, m, 0, map) == 0, "near-uniform 12 on 16 PUs: valid");
	t1 = now_ms();
	diag("  near-uniform n=12 on 16 PUs: %.1f ms, cost %.6f", t1 - t0,
	     cm_cost(t, m, map));
	for (int b = CM_MAP_COMPACT; b <= CM_MAP_RANDOM; b++) {
		o.algorithm = (enum cm_map_algorithm)b;
		cm_map_baseline(t, m, &o, bmap, NULL);
		no_worse &= cm_cost(t, m, map) <= cm_cost(t, m, bmap) + 1e-9;
	}
	ok(no_worse, "near-uniform: no worse than every baseline");
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_edges(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_topo *holes = map_test_topo("pack:2 core:2 pu:2", "0,2,3,6,7");
	struct cm_matrix *m13 = cm_matrix_new(13), *m9 = pairs(9, 1);
	struct cm_matrix *none = cm_matrix_new(0), *one = cm_matrix_new(1);
	struct cm_matrix *huge = pairs(4, 1e300), *m4 = pairs(4, 1);
	struct cm_map_options o = { .algorithm = CM_MAP_EXACT };
	struct cm_error err = { "" };
	int map[13] = { -7 };

	errno = 0;
	ok(cm_map_exact(t, m13, &o, map, &err) == -1 && errno == EINVAL &&
	   strstr(err.text, "12") && strstr(err.text, "13"),
	   "13 threads: EINVAL naming the limit");
	diag("  %s", err.text);
	ok(cm_map_exact(t, m9, &o, map, &err) == -1 && errno == ENOSPC,
	   "9 threads on 8 PUs without oversubscribe: ENOSPC");
	ok(exact(t, m9, 1, map) == 0, "9 threads on 8 PUs, oversubscribed");
	/* PU 0 takes two threads (cm_map_capacity): one pair there costs
	 * 0, the other three pairs sit on siblings. */
	is_double(cm_cost(t, m9, map), 3, 1e-12,
		  "oversubscribed: one pair stacked, three on siblings");
	map[0] = -7;
	ok(cm_map_exact(t, none, &o, map, &err) == 0 && map[0] == -7,
	   "no threads: success, mapping untouched");
	ok(exact(t, one, 0, map) == 0 && map[0] == 0, "one thread on PU 0");
	ok(exact(t, huge, 0, map) == 0 &&
	   cm_topo_distance(t, map[0], map[1]) == 1 &&
	   cm_topo_distance(t, map[2], map[3]) == 1,
	   "huge weights: pairs still on siblings");
	ok(exact(holes, m4, 0, map) == 0 &&
	   cm_topo_distance(holes, map[0], map[1]) == 1 &&
	   cm_topo_distance(holes, map[2], map[3]) == 1,
	   "holes: two pairs on the two whole cores");
	ok(cm_map_exact(NULL, m4, &o, map, &err) == -1 && errno == EINVAL,
	   "no topology: EINVAL");
	cm_matrix_free(m13);
	cm_matrix_free(m9);
	cm_matrix_free(none);
	cm_matrix_free(one);
	cm_matrix_free(huge);
	cm_matrix_free(m4);
	cm_topo_free(t);
	cm_topo_free(holes);
}

/* Sums of weights near DBL_MAX are infinite: the bounds never bite.  The
 * search must still end (it used to spin for ever in the assignment bound
 * on "pack:1 core:4 pu:2" with two weights of 1.7e308) and either map
 * every thread or fail with a message; auto then falls back. */
static void test_extreme_weights(void)
{
	struct cm_topo *t = NULL;
	struct cm_matrix *m = pairs(8, 1);
	struct cm_map_options o = { .algorithm = CM_MAP_EXACT };
	struct cm_error err = { "" };
	int map[8], rc;

	cm_topo_load_synthetic(&t, "pack:1 core:4 pu:2", NULL);
	cm_matrix_set(m, 0, 1, 1.7e308);
	cm_matrix_set(m, 2, 3, 1.7e308);
	rc = cm_map_exact(t, m, &o, map, &err);
	ok(rc == 0 ? cm_map_validate(t, 8, map, 0, &err) == 0 :
		     err.text[0] != '\0',
	   "two weights of 1.7e308: exact ends with a mapping or a reason");
	if (rc < 0)
		diag("  %s", err.text);
	o.algorithm = CM_MAP_AUTO;
	ok(cm_map(t, m, &o, map, &err) == 0 &&
	   cm_map_validate(t, 8, map, 0, &err) == 0,
	   "two weights of 1.7e308: auto maps every thread");
	for (int i = 0; i < 8; i++)
		for (int j = i + 1; j < 8; j++)
			cm_matrix_set(m, i, j, DBL_MAX);
	o.algorithm = CM_MAP_EXACT;
	rc = cm_map_exact(t, m, &o, map, &err);
	ok(rc == 0 ? cm_map_validate(t, 8, map, 0, &err) == 0 :
		     err.text[0] != '\0',
	   "all pairs at DBL_MAX: exact ends with a mapping or a reason");
	cm_matrix_free(m);
	cm_topo_free(t);
	/* two threads on two cores: the smallest case that spun */
	cm_topo_load_synthetic(&t, "pack:1 core:2 pu:1", NULL);
	m = cm_matrix_new(2);
	cm_matrix_set(m, 0, 1, 1.7e308);
	rc = cm_map_exact(t, m, &o, map, &err);
	ok(rc == 0 ? cm_map_validate(t, 2, map, 0, &err) == 0 :
		     err.text[0] != '\0',
	   "2 threads at 1.7e308 on 2 cores: exact ends");
	cm_matrix_free(m);
	cm_topo_free(t);
}

int main(void)
{
	test_pairs_small();
	test_pairs_spread();
	test_idle_threads_spread();
	test_brute_force();
	test_never_worse_than_baselines();
	test_twelve_on_128();
	test_near_uniform();
	test_edges();
	test_extreme_weights();
	return done_testing();
}
