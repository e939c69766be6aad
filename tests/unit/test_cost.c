/* test_cost.c: cost, data-sharing metric and mapping accuracy
 * (lib/cost.c) against answers computed by hand on small trees. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "commap/cost.h"
#include "commap/rand.h"
#include "tap.h"
#include "map_test_util.h"

/* 5 threads: 0-1 weight 2, 2-3 weight 3, 0-2 weight 1, thread 4 silent. */
static struct cm_matrix *small_matrix(void)
{
	struct cm_matrix *m = cm_matrix_new(5);

	cm_matrix_add(m, 0, 1, 2);
	cm_matrix_add(m, 2, 3, 3);
	cm_matrix_add(m, 0, 2, 1);
	return m;
}

/* On "pack:2 core:2 pu:2" the distances are: same PU 0, SMT siblings 1,
 * same package 5, different packages 6 (no caches in that description). */
static void test_cost_by_hand(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *m = small_matrix();
	static const struct {
		int map[5];
		double cost;
		const char *what;
	} cases[] = {
		{ { 0, 1, 2, 3, 4 }, 2 * 1 + 3 * 1 + 1 * 5, "pairs on cores" },
		{ { 0, 4, 1, 5, 2 }, 2 * 6 + 3 * 6 + 1 * 1, "pairs split" },
		{ { 0, 2, 4, 6, 1 }, 2 * 5 + 3 * 5 + 1 * 6, "one per core" },
		{ { 7, 6, 0, 1, 3 }, 2 * 1 + 3 * 1 + 1 * 6, "mirrored" },
		{ { 0, 0, 0, 0, 0 }, 0, "all on one PU (oversubscribed)" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		is_double(cm_cost(t, m, cases[i].map), cases[i].cost, 1e-12,
			  cases[i].what);
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_cost_edges(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *empty = cm_matrix_new(0), *one = cm_matrix_new(1);
	struct cm_matrix *zero = cm_matrix_new(4), *huge = cm_matrix_new(2);
	int map[4] = { 0, 1, 2, 3 }, bad[4] = { 0, 1, 8, 3 };
	int neg[4] = { -1, 1, 2, 3 }, far[2] = { 0, 7 };

	is_double(cm_cost(t, empty, NULL), 0, 0, "no threads: cost 0");
	is_double(cm_cost(t, one, map), 0, 0, "one thread: cost 0");
	is_double(cm_cost(t, zero, map), 0, 0, "zero matrix: cost 0");
	cm_matrix_add(zero, 0, 1, 1);
	ok(isnan(cm_cost(t, zero, bad)), "PU index == npus: NaN");
	ok(isnan(cm_cost(t, zero, neg)), "negative PU index: NaN");
	ok(isnan(cm_cost(NULL, zero, map)), "no topology: NaN");
	ok(isnan(cm_cost(t, zero, NULL)), "no mapping: NaN");
	cm_matrix_add(huge, 0, 1, 1e300);
	is_double(cm_cost(t, huge, far) / 1e300, 6, 1e-12,
		  "huge weight: finite, weight * distance");
	cm_matrix_free(empty);
	cm_matrix_free(one);
	cm_matrix_free(zero);
	cm_matrix_free(huge);
	cm_topo_free(t);
}

/* The fraction of communication under a common node of kind <= level.
 * Total communication of small_matrix() is 6. */
static void test_data_sharing_by_hand(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_topo *big = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	struct cm_matrix *m = small_matrix();
	int pairs[5] = { 0, 1, 2, 3, 4 }, split[5] = { 0, 4, 1, 5, 2 };
	int l3[5] = { 0, 2, 4, 6, 20 }, numa[5] = { 0, 16, 2, 18, 40 };

	is_double(cm_cost_data_sharing(t, m, pairs, CM_LEVEL_CORE), 5.0 / 6,
		  1e-12, "pairs on cores: 5/6 under a core");
	is_double(cm_cost_data_sharing(t, m, pairs, CM_LEVEL_L3), 5.0 / 6,
		  1e-12, "no L3 in the tree: same as core");
	is_double(cm_cost_data_sharing(t, m, pairs, CM_LEVEL_PACKAGE), 1,
		  1e-12, "everything under one package");
	is_double(cm_cost_data_sharing(t, m, pairs, CM_LEVEL_PU), 0, 1e-12,
		  "nothing on one PU");
	is_double(cm_cost_data_sharing(t, m, split, CM_LEVEL_CORE), 1.0 / 6,
		  1e-12, "pairs split: only 0-2 shares a core");
	is_double(cm_cost_data_sharing(t, m, split, CM_LEVEL_PACKAGE),
		  1.0 / 6, 1e-12, "pairs split across packages");
	is_double(cm_cost_data_sharing(t, m, split, CM_LEVEL_MACHINE), 1,
		  1e-12, "the machine holds everything");
	/* 128 PUs, 16 per L3, 32 per NUMA node. */
	is_double(cm_cost_data_sharing(big, m, l3, CM_LEVEL_CORE), 0, 1e-12,
		  "different cores: nothing under a core");
	is_double(cm_cost_data_sharing(big, m, l3, CM_LEVEL_L3), 1, 1e-12,
		  "one L3 holds all");
	is_double(cm_cost_data_sharing(big, m, numa, CM_LEVEL_L3), 1.0 / 6,
		  1e-12, "0-1 and 2-3 straddle L3s, only 0-2 shares one");
	is_double(cm_cost_data_sharing(big, m, numa, CM_LEVEL_NUMA), 1,
		  1e-12, "one NUMA node holds all");
	cm_matrix_free(m);
	m = cm_matrix_new(3);
	is_double(cm_cost_data_sharing(t, m, pairs, CM_LEVEL_L3), 0, 0,
		  "zero matrix: 0");
	cm_matrix_free(m);
	cm_topo_free(t);
	cm_topo_free(big);
}

/* Accuracy: share of communicating threads whose heaviest partner is at the
 * closest distance the tree offers (1 on SMT machines). */
static void test_accuracy_by_hand(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_topo *nosmt = map_test_topo("pack:2 core:2 pu:1", NULL);
	struct cm_matrix *m = small_matrix();
	int pairs[5] = { 0, 1, 2, 3, 4 }, split[5] = { 0, 4, 1, 5, 2 };
	int half[5] = { 0, 1, 2, 4, 3 }, stacked[5] = { 0, 0, 1, 1, 2 };
	int nosmt_map[5] = { 0, 1, 2, 3, 0 };

	is_double(cm_mapping_accuracy(t, m, pairs), 1, 1e-12,
		  "every heaviest partner on the sibling PU");
	is_double(cm_mapping_accuracy(t, m, split), 0, 1e-12,
		  "every heaviest partner in the other package");
	is_double(cm_mapping_accuracy(t, m, half), 0.5, 1e-12,
		  "0-1 siblings, 2-3 split: 2 of 4 (thread 4 silent)");
	is_double(cm_mapping_accuracy(t, m, stacked), 1, 1e-12,
		  "partner on the same PU counts as closest");
	is_double(cm_mapping_accuracy(nosmt, m, nosmt_map), 1, 1e-12,
		  "no SMT: same package is the closest");
	cm_matrix_free(m);
	m = cm_matrix_new(5);
	is_double(cm_mapping_accuracy(t, m, pairs), 0, 0, "zero matrix: 0");
	cm_matrix_free(m);
	cm_topo_free(t);
	cm_topo_free(nosmt);
}

/* Holes: "pack:2 core:2 pu:2" restricted to OS PUs 0,2,3,6,7: PU 0 is a
 * core alone, PUs 1-2 and 3-4 are sibling pairs in different packages. */
static void test_holes(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", "0,2,3,6,7");
	struct cm_matrix *m = cm_matrix_new(4);
	int map[4] = { 0, 1, 3, 4 };

	if (!ok(t && cm_topo_npus(t) == 5, "restricted topology has 5 PUs"))
		return;
	cm_matrix_add(m, 0, 1, 1);	/* PU 0 - PU 1: same package, 5 */
	cm_matrix_add(m, 2, 3, 1);	/* PU 3 - PU 4: siblings, 1 */
	is_double(cm_cost(t, m, map), 6, 1e-12, "cost across the hole");
	is_double(cm_mapping_accuracy(t, m, map), 0.75, 1e-12,
		  "lone PU 0: partner in its package is closest (hit); PU 1: "
		  "its sibling PU 2 is closer (miss)");
	is_double(cm_cost_data_sharing(t, m, map, CM_LEVEL_CORE), 0.5, 1e-12,
		  "one of two pairs shares a core");
	cm_matrix_free(m);
	cm_topo_free(t);
}

/* cm_cost agrees with a dense O(n^2) evaluation on random inputs. */
static void test_cost_matches_dense(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	uint64_t seed = 7;
	int agree = 1;

	for (int round = 0; round < 50; round++) {
		int n = 1 + (int)cm_rand_below(&seed, 40), map[40];
		struct cm_matrix *m = cm_matrix_new(n);
		double dense = 0;

		for (int k = 0; k < 3 * n; k++) {
			int i = (int)cm_rand_below(&seed, (uint64_t)n);
			int j = (int)cm_rand_below(&seed, (uint64_t)n);

			if (i != j)
				cm_matrix_add(m, i, j, 1 + (double)
					      cm_rand_below(&seed, 100));
		}
		for (int i = 0; i < n; i++)
			map[i] = (int)cm_rand_below(&seed, 128);
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				dense += cm_matrix_get(m, i, j) *
					 cm_topo_distance(t, map[i], map[j]);
		agree &= fabs(cm_cost(t, m, map) - dense) <= 1e-9 * dense;
		cm_matrix_free(m);
	}
	ok(agree, "cost equals the dense sum on 50 random mappings");
	cm_topo_free(t);
}

int main(void)
{
	test_cost_by_hand();
	test_cost_edges();
	test_data_sharing_by_hand();
	test_accuracy_by_hand();
	test_holes();
	test_cost_matches_dense();
	return done_testing();
}
