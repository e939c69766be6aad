/* topology.c: the machine as a compact tree of sharing levels (see
 * commap/topology.h and docs/topology.md).
 *
 * The hwloc topology is kept whole (never restricted); the tree, the PU
 * numbering and the distance tables are rebuilt from it and the allowed
 * cpuset whenever the topology is loaded or restricted.
 */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* ---------------------------------------------------------------------- */
/* Level kinds */

int cm_level_weight(enum cm_level_kind kind)
{
	static const int weights[CM_LEVEL_COUNT] = {
		[CM_LEVEL_PU] = 0,   [CM_LEVEL_CORE] = 1, [CM_LEVEL_L1] = 1,
		[CM_LEVEL_L2] = 2,   [CM_LEVEL_L3] = 3,   [CM_LEVEL_NUMA] = 4,
		[CM_LEVEL_PACKAGE] = 5, [CM_LEVEL_MACHINE] = 6,
	};

	if ((int)kind < 0 || kind >= CM_LEVEL_COUNT)
		return -1;
	return weights[kind];
}

const char *cm_level_name(enum cm_level_kind kind)
{
	static const char *const names[CM_LEVEL_COUNT] = {
		[CM_LEVEL_PU] = "PU",	    [CM_LEVEL_CORE] = "Core",
		[CM_LEVEL_L1] = "L1",	    [CM_LEVEL_L2] = "L2",
		[CM_LEVEL_L3] = "L3",	    [CM_LEVEL_NUMA] = "NUMANode",
		[CM_LEVEL_PACKAGE] = "Package", [CM_LEVEL_MACHINE] = "Machine",
	};

	if ((int)kind < 0 || kind >= CM_LEVEL_COUNT)
		return "?";
	return names[kind];
}

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

/* p with room for need elements (reallocated, *cap updated), or NULL with
 * p untouched. */
static void *grow(void *p, int *cap, int need, size_t size)
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

static int new_tnode(struct builder *b, int parent, unsigned mask, int npus)
{
	struct tnode *n = grow(b->t, &b->cap, b->nt + 1, sizeof(*b->t));

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
	pu_os = grow(b->pu_os, &b->pu_cap, b->npus + 1, sizeof(*pu_os));
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

static void tree_free(struct cm_tree *tr)
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
static int tree_build(struct cm_tree *tr, hwloc_topology_t hw,
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
		tree_free(tr);
	hwloc_bitmap_free(b.tmp);
	free(b.t);
	free(b.pu_os);
	return rv;
}

/* ---------------------------------------------------------------------- */
/* Loading */

/* Load an initialised hwloc topology and build the whole-machine tree. */
static int finish_load(struct cm_topo **out, hwloc_topology_t hw,
		       const char *what, struct cm_error *err)
{
	struct cm_topo *topo;
	hwloc_bitmap_t allowed;

	if (hwloc_topology_load(hw) < 0) {
		int e = errno ? errno : EINVAL;

		hwloc_topology_destroy(hw);
		return cm_errorf(err, e == ENOMEM ? ENOMEM : EINVAL,
				 "hwloc cannot load %s", what);
	}
	topo = calloc(1, sizeof(*topo));
	allowed = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(hw));
	if (!topo || !allowed) {
		free(topo);
		hwloc_bitmap_free(allowed);
		hwloc_topology_destroy(hw);
		return cm_errorf(err, ENOMEM, "out of memory loading %s", what);
	}
	topo->hw = hw;
	if (tree_build(&topo->tree, hw, allowed, err) < 0) {
		int e = errno;

		hwloc_topology_destroy(hw);
		free(topo);
		errno = e;
		return -1;
	}
	*out = topo;
	return 0;
}

static int init_hw(hwloc_topology_t *hw, struct cm_error *err)
{
	if (hwloc_topology_init(hw) < 0)
		return cm_errorf(err, ENOMEM, "hwloc_topology_init failed");
	return 0;
}

int cm_topo_load_this(struct cm_topo **out, struct cm_error *err)
{
	hwloc_topology_t hw;

	if (init_hw(&hw, err) < 0)
		return -1;
	return finish_load(out, hw, "this machine's topology", err);
}

int cm_topo_load_synthetic(struct cm_topo **out, const char *spec,
			   struct cm_error *err)
{
	hwloc_topology_t hw;
	char what[160];

	if (!spec || !*spec)
		return cm_errorf(err, EINVAL, "empty synthetic topology");
	if (init_hw(&hw, err) < 0)
		return -1;
	if (hwloc_topology_set_synthetic(hw, spec) < 0) {
		hwloc_topology_destroy(hw);
		return cm_errorf(err, EINVAL,
				 "hwloc rejects the synthetic topology \"%s\"",
				 spec);
	}
	snprintf(what, sizeof(what), "synthetic topology \"%s\"", spec);
	return finish_load(out, hw, what, err);
}

int cm_topo_load_xml(struct cm_topo **out, const char *path,
		     struct cm_error *err)
{
	hwloc_topology_t hw;
	struct stat st;
	char what[160];

