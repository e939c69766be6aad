/* commap/place_nodes.h: ranks onto the nodes of an allocation.
 *
 * Given the matrix of bytes between a job's ranks (learned from earlier
 * runs) and an allocation of nnodes nodes with per_node task slots each,
 * assign ranks to nodes so that fewer bytes cross between nodes.  The
 * existing mapper does the work on a node-level topology: nodes are
 * packages with one PU per task slot ("pack:NODES core:SLOTS pu:1"), so
 * every pair inside a node is at one distance and every pair across nodes
 * at another, and the mapping cost is (bytes inside) * d_core + (bytes
 * between) * d_pack: minimising it is minimising the bytes between nodes
 * (docs/mapping.md "Ranks onto nodes").
 *
 * The rule is "never more": the learned assignment is kept only when its
 * predicted bytes between nodes are strictly fewer than block
 * distribution's (rank r on node r / per_node, what Slurm does by
 * default); otherwise the answer is block.
 */
#ifndef COMMAP_PLACE_NODES_H
#define COMMAP_PLACE_NODES_H

#include "commap/error.h"
#include "commap/matrix.h"

/* Largest job handled (ranks = nnodes * per_node): the mapper's worst
 * case stays in milliseconds (docs/PERFORMANCE.md). */
#define CM_PLACE_NODES_MAX_RANKS 4096

struct cm_place_nodes_result {
	int learned;		/* 1: node_of_rank differs from block */
	double between_block;	/* predicted bytes between nodes, block */
	double between_learned;	/* ... the mapper's assignment */
	double total;		/* all bytes of the matrix */
};

/* Bytes of m between ranks on different nodes under node_of_rank (n =
 * the matrix's ranks). */
double cm_place_nodes_between(const struct cm_matrix *m,
			      const int *node_of_rank);

/* Assign the cm_matrix_nthreads(m) ranks (== nnodes * per_node) to nodes
 * 0..nnodes-1, per_node ranks on each, into node_of_rank; res (may be
 * NULL) gets the figures.  Among equal assignments the one that leaves
 * most ranks on their block node is chosen (nodes relabelled).  0 on
 * success (block when it is not strictly worse); -1 with errno/err:
 * EINVAL bad sizes, E2BIG more than CM_PLACE_NODES_MAX_RANKS, ENOMEM. */
int cm_place_nodes(const struct cm_matrix *m, int nnodes, int per_node,
		   int *node_of_rank, struct cm_place_nodes_result *res,
		   struct cm_error *err);

#endif
