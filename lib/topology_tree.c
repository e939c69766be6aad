/* topology_tree.c: the compact tree of sharing levels built from an
 * hwloc topology and an allowed cpuset: which sharing kinds each hwloc
 * object stands for, a preorder list of nodes renumbered breadth-first,
 * the PU numbering and the ancestor tables (commap/topology.h).
 */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "commap/topology.h"
#include "topology_internal.h"

/* ---------------------------------------------------------------------- */
/* Which sharing kinds an hwloc object stands for */

/* In hwloc 2 NUMA nodes are memory children (possibly below a memory-side
 * cache); the normal object holding one with the same cpuset is the NUMA
 * level of the tree. */
static int holds_numa(const struct hwloc_obj *mem,
		      hwloc_const_cpuset_t cpuset)
{
	for (; mem; mem = mem->next_sibling) {
		if (mem->type == HWLOC_OBJ_NUMANODE &&
		    hwloc_bitmap_isequal(mem->cpuset, cpuset))
			return 1;
		if (holds_numa(mem->memory_first_child, cpuset))
			return 1;
	}
	return 0;
}

static int is_data_cache(const struct hwloc_obj *obj)
{
	return obj->attr &&
	       obj->attr->cache.type != HWLOC_OBJ_CACHE_INSTRUCTION;
}

/* Bit mask of the kinds obj stands for; 0 for objects that are not a
 * sharing level (Group, Die, L1i, L4, ...): their children are walked as
 * if they hung from the object's parent. */
static unsigned object_kinds(const struct hwloc_obj *obj)
{
	unsigned k = 0;

	switch (obj->type) {
	case HWLOC_OBJ_MACHINE:
		k = KIND_BIT(CM_LEVEL_MACHINE);
		break;
	case HWLOC_OBJ_PACKAGE:
		k = KIND_BIT(CM_LEVEL_PACKAGE);
		break;
	case HWLOC_OBJ_L3CACHE:
		k = is_data_cache(obj) ? KIND_BIT(CM_LEVEL_L3) : 0;
		break;
	case HWLOC_OBJ_L2CACHE:
		k = is_data_cache(obj) ? KIND_BIT(CM_LEVEL_L2) : 0;
		break;
	case HWLOC_OBJ_L1CACHE:
		k = is_data_cache(obj) ? KIND_BIT(CM_LEVEL_L1) : 0;
		break;
	case HWLOC_OBJ_CORE:
		k = KIND_BIT(CM_LEVEL_CORE);
		break;
	case HWLOC_OBJ_PU:
		k = KIND_BIT(CM_LEVEL_PU);
		break;
	default:
		break;
	}
	if (obj->cpuset && holds_numa(obj->memory_first_child, obj->cpuset))
		k |= KIND_BIT(CM_LEVEL_NUMA);
	return k;
}

static int lowest_bit(unsigned m)
{
	return __builtin_ctz(m);
}

static int highest_bit(unsigned m)
{
	return (int)(sizeof(m) * CHAR_BIT) - 1 - __builtin_clz(m);
}

/* The kind of a node that folds the kinds in mask and has the kinds in
 * below somewhere under it: the deepest folded kind that is still above
 * everything below, so that kinds (and weights) strictly grow towards the
 * root.  E.g. a machine-wide NUMA node over two packages is the machine.
 * -1 when no folded kind is above everything below (an L3 holding several
 * NUMA nodes): that node is dropped from the tree. */
static int node_kind(unsigned mask, unsigned below)
{
	unsigned above = mask;

	if (below)
		above &= ~((KIND_BIT(highest_bit(below)) << 1) - 1);
	return above ? lowest_bit(above) : -1;
}

/* ---------------------------------------------------------------------- */
/* Building the tree: first a preorder list of nodes with sibling links,
 * then renumbered breadth-first. */

struct tnode {
	unsigned mask;		/* kinds folded into this node */
	int parent;
	int first_child, next_sibling;
	int last_child;		/* only kept up to date while adding */
	int npus;		/* allowed PUs below */
	int pu;			/* PU index for leaves */
	int kind;		/* enum cm_level_kind, -1 if dropped */
};

struct builder {
	hwloc_const_bitmap_t allowed;
	hwloc_bitmap_t tmp;
	struct tnode *t;
	int nt, cap;
	int *pu_os;
	int npus, pu_cap;
};

static int new_tnode(struct builder *b, int parent, unsigned mask, int npus)
{
	struct tnode *n = cm_topo_grow(b->t, &b->cap, b->nt + 1,
				       sizeof(*b->t));

	if (!n)
		return -1;
	b->t = n;
	n = &b->t[b->nt];
	n->mask = mask;
	n->parent = parent;
	n->first_child = n->last_child = n->next_sibling = -1;
	n->npus = npus;
	n->pu = -1;
	if (parent >= 0) {
		struct tnode *p = &b->t[parent];

		if (p->last_child >= 0)
			b->t[p->last_child].next_sibling = b->nt;
		else
			p->first_child = b->nt;
		p->last_child = b->nt;
	}
	return b->nt++;
}