	if (!path || !*path)
		return cm_errorf(err, EINVAL, "empty XML topology file name");
	if (stat(path, &st) < 0)
		return cm_errorf(err, errno, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return cm_errorf(err, EISDIR, "%s: is a directory", path);
	if (init_hw(&hw, err) < 0)
		return -1;
	if (hwloc_topology_set_xml(hw, path) < 0) {
		int e = errno;

		hwloc_topology_destroy(hw);
		return cm_errorf(err, e == ENOENT ? ENOENT : EINVAL,
				 "hwloc cannot read the XML topology %s",
				 path);
	}
	snprintf(what, sizeof(what), "the XML topology %s", path);
	return finish_load(out, hw, what, err);
}

void cm_topo_free(struct cm_topo *topo)
{
	if (!topo)
		return;
	tree_free(&topo->tree);
	hwloc_topology_destroy(topo->hw);
	free(topo);
}

/* ---------------------------------------------------------------------- */
/* Restriction */

struct cpu_range {
	long lo, hi;
};

static int parse_index(const char **p, long *v)
{
	const char *s = *p;
	long x = 0;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		x = x * 10 + (*s - '0');
		if (x > INT_MAX)
			return -1;
	}
	*p = s;
	*v = x;
	return 0;
}

/* One element "N" or "N-M" ending at ',' or the end of the string. */
static int parse_element(const char **p, struct cpu_range *r)
{
	const char *s = *p;

	if (parse_index(&s, &r->lo) < 0)
		return -1;
	r->hi = r->lo;
	if (*s == '-') {
		s++;
		if (parse_index(&s, &r->hi) < 0 || r->hi < r->lo)
			return -1;
	}
	if (*s != ',' && *s != '\0')
		return -1;
	*p = s;
	return 0;
}

/* Parse a Linux cpu list into ranges (malloc'd, *n of them). */
static int parse_cpulist(const char *list, struct cpu_range **out, int *n,
			 struct cm_error *err)
{
	struct cpu_range *r = NULL;
	const char *s = list;
	int cap = 0;

	*n = 0;
	if (!*s)
		return cm_errorf(err, EINVAL, "empty cpu list");
	for (;;) {
		const char *start = s;
		struct cpu_range *q = grow(r, &cap, *n + 1, sizeof(*r));

		if (!q) {
			free(r);
			return cm_errorf(err, ENOMEM, "out of memory");
		}
		r = q;
		if (parse_element(&s, &r[*n]) < 0) {
			int len = (int)strcspn(start, ",");

			free(r);
			return cm_errorf(err, EINVAL,
					 "bad cpu list element \"%.*s\" in "
					 "\"%s\"", len, start, list);
		}
		(*n)++;
		if (!*s)
			break;
		s++;		/* ',' */
	}
	*out = r;
	return 0;
}

/* Append "lo" or "lo-hi" to a comma list in buf. */
static void append_range(char *buf, size_t size, long lo, long hi)
{
	size_t len = strlen(buf);

	if (len + 1 >= size)
		return;
	if (lo == hi)
		snprintf(buf + len, size - len, "%s%ld", len ? "," : "", lo);
	else
		snprintf(buf + len, size - len, "%s%ld-%ld", len ? "," : "",
			 lo, hi);
}

/* The requested OS indices (only those in the machine's index range go in
 * want); indices not in the machine are listed in missing. */
static int requested_set(hwloc_topology_t hw, const struct cpu_range *r,
			 int n, hwloc_bitmap_t want, char *missing,
			 size_t size)
{
	hwloc_const_cpuset_t machine = hwloc_topology_get_topology_cpuset(hw);
	long last = hwloc_bitmap_last(machine);
	hwloc_bitmap_t absent = hwloc_bitmap_alloc();
	char *text = NULL;
	int i;

	if (!absent)
		return -1;
	missing[0] = '\0';
	for (i = 0; i < n; i++) {
		long hi = r[i].hi < last ? r[i].hi : last;

		if (r[i].lo <= hi)
			hwloc_bitmap_set_range(want, (unsigned)r[i].lo,
					       (int)hi);
	}
	hwloc_bitmap_andnot(absent, want, machine);
	hwloc_bitmap_and(want, want, machine);
	if (!hwloc_bitmap_iszero(absent) &&
	    hwloc_bitmap_list_asprintf(&text, absent) >= 0) {
		snprintf(missing, size, "%s", text);
		free(text);
	}
	hwloc_bitmap_free(absent);
	for (i = 0; i < n; i++)
		if (r[i].hi > last)
			append_range(missing, size,
				     r[i].lo > last ? r[i].lo : last + 1,
				     r[i].hi);
	return 0;
}

int cm_topo_restrict(struct cm_topo *topo, const char *cpulist,
		     struct cm_error *err)
{
	struct cpu_range *r = NULL;
	hwloc_bitmap_t want;
	struct cm_tree tr;
	char missing[128];
	int n;

