/* test_map_refine.c: local improvement (lib/map_refine.c): never raises the
 * cost, finds the improvements it should, keeps loads and validity. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/rand.h"
#include "tap.h"
#include "map_test_util.h"

static int baseline(const struct cm_topo *t, const struct cm_matrix *m,
		    enum cm_map_algorithm alg, uint64_t seed,
		    int oversubscribe, int *map)
{
	struct cm_map_options o = {
		.algorithm = alg, .seed = seed, .oversubscribe = oversubscribe,
	};

	return cm_map_baseline(t, m, &o, map, NULL);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Random sparse matrix: about deg edges per thread, weights 1..100, a few
 * of them huge when huge is set. */
static struct cm_matrix *random_sparse(uint64_t *seed, int n, int deg,
				       int huge)
{
	struct cm_matrix *m = cm_matrix_new(n);

	for (int k = 0; n > 1 && k < n * deg / 2; k++) {
		int i = (int)cm_rand_below(seed, (uint64_t)n);
		int j = (int)cm_rand_below(seed, (uint64_t)n);
		double w = 1 + (double)cm_rand_below(seed, 100);

		if (huge && cm_rand_below(seed, 10) == 0)
			w *= 1e250;
		if (i != j)
			cm_matrix_add(m, i, j, w);
	}
	return m;
}

/* A side x side grid, 4 neighbours per thread. */
static struct cm_matrix *grid(int side)
{
	struct cm_matrix *m = cm_matrix_new(side * side);

	for (int r = 0; r < side; r++)
		for (int c = 0; c < side; c++) {
			int i = r * side + c;

			if (c + 1 < side)
				cm_matrix_add(m, i, i + 1, 10);
			if (r + 1 < side)
				cm_matrix_add(m, i, i + side, 10);
		}
	return m;
}

static void loads_of(const struct cm_topo *t, int n, const int *map,
		     int *load)
{
	memset(load, 0, sizeof(int) * (size_t)cm_topo_npus(t));
	for (int i = 0; i < n; i++)
		load[map[i]]++;
}

/* Many random instances: cost never rises, the result is valid, loads
 * with full oversubscription never change (swaps only), and zero moves
 * means the mapping is untouched. */
static void test_never_worse(void)
{
	static const struct {
		const char *spec, *cpulist;
	} trees[] = {
		{ "pack:2 core:2 pu:2", NULL },
		{ "pack:2 numa:2 l3:2 core:8 pu:2", NULL },
		{ "pack:2 numa:2 l3:2 core:8 pu:2", "0-5,9,17-40,64-70,100" },
		{ "pack:2 l3:2 core:3 pu:1", NULL },
	};
	static const enum cm_map_algorithm starts[] = {
		CM_MAP_RANDOM, CM_MAP_COMPACT, CM_MAP_SCATTER,
		CM_MAP_ROUNDROBIN,
	};
	uint64_t seed = 1;
	int never_worse = 1, valid = 1, loads_kept = 1, untouched = 1;
	int improved = 0, rounds = 0;

	for (int r = 0; r < 160; r++) {
		struct cm_topo *t = map_test_topo(trees[r % 4].spec,
					      trees[r % 4].cpulist);
		int npus = cm_topo_npus(t);
		int over = r % 3 == 0;
		int n = 1 + (int)cm_rand_below(&seed, (uint64_t)(over ?
						2 * npus : npus));
		struct cm_matrix *m = random_sparse(&seed, n, 1 + r % 6,
						    r % 7 == 0);
		int *map = malloc(sizeof(int) * (size_t)n);
		int *before = malloc(sizeof(int) * (size_t)n);
		int *l0 = malloc(sizeof(int) * (size_t)npus);
		int *l1 = malloc(sizeof(int) * (size_t)npus);
		double c0, c1;
		int moves;

		baseline(t, m, starts[r % 4], (uint64_t)r, over, map);
		memcpy(before, map, sizeof(int) * (size_t)n);
		c0 = cm_cost(t, m, map);
		moves = cm_map_refine(t, m, map, over);
		c1 = cm_cost(t, m, map);
		never_worse &= moves >= 0 && c1 <= c0;
		if (!(c1 <= c0))
			diag("  round %d: %.17g -> %.17g", r, c0, c1);
		valid &= cm_map_validate(t, n, map, over, NULL) == 0;
		loads_of(t, n, before, l0);
		loads_of(t, n, map, l1);
		if (n > npus)
			loads_kept &= memcmp(l0, l1, sizeof(int) *
					     (size_t)npus) == 0;
		if (moves == 0)
			untouched &= memcmp(before, map, sizeof(int) *
					    (size_t)n) == 0;
		improved += c1 < c0;
		rounds++;
		free(map);
		free(before);
		free(l0);
		free(l1);
		cm_matrix_free(m);
		cm_topo_free(t);
	}
	ok(never_worse, "cost never rises over %d random instances", rounds);
	ok(valid, "every refined mapping is valid");
	ok(loads_kept, "oversubscribed: per-PU loads unchanged");
	ok(untouched, "no move reported: mapping untouched");
	ok(improved > rounds / 2, "cost lowered in %d of %d instances",
	   improved, rounds);
}

