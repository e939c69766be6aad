/* test_mapping.c: cm_map(), the dispatcher and "auto" (lib/mapping.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/matrix_gen.h"
#include "commap/rand.h"
#include "tap.h"
#include "map_test_util.h"

static struct cm_matrix *gen(const char *pattern, int n, uint64_t seed,
			     uint64_t shuffle)
{
	struct cm_matrix *m = NULL;
	struct cm_error err;

	if (cm_matrix_generate(pattern, n, seed, shuffle, &m, &err))
		diag("cannot generate %s: %s", pattern, err.text);
	return m;
}

static int map(const struct cm_topo *t, const struct cm_matrix *m,
	       enum cm_map_algorithm alg, int over, uint64_t seed, int *pu)
{
	struct cm_map_options o = { .algorithm = alg, .oversubscribe = over,
				    .seed = seed };
	struct cm_error err = { "" };
	int rv = cm_map(t, m, &o, pu, &err);

	if (rv)
		diag("%s: %s", cm_map_algorithm_name(alg), err.text);
	return rv;
}

static int edges_within(const struct cm_topo *t, const struct cm_matrix *m,
			const int *pu, double min_w, int max_dist)
{
	for (int i = 0; i < cm_matrix_nthreads(m); i++) {
		const struct cm_matrix_entry *row;
		int deg = cm_matrix_row(m, i, &row);

		for (int k = 0; k < deg; k++)
			if (row[k].w >= min_w &&
			    cm_topo_distance(t, pu[i], pu[row[k].col]) >
			    max_dist)
				return 0;
	}
	return 1;
}

static void test_errors(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *m = gen("ring", 9, 0, 0);
	struct cm_map_options o = { .algorithm = CM_MAP_AUTO };
	struct cm_error err = { "" };
	int pu[9];

	ok(cm_map(t, m, &o, pu, &err) == -1 && errno == ENOSPC,
	   "9 threads on 8 PUs: ENOSPC");
	ok(strstr(err.text, "9") && strstr(err.text, "8"),
	   "message names both numbers: %s", err.text);
	o.algorithm = CM_MAP_ALGORITHM_COUNT;
	o.oversubscribe = 1;
	ok(cm_map(t, m, &o, pu, &err) == -1 && errno == EINVAL,
	   "bad algorithm number: EINVAL (%s)", err.text);
	o.algorithm = (enum cm_map_algorithm)-1;
	ok(cm_map(t, m, &o, pu, &err) == -1 && errno == EINVAL,
	   "negative algorithm number: EINVAL");
	o.algorithm = CM_MAP_AUTO;
	ok(cm_map(NULL, m, &o, pu, &err) == -1 && errno == EINVAL,
	   "no topology: EINVAL");
	ok(cm_map(t, m, NULL, pu, &err) == -1 && errno == EINVAL,
	   "no options: EINVAL");
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_tiny(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *m0 = cm_matrix_new(0), *m1 = cm_matrix_new(1);

	for (int a = 0; a < CM_MAP_ALGORITHM_COUNT; a++) {
		int pu[1] = { -1 };

		ok(map(t, m0, (enum cm_map_algorithm)a, 0, 1, pu) == 0,
		   "%s: n = 0", cm_map_algorithm_name(a));
		ok(map(t, m1, (enum cm_map_algorithm)a, 0, 1, pu) == 0 &&
		   pu[0] >= 0 && pu[0] < 8, "%s: n = 1 on a valid PU",
		   cm_map_algorithm_name(a));
	}
	cm_matrix_free(m0);
	cm_matrix_free(m1);
	cm_topo_free(t);
}

static void test_known_answers(void)
{
	struct cm_topo *t8 = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_topo *t128 = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	struct cm_matrix *pairs = gen("pairs", 8, 0, 3);
	struct cm_matrix *clus = gen("clusters:16", 128, 0, 17);
	struct cm_matrix *grid = gen("stencil2d", 128, 0, 0);
	struct cm_matrix *sgrid = gen("stencil2d", 128, 0, 21);
	int pu[128], natural[128];

	ok(map(t8, pairs, CM_MAP_AUTO, 0, 1, pu) == 0 &&
	   edges_within(t8, pairs, pu, 1, 1),
	   "auto: 4 pairs on sibling PUs");
	ok(map(t128, clus, CM_MAP_AUTO, 0, 1, pu) == 0 &&
	   edges_within(t128, clus, pu, 1, cm_level_weight(CM_LEVEL_L3)),
	   "auto: shuffled clusters of 16, each under one L3");
	for (int i = 0; i < 128; i++)
		natural[i] = i;
	ok(map(t128, sgrid, CM_MAP_AUTO, 0, 1, pu) == 0 &&
	   cm_cost(t128, sgrid, pu) <= cm_cost(t128, grid, natural),
	   "auto: shuffled 16x8 stencil %g <= natural blocks %g",
	   cm_cost(t128, sgrid, pu), cm_cost(t128, grid, natural));
	cm_matrix_free(pairs);
	cm_matrix_free(clus);
	cm_matrix_free(grid);
	cm_matrix_free(sgrid);
	cm_topo_free(t8);
	cm_topo_free(t128);
}

/* Zero matrix, n < npus: a spread, one thread per core. */
static void test_zero_matrix_spread(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:4 pu:2", NULL);
	struct cm_matrix *m = cm_matrix_new(4);
	int pu[4], distinct = 1, pack0 = 0;

	ok(map(t, m, CM_MAP_AUTO, 0, 1, pu) == 0, "zero matrix: mapped");
	for (int i = 0; i < 4; i++) {
		pack0 += pu[i] < 8;
		for (int j = 0; j < i; j++)
			distinct &= pu[i] / 2 != pu[j] / 2;
	}
	ok(distinct && pack0 == 2,
	   "zero matrix: own cores, two per package");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* n < npus with communication: pairs stacked on SMT siblings (they
 * share), the pairs spread over the packages (they do not). */
static void test_stack_what_communicates(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:8 pu:2", NULL);
	struct cm_matrix *m = gen("pairs", 16, 0, 5);
	int pu[16], pack0 = 0;

	ok(map(t, m, CM_MAP_AUTO, 0, 1, pu) == 0 &&
	   edges_within(t, m, pu, 1, 1), "8 pairs on 32 PUs: on siblings");
	for (int i = 0; i < 16; i++)
		pack0 += pu[i] < 16;
	is_int(pack0, 8, "8 pairs on 32 PUs: 4 pairs per package");
	cm_matrix_free(m);
	cm_topo_free(t);
}

struct prop_case {
	const char *topo;
	const char *pattern;
	int n;
	int over;
};

static const struct prop_case prop_cases[] = {
	{ "pack:2 core:2 pu:2", "random", 6, 0 },
	{ "pack:2 core:2 pu:2", "random", 8, 0 },
	{ "pack:2 core:3 pu:2", "random", 11, 0 },
	{ "pack:2 core:2 pu:2", "clusters:3", 12, 1 },
	{ "pack:2 l3:2 core:2 pu:2", "random", 14, 0 },
	{ "pack:2 l3:2 core:2 pu:2", "random", 24, 1 },
	{ "pack:2 l3:2 core:2 pu:2", "stencil2d", 16, 0 },
	{ "pack:2 l3:2 core:2 pu:2", "ring", 40, 1 },
	{ "pack:2 numa:2 core:4 pu:2", "stencil3d", 27, 0 },
	{ "pack:2 numa:2 core:4 pu:2", "clusters:5", 32, 0 },
	{ "pack:2 numa:2 l3:2 core:4 pu:2", "random", 64, 0 },
};

/* For every case: every algorithm's mapping is valid; refinement never
 * raises the cost; auto is no worse than any heuristic or baseline; the
 * exact optimum is no worse than auto, and auto within 1% of it. */
static void test_properties(void)
{
	int ncases = (int)(sizeof(prop_cases) / sizeof(prop_cases[0]));

	for (int c = 0; c < ncases; c++) {
		const struct prop_case *pc = &prop_cases[c];
		struct cm_topo *t = map_test_topo(pc->topo, NULL);
		struct cm_matrix *m = gen(pc->pattern, pc->n, (uint64_t)c + 1,
					  (uint64_t)c + 100);
		int *pu = calloc((size_t)pc->n, sizeof(int));
		int *best = calloc((size_t)pc->n, sizeof(int));
		int valid = 1, auto_best = 1;
		double cost_auto, before;

		ok(map(t, m, CM_MAP_AUTO, pc->over, 7, best) == 0 &&
		   cm_map_validate(t, pc->n, best, pc->over, NULL) == 0,
		   "case %d (%s %s n=%d): auto valid", c, pc->topo,
		   pc->pattern, pc->n);
		cost_auto = cm_cost(t, m, best);
		for (int a = CM_MAP_GREEDY; a < CM_MAP_ALGORITHM_COUNT; a++) {
			if (a == CM_MAP_EXACT)
				continue;
			if (map(t, m, (enum cm_map_algorithm)a, pc->over, 7,
				pu) ||
			    cm_map_validate(t, pc->n, pu, pc->over, NULL)) {
				valid = 0;
				continue;
			}
			if (cost_auto > cm_cost(t, m, pu) + 1e-9) {
				auto_best = 0;
				diag("%s: %g < auto %g",
				     cm_map_algorithm_name(a),
				     cm_cost(t, m, pu), cost_auto);
			}
		}
		ok(valid, "case %d: every algorithm gives a valid mapping", c);
		ok(auto_best, "case %d: auto <= every heuristic and baseline",
		   c);
		map(t, m, CM_MAP_RANDOM, pc->over, 3, pu);
		before = cm_cost(t, m, pu);
		ok(cm_map_refine(t, m, pu, pc->over) >= 0 &&
		   cm_cost(t, m, pu) <= before + 1e-9 &&
		   cm_map_validate(t, pc->n, pu, pc->over, NULL) == 0,
		   "case %d: refinement keeps it valid, cost %g -> %g", c,
		   before, cm_cost(t, m, pu));
		if (pc->n <= CM_MAP_EXACT_MAX) {
			ok(map(t, m, CM_MAP_EXACT, pc->over, 7, pu) == 0 &&
			   cm_cost(t, m, pu) <= cost_auto + 1e-9 &&
			   cost_auto <= 1.01 * cm_cost(t, m, pu) + 1e-9,
			   "case %d: exact %g <= auto %g <= 1.01 exact", c,
			   cm_cost(t, m, pu), cost_auto);
		}
		free(pu);
		free(best);
		cm_matrix_free(m);
		cm_topo_free(t);
	}
}

static void test_deterministic(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:4 pu:2", NULL);
	struct cm_matrix *m = gen("random", 50, 5, 6);
	int a[50], b[50];

	ok(map(t, m, CM_MAP_AUTO, 0, 42, a) == 0 &&
	   map(t, m, CM_MAP_AUTO, 0, 42, b) == 0 &&
	   memcmp(a, b, sizeof(a)) == 0, "auto: same seed, same mapping");
	ok(map(t, m, CM_MAP_RANDOM, 0, 42, a) == 0 &&
	   map(t, m, CM_MAP_RANDOM, 0, 42, b) == 0 &&
	   memcmp(a, b, sizeof(a)) == 0, "random: same seed, same mapping");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* A cpuset with holes and more threads than PUs. */
static void test_holes_oversubscribed(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	struct cm_matrix *m = gen("clusters:8", 50, 2, 9);
	struct cm_error err;
	int pu[50];

	ok(cm_topo_restrict(t, "0-5,9,17-30,77,100-101", &err) == 0,
	   "restricted to 24 PUs with holes");
	ok(map(t, m, CM_MAP_AUTO, 1, 1, pu) == 0 &&
	   cm_map_validate(t, 50, pu, 1, NULL) == 0,
	   "50 threads on 24 PUs with holes: balanced and valid");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* ---- auto above 512 threads: the lean path ------------------------- */

#define BIG_TOPO "pack:4 numa:2 l3:4 core:16 pu:2"	/* 1024 PUs */

/* The core (parent node of the PU's leaf) of every thread. */
static int core_of(const struct cm_topo *t, int pu)
{
	return cm_topo_node(t, cm_topo_leaf_of_pu(t, pu))->parent;
}

/* 4096 threads, the extra effort of LEAN_LARGE_N (lib/map_groups.c):
 * shuffled grids as tests/bench/map maps them (matrix seed 1, shuffle
 * 2, mapper seed 1) against the planes of a recursive coordinate
 * bisection, 22400 (64 x 64) and 36352 (16 x 16 x 16, where Scotch finds
 * them too).  The lean settings alone gave 22770 (+1.65%) and 36884
 * (+1.46%). */
static void test_large_grids(void)
{
	static const struct {
		const char *pattern;
		double rcb, within;
	} c[] = {
		{ "stencil2d", 22400, 1.0125 },
		{ "stencil3d", 36352, 1.01 },
	};
	struct cm_topo *t = map_test_topo("pack:8 numa:4 l3:4 core:16 pu:2",
					  NULL);
	int *pu = calloc(4096, sizeof(int));

	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		struct cm_matrix *m = gen(c[k].pattern, 4096, 1, 2);
		double cost;

		ok(map(t, m, CM_MAP_AUTO, 0, 1, pu) == 0 &&
		   cm_map_validate(t, 4096, pu, 0, NULL) == 0,
		   "4096 %s: mapped, valid", c[k].pattern);
		cost = cm_cost(t, m, pu);
		ok(cost <= c[k].within * c[k].rcb,
		   "4096 %s: cost %g <= %g x coordinate bisection %g",
		   c[k].pattern, cost, c[k].within, c[k].rcb);
		cm_matrix_free(m);
	}
	free(pu);
	cm_topo_free(t);
}

/* Known answers at 1024 threads: shuffled clusters of 16 each under one
 * L3; a shuffled 32x32 stencil no worse than the natural row-major
 * placement with 2x16 blocks per L3 and within 1% of the recursive
 * coordinate bisection of the grid (5440, tests/bench/map); auto no
 * worse than greedy or any baseline. */
static void test_lean_known_answers(void)
{
	struct cm_topo *t = map_test_topo(BIG_TOPO, NULL);
	struct cm_matrix *clus = gen("clusters:16", 1024, 0, 5);
	struct cm_matrix *sgrid = gen("stencil2d", 1024, 0, 7);
	struct cm_matrix *grid = gen("stencil2d", 1024, 0, 0);
	int *pu = calloc(1024, sizeof(int)), *other = calloc(1024, sizeof(int));
	double cost;
	int no_worse = 1;

	ok(map(t, clus, CM_MAP_AUTO, 0, 1, pu) == 0 &&
	   cm_map_validate(t, 1024, pu, 0, NULL) == 0 &&
	   edges_within(t, clus, pu, 1, cm_level_weight(CM_LEVEL_L3)),
	   "lean auto: 64 shuffled clusters of 16, each under one L3");
	for (int i = 0; i < 1024; i++)
		other[i] = i;
	ok(map(t, sgrid, CM_MAP_AUTO, 0, 1, pu) == 0 &&
	   cm_map_validate(t, 1024, pu, 0, NULL) == 0,
	   "lean auto: shuffled 32x32 stencil mapped, valid");
	cost = cm_cost(t, sgrid, pu);
	ok(cost <= cm_cost(t, grid, other) && cost <= 1.01 * 5440,
	   "lean auto: stencil cost %g <= natural %g and <= 1.01 x 5440",
	   cost, cm_cost(t, grid, other));
	for (int a = CM_MAP_GREEDY; a < CM_MAP_ALGORITHM_COUNT; a++) {
		if (a == CM_MAP_EXACT || a == CM_MAP_MATCHING)
			continue;
		if (map(t, sgrid, (enum cm_map_algorithm)a, 0, 1, other) ||
		    cm_cost(t, sgrid, other) < cost - 1e-9) {
			no_worse = 0;
			diag("%s: %g < auto %g", cm_map_algorithm_name(a),
			     cm_cost(t, sgrid, other), cost);
		}
	}
	ok(no_worse, "lean auto: stencil no worse than greedy or a baseline");
	free(pu);
	free(other);
	cm_matrix_free(clus);
	cm_matrix_free(sgrid);
	cm_matrix_free(grid);
	cm_topo_free(t);
}

/* n < npus: 600 threads on 512 cores.  A zero matrix spreads (no core
 * takes two threads while another is empty); 300 shuffled pairs sit on
 * SMT siblings (they share). */
static void test_lean_spread(void)
{
	struct cm_topo *t = map_test_topo(BIG_TOPO, NULL);
	struct cm_matrix *zero = cm_matrix_new(600);
	struct cm_matrix *pairs = gen("pairs", 600, 0, 11);
	int *pu = calloc(600, sizeof(int));
	int *load = calloc((size_t)cm_topo_nnodes(t), sizeof(int));
	int empty = 0, doubled = 0;

	ok(map(t, zero, CM_MAP_AUTO, 0, 1, pu) == 0 &&
	   cm_map_validate(t, 600, pu, 0, NULL) == 0,
	   "lean auto: zero matrix, 600 threads on 1024 PUs, valid");
	for (int i = 0; i < 600; i++)
		load[core_of(t, pu[i])]++;
	for (int v = 0; v < cm_topo_nnodes(t); v++) {
		const struct cm_topo_node *node = cm_topo_node(t, v);

		if (node->kind != CM_LEVEL_CORE)
			continue;
		empty += load[v] == 0;
		doubled += load[v] == 2;
	}
	ok(empty == 0 && doubled == 88,
	   "lean auto: zero matrix spread over all 512 cores (%d empty, %d "
	   "doubled)", empty, doubled);
	ok(map(t, pairs, CM_MAP_AUTO, 0, 1, pu) == 0 &&
	   edges_within(t, pairs, pu, 1, 1),
	   "lean auto: 300 shuffled pairs on 1024 PUs, each on siblings");
	free(pu);
	free(load);
	cm_matrix_free(zero);
	cm_matrix_free(pairs);
	cm_topo_free(t);
}

static double auto_cost(const struct cm_topo *t, const struct cm_matrix *m,
			enum cm_map_algorithm alg, int *pu)
{
	int n = cm_matrix_nthreads(m);

	if (map(t, m, alg, 0, 1, pu) || cm_map_validate(t, n, pu, 0, NULL))
		return -1;
	return cm_cost(t, m, pu);
}

/* The lean path adapts its effort below the first split to the share of
 * the communication that split cut (lib/map_groups.c, adapt_effort()):
 * one case per regime, each held to what the full effort gets. */
static void test_lean_adaptive(void)
{
	struct cm_topo *t = map_test_topo(BIG_TOPO, NULL);
	struct cm_matrix *ring = gen("ring", 1024, 5, 0);
	struct cm_matrix *sring = gen("ring", 1024, 5, 13);
	struct cm_matrix *clus = gen("clusters:8", 1024, 5, 3);
	struct cm_matrix *rnd = gen("random", 1024, 5, 0);
	int *pu = calloc(1024, sizeof(int));
	double c, natural, greedy, matching;

	/* loose: a cut of two links out of 1024 */
	natural = auto_cost(t, ring, CM_MAP_COMPACT, pu);
	c = auto_cost(t, sring, CM_MAP_AUTO, pu);
	ok(c >= 0 && c <= natural,
	   "lean auto, loose: shuffled ring costs %g <= natural order %g",
	   c, natural);
	c = auto_cost(t, clus, CM_MAP_AUTO, pu);
	ok(c >= 0 && edges_within(t, clus, pu, 1,
				  cm_level_weight(CM_LEVEL_L3)),
	   "lean auto, loose: 128 shuffled clusters of 8, each under one L3");
	greedy = auto_cost(t, clus, CM_MAP_GREEDY, pu);
	ok(c <= greedy, "lean auto, loose: clusters %g <= greedy %g", c,
	   greedy);
	/* expander: random partners, a quarter of the links cut */
	c = auto_cost(t, rnd, CM_MAP_AUTO, pu);
	greedy = auto_cost(t, rnd, CM_MAP_GREEDY, pu);
	matching = auto_cost(t, rnd, CM_MAP_MATCHING, pu);
	ok(c >= 0 && c <= greedy && c <= 1.02 * matching,
	   "lean auto, expander: random %g <= greedy %g, <= 1.02 x "
	   "matching %g", c, greedy, matching);
	free(pu);
	cm_matrix_free(ring);
	cm_matrix_free(sring);
	cm_matrix_free(clus);
	cm_matrix_free(rnd);
	cm_topo_free(t);
}

/* Oversubscribed, holes in the cpuset, no refinement, determinism. */
static void test_lean_rules(void)
{
	struct cm_topo *t = map_test_topo(BIG_TOPO, NULL);
	struct cm_topo *holes = map_test_topo(BIG_TOPO, NULL);
	struct cm_matrix *m = gen("random", 1100, 3, 0);
	struct cm_matrix *m6 = gen("stencil3d", 600, 0, 4);
	struct cm_map_options o = { .algorithm = CM_MAP_AUTO, .seed = 9,
				    .no_refine = 1 };
	struct cm_error err;
	int *a = calloc(1100, sizeof(int)), *b = calloc(1100, sizeof(int));
	int rv;

	ok(map(t, m, CM_MAP_AUTO, 1, 1, a) == 0 &&
	   cm_map_validate(t, 1100, a, 1, NULL) == 0,
	   "lean auto: 1100 threads on 1024 PUs, oversubscribed, balanced");
	ok(map(t, m, CM_MAP_AUTO, 0, 1, a) == -1,
	   "lean auto: 1100 threads on 1024 PUs without oversubscription");
	rv = cm_topo_restrict(holes, "0-300,333,400-700,900-1023", &err);
	ok(rv == 0 && cm_topo_npus(holes) == 727,
	   "restricted to %d PUs with holes", cm_topo_npus(holes));
	ok(map(holes, m6, CM_MAP_AUTO, 0, 1, a) == 0 &&
	   cm_map_validate(holes, 600, a, 0, NULL) == 0,
	   "lean auto: 600 threads inside a cpuset with holes");
	ok(cm_map(t, m6, &o, a, &err) == 0 &&
	   cm_map_validate(t, 600, a, 0, NULL) == 0,
	   "lean auto: no_refine gives a valid mapping");
	ok(map(t, m, CM_MAP_AUTO, 1, 42, a) == 0 &&
	   map(t, m, CM_MAP_AUTO, 1, 42, b) == 0 &&
	   memcmp(a, b, sizeof(int) * 1100) == 0,
	   "lean auto: same seed, same mapping");
	free(a);
	free(b);
	cm_matrix_free(m);
	cm_matrix_free(m6);
	cm_topo_free(t);
	cm_topo_free(holes);
}

int main(void)
{
	test_errors();
	test_tiny();
	test_known_answers();
	test_zero_matrix_spread();
	test_stack_what_communicates();
	test_properties();
	test_deterministic();
	test_holes_oversubscribed();
	test_lean_known_answers();
	test_large_grids();
	test_lean_spread();
	test_lean_adaptive();
	test_lean_rules();
	return done_testing();
}
