/* test_place_nodes.c: ranks onto the nodes of an allocation
 * (commap/place_nodes.h): heavy partners split by block distribution
 * are brought together, an assignment that is already optimal stays
 * block, and the answer never crosses more bytes than block. */
#include <errno.h>
#include <stdlib.h>

#include "commap/place_nodes.h"
#include "commap/rand.h"
#include "tap.h"

/* Every node holds exactly per_node ranks. */
static int balanced(int nnodes, int per_node, const int *node_of_rank)
{
	int n = nnodes * per_node, ok_ = 1;
	int *count = calloc((size_t)nnodes, sizeof(int));

	for (int r = 0; r < n && ok_; r++) {
		if (node_of_rank[r] < 0 || node_of_rank[r] >= nnodes)
			ok_ = 0;
		else
			count[node_of_rank[r]]++;
	}
	for (int k = 0; k < nnodes && ok_; k++)
		ok_ = count[k] == per_node;
	free(count);
	return ok_;
}

static int is_block(int n, int per_node, const int *node_of_rank)
{
	for (int r = 0; r < n; r++)
		if (node_of_rank[r] != r / per_node)
			return 0;
	return 1;
}

/* 12 ranks on 3 nodes of 4: rank r talks to r + 6, which block always
 * puts on another node; every pair fits on one node. */
static void test_pairs_split_by_block(void)
{
	struct cm_matrix *m = cm_matrix_new(12);
	struct cm_place_nodes_result res;
	int node[12];

	for (int r = 0; r < 6; r++)
		cm_matrix_add(m, r, r + 6, 1e6);
	cm_matrix_add(m, 0, 1, 10);	/* light traffic elsewhere */
	ok(cm_place_nodes(m, 3, 4, node, &res, NULL) == 0, "pairs: placed");
	ok(res.learned, "pairs: the learned assignment is used");
	is_double(res.between_block, 6e6, 1e-6, "pairs: block crosses 6 MB");
	is_double(res.between_learned, 0, 1e-6,
		  "pairs: learned crosses nothing");
	is_double(cm_place_nodes_between(m, node), res.between_learned, 1e-6,
		  "pairs: the figure is the assignment's");
	ok(balanced(3, 4, node), "pairs: 4 ranks on each node");
	for (int r = 0; r < 6; r++)
		ok(node[r] == node[r + 6], "pairs: rank %d beside %d", r, r + 6);
	cm_matrix_free(m);
}

/* A ring over a shuffled rank order: block cuts most of its edges; the
 * best cut on 3 nodes is 3 edges. */
static void test_shuffled_ring(void)
{
	int n = 12, perm[12], node[12];
	struct cm_matrix *m = cm_matrix_new(n);
	struct cm_place_nodes_result res;
	uint64_t rng = 3;

	for (int i = 0; i < n; i++)
		perm[i] = i;
	cm_rand_shuffle(&rng, perm, n);
	for (int i = 0; i < n; i++)
		cm_matrix_add(m, perm[i], perm[(i + 1) % n], 1000);
	ok(cm_place_nodes(m, 3, 4, node, &res, NULL) == 0, "ring: placed");
	diag("ring: block %.0f, learned %.0f", res.between_block,
	     res.between_learned);
	ok(res.between_block > 3000, "ring: block cuts more than 3 edges");
	is_double(res.between_learned, 3000, 1e-6,
		  "ring: learned cuts 3 edges (the fewest on 3 nodes)");
	ok(balanced(3, 4, node), "ring: 4 ranks on each node");
	cm_matrix_free(m);
}

/* Neighbours (2k, 2k+1) are on one node under block already: nothing to
 * gain, block is kept exactly. */
static void test_already_optimal(void)
{
	struct cm_matrix *m = cm_matrix_new(8), *ring = cm_matrix_new(8);
	struct cm_place_nodes_result res;
	int node[8];

	for (int k = 0; k < 4; k++)
		cm_matrix_add(m, 2 * k, 2 * k + 1, 5e5);
	ok(cm_place_nodes(m, 2, 4, node, &res, NULL) == 0 && !res.learned &&
	   is_block(8, 4, node), "pairs inside nodes: block kept");
	/* a ring in rank order: block cuts 2 edges, the fewest possible */
	for (int r = 0; r < 8; r++)
		cm_matrix_add(ring, r, (r + 1) % 8, 1);
	ok(cm_place_nodes(ring, 2, 4, node, &res, NULL) == 0 && !res.learned &&
	   is_block(8, 4, node), "ring in rank order: block kept");
	is_double(res.between_learned, res.between_block, 0,
		  "ring in rank order: the same figure both ways");
	cm_matrix_free(ring);
	cm_matrix_free(m);
}