/* 16 threads in 8 pairs on 16 PUs, mapped at random: refine must find
 * the optimum, every pair on SMT siblings. */
static void test_scrambled_pairs(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:4 pu:2", NULL);
	struct cm_matrix *m = cm_matrix_new(16);
	int map[16], siblings = 1;
	double c0;
	int moves;

	for (int i = 0; i < 16; i += 2)
		cm_matrix_add(m, i, i + 1, 5);
	baseline(t, m, CM_MAP_RANDOM, 4, 0, map);
	c0 = cm_cost(t, m, map);
	moves = cm_map_refine(t, m, map, 0);
	ok(moves > 0, "scrambled pairs: %d improving moves", moves);
	ok(cm_cost(t, m, map) < c0, "strictly lower cost (%g -> %g)", c0,
	   cm_cost(t, m, map));
	for (int i = 0; i < 16; i += 2)
		siblings &= cm_topo_distance(t, map[i], map[i + 1]) == 1;
	ok(siblings, "every pair ends on sibling PUs (optimum 8 * 5)");
	is_int(cm_map_refine(t, m, map, 0), 0, "a second run finds nothing");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* Free PUs: a pair at opposite ends of the machine moves together. */
static void test_moves_to_free_pus(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	struct cm_matrix *m = cm_matrix_new(3);
	int map[3] = { 0, 127, 64 };

	cm_matrix_add(m, 0, 1, 1);
	cm_matrix_add(m, 1, 2, 0.5);
	ok(cm_map_refine(t, m, map, 0) > 0, "a move to a free PU is made");
	is_int(cm_topo_distance(t, map[0], map[1]), 1,
	       "the pair ends on sibling PUs");
	ok(cm_cost(t, m, map) < 1 * 6 + 0.5 * 5, "cost lowered");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* A 16 x 16 stencil scattered over 256 PUs: refine pulls neighbours
 * together (a thread moves next to its partners). */
static void test_stencil(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:16 pu:2",
				      NULL);
	struct cm_matrix *m = grid(16);
	int map[256];
	double c0, c1;

	baseline(t, m, CM_MAP_SCATTER, 0, 0, map);
	c0 = cm_cost(t, m, map);
	ok(cm_map_refine(t, m, map, 0) > 0, "stencil from scatter: moves");
	c1 = cm_cost(t, m, map);
	ok(c1 < 0.9 * c0, "stencil: cost down by more than 10%% (%g -> %g)",
	   c0, c1);
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_edges(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *none = cm_matrix_new(0), *zero = cm_matrix_new(5);
	struct cm_matrix *m = cm_matrix_new(3), *m9 = cm_matrix_new(9);
	int map[9] = { 0, 4, 1, 5, 2 }, bad[3] = { 0, 0, 1 };
	int oob[3] = { 0, 1, 8 }, one[1] = { 3 };
	struct cm_matrix *m1 = cm_matrix_new(1);

	is_int(cm_map_refine(t, none, NULL, 0), 0, "no threads: 0 moves");
	is_int(cm_map_refine(t, m1, one, 0), 0, "one thread: 0 moves");
	is_int(one[0], 3, "one thread: untouched");
	is_int(cm_map_refine(t, zero, map, 0), 0, "zero matrix: 0 moves");
	cm_matrix_add(m, 0, 1, 1);
	errno = 0;
	ok(cm_map_refine(t, m, bad, 0) == -1 && errno == EINVAL,
	   "two threads on one PU: EINVAL");
	ok(cm_map_refine(t, m, oob, 0) == -1 && errno == EINVAL,
	   "PU index out of range: EINVAL");
	ok(cm_map_refine(NULL, m, oob, 0) == -1 && errno == EINVAL,
	   "no topology: EINVAL");
	for (int i = 0; i < 9; i++)
		map[i] = i % 8;
	cm_matrix_add(m9, 0, 8, 1);
	ok(cm_map_refine(t, m9, map, 0) == -1 && errno == EINVAL,
	   "9 on 8 without oversubscribe: EINVAL");
	ok(cm_map_refine(t, m9, map, 1) >= 0 &&
	   cm_map_validate(t, 9, map, 1, NULL) == 0,
	   "9 on 8 oversubscribed: valid");
	is_int(map[0], map[8], "oversubscribed: the pair shares PU 0");
	/* The extra thread on PU 5 instead of cm_map_capacity's PU 0: still
	 * valid on entry, and it may move to join its partner. */
	for (int i = 0; i < 9; i++)
		map[i] = i % 8;
	map[8] = 5;
	ok(cm_map_refine(t, m9, map, 1) == 1 && map[8] == map[0] &&
	   cm_map_validate(t, 9, map, 1, NULL) == 0,
	   "oversubscribed, extra off the capacity PU: joins its partner");
	cm_matrix_free(none);
	cm_matrix_free(zero);
	cm_matrix_free(m);
	cm_matrix_free(m9);
	cm_matrix_free(m1);
	cm_topo_free(t);
}

/* Holes: the refined mapping uses only the allowed PUs and is valid. */
static void test_holes(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", "0,2,3,6,7");
	struct cm_matrix *m = cm_matrix_new(4);
	int map[4] = { 0, 3, 1, 4 };

	cm_matrix_add(m, 0, 1, 1);
	cm_matrix_add(m, 2, 3, 1);
	ok(cm_map_refine(t, m, map, 0) > 0, "holes: moves made");
	ok(cm_map_validate(t, 4, map, 0, NULL) == 0, "holes: valid");
	is_double(cm_cost(t, m, map), 1 + 1, 1e-12,
		  "holes: both pairs on the two whole cores, PU 0 left free");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* Scale: 4096 threads, a 64 x 64 stencil, on 4096 PUs from compact. */
static void test_scale(void)
{
	struct cm_topo *t = map_test_topo("pack:16 numa:2 l3:4 core:16 pu:2",
				      NULL);
	struct cm_matrix *m = grid(64);
	int *map = malloc(sizeof(int) * 4096);
	double t0, t1, c0;
	int moves;

	baseline(t, m, CM_MAP_COMPACT, 0, 0, map);
	/* disturb 5% of the placements */
	for (uint64_t s = 9, k = 0; k < 200; k++) {
		int a = (int)cm_rand_below(&s, 4096);
		int b = (int)cm_rand_below(&s, 4096), x = map[a];

		map[a] = map[b];
		map[b] = x;
	}
	c0 = cm_cost(t, m, map);
	t0 = now_ms();
	moves = cm_map_refine(t, m, map, 0);
	t1 = now_ms();
	ok(moves > 0 && cm_cost(t, m, map) < c0,
	   "4096-thread stencil, 5%% disturbed: improved");
	diag("  4096 threads: %d moves, %.1f ms, cost %g -> %g", moves,
	     t1 - t0, c0, cm_cost(t, m, map));
	ok(cm_map_validate(t, 4096, map, 0, NULL) == 0, "4096: valid");
	free(map);
	cm_matrix_free(m);
	cm_topo_free(t);
}

int main(void)
{
	test_never_worse();
	test_scrambled_pairs();
	test_moves_to_free_pus();
	test_stencil();
	test_edges();
	test_holes();
	test_scale();
	return done_testing();
}