	if (!topo || !cpulist)
		return cm_errorf(err, EINVAL, "no topology or cpu list");
	if (parse_cpulist(cpulist, &r, &n, err) < 0)
		return -1;
	want = hwloc_bitmap_alloc();
	if (!want || requested_set(topo->hw, r, n, want, missing,
				   sizeof(missing)) < 0) {
		free(r);
		hwloc_bitmap_free(want);
		return cm_errorf(err, ENOMEM, "out of memory");
	}
	free(r);
	if (missing[0]) {
		hwloc_bitmap_free(want);
		return cm_errorf(err, EINVAL, "cpu list \"%s\": OS indices "
				 "%s are not in the machine", cpulist, missing);
	}
	hwloc_bitmap_and(want, want, topo->tree.allowed);
	if (hwloc_bitmap_iszero(want)) {
		hwloc_bitmap_free(want);
		return cm_errorf(err, EINVAL,
				 "cpu list \"%s\" has no allowed PU", cpulist);
	}
	if (tree_build(&tr, topo->hw, want, err) < 0)
		return -1;
	tree_free(&topo->tree);
	topo->tree = tr;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Queries */

int cm_topo_npus(const struct cm_topo *topo)
{
	return topo->tree.npus;
}

int cm_topo_pu_os_index(const struct cm_topo *topo, int pu)
{
	if (pu < 0 || pu >= topo->tree.npus)
		return -1;
	return topo->tree.pu_os[pu];
}

int cm_topo_pu_by_os_index(const struct cm_topo *topo, int os_index)
{
	if (os_index < 0 || os_index >= topo->tree.nos)
		return -1;
	return topo->tree.os_pu[os_index];
}

int cm_topo_lca(const struct cm_topo *topo, int pu_a, int pu_b)
{
	const struct cm_tree *tr = &topo->tree;
	const int *a, *b;
	int d;

	if (pu_a < 0 || pu_a >= tr->npus || pu_b < 0 || pu_b >= tr->npus)
		return -1;
	a = tr->anc + (size_t)pu_a * (tr->depth + 1);
	if (pu_a == pu_b)
		return a[tr->depth];
	b = tr->anc + (size_t)pu_b * (tr->depth + 1);
	/* Chains agree down to the common ancestor and differ below it;
	 * two different leaves differ at the last depth at the latest. */
	for (d = 1; a[d] == b[d]; d++)
		;
	return a[d - 1];
}

int cm_topo_distance(const struct cm_topo *topo, int pu_a, int pu_b)
{
	int lca;

	if (pu_a == pu_b)
		return pu_a >= 0 && pu_a < topo->tree.npus ? 0 : -1;
	lca = cm_topo_lca(topo, pu_a, pu_b);
	return lca < 0 ? -1 : topo->tree.weight[lca];
}

int cm_topo_nnodes(const struct cm_topo *topo)
{
	return topo->tree.nnodes;
}

const struct cm_topo_node *cm_topo_node(const struct cm_topo *topo, int i)
{
	if (i < 0 || i >= topo->tree.nnodes)
		return NULL;
	return &topo->tree.nodes[i];
}

int cm_topo_leaf_of_pu(const struct cm_topo *topo, int pu)
{
	if (pu < 0 || pu >= topo->tree.npus)
		return -1;
	return topo->tree.leaf[pu];
}

int cm_topo_depth(const struct cm_topo *topo)
{
	return topo->tree.depth;
}

int cm_topo_pu_ancestor(const struct cm_topo *topo, int pu, int depth)
{
	const struct cm_tree *tr = &topo->tree;

	if (pu < 0 || pu >= tr->npus || depth < 0)
		return -1;
	if (depth > tr->depth)
		depth = tr->depth;
	return tr->anc[(size_t)pu * (tr->depth + 1) + depth];
}

unsigned cm_topo_node_kinds(const struct cm_topo *topo, int i)
{
	if (i < 0 || i >= topo->tree.nnodes)
		return 0;
	return topo->tree.kinds[i];
}

char *cm_topo_cpulist(const struct cm_topo *topo)
{
	char *s = NULL;

	if (hwloc_bitmap_list_asprintf(&s, topo->tree.allowed) < 0)
		return NULL;
	return s;
}

char *cm_topo_synthetic(const struct cm_topo *topo)
{
	size_t size = 256;

	for (;;) {
		char *buf = malloc(size);
		int n;

		if (!buf)
			return NULL;
		/* Levels and arities only: cache sizes and memory amounts
		 * make the string long and say nothing about sharing. */
		n = hwloc_topology_export_synthetic(topo->hw, buf, size,
			HWLOC_TOPOLOGY_EXPORT_SYNTHETIC_FLAG_NO_ATTRS);
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if ((size_t)n < size)
			return buf;
		free(buf);
		size = (size_t)n + 1;
	}
}

void *cm_topo_hwloc(const struct cm_topo *topo)
{
	return topo->hw;
}