static int add_pu(struct builder *b, int node, unsigned os_index)
{
	int *pu_os;

	if (b->t[node].pu >= 0)
		return 0;
	pu_os = cm_topo_grow(b->pu_os, &b->pu_cap, b->npus + 1,
			     sizeof(*pu_os));
	if (!pu_os)
		return -1;
	b->pu_os = pu_os;
	b->pu_os[b->npus] = (int)os_index;
	b->t[node].pu = b->npus++;
	return 0;
}

/* Walk obj (whose allowed PUs are below tree node cur, or cur == -1 for
 * the root).  An object with the same allowed PUs as cur folds into cur;
 * hwloc's child order gives PU indices in logical order. */
static int add_object(struct builder *b, hwloc_obj_t obj, int cur)
{
	unsigned mask = object_kinds(obj);
	int node = cur, n;
	unsigned i;

	if (!obj->cpuset)
		return 0;
	hwloc_bitmap_and(b->tmp, obj->cpuset, b->allowed);
	n = hwloc_bitmap_weight(b->tmp);
	if (n <= 0)
		return 0;
	if (cur < 0 || (mask && n != b->t[cur].npus)) {
		node = new_tnode(b, cur, mask, n);
		if (node < 0)
			return -1;
	} else {
		b->t[cur].mask |= mask;
	}
	if (obj->type == HWLOC_OBJ_PU && add_pu(b, node, obj->os_index) < 0)
		return -1;
	for (i = 0; i < obj->arity; i++)
		if (add_object(b, obj->children[i], node) < 0)
			return -1;
	return 0;
}

void cm_tree_free(struct cm_tree *tr)
{
	hwloc_bitmap_free(tr->allowed);
	free(tr->nodes);
	free(tr->kinds);
	free(tr->weight);
	free(tr->pu_os);
	free(tr->leaf);
	free(tr->os_pu);
	free(tr->anc);
	memset(tr, 0, sizeof(*tr));
}

/* Breadth-first renumbering: newidx[t] for every preorder node t. */
static int bfs_order(const struct builder *b, int *order, int *newidx)
{
	int head = 0, tail = 0, c;

	order[tail++] = 0;
	newidx[0] = 0;
	while (head < tail) {
		int t = order[head++];

		c = b->t[t].first_child;
		for (; c >= 0; c = b->t[c].next_sibling) {
			newidx[c] = tail;
			order[tail++] = c;
		}
	}
	return tail;
}

/* Each node's kind from the kinds folded into it and those below it
 * (children have larger indices than parents: walk backwards). */
static int assign_kinds(struct builder *b)
{
	unsigned *below = calloc((size_t)b->nt, sizeof(*below));
	int t;

	if (!below)
		return -1;
	for (t = b->nt - 1; t >= 0; t--) {
		struct tnode *n = &b->t[t];

		n->kind = n->first_child < 0 ? CM_LEVEL_PU :
			node_kind(n->mask, below[t]);
		if (n->parent >= 0)
			below[n->parent] |= below[t] | n->mask;
	}
	/* The root is hwloc's Machine: it always has a kind, but keep it
	 * even for a strange XML. */
	if (b->t[0].kind < 0)
		b->t[0].kind = highest_bit(b->t[0].mask);
	free(below);
	return 0;
}

/* Replace dropped node t by its children in its parent's child list. */
static void splice_out(struct builder *b, int t)
{
	struct tnode *n = &b->t[t], *p = &b->t[n->parent];
	int *link = &p->first_child, c, last = -1;

	while (*link != t)
		link = &b->t[*link].next_sibling;
	for (c = n->first_child; c >= 0; c = b->t[c].next_sibling) {
		b->t[c].parent = n->parent;
		last = c;
	}
	if (last < 0) {
		*link = n->next_sibling;
	} else {
		*link = n->first_child;
		b->t[last].next_sibling = n->next_sibling;
	}
	n->first_child = n->last_child = n->next_sibling = -1;
}

/* Drop nodes without a kind, parents first so that a dropped node's
 * children move to the nearest kept ancestor. */
static void drop_unordered(struct builder *b)
{
	int t;

	for (t = 1; t < b->nt; t++)
		if (b->t[t].kind < 0)
			splice_out(b, t);
}

/* First PU below every node, children before parents. */
static void first_pus(const struct builder *b, int *first_pu)
{
	int t;

	for (t = b->nt - 1; t >= 0; t--) {
		const struct tnode *n = &b->t[t];

		first_pu[t] = n->first_child >= 0 ?
			first_pu[n->first_child] : n->pu;
	}
}

