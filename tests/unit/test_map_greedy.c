/* test_map_greedy.c: LHMapping §3.3 greedy mapper and the top-down
 * placement it uses (lib/map_greedy.c, lib/map_groups.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commap/cost.h"
#include "commap/rand.h"
#include "commap/mapping.h"
#include "commap/matrix_gen.h"
#include "map_bisect.h"
#include "map_groups.h"
#include "map_internal.h"
#include "map_refine.h"
#include "tap.h"
#include "map_test_util.h"

static int greedy(const struct cm_topo *t, const struct cm_matrix *m,
		  int over, int *pu)
{
	struct cm_map_options o = { .algorithm = CM_MAP_GREEDY,
				    .oversubscribe = over };
	struct cm_error err = { "" };
	int rv = cm_map_greedy(t, m, &o, pu, &err);

	if (rv)
		diag("greedy: %s", err.text);
	return rv;
}

/* Every edge of weight >= min_w joins PUs at distance <= max_dist. */
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

static void test_pairs_on_siblings(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("pairs", 8, 5);
	int pu[8];

	ok(greedy(t, m, 0, pu) == 0, "pairs: mapped");
	ok(cm_map_validate(t, 8, pu, 0, NULL) == 0, "pairs: valid");
	ok(edges_within(t, m, pu, 1, 1), "pairs: every pair on sibling PUs");
	is_double(cm_cost(t, m, pu), 4, 1e-9, "pairs: cost 4 x distance 1");
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_clusters_under_l3(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("clusters:16", 128, 11);
	int pu[128];

	ok(greedy(t, m, 0, pu) == 0, "clusters:16: mapped");
	ok(cm_map_validate(t, 128, pu, 0, NULL) == 0, "clusters:16: valid");
	ok(edges_within(t, m, pu, 1, cm_level_weight(CM_LEVEL_L3)),
	   "clusters:16 shuffled: each cluster under one L3");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* n < npus without communication: one thread per core, packages even. */
static void test_spread_zero_matrix(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:4 pu:2", NULL);
	struct cm_matrix *m = cm_matrix_new(4);
	int pu[4], per_pack[2] = { 0, 0 }, distinct_core = 1;

	ok(greedy(t, m, 0, pu) == 0, "zero matrix: mapped");
	for (int i = 0; i < 4; i++) {
		per_pack[pu[i] / 8]++;
		for (int j = 0; j < i; j++)
			if (pu[i] / 2 == pu[j] / 2)
				distinct_core = 0;
	}
	ok(distinct_core, "zero matrix: every thread on its own core");
	ok(per_pack[0] == 2 && per_pack[1] == 2,
	   "zero matrix: two threads per package");
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_oversubscribe(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("clusters:4", 20, 3);
	struct cm_matrix *m16 = map_test_gen("clusters:4", 16, 3);
	int pu[20], load_[8] = { 0 };
	struct cm_map_options o = { .algorithm = CM_MAP_GREEDY };
	struct cm_error err = { "" };

	ok(cm_map_greedy(t, m, &o, pu, &err) == -1 && errno == ENOSPC,
	   "20 threads on 8 PUs without oversubscription: ENOSPC");
	ok(strstr(err.text, "20") && strstr(err.text, "8"),
	   "ENOSPC message names both numbers: %s", err.text);
	ok(greedy(t, m, 1, pu) == 0, "oversubscribed: mapped");
	ok(cm_map_validate(t, 20, pu, 1, NULL) == 0,
	   "oversubscribed: valid");
	for (int i = 0; i < 20; i++)
		load_[pu[i]]++;
	for (int p = 0; p < 8; p++)
		if (load_[p] < 2 || load_[p] > 3)
			ok(0, "PU %d holds %d threads", p, load_[p]);
	ok(greedy(t, m16, 1, pu) == 0 &&
	   edges_within(t, m16, pu, 1, cm_level_weight(CM_LEVEL_CORE)),
	   "16 on 8 PUs: each cluster of 4 within one core");
	cm_matrix_free(m);
	cm_matrix_free(m16);
	cm_topo_free(t);
}

static void test_edges(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *m0 = cm_matrix_new(0), *m1 = cm_matrix_new(1);
	struct cm_matrix *big = cm_matrix_new(4);
	int pu[4] = { -1, -1, -1, -1 }, cap[8];

	ok(greedy(t, m0, 0, NULL) == 0, "n = 0: nothing to do");
	ok(greedy(t, m1, 0, pu) == 0 && pu[0] >= 0 && pu[0] < 8,
	   "n = 1: one valid PU");
	cm_matrix_set(big, 0, 1, 1e300);
	cm_matrix_set(big, 2, 3, 1e300);
	cm_matrix_set(big, 1, 2, 1e-300);
	ok(greedy(t, big, 0, pu) == 0 &&
	   cm_map_validate(t, 4, pu, 0, NULL) == 0, "huge weights: valid");
	ok(cm_topo_distance(t, pu[0], pu[1]) == 5 &&
	   cm_topo_distance(t, pu[2], pu[3]) == 5,
	   "huge weights, spread: heavy pairs in one package, own cores");
	cm_map_capacity(t, 4, 0, cap, NULL);
	ok(cm_map_place(t, big, cap, NULL, CM_PLACE_FM, pu) == 0 &&
	   cm_topo_distance(t, pu[0], pu[1]) == 1 &&
	   cm_topo_distance(t, pu[2], pu[3]) == 1 &&
	   cm_topo_distance(t, pu[1], pu[2]) == 6,
	   "huge weights, FM: heavy pairs stacked on siblings, apart");
	cm_matrix_free(m0);
	cm_matrix_free(m1);
	cm_matrix_free(big);
	cm_topo_free(t);
}

/* A cpuset with holes: uneven cores and packages. */
static void test_cpuset_holes(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("clusters:8", 40, 9);
	struct cm_error err;
	int pu[40];

	ok(cm_topo_restrict(t, "0-7,9,11,13-40,64-70,100", &err) == 0,
	   "restricted to a cpuset with holes");
	ok(greedy(t, m, 0, pu) == 0, "holes: mapped");
	ok(cm_map_validate(t, 40, pu, 0, NULL) == 0,
	   "holes: every thread on an allowed PU, one per PU");
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_deterministic(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("random", 100, 4);
	int a[100], b[100];

	ok(greedy(t, m, 0, a) == 0 && greedy(t, m, 0, b) == 0 &&
	   memcmp(a, b, sizeof(a)) == 0, "same input, same mapping");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* Spread quota: 5 threads over 2 packages of 4 cores: 3 + 2, one per
 * core; 20 threads over capacities 8 + 12: capped proportionally. */
static void test_spread_quota(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:4 pu:2", NULL);
	int nnodes = cm_topo_nnodes(t), cap[16], *node_cap, *quota;
	int sum = 0, maxq = 0;

	node_cap = calloc((size_t)nnodes, sizeof(int));
	quota = calloc((size_t)nnodes, sizeof(int));
	cm_map_capacity(t, 5, 0, cap, NULL);
	cm_map_node_capacity(t, cap, node_cap);
	cm_map_spread_quota(t, node_cap, 5, quota);
	for (int i = 0; i < nnodes; i++) {
		const struct cm_topo_node *nd = cm_topo_node(t, i);

		if (nd->kind == CM_LEVEL_CORE && quota[i] > maxq)
			maxq = quota[i];
		if (nd->kind == CM_LEVEL_PACKAGE)
			sum += quota[i] * quota[i];
	}
	is_int(maxq, 1, "5 threads on 8 cores: at most one per core");
	is_int(sum, 9 + 4, "5 threads on 2 packages: 3 and 2");
	free(node_cap);
	free(quota);
	cm_topo_free(t);
}

/* The FM-refined placement of a 2D stencil on a grid of caches costs no
 * more than the natural block placement (thread order = grid order). */
static void test_stencil_fm(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("stencil2d", 128, 0);
	int cap[128], pu[128], natural[128];

	cm_map_capacity(t, 128, 0, cap, NULL);
	for (int i = 0; i < 128; i++)
		natural[i] = i;
	ok(cm_map_place(t, m, cap, NULL, CM_PLACE_FM, pu) == 0,
	   "stencil: bisection placement");
	ok(cm_map_validate(t, 128, pu, 0, NULL) == 0, "stencil: valid");
	ok(cm_cost(t, m, pu) <= cm_cost(t, m, natural),
	   "stencil: bisection %g <= natural blocks %g", cm_cost(t, m, pu),
	   cm_cost(t, m, natural));
	cm_matrix_free(m);
	cm_topo_free(t);
}

static double cut_of(const struct cm_matrix *m, const signed char *side)
{
	double cut = 0;

	for (int i = 0; i < cm_matrix_nthreads(m); i++) {
		const struct cm_matrix_entry *row;
		int deg = cm_matrix_row(m, i, &row);

		for (int k = 0; k < deg; k++)
			if (row[k].col > i && side[i] != side[row[k].col])
				cut += row[k].w;
	}
	return cut;
}

/* The indexed heap: after random rises (cm_heap_raise), falls
 * (cm_heap_lower) and any changes (cm_heap_update), ids come out by
 * decreasing key, ties by lower id, as FM relies on. */
static void test_heap(void)
{
	enum { N = 500 };
	static double key[N];
	struct cm_heap h;
	uint64_t rs = 77;
	int ordered = 1, count = 0, prev = -1;

	ok(cm_heap_init(&h, N, key) == 0, "heap: initialised");
	for (int i = 0; i < N; i++) {
		key[i] = (double)cm_rand_below(&rs, 50);	/* many ties */
		cm_heap_push(&h, i);
	}
	for (int k = 0; k < 5000; k++) {
		int id = (int)cm_rand_below(&rs, N);
		double d = (double)cm_rand_below(&rs, 21) - 10;

		key[id] += d;
		if (k % 3 == 2)
			cm_heap_update(&h, id);
		else if (d >= 0)
			cm_heap_raise(&h, id);
		else
			cm_heap_lower(&h, id);
	}
	while (h.len > 0) {
		int id = cm_heap_pop(&h);

		if (prev >= 0 && (key[id] > key[prev] ||
				  (key[id] == key[prev] && id < prev)))
			ordered = 0;
		prev = id;
		count++;
	}
	ok(ordered && count == N, "heap: %d ids by decreasing key, ties by id",
	   count);
	cm_heap_free(&h);
}

/* The branch-free helpers of the FM sums are exact: the weight or
 * nothing, also for an infinite weight (where 0 x w would be NaN). */
static void test_branchless_helpers(void)
{
	double inf = HUGE_VAL, w = 0.1 + 0.2;

	ok(cm_keep(w, 1) == w && cm_keep(w, 7) == w, "cm_keep: kept");
	ok(cm_keep(w, 0) == 0 && !signbit(cm_keep(-w, 0)),
	   "cm_keep: dropped is +0");
	ok(cm_keep(inf, 0) == 0 && cm_keep(inf, 1) == inf,
	   "cm_keep: infinite weight");
	ok(cm_signed(w, 1) == w && cm_signed(w, 0) == -w &&
	   10.0 + cm_signed(w, 0) == 10.0 - w, "cm_signed: +w or -w, exact");
}

/* Built at once (cm_heap_append + cm_heap_build): the ids kept, and only
 * they, come out in the order that pushing them one by one gives (the
 * order is total), also after changes of keys; the dropped ids are
 * absent. */
static void test_heap_build(void)
{
	enum { N = 300 };
	static double key[N];
	struct cm_heap built, pushed;
	uint64_t rs = 91;
	int same = 1, absent = 1, count = 0;

	ok(cm_heap_init(&built, N, key) == 0 &&
	   cm_heap_init(&pushed, N, key) == 0, "heap build: initialised");
	for (int i = 0; i < N; i++) {
		int keep = i % 3 != 0;

		key[i] = (double)cm_rand_below(&rs, 40);	/* many ties */
		cm_heap_append(&built, i, keep);
		if (keep)
			cm_heap_push(&pushed, i);
	}
	cm_heap_build(&built);
	for (int i = 0; i < N; i += 3)
		absent &= !cm_heap_contains(&built, i);
	ok(absent && built.len == pushed.len,
	   "heap build: %d ids kept, the dropped ones absent", built.len);
	for (int k = 0; k < 2000; k++) {
		int id = (int)cm_rand_below(&rs, N);

		if (!cm_heap_contains(&built, id))
			continue;
		key[id] += (double)cm_rand_below(&rs, 21) - 10;
		cm_heap_update(&built, id);
		cm_heap_update(&pushed, id);
	}
	while (built.len > 0 && pushed.len > 0) {
		same &= cm_heap_pop(&built) == cm_heap_pop(&pushed);
		count++;
	}
	ok(same && built.len == 0 && pushed.len == 0,
	   "heap build: %d pops in the order of one-by-one pushes", count);
	cm_heap_free(&built);
	cm_heap_free(&pushed);
}

/* Multilevel bisection finds the obvious cuts: a 16 x 16 grid in two
 * 8 x 16 halves (16 links), a ring in two arcs (2 links); sizes within
 * one thread; the scratch array comes back all -1. */
static void test_multilevel(void)
{
	struct cm_matrix *grid = map_test_gen("stencil2d", 256, 13);
	struct cm_matrix *ring = map_test_gen("ring", 300, 14);
	int T[300], loc[300], clean = 1, na = 0;
	signed char side[300];

	for (int i = 0; i < 300; i++) {
		T[i] = i;
		loc[i] = -1;
	}
	ok(cm_bisect_multilevel(grid, T, 256, 128, 2, 1, 1e-12, loc,
				side) == 0, "grid: bisected");
	for (int i = 0; i < 256; i++)
		na += side[i] == 0;
	ok(na >= 127 && na <= 129, "grid: sides of 128 +- 1 (%d)", na);
	is_double(cut_of(grid, side), 16, 1e-9, "grid: straight cut");
	ok(cm_bisect_multilevel(ring, T, 300, 100, 1, 7, 1e-12, loc,
				side) == 0, "ring: bisected");
	is_double(cut_of(ring, side), 2, 1e-9, "ring: two arcs");
	for (int i = 0; i < 300; i++)
		clean &= loc[i] == -1;
	ok(clean, "scratch restored");
	cm_matrix_free(grid);
	cm_matrix_free(ring);
}

/* The gains that cm_bisect_multilevel_effort() hands back (it keeps
 * them through the V-cycles, projecting only the border of each coarse
 * level) are those of a fresh count for the split it returns: weight to
 * the other side minus weight to its own, links to threads outside T
 * ignored; tot = weight to the rest of T.  On a subset T of a random
 * graph, with one V-cycle and with several (the best one is then not
 * always the last). */
static void test_multilevel_gains(void)
{
	static const struct cm_bisect_effort lean = { 1, 20, 0, 3 };
	struct cm_matrix *m = map_test_gen("random", 600, 21);
	int T[400], loc[600], bad = 0;
	double gain[600], tot[600];
	signed char side[400], pos[600];

	for (int i = 0; i < 400; i++)
		T[i] = (int)((i * 7L) % 600);	/* 400 of the 600 threads */
	for (int i = 0; i < 600; i++) {
		loc[i] = -1;
		pos[i] = -1;
	}
	for (int run = 0; run < 2; run++) {
		ok(cm_bisect_multilevel_effort(m, T, 400, 150, run ? 3 : 1, 5,
					       1e-12, run ? NULL : &lean, loc,
					       side, gain, tot) == 0,
		   "gains: bisected (%s)", run ? "3 tries" : "lean");
		for (int i = 0; i < 400; i++)
			pos[T[i]] = side[i];
		for (int i = 0; i < 400; i++) {
			const struct cm_matrix_entry *row;
			int x = T[i], deg = cm_matrix_row(m, x, &row);
			double g = 0, w = 0;

			for (int k = 0; k < deg; k++) {
				if (pos[row[k].col] < 0)
					continue;
				g += pos[row[k].col] != pos[x] ? row[k].w
							       : -row[k].w;
				w += row[k].w;
			}
			if (fabs(g - gain[x]) > 1e-9 * (w + 1) ||
			    fabs(w - tot[x]) > 1e-9 * (w + 1)) {
				if (bad++ < 3)
					diag("thread %d: gain %g (want %g), "
					     "tot %g (want %g)", x, gain[x], g,
					     tot[x], w);
			}
		}
		ok(bad == 0, "gains: as counted afresh (%s)",
		   run ? "3 tries" : "lean");
	}
	cm_matrix_free(m);
}

/* A path a-b (2), b-c (3), c-d (2) under one node of two cores: the best
 * pairing is {a,b} {c,d} (weight 4), which taking the heaviest edge first
 * (b-c) misses; the pairs step must find it whatever the bisection did.
 * Numbered b = 0, c = 1, a = 2, d = 3, so that thread order and a greedy
 * pairing both start with b-c. */
static void test_pairs_exact(void)
{
	struct cm_topo *t = map_test_topo("core:2 pu:2", NULL);
	struct cm_matrix *m = cm_matrix_new(4);
	int cap[4], pu[4], rv;
	unsigned flags[2] = { CM_PLACE_FM, CM_PLACE_FM | CM_PLACE_LEAN };

	cm_matrix_add(m, 2, 0, 2);	/* a-b */
	cm_matrix_add(m, 0, 1, 3);	/* b-c */
	cm_matrix_add(m, 1, 3, 2);	/* c-d */
	cm_map_capacity(t, 4, 0, cap, NULL);
	for (int f = 0; f < 2; f++) {
		rv = cm_map_place(t, m, cap, NULL, flags[f], pu);
		ok(rv == 0 && pu[0] / 2 == pu[2] / 2 && pu[1] / 2 == pu[3] / 2,
		   "path of 4%s: outer edges paired on cores (%d %d %d %d)",
		   f ? " (lean)" : "", pu[0], pu[1], pu[2], pu[3]);
	}
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* Lean placement (CM_PLACE_LEAN): valid, clusters under their L3 (a
 * split below a full node of pairs is skipped: the matching decides),
 * a grid no worse than natural blocks, deterministic per seed. */
static void test_lean_place(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:4 core:8 pu:2", NULL);
	struct cm_matrix *clus = map_test_gen("clusters:8", 256, 3);
	struct cm_matrix *grid = map_test_gen("stencil2d", 256, 4);
	struct cm_matrix *plain = map_test_gen("stencil2d", 256, 0);
	unsigned lean = CM_PLACE_FM | CM_PLACE_LEAN;
	int cap[256], pu[256], again[256], natural[256], rv;
	double cost, nat;

	cm_map_capacity(t, 256, 0, cap, NULL);
	for (int i = 0; i < 256; i++)
		natural[i] = i;
	ok(cm_map_place(t, clus, cap, NULL, lean, pu) == 0 &&
	   cm_map_validate(t, 256, pu, 0, NULL) == 0 &&
	   edges_within(t, clus, pu, 1, cm_level_weight(CM_LEVEL_L3)),
	   "lean: clusters of 8 valid, each under one L3");
	rv = cm_map_place_seeded(t, grid, cap, NULL, lean, 5, pu);
	cost = cm_cost(t, grid, pu);
	nat = cm_cost(t, plain, natural);
	ok(rv == 0 && cm_map_validate(t, 256, pu, 0, NULL) == 0 &&
	   cost <= nat, "lean: 16x16 grid %g <= natural blocks %g", cost,
	   nat);
	ok(cm_map_place_seeded(t, grid, cap, NULL, lean, 5, again) == 0 &&
	   memcmp(pu, again, sizeof(pu)) == 0, "lean: same seed, same result");
	cm_matrix_free(clus);
	cm_matrix_free(grid);
	cm_matrix_free(plain);
	cm_topo_free(t);
}

/* Bounded refinement: never raises the cost, keeps the mapping valid
 * (also oversubscribed), and even with the least effort improves a
 * random mapping; out-of-range efforts are clamped; a gain-per-work bound
 * no window can meet stops after the first window. */
static void test_refine_effort(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:4 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("random", 64, 0);
	struct cm_matrix *big = map_test_gen("ring", 100, 6);
	struct cm_map_options o = { .algorithm = CM_MAP_RANDOM, .seed = 3 };
	struct cm_refine_effort tiny = { 1, 1, 1, 0 }, odd = { 9, -4, 0, 0 };
	struct cm_refine_effort stingy = { 3, 16, 16, 1.0 };
	int pu[100], moves;
	double before, after;

	cm_map_baseline(t, m, &o, pu, NULL);
	before = cm_cost(t, m, pu);
	moves = cm_map_refine_effort(t, m, pu, 0, &tiny);
	after = cm_cost(t, m, pu);
	ok(moves > 0 && after < before &&
	   cm_map_validate(t, 64, pu, 0, NULL) == 0,
	   "effort 1/1/1: %g -> %g in %d moves, valid", before, after, moves);
	before = after;
	moves = cm_map_refine_effort(t, m, pu, 0, &odd);
	after = cm_cost(t, m, pu);
	ok(moves >= 0 && after <= before &&
	   cm_map_validate(t, 64, pu, 0, NULL) == 0,
	   "clamped effort: %g -> %g, valid", before, after);
	cm_map_baseline(t, m, &o, pu, NULL);
	before = cm_cost(t, m, pu);
	moves = cm_map_refine_effort(t, m, pu, 0, &stingy);
	after = cm_cost(t, m, pu);
	ok(moves >= 0 && moves <= 64 / 8 && after <= before &&
	   cm_map_validate(t, 64, pu, 0, NULL) == 0,
	   "gain per work too low: stops after one window (%d moves)", moves);
	o.oversubscribe = 1;
	cm_map_baseline(t, big, &o, pu, NULL);
	before = cm_cost(t, big, pu);
	moves = cm_map_refine_effort(t, big, pu, 1, &tiny);
	after = cm_cost(t, big, pu);
	ok(moves > 0 && after < before &&
	   cm_map_validate(t, 100, pu, 1, NULL) == 0,
	   "oversubscribed: %g -> %g, still balanced", before, after);
	cm_matrix_free(m);
	cm_matrix_free(big);
	cm_topo_free(t);
}

int main(void)
{
	test_pairs_on_siblings();
	test_clusters_under_l3();
	test_spread_zero_matrix();
	test_oversubscribe();
	test_edges();
	test_cpuset_holes();
	test_deterministic();
	test_spread_quota();
	test_stencil_fm();
	test_heap();
	test_heap_build();
	test_branchless_helpers();
	test_multilevel();
	test_multilevel_gains();
	test_pairs_exact();
	test_lean_place();
	test_refine_effort();
	return done_testing();
}
