/* test_map_matching.c: the SPCD §IV-B matching mapper (lib/map_matching.c):
 * known answers, capacity rules, validity on random inputs, determinism. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/matrix_gen.h"
#include "commap/rand.h"
#include "map_internal.h"
#include "matching.h"
#include "tap.h"
#include "map_test_util.h"

static int run(const struct cm_topo *t, const struct cm_matrix *m, int over,
	       uint64_t seed, int *pu)
{
	struct cm_map_options o = { .algorithm = CM_MAP_MATCHING,
				    .oversubscribe = over, .seed = seed };
	struct cm_error err = { "" };
	int rv = cm_map_matching(t, m, &o, pu, &err);

	if (rv)
		diag("matching: %s", err.text);
	return rv;
}

/* Every PU index valid and no PU above its capacity. */
static int valid(const struct cm_topo *t, int n, const int *pu, int over)
{
	int npus = cm_topo_npus(t), ok_ = 1;
	int *cap = malloc(sizeof(int) * (size_t)npus);
	int *load_ = calloc((size_t)npus, sizeof(int));

	if (!cap || !load_ || cm_map_capacity(t, n, over, cap, NULL))
		ok_ = 0;
	for (int i = 0; ok_ && i < n; i++) {
		if (pu[i] < 0 || pu[i] >= npus || ++load_[pu[i]] > cap[pu[i]])
			ok_ = 0;
	}
	free(cap);
	free(load_);
	return ok_;
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
	struct cm_matrix *m = map_test_gen("pairs", 8, 3);
	int pu[8];

	ok(t && m && run(t, m, 0, 1, pu) == 0, "8 pairs threads: mapped");
	ok(valid(t, 8, pu, 0), "8 pairs threads: valid");
	ok(edges_within(t, m, pu, 1, cm_level_weight(CM_LEVEL_CORE)),
	   "every pair on sibling PUs of one core");
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_clusters_under_l3(void)
{
	const char *spec = "pack:2 numa:2 l3:2 core:8 pu:2";
	struct cm_topo *t = map_test_topo(spec, NULL);
	struct cm_matrix *m = map_test_gen("clusters:16", 128, 11);
	int pu[128];

	ok(t && m && run(t, m, 0, 1, pu) == 0, "clusters:16 x 8: mapped");
	ok(valid(t, 128, pu, 0), "clusters:16 x 8: valid");
	ok(edges_within(t, m, pu, 1, cm_level_weight(CM_LEVEL_L3)),
	   "every cluster under one L3 (%s)", spec);
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* 4 x 8 grid on 2 packages of 8 cores x 2 PUs: every thread shares its
 * core with a grid neighbour, and few grid edges cross packages (a 4 x 4
 * half per package cuts 4 edges). */
static void test_stencil(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:8 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("stencil2d", 32, 5);
	int pu[32], sibling_ok = 1, cross = 0;

	ok(t && m && run(t, m, 0, 1, pu) == 0, "stencil 4x8: mapped");
	for (int i = 0; i < 32; i++) {
		int found = 0;

		for (int j = 0; j < 32; j++)
			if (j != i && cm_topo_distance(t, pu[i], pu[j]) ==
			    cm_level_weight(CM_LEVEL_CORE) &&
			    cm_matrix_get(m, i, j) > 0)
				found = 1;
		sibling_ok &= found;
		for (int j = i + 1; j < 32; j++)
			if (cm_matrix_get(m, i, j) > 0 &&
			    cm_topo_distance(t, pu[i], pu[j]) >
			    cm_level_weight(CM_LEVEL_PACKAGE))
				cross++;
	}
	ok(sibling_ok, "stencil: every thread's SMT sibling is a neighbour");
	ok(cross <= 8, "stencil: %d of 52 edges cross packages (<= 8)", cross);
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* 6 cores per package (not a power of two): clusters of 6 threads. */
static void test_non_power_of_two(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:6 pu:1", NULL);
	struct cm_matrix *m = map_test_gen("clusters:6", 12, 21);
	int pu[12];

	ok(t && m && run(t, m, 0, 1, pu) == 0, "6 cores per package: mapped");
	ok(edges_within(t, m, pu, 1, cm_level_weight(CM_LEVEL_MACHINE) - 1),
	   "6 cores per package: each cluster of 6 in one package");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* Fewer threads than PUs: spread over cores before SMT siblings. */
static void test_spread(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:4 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("pairs", 8, 0);
	int pu[8], doubled = 0;

	ok(t && m && run(t, m, 0, 1, pu) == 0, "8 threads on 16 PUs: mapped");
	for (int i = 0; i < 8; i++)
		for (int j = i + 1; j < 8; j++)
			if (cm_topo_distance(t, pu[i], pu[j]) <=
			    cm_level_weight(CM_LEVEL_CORE))
				doubled++;
	is_int(doubled, 0, "8 threads on 8 cores: no core holds two");
	ok(edges_within(t, m, pu, 1, cm_level_weight(CM_LEVEL_PACKAGE)),
	   "8 threads on 8 cores: pairs in one package");
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_oversubscription(void)
{
	struct cm_topo *t = map_test_topo("core:2 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("pairs", 16, 9);
	int pu[16], load_[4] = { 0 }, bal = 1;
	struct cm_map_options o = { .algorithm = CM_MAP_MATCHING };
	struct cm_error err = { "" };

	errno = 0;
	ok(cm_map_matching(t, m, &o, pu, &err) == -1 && errno == ENOSPC &&
	   strstr(err.text, "16") && strstr(err.text, "4"),
	   "16 threads on 4 PUs without oversubscription: ENOSPC naming both");
	ok(run(t, m, 1, 1, pu) == 0 && valid(t, 16, pu, 1),
	   "16 threads on 4 PUs oversubscribed: valid");
	for (int i = 0; i < 16; i++)
		load_[pu[i]]++;
	for (int p = 0; p < 4; p++)
		bal &= load_[p] == 4;
	ok(bal, "oversubscribed: 4 threads on every PU");
	ok(edges_within(t, m, pu, 1, 0), "oversubscribed: pairs share a PU");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* Random patterns, sizes around the PU count, cpusets with holes. */
static void test_random_validity(void)
{
	static const struct {
		const char *spec, *cpus;
	} topos[] = {
		{ "pack:2 numa:2 l3:2 core:8 pu:2", NULL },
		{ "pack:2 numa:2 l3:2 core:8 pu:2", "0-5,9,17-40,77,100-127" },
		{ "pack:2 core:3 pu:2", "1-4,7-10" },
		{ "pack:1 core:5 pu:1", NULL },
		{ "pack:3 l3:2 core:3 pu:2", "0,2,4,6-30" },
	};
	static const char *patterns[] = { "random", "ring", "clusters:5",
					  "stencil3d", "all2all", "pairs" };
	int invalid = 0, runs = 0, outside = 0;
	uint64_t rs = 31;

	for (size_t ti = 0; ti < sizeof(topos) / sizeof(topos[0]); ti++) {
		struct cm_topo *t = map_test_topo(topos[ti].spec, topos[ti].cpus);
		int npus = t ? cm_topo_npus(t) : 0;

		for (int r = 0; t && r < 12; r++) {
			int n = 1 + (int)cm_rand_below(&rs, 2 * npus);
			int over = n > npus;
			const char *pat = patterns[r % 6];
			struct cm_matrix *m;

			if (n < 5 && strcmp(pat, "clusters:5") == 0)
				pat = "ring";
			m = map_test_gen(pat, n, (uint64_t)r + 1);
			int *pu = malloc(sizeof(int) * (size_t)n);

			runs++;
			if (!m || !pu || run(t, m, over, r, pu) ||
			    !valid(t, n, pu, over) ||
			    cm_map_validate(t, n, pu, over, NULL))
				invalid++;
			for (int i = 0; m && pu && i < n; i++)
				if (cm_topo_pu_os_index(t, pu[i]) < 0)
					outside++;
			free(pu);
			cm_matrix_free(m);
		}
		cm_topo_free(t);
	}
	is_int(invalid, 0, "random inputs, cpuset holes, n around npus: "
	       "all valid");
	is_int(outside, 0, "no thread outside the restricted topology");
	diag("%d random runs", runs);
}

static void test_determinism(void)
{
	struct cm_topo *t = map_test_topo("pack:2 l3:2 core:4 pu:2", "0-13,15-31");
	struct cm_matrix *m = map_test_gen("random", 27, 4);
	int a[27], b[27], c[27];

	ok(run(t, m, 0, 1, a) == 0 && run(t, m, 0, 1, b) == 0 &&
	   run(t, m, 0, 99, c) == 0, "determinism: three runs");
	ok(memcmp(a, b, sizeof(a)) == 0, "same seed, same mapping");
	ok(memcmp(a, c, sizeof(a)) == 0,
	   "other seed, same mapping (no random choice)");
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_edges(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *zero = cm_matrix_new(5), *one = cm_matrix_new(1);
	struct cm_matrix *empty = cm_matrix_new(0), *big = cm_matrix_new(4);
	struct cm_map_options o = { .algorithm = CM_MAP_MATCHING };
	int pu[8], order[5];

	ok(run(t, empty, 0, 1, NULL) == 0, "0 threads: nothing to do");
	ok(run(t, one, 0, 1, pu) == 0 && pu[0] >= 0 && pu[0] < 8,
	   "1 thread: mapped");
	ok(run(t, zero, 0, 1, pu) == 0 && valid(t, 5, pu, 0),
	   "5 threads, no communication: valid");
	ok(cm_map_matching_order(zero, order) == 0, "order of a zero matrix");
	int seen = 0;

	for (int i = 0; i < 5; i++)
		seen |= 1 << order[i];
	is_int(seen, 31, "order is a permutation");
	/* Weights 600 orders of magnitude apart: the tiny pair is still a
	 * pair (4 threads on 4 cores: spread, so one package each). */
	cm_matrix_set(big, 0, 1, 1e300);
	cm_matrix_set(big, 2, 3, 1e-300);
	cm_matrix_set(big, 0, 2, 1e-301);
	ok(run(t, big, 0, 1, pu) == 0 &&
	   edges_within(t, big, pu, 1e-300, cm_level_weight(CM_LEVEL_PACKAGE)),
	   "huge and tiny weights: both pairs in one package each");
	errno = 0;
	ok(cm_map_matching(NULL, one, &o, pu, NULL) == -1 && errno == EINVAL,
	   "no topology: EINVAL");
	errno = 0;
	ok(cm_map_matching(t, one, NULL, pu, NULL) == -1 && errno == EINVAL,
	   "no options: EINVAL");
	cm_matrix_free(zero);
	cm_matrix_free(one);
	cm_matrix_free(empty);
	cm_matrix_free(big);
	cm_topo_free(t);
}

/* Quality on a larger case: clusters:8 over 256 PUs, shuffled.  The
 * ideal is the unshuffled pattern placed compactly (each cluster on 4
 * cores of one L3); shuffled compact placement is far worse. */
static void test_quality(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:4 core:8 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("clusters:8", 256, 77);
	struct cm_matrix *plain = map_test_gen("clusters:8", 256, 0);
	int *pu = malloc(sizeof(int) * 256), *compact = malloc(sizeof(int) *
							       256);

	for (int i = 0; i < 256; i++)
		compact[i] = i;
	ok(run(t, m, 0, 1, pu) == 0, "clusters:8 on 256 PUs: mapped");
	double c = cm_cost(t, m, pu), cc = cm_cost(t, m, compact);
	double ideal = cm_cost(t, plain, compact);

	ok(c <= ideal * 1.000001, "matching cost %.1f <= ideal %.1f "
	   "(compact on shuffled: %.1f)", c, ideal, cc);
	ok(edges_within(t, m, pu, 1, cm_level_weight(CM_LEVEL_L3)),
	   "clusters of 8 under one L3");
	free(pu);
	free(compact);
	cm_matrix_free(m);
	cm_matrix_free(plain);
	cm_topo_free(t);
}

/* Weight 0.01 on every pair that has no edge yet: a dense background. */
static void add_dense_background(struct cm_matrix *m)
{
	int n = m ? cm_matrix_nthreads(m) : 0;

	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (cm_matrix_get(m, i, j) == 0)
				cm_matrix_set(m, i, j, 0.01);
}

/* 512 threads in clusters of 16 with a dense background (0.01 between
 * all pairs): the rounds over more than 256 groups match on the candidate
 * graph of each group's heaviest edges, which must keep the clusters. */
static void test_candidate_graph(void)
{
	struct cm_topo *t = map_test_topo("pack:8 numa:2 l3:2 core:8 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("clusters:16", 512, 5);
	int *pu = malloc(sizeof(int) * 512);

	add_dense_background(m);

	ok(t && m && cm_matrix_nedges(m) == 512 * 511 / 2,
	   "clusters:16 x 32: dense matrix");
	ok(run(t, m, 0, 1, pu) == 0 && valid(t, 512, pu, 0),
	   "dense 512 threads: mapped, valid");
	ok(edges_within(t, m, pu, 1, cm_level_weight(CM_LEVEL_L3)),
	   "dense 512 threads: every cluster under one L3");
	free(pu);
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* 8192 threads: the first round is beyond the exact matching's budget and
 * uses greedy matching with 2-opt.  A shuffled ring oversubscribed on 8
 * PUs must still be cut into 8 arcs, about 8 edges crossing PUs, far
 * below a random placement's ~7/8 of 8192. */
static void test_large_greedy_round(void)
{
	enum { N = 8192 };
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *m = map_test_gen("ring", N, 8);
	int *pu = malloc(sizeof(int) * N), apart = 0;

	ok(run(t, m, 1, 1, pu) == 0 && valid(t, N, pu, 1),
	   "8192 threads on 8 PUs: mapped, balanced");
	for (int i = 0; i < N; i++) {
		const struct cm_matrix_entry *row;
		int deg = cm_matrix_row(m, i, &row);

		for (int k = 0; k < deg; k++)
			apart += row[k].col > i && pu[i] != pu[row[k].col];
	}
	ok(apart <= 64, "8192-thread ring: %d of 8192 edges cross PUs", apart);
	free(pu);
	cm_matrix_free(m);
	cm_topo_free(t);
}

int main(void)
{
	test_pairs_on_siblings();
	test_clusters_under_l3();
	test_stencil();
	test_non_power_of_two();
	test_spread();
	test_oversubscription();
	test_random_validity();
	test_determinism();
	test_edges();
	test_quality();
	test_candidate_graph();
	test_large_greedy_round();
	return done_testing();
}
