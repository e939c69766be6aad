/* test_map_coords.c: straight splits from pivot distances
 * (lib/map_coords.c) and the placement of large meshes that uses them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/matrix_gen.h"
#include "map_coords.h"
#include "tap.h"
#include "map_test_util.h"

static struct cm_row_ref *rows_of(const struct cm_matrix *m)
{
	int n = cm_matrix_nthreads(m);
	struct cm_row_ref *ref = malloc(sizeof(*ref) * (size_t)n);

	for (int x = 0; ref && x < n; x++)
		ref[x].len = cm_matrix_row(m, x, &ref[x].e);
	return ref;
}

/* Split all n threads of m in two halves: the weight cut, and whether
 * the sides have exactly ta and n - ta threads. */
static double split_all(const struct cm_matrix *m, int ta, int *sizes_ok)
{
	int n = cm_matrix_nthreads(m), na = 0;
	struct cm_row_ref *ref = rows_of(m);
	int *T = malloc(sizeof(int) * (size_t)n);
	int *tie = malloc(sizeof(int) * (size_t)n);
	signed char *side = malloc((size_t)n);
	struct cm_coords c;
	double cut = -1;

	if (!ref || !T || !tie || !side ||
	    cm_coords_init(&c, ref, n, 8, 1) < 0)
		goto out;
	for (int x = 0; x < n; x++)
		T[x] = x;
	cut = cm_coords_split(&c, ref, T, n, ta, 1, side, tie);
	for (int x = 0; x < n; x++)
		na += side[x] == 0;
	*sizes_ok = na == ta;
	cm_coords_free(&c);
out:
	free(ref);
	free(T);
	free(tie);
	free(side);
	return cut;
}

/* Known answers: the straight planes of shuffled grids. */
static void test_planes(void)
{
	struct cm_matrix *g2 = map_test_gen("stencil2d", 512, 3);	/* 16 x 32 */
	struct cm_matrix *g3 = map_test_gen("stencil3d", 512, 4);	/* 8 x 8 x 8 */
	int ok2 = 0, ok3 = 0, oka = 0;

	is_int((long long)split_all(g2, 256, &ok2), 16,
	       "16 x 32 grid: cut across its long side (16 links)");
	ok(ok2, "... 256 threads on each side");
	is_int((long long)split_all(g3, 256, &ok3), 64,
	       "8 x 8 x 8 grid: a plane (64 links)");
	ok(ok3, "... 256 threads on each side");
	is_int((long long)split_all(g2, 128, &oka), 16,
	       "a quarter of the 16 x 32 grid: still one plane");
	ok(oka, "... 128 threads on side 0");
	cm_matrix_free(g2);
	cm_matrix_free(g3);
}

/* Two components (a grid and a ring side by side, no link between
 * them): the other component gets pivots too (it is farther than
 * anything), and the split of the grid's size separates them. */
static void test_disconnected(void)
{
	struct cm_matrix *m = cm_matrix_new(96);
	int sizes_ok = 0;
	double cut;

	for (int x = 0; x < 64; x++) {	/* 8 x 8 grid */
		if (x % 8 < 7)
			cm_matrix_set(m, x, x + 1, 1);
		if (x < 56)
			cm_matrix_set(m, x, x + 8, 1);
	}
	for (int x = 64; x < 96; x++)	/* ring of 32 */
		cm_matrix_set(m, x, x + 1 < 96 ? x + 1 : 64, 1);
	cut = split_all(m, 64, &sizes_ok);
	ok(sizes_ok && cut >= 0, "two components: a valid split (cut %g)",
	   cut);
	ok(cut == 0, "... and separates them (cut %g)", cut);
	cm_matrix_free(m);
}

/* auto at 4096 threads on shuffled grids: every split straight, so the
 * cost is that of recursive coordinate bisection (the planes), below
 * Scotch's (22553 and 36352 on these matrices, docs/PERFORMANCE.md). */
static void test_auto_grids(void)
{
	static const struct {
		const char *pattern;
		double planes;
	} grids[] = { { "stencil2d", 22400 }, { "stencil3d", 36352 } };
	struct cm_topo *t = NULL;
	struct cm_error err;
	int *pu = malloc(sizeof(int) * 4096);

	if (!pu || cm_topo_load_synthetic(&t, "pack:8 numa:4 l3:4 core:16 pu:2",
					  &err) < 0) {
		ok(0, "4096-PU topology: %s", err.text);
		free(pu);
		return;
	}
	for (size_t g = 0; g < sizeof(grids) / sizeof(grids[0]); g++) {
		struct cm_matrix *m = map_test_gen(grids[g].pattern, 4096, 1);
		struct cm_map_options o = { .algorithm = CM_MAP_AUTO,
					    .seed = 1 };
		double cost = -1;

		if (m && cm_map(t, m, &o, pu, &err) == 0)
			cost = cm_cost(t, m, pu);
		ok(cost > 0 && cost <= grids[g].planes, "auto, shuffled %s of "
		   "4096 threads: cost %g <= %g (the planes)",
		   grids[g].pattern, cost, grids[g].planes);
		cm_matrix_free(m);
	}
	cm_topo_free(t);
	free(pu);
}

/* The 64 x 128 grid of 8192 threads: its first cut is 0.43% of the
 * weight, under the 0.5% that means loosely linked pieces at 4096
 * threads; the threshold falls with n (map_groups.c, LEAN_LOOSE_REF_N),
 * so it is placed as a mesh: no more than Scotch's 45206 (taken for
 * loose pieces it cost 49076). */
static void test_auto_large_grid(void)
{
	struct cm_topo *t = NULL;
	struct cm_matrix *m = map_test_gen("stencil2d", 8192, 1);
	struct cm_map_options o = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	struct cm_error err;
	int *pu = malloc(sizeof(int) * 8192);
	double cost = -1;

	if (pu && m && cm_topo_load_synthetic(&t, "pack:8 numa:8 l3:4 "
					      "core:16 pu:2", &err) == 0 &&
	    cm_map(t, m, &o, pu, &err) == 0)
		cost = cm_cost(t, m, pu);
	ok(cost > 0 && cost <= 45206, "auto, shuffled 64 x 128 grid of 8192 "
	   "threads: cost %g <= 45206", cost);
	cm_topo_free(t);
	cm_matrix_free(m);
	free(pu);
}

int main(void)
{
	test_planes();
	test_disconnected();
	test_auto_grids();
	test_auto_large_grid();
	return done_testing();
}
