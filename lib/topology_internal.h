/* topology_internal.h: what the parts of the topology (topology.c,
 * topology_tree.c, topology_restrict.c) share: the hwloc topology and the
 * tree derived from it.  Users of the library see commap/topology.h. */
#ifndef COMMAP_LIB_TOPOLOGY_INTERNAL_H
#define COMMAP_LIB_TOPOLOGY_INTERNAL_H

#include <stdlib.h>

#include <hwloc.h>

#include "commap/topology.h"

#define KIND_BIT(k) (1u << (k))

/* Everything derived from (hwloc topology, allowed cpuset).  Rebuilt as a
 * whole so that a failed restriction leaves the old one untouched. */
struct cm_tree {
	hwloc_bitmap_t allowed;		/* allowed PUs, OS indices */
	struct cm_topo_node *nodes;	/* breadth-first, root first */
	unsigned *kinds;		/* per node: every kind folded in */
	int *weight;		/* per node: cm_level_weight(kind) */
	int nnodes;
	int npus;
	int *pu_os;			/* PU index -> OS index */
	int *leaf;			/* PU index -> node index */
	int *os_pu;			/* OS index -> PU index or -1 */
	int nos;			/* length of os_pu */
	int depth;			/* deepest node depth */
	int *anc;	/* npus x (depth + 1): ancestor node at each depth;
			 * depths past a leaf repeat the leaf */
};

struct cm_topo {
	hwloc_topology_t hw;
	struct cm_tree tree;
};

/* Build the tree of hw restricted to allowed (which it takes over, and
 * frees on failure).  0, or -1 with err (EINVAL no allowed PU, ENOMEM). */
int cm_tree_build(struct cm_tree *tr, hwloc_topology_t hw,
		  hwloc_bitmap_t allowed, struct cm_error *err);

/* Free what the tree holds and zero it. */
void cm_tree_free(struct cm_tree *tr);

/* p with room for need elements (reallocated, *cap updated), or NULL with
 * p untouched. */
static inline void *cm_topo_grow(void *p, int *cap, int need,
				 size_t size)
{
	void *q;
	int ncap;

	if (need <= *cap)
		return p;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	q = realloc(p, (size_t)ncap * size);
	if (q)
		*cap = ncap;
	return q;
}

#endif
