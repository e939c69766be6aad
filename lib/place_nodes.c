/* place_nodes.c: ranks onto the nodes of an allocation with the mapper on
 * a node-level topology (commap/place_nodes.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "commap/mapping.h"
#include "commap/place_nodes.h"
#include "commap/topology.h"

double cm_place_nodes_between(const struct cm_matrix *m,
			      const int *node_of_rank)
{
	int n = cm_matrix_nthreads(m);
	double sum = 0;

	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *row;
		int k = cm_matrix_row(m, i, &row);

		for (int e = 0; e < k; e++)
			if (row[e].col > i &&
			    node_of_rank[i] != node_of_rank[row[e].col])
				sum += row[e].w;
	}
	return sum;
}

static void block(int n, int per_node, int *node_of_rank)
{
	for (int r = 0; r < n; r++)
		node_of_rank[r] = r / per_node;
}

/* The mapper's assignment: PUs of "pack:NODES core:SLOTS pu:1" are in
 * tree order, so PU p is slot p % per_node of node p / per_node, and
 * block distribution is rank r on PU r.  Aligned with block (swapping
 * whole nodes or slots changes no distance) so that an assignment as good
 * as block moves nobody. */
static int learned(const struct cm_matrix *m, int nnodes, int per_node,
		   int *node_of_rank, struct cm_error *err)
{
	int n = nnodes * per_node, rc = -1;
	int *pu = malloc(sizeof(int) * (size_t)n);
	int *cur = malloc(sizeof(int) * (size_t)n);
	struct cm_map_options opts = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	struct cm_topo *topo = NULL;
	char spec[64];

	if (!pu || !cur) {
		cm_errorf(err, ENOMEM, "ranks onto nodes: out of memory");
		goto out;
	}
	snprintf(spec, sizeof(spec), "pack:%d core:%d pu:1", nnodes,
		 per_node);
	if (cm_topo_load_synthetic(&topo, spec, err) < 0 ||
	    cm_map(topo, m, &opts, pu, err) < 0)
		goto out;
	for (int r = 0; r < n; r++)
		cur[r] = r;
	if (cm_map_align(topo, n, cur, pu) < 0) {
		cm_errorf(err, errno, "ranks onto nodes: aligning with block "
			  "failed");
		goto out;
	}
	for (int r = 0; r < n; r++)
		node_of_rank[r] = pu[r] / per_node;
	rc = 0;
out:
	cm_topo_free(topo);
	free(cur);
	free(pu);
	return rc;
}

int cm_place_nodes(const struct cm_matrix *m, int nnodes, int per_node,
		   int *node_of_rank, struct cm_place_nodes_result *res,
		   struct cm_error *err)
{
	struct cm_place_nodes_result r = { 0 };
	int n = m ? cm_matrix_nthreads(m) : -1;
	int *blk;

	if (!m || !node_of_rank || nnodes < 1 || per_node < 1)
		return cm_errorf(err, EINVAL, "ranks onto nodes: bad argument");
	if (n > CM_PLACE_NODES_MAX_RANKS || nnodes > CM_PLACE_NODES_MAX_RANKS
	    || per_node > CM_PLACE_NODES_MAX_RANKS)
		return cm_errorf(err, E2BIG, "ranks onto nodes: %d ranks on %d "
				 "nodes is more than %d ranks", n, nnodes,
				 CM_PLACE_NODES_MAX_RANKS);
	if (n != nnodes * per_node)
		return cm_errorf(err, EINVAL, "ranks onto nodes: the matrix "
				 "has %d ranks, the allocation %d nodes x %d "
				 "tasks", n, nnodes, per_node);
	blk = malloc(sizeof(int) * (size_t)n);
	if (!blk)
		return cm_errorf(err, ENOMEM, "ranks onto nodes: out of memory");
	block(n, per_node, blk);
	r.total = cm_matrix_total(m);
	r.between_block = cm_place_nodes_between(m, blk);
	r.between_learned = r.between_block;
	/* One node, or nothing crossing: block is already the best. */
	if (nnodes > 1 && r.between_block > 0) {
		if (learned(m, nnodes, per_node, node_of_rank, err) < 0) {
			free(blk);
			return -1;
		}
		r.between_learned = cm_place_nodes_between(m, node_of_rank);
	}
	/* Never more: only a strictly smaller figure replaces block (a
	 * relative margin so that rounding in the sums decides nothing). */
	r.learned = r.between_learned < r.between_block * (1 - 1e-9);
	if (!r.learned) {
		r.between_learned = r.between_block;
		block(n, per_node, node_of_rank);
	}
	free(blk);
	if (res)
		*res = r;
	return 0;
}