/* Every pair alike: all assignments cross the same bytes, so block. */
static void test_all_to_all(void)
{
	struct cm_matrix *m = cm_matrix_new(9);
	int node[9];
	struct cm_place_nodes_result res;

	for (int i = 0; i < 9; i++)
		for (int j = i + 1; j < 9; j++)
			cm_matrix_add(m, i, j, 7);
	ok(cm_place_nodes(m, 3, 3, node, &res, NULL) == 0 && !res.learned &&
	   is_block(9, 3, node), "all-to-all: block kept");
	cm_matrix_free(m);
}

/* Random matrices on several shapes: balanced, never more than block,
 * and block exactly whenever the learned one is not used. */
static void test_never_more(void)
{
	static const int shapes[][2] = { { 2, 2 }, { 2, 8 }, { 3, 4 },
					 { 4, 3 }, { 8, 8 }, { 16, 4 } };
	uint64_t rng = 11;
	int bad = 0, used = 0, runs = 0;

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (int rep = 0; rep < 20; rep++) {
			int nn = shapes[s][0], per = shapes[s][1], n = nn * per;
			struct cm_matrix *m = cm_matrix_new(n);
			struct cm_place_nodes_result res;
			int *node = malloc(sizeof(int) * (size_t)n);

			for (int e = 0; e < 2 * n; e++) {
				int i = (int)cm_rand_below(&rng, (uint64_t)n);
				int j = (int)cm_rand_below(&rng, (uint64_t)n);

				if (i != j)
					cm_matrix_add(m, i, j, (double)(1 +
						cm_rand_below(&rng, 1000)));
			}
			runs++;
			if (cm_place_nodes(m, nn, per, node, &res, NULL) < 0 ||
			    !balanced(nn, per, node) ||
			    res.between_learned > res.between_block ||
			    (!res.learned && !is_block(n, per, node)) ||
			    cm_place_nodes_between(m, node) !=
			    res.between_learned)
				bad++;
			used += res.learned;
			free(node);
			cm_matrix_free(m);
		}
	diag("random: learned used in %d of %d", used, runs);
	is_int(bad, 0, "random matrices: balanced, never more than block");
	ok(used > runs / 2, "random matrices: most gain from learning");
}

static void test_errors(void)
{
	struct cm_matrix *m = cm_matrix_new(6), *big;
	struct cm_error err = { "" };
	struct cm_place_nodes_result res;
	int node[6];

	cm_matrix_add(m, 0, 5, 1);
	ok(cm_place_nodes(m, 2, 4, node, NULL, &err) == -1 &&
	   errno == EINVAL, "6 ranks on 2 x 4 slots: EINVAL");
	diag("%s", err.text);
	ok(cm_place_nodes(m, 0, 6, node, NULL, NULL) == -1 &&
	   errno == EINVAL, "no node: EINVAL");
	ok(cm_place_nodes(m, 1, 6, node, &res, NULL) == 0 && !res.learned &&
	   is_block(6, 6, node), "one node: block");
	cm_matrix_set(m, 0, 5, 0);
	ok(cm_place_nodes(m, 2, 3, node, &res, NULL) == 0 && !res.learned &&
	   res.total == 0, "no traffic: block");
	big = cm_matrix_new(CM_PLACE_NODES_MAX_RANKS + 2);
	ok(cm_place_nodes(big, 2, CM_PLACE_NODES_MAX_RANKS / 2 + 1, NULL,
			  NULL, NULL) == -1 && errno == EINVAL,
	   "no output array: EINVAL");
	{
		int *nb = malloc(sizeof(int) * (CM_PLACE_NODES_MAX_RANKS + 2));

		ok(cm_place_nodes(big, 2, CM_PLACE_NODES_MAX_RANKS / 2 + 1, nb,
				  NULL, &err) == -1 && errno == E2BIG,
		   "more than the largest job: E2BIG");
		diag("%s", err.text);
		free(nb);
	}
	cm_matrix_free(big);
	cm_matrix_free(m);
}

int main(void)
{
	test_pairs_split_by_block();
	test_shuffled_ring();
	test_already_optimal();
	test_all_to_all();
	test_never_more();
	test_errors();
	return done_testing();
}