static int fill_nodes(struct cm_tree *tr, struct builder *b)
{
	int *order = malloc((size_t)b->nt * sizeof(*order));
	int *newidx = malloc((size_t)b->nt * sizeof(*newidx));
	int *first_pu = malloc((size_t)b->nt * sizeof(*first_pu));
	int i, rv = -1;

	tr->nodes = calloc((size_t)b->nt, sizeof(*tr->nodes));
	tr->kinds = calloc((size_t)b->nt, sizeof(*tr->kinds));
	tr->weight = calloc((size_t)b->nt, sizeof(*tr->weight));
	if (!order || !newidx || !first_pu || !tr->nodes || !tr->kinds ||
	    !tr->weight || assign_kinds(b) < 0)
		goto out;
	drop_unordered(b);
	first_pus(b, first_pu);
	tr->nnodes = bfs_order(b, order, newidx);
	for (i = 0; i < tr->nnodes; i++) {
		const struct tnode *n = &b->t[order[i]];
		struct cm_topo_node *d = &tr->nodes[i];

		d->kind = (enum cm_level_kind)n->kind;
		d->parent = n->parent >= 0 ? newidx[n->parent] : -1;
		d->depth = d->parent >= 0 ? tr->nodes[d->parent].depth + 1 : 0;
		d->first_child = n->first_child >= 0 ?
			newidx[n->first_child] : -1;
		d->nchildren = 0;
		d->first_pu = first_pu[order[i]];
		d->npus = n->npus;
		d->pu = n->first_child < 0 ? n->pu : -1;
		if (d->parent >= 0)
			tr->nodes[d->parent].nchildren++;
		tr->kinds[i] = n->mask;
		tr->weight[i] = cm_level_weight(d->kind);
		if (d->depth > tr->depth)
			tr->depth = d->depth;
	}
	rv = 0;
out:
	free(order);
	free(newidx);
	free(first_pu);
	return rv;
}

/* PU lookups and each PU's ancestor chain for O(depth) distances. */
static int fill_pu_tables(struct cm_tree *tr, const int *pu_os)
{
	int stride = tr->depth + 1, i, d, maxos = 0;

	tr->pu_os = malloc((size_t)tr->npus * sizeof(*tr->pu_os));
	tr->leaf = malloc((size_t)tr->npus * sizeof(*tr->leaf));
	tr->anc = malloc((size_t)tr->npus * stride * sizeof(*tr->anc));
	if (!tr->pu_os || !tr->leaf || !tr->anc)
		return -1;
	memcpy(tr->pu_os, pu_os, (size_t)tr->npus * sizeof(*pu_os));
	for (i = 0; i < tr->npus; i++)
		if (pu_os[i] > maxos)
			maxos = pu_os[i];
	tr->nos = maxos + 1;
	tr->os_pu = malloc((size_t)tr->nos * sizeof(*tr->os_pu));
	if (!tr->os_pu)
		return -1;
	for (i = 0; i < tr->nos; i++)
		tr->os_pu[i] = -1;
	for (i = 0; i < tr->npus; i++)
		tr->os_pu[pu_os[i]] = i;
	for (i = 0; i < tr->nnodes; i++) {
		const struct cm_topo_node *n = &tr->nodes[i];
		int *chain, j;

		if (n->pu < 0)
			continue;
		tr->leaf[n->pu] = i;
		chain = tr->anc + (size_t)n->pu * stride;
		for (d = n->depth + 1; d < stride; d++)
			chain[d] = i;
		for (j = i; j >= 0; j = tr->nodes[j].parent)
			chain[tr->nodes[j].depth] = j;
	}
	return 0;
}

/* Build the tree of hw restricted to allowed (which it takes over). */
int cm_tree_build(struct cm_tree *tr, hwloc_topology_t hw,
		  hwloc_bitmap_t allowed, struct cm_error *err)
{
	struct builder b = { .allowed = allowed };
	int rv = -1;

	memset(tr, 0, sizeof(*tr));
	tr->allowed = allowed;
	b.tmp = hwloc_bitmap_alloc();
	if (!b.tmp || add_object(&b, hwloc_get_root_obj(hw), -1) < 0)
		goto nomem;
	if (b.npus == 0) {
		rv = cm_errorf(err, EINVAL, "topology has no allowed PU");
		goto out;
	}
	tr->npus = b.npus;
	if (fill_nodes(tr, &b) < 0 || fill_pu_tables(tr, b.pu_os) < 0)
		goto nomem;
	rv = 0;
	goto out;
nomem:
	rv = cm_errorf(err, ENOMEM, "out of memory building the topology tree");
out:
	if (rv < 0)
		cm_tree_free(tr);
	hwloc_bitmap_free(b.tmp);
	free(b.t);
	free(b.pu_os);
	return rv;
}
