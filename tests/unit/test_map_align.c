/* test_map_align.c: cm_map_align relabels a mapping by tree automorphisms
 * so that fewer threads move, and never changes its cost. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/matrix_gen.h"
#include "commap/rand.h"
#include "tap.h"
#include "map_test_util.h"

/* Threads placed in cur whose PU differs in map. */
static int moves(int n, const int *cur, const int *map)
{
	int k = 0;

	for (int t = 0; t < n; t++)
		k += cur[t] >= 0 && cur[t] != map[t];
	return k;
}

/* On "pack:2 core:2 pu:2" (PU index = 4 pack + 2 core + pu), the mapping
 * with packages and cores swapped is the same placement: aligning it with
 * the original moves nobody. */
static void test_known_automorphism(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	int cur[8], map[8];

	for (int i = 0; i < 8; i++) {
		int pack = i / 4, core = (i / 2) % 2, pu = i % 2;

		cur[i] = i;
		/* swap the packages, and the cores inside each package */
		map[i] = 4 * (1 - pack) + 2 * (1 - core) + pu;
	}
	is_int(moves(8, cur, map), 8, "permuted mapping: every thread moves");
	ok(cm_map_align(t, 8, cur, map) == 0, "align succeeds");
	is_int(moves(8, cur, map), 0, "aligned: nobody moves");

	/* Siblings inside a core swapped and one thread new (-1). */
	for (int i = 0; i < 8; i++)
		map[i] = i ^ 1;
	cur[3] = -1;
	ok(cm_map_align(t, 8, cur, map) == 0 && moves(8, cur, map) == 0 &&
	   map[3] == 3, "SMT siblings swapped back; the new thread follows");
	cm_topo_free(t);
}

/* A restricted cpuset makes sibling subtrees differ: they must not be
 * exchanged (that would change distances). */
static void test_no_swap_between_shapes(void)
{
	/* package 0 keeps 2 cores, package 1 only one PU */
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", "0-3,4");
	int cur[5] = { 4, 0, 1, 2, 3 }, map[5] = { 0, 1, 2, 3, 4 };

	ok(t && cm_map_align(t, 5, cur, map) == 0,
	   "align on an asymmetric cpuset");
	ok(map[0] != 4, "thread 0 is not moved into the one-PU package");
	ok(cm_map_validate(t, 5, map, 0, NULL) == 0, "still valid");
	cm_topo_free(t);
}

static void random_mapping(uint64_t *rng, int npus, int n, int *map)
{
	int *perm = malloc(sizeof(int) * (size_t)npus);

	for (int p = 0; p < npus; p++)
		perm[p] = p;
	cm_rand_shuffle(rng, perm, npus);
	for (int t = 0; t < n; t++)
		map[t] = perm[t % npus];
	free(perm);
}

/* Over random topologies, matrices and current placements: the aligned
 * mapping is valid, costs the same for this and any other matrix, and
 * moves no more threads than the mapper's own answer. */
static void test_random_properties(void)
{
	static const char *specs[] = {
		"pack:2 numa:2 l3:2 core:4 pu:2", "pack:2 l3:2 core:3 pu:2",
		"pack:4 core:4 pu:1",
	};
	static const char *cpus[] = { NULL, "0-5,8-13,20-23", NULL };
	static const char *patterns[] = { "stencil2d", "clusters:4", "ring",
					  "random" };
	uint64_t rng = 7;
	int bad_cost = 0, bad_valid = 0, total_before = 0,
	    total_after = 0, runs = 0;

	for (int s = 0; s < 3; s++) {
		struct cm_topo *t = map_test_topo(specs[s], cpus[s]);
		int npus = t ? cm_topo_npus(t) : 0;

		for (int r = 0; t && r < 24; r++) {
			int n = r % 3 == 2 ? npus + npus / 2 : npus - r % 5;
			int over = n > npus;
			struct cm_map_options o = { .algorithm = CM_MAP_AUTO,
						    .seed = (uint64_t)r,
						    .oversubscribe = over };
			struct cm_matrix *m = NULL, *other = NULL;
			int *cur = malloc(sizeof(int) * (size_t)n);
			int *map = malloc(sizeof(int) * (size_t)n);
			double c0, c1, d0, d1;

			cm_matrix_generate(patterns[r % 4], n, (uint64_t)r,
					   (uint64_t)r + 1, &m, NULL);
			cm_matrix_generate("random", n, (uint64_t)r + 99, 0,
					   &other, NULL);
			random_mapping(&rng, npus, n, cur);
			if (r % 4 == 1)
				cur[r % n] = -1;
			if (!m || !other || cm_map(t, m, &o, map, NULL) < 0) {
				bad_valid++;
				goto next;
			}
			c0 = cm_cost(t, m, map);
			d0 = cm_cost(t, other, map);
			total_before += moves(n, cur, map);
			if (cm_map_align(t, n, cur, map) < 0) {
				bad_valid++;
				goto next;
			}
			c1 = cm_cost(t, m, map);
			d1 = cm_cost(t, other, map);
			total_after += moves(n, cur, map);
			bad_cost += fabs(c1 - c0) > 1e-9 * (1 + c0) ||
				    fabs(d1 - d0) > 1e-9 * (1 + d0);
			bad_valid += cm_map_validate(t, n, map, over, NULL) < 0;
			runs++;
next:
			cm_matrix_free(m);
			cm_matrix_free(other);
			free(cur);
			free(map);
		}
		cm_topo_free(t);
	}
	is_int(runs, 72, "72 random instances mapped and aligned");
	is_int(bad_cost, 0, "the cost never changes, for any matrix");
	is_int(bad_valid, 0, "every aligned mapping is valid");
	ok(total_after < total_before, "alignment keeps threads in place "
	   "(%d moves instead of %d)", total_after, total_before);
}

static void test_errors(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:1", NULL);
	int cur[2] = { 0, 1 }, bad[2] = { 0, 4 };

	ok(cm_map_align(t, 2, cur, bad) == -1 && errno == EINVAL,
	   "a PU index out of range: EINVAL");
	ok(cm_map_align(t, 0, NULL, NULL) == 0, "no threads: nothing to do");
	ok(cm_map_align(NULL, 2, cur, cur) == -1 && errno == EINVAL,
	   "no topology: EINVAL");
	cm_topo_free(t);
}

int main(void)
{
	test_known_automorphism();
	test_no_swap_between_shapes();
	test_random_properties();
	test_errors();
	return done_testing();
}
