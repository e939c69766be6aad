/* commap/topology.h: the machine as a tree of sharing levels.
 *
 * A cm_topo is loaded from this machine, an hwloc synthetic description
 * ("pack:2 numa:2 l3:2 core:8 pu:2") or an hwloc XML file, and may be
 * restricted to a cpuset (the PUs Slurm gave a step; holes allowed).
 *
 * After loading, the library keeps a compact tree holding only the levels at
 * which PUs share something: machine, package, NUMA node, L3, L2, L1, core,
 * PU.  A level whose objects have the same PUs as their parent (e.g. an L2
 * per core) is folded into the deepest of them.  Only allowed PUs and the
 * nodes above them remain.
 *
 * PUs are numbered 0..npus-1 ("PU index") in hwloc's logical order among the
 * allowed PUs; cm_topo_pu_os_index() gives the OS number used for binding.
 *
 * Distance between two PUs is the weight of the kind of their lowest common
 * tree node (see enum cm_level_kind); a PU's distance to itself is 0.
 */
#ifndef COMMAP_TOPOLOGY_H
#define COMMAP_TOPOLOGY_H

#include "commap/error.h"

/* Kinds of sharing level, deepest first.  The distance weight of a kind is
 * cm_level_weight(kind):
 *   PU 0, CORE 1 (SMT siblings), L1 1, L2 2, L3 3, NUMA 4, PACKAGE 5,
 *   MACHINE 6.
 * Weights grow with how far apart the PUs are in the memory hierarchy.
 */
enum cm_level_kind {
	CM_LEVEL_PU = 0,
	CM_LEVEL_CORE,
	CM_LEVEL_L1,
	CM_LEVEL_L2,
	CM_LEVEL_L3,
	CM_LEVEL_NUMA,
	CM_LEVEL_PACKAGE,
	CM_LEVEL_MACHINE,
	CM_LEVEL_COUNT
};

struct cm_topo;

/* A node of the sharing tree.  Nodes are stored in one array; node 0 is the
 * root; a node's parent always has a smaller index than the node.
 * Children of a node are contiguous: first_child .. first_child +
 * nchildren - 1.  Leaves are PUs (kind CM_LEVEL_PU) and store their PU
 * index in pu; internal nodes have pu == -1.  first_pu .. first_pu + npus - 1
 * are the PU indices below a node (PU indices are in tree order). */
struct cm_topo_node {
	enum cm_level_kind kind;
	int depth;		/* root = 0 */
	int parent;		/* -1 for the root */
	int first_child;	/* -1 for a leaf */
	int nchildren;
	int first_pu;
	int npus;
	int pu;			/* PU index for leaves, -1 otherwise */
};

/* Load.  0 on success, -1 with errno and err on failure (EINVAL for a
 * description hwloc rejects, ENOENT for a missing XML file). */
int cm_topo_load_this(struct cm_topo **out, struct cm_error *err);
int cm_topo_load_synthetic(struct cm_topo **out, const char *spec,
			   struct cm_error *err);
int cm_topo_load_xml(struct cm_topo **out, const char *path,
		     struct cm_error *err);
void cm_topo_free(struct cm_topo *topo);

/* Restrict to the PUs whose OS indices are in cpulist ("0-3,8,10-11", the
 * Linux list format).  OS indices not in the machine are an EINVAL error
 * naming them; an empty intersection is EINVAL too.  PU indices are
 * renumbered; the tree is rebuilt. */
int cm_topo_restrict(struct cm_topo *topo, const char *cpulist,
		     struct cm_error *err);

/* Number of allowed PUs. */
int cm_topo_npus(const struct cm_topo *topo);
/* OS index of a PU index, or -1 if out of range. */
int cm_topo_pu_os_index(const struct cm_topo *topo, int pu);
/* PU index of an OS index, or -1 if that PU is not allowed. */
int cm_topo_pu_by_os_index(const struct cm_topo *topo, int os_index);

/* Distance between two PU indices (weights above); -1 on bad index. */
int cm_topo_distance(const struct cm_topo *topo, int pu_a, int pu_b);
int cm_level_weight(enum cm_level_kind kind);
const char *cm_level_name(enum cm_level_kind kind);

/* The sharing tree. */
int cm_topo_nnodes(const struct cm_topo *topo);
const struct cm_topo_node *cm_topo_node(const struct cm_topo *topo, int i);
/* Tree node of a PU index (a leaf). */
int cm_topo_leaf_of_pu(const struct cm_topo *topo, int pu);

/* The allowed PUs as a Linux cpu list ("0-3,8"), malloc'd; NULL on ENOMEM. */
char *cm_topo_cpulist(const struct cm_topo *topo);

/* The underlying hwloc topology (for binding and drawing).  Opaque here so
 * that users of the tree need not include hwloc.h. */
void *cm_topo_hwloc(const struct cm_topo *topo);

/* Additions for mappers (helper A).
 *
 * Notes on the functions above: cm_topo_hwloc() is the whole machine as
 * loaded, never restricted (bind with cm_topo_pu_os_index()); a second
 * cm_topo_restrict() narrows the first (intersection); a failed one leaves
 * the topology unchanged.  See docs/topology.md. */

/* Depth of the deepest tree node (root = 0); leaves may be shallower. */
int cm_topo_depth(const struct cm_topo *topo);
/* Node index of the ancestor at tree depth depth of PU pu (0 = the root);
 * a depth past the PU's leaf gives the leaf.  -1 on bad pu or depth < 0.
 * O(1). */
int cm_topo_pu_ancestor(const struct cm_topo *topo, int pu, int depth);
/* Node index of the lowest common ancestor of two PUs (the leaf itself
 * when pu_a == pu_b), -1 on bad index.  O(depth), no allocation;
 * cm_topo_distance() is the weight of its kind. */
int cm_topo_lca(const struct cm_topo *topo, int pu_a, int pu_b);
/* Every kind folded into node i, as a mask of (1u << kind) bits: a node
 * of kind CM_LEVEL_L3 that is also its package has the PACKAGE bit too.
 * 0 on bad index. */
unsigned cm_topo_node_kinds(const struct cm_topo *topo, int i);
/* hwloc's synthetic description of the whole (unrestricted) machine,
 * malloc'd; NULL with errno if hwloc cannot export it (EINVAL for an
 * asymmetric machine) or on ENOMEM. */
char *cm_topo_synthetic(const struct cm_topo *topo);

#endif
