/* test_topology.c: the sharing tree built from hwloc synthetic and XML
 * topologies and from this machine; restriction; distances; errors. */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hwloc.h>

#include "commap/topology.h"
#include "tap.h"

/* ---------------------------------------------------------------------- */
/* Helpers */

/* tests/data/topology and tests/integration/data live under the source
 * tree (TAP_SRCDIR_PATH). */
static const char *data_path(const char *rel)
{
	static char path[8192];

	TAP_SRCDIR_PATH(path, sizeof(path), rel);
	return path;
}

static struct cm_topo *load_syn(const char *spec)
{
	struct cm_topo *t = NULL;
	struct cm_error err = { { 0 } };

	if (cm_topo_load_synthetic(&t, spec, &err) < 0) {
		diag("loading \"%s\": %s", spec, err.text);
		return NULL;
	}
	return t;
}

static int count_kind(const struct cm_topo *t, enum cm_level_kind k)
{
	int i, n = 0;

	for (i = 0; i < cm_topo_nnodes(t); i++)
		n += cm_topo_node(t, i)->kind == k;
	return n;
}

static int pu_of_os(const struct cm_topo *t, int os)
{
	return cm_topo_pu_by_os_index(t, os);
}

/* Distance between two PUs given by OS index. */
static int dist_os(const struct cm_topo *t, int os_a, int os_b)
{
	return cm_topo_distance(t, pu_of_os(t, os_a), pu_of_os(t, os_b));
}

/* The lowest common ancestor found by walking parents, to check the
 * library's precomputed one against. */
static int slow_lca(const struct cm_topo *t, int a, int b)
{
	int x = cm_topo_leaf_of_pu(t, a), y = cm_topo_leaf_of_pu(t, b);

	while (x != y) {
		if (cm_topo_node(t, x)->depth >= cm_topo_node(t, y)->depth)
			x = cm_topo_node(t, x)->parent;
		else
			y = cm_topo_node(t, y)->parent;
	}
	return x;
}

/* Structural invariants of one node; returns a message or NULL. */
static const char *node_problem(const struct cm_topo *t, int i,
				int *next_child)
{
	const struct cm_topo_node *n = cm_topo_node(t, i);
	int c, sum = 0;

	if (i == 0 && (n->parent != -1 || n->depth != 0))
		return "root has a parent or depth != 0";
	if (i > 0) {
		const struct cm_topo_node *p = cm_topo_node(t, n->parent);

		if (n->parent < 0 || n->parent >= i)
			return "parent index not smaller than node index";
		if (n->depth != p->depth + 1)
			return "depth is not parent depth + 1";
		if (n->kind >= p->kind)
			return "kind not strictly below the parent's kind";
		if (n->depth < cm_topo_node(t, i - 1)->depth)
			return "nodes not in breadth-first (depth) order";
	}
	if (!(cm_topo_node_kinds(t, i) & (1u << n->kind)))
		return "node kinds mask lacks the node's kind";
	if (n->first_child < 0) {
		if (n->kind != CM_LEVEL_PU || n->npus != 1 || n->pu < 0 ||
		    n->pu != n->first_pu || n->nchildren != 0)
			return "leaf is not a single PU";
		if (cm_topo_leaf_of_pu(t, n->pu) != i)
			return "leaf_of_pu does not give the leaf back";
		return NULL;
	}
	if (n->pu != -1 || n->kind == CM_LEVEL_PU)
		return "internal node marked as a PU";
	if (n->nchildren < 2)
		return "internal node with fewer than 2 children (not folded)";
	if (n->first_child != *next_child)
		return "children blocks not contiguous in breadth-first order";
	*next_child += n->nchildren;
	for (c = n->first_child; c < n->first_child + n->nchildren; c++) {
		const struct cm_topo_node *ch = cm_topo_node(t, c);

		if (!ch || ch->parent != i)
			return "child does not point back to its parent";
		if (ch->first_pu != n->first_pu + sum)
			return "children's PU ranges not contiguous";
		sum += ch->npus;
	}
	if (sum != n->npus)
		return "children's PUs do not add up to the node's";
	return NULL;
}

/* Every generic invariant, for every node and PU pair (small trees). */
static void check_tree(const struct cm_topo *t, const char *name)
{
	int nn = cm_topo_nnodes(t), np = cm_topo_npus(t), i, a, b;
	int next_child = 1, leaves = 0, bad_pair = 0, maxdepth = 0;
	const char *why = NULL;

	for (i = 0; i < nn && !why; i++) {
		why = node_problem(t, i, &next_child);
		leaves += cm_topo_node(t, i)->first_child < 0;
		if (cm_topo_node(t, i)->depth > maxdepth)
			maxdepth = cm_topo_node(t, i)->depth;
	}
	if (!why && next_child != nn)
		why = "not every node is somebody's child";
	if (!why && (leaves != np || cm_topo_node(t, 0)->npus != np))
		why = "leaf count or root PU count != npus";
	if (!why && cm_topo_depth(t) != maxdepth)
		why = "cm_topo_depth is not the deepest node's depth";
	if (!ok(!why, "%s: tree invariants", name))
		diag("  node %d: %s", i - 1, why);
	for (a = 0; a < np && !bad_pair; a++) {
		int os = cm_topo_pu_os_index(t, a);

		if (pu_of_os(t, os) != a)
			bad_pair = 1;
		for (b = 0; b < np && b < 256 && !bad_pair; b++) {
			int l = slow_lca(t, a, b);
			int want = a == b ? 0 :
				cm_level_weight(cm_topo_node(t, l)->kind);

			if (cm_topo_lca(t, a, b) != l ||
			    cm_topo_distance(t, a, b) != want ||
			    cm_topo_distance(t, b, a) != want)
				bad_pair = 1;
			if (cm_topo_pu_ancestor(t, a, cm_topo_node(t, l)->depth)
			    != l)
				bad_pair = 1;
		}
	}
	if (!ok(!bad_pair, "%s: distance = weight of the LCA kind, "
		"symmetric; os index round trip", name))
		diag("  first bad PU %d", a - 1);
}

/* ---------------------------------------------------------------------- */
/* Synthetic shapes */

struct shape {
	const char *spec;
	int nnodes, npus, depth;
	int n[CM_LEVEL_COUNT];	/* nodes per kind */
};

static void test_shapes(void)
{
	static const struct shape shapes[] = {
		/* NUMA in a Group under the package */
		{ "pack:2 numa:2 l3:2 core:8 pu:2", 207, 128, 5,
		  { [CM_LEVEL_PU] = 128, [CM_LEVEL_CORE] = 64,
		    [CM_LEVEL_L3] = 8, [CM_LEVEL_NUMA] = 4,
		    [CM_LEVEL_PACKAGE] = 2, [CM_LEVEL_MACHINE] = 1 } },
		/* hwloc's long names */
		{ "Package:2 NUMANode:2 L3Cache:2 Core:8 PU:2", 207, 128, 5,
		  { [CM_LEVEL_PU] = 128, [CM_LEVEL_CORE] = 64,
		    [CM_LEVEL_L3] = 8, [CM_LEVEL_NUMA] = 4,
		    [CM_LEVEL_PACKAGE] = 2, [CM_LEVEL_MACHINE] = 1 } },
		/* machine-wide NUMA node: the root stays the machine */
		{ "pack:2 core:2 pu:2", 15, 8, 3,
		  { [CM_LEVEL_PU] = 8, [CM_LEVEL_CORE] = 4,
		    [CM_LEVEL_PACKAGE] = 2, [CM_LEVEL_MACHINE] = 1 } },
		/* L2 and L1 per core fold into the core; one package, one
		 * NUMA node and one L3 fold into the root (an L3) */
		{ "pack:1 l3:1 l2:4 l1:1 core:1 pu:2", 13, 8, 2,
		  { [CM_LEVEL_PU] = 8, [CM_LEVEL_CORE] = 4,
		    [CM_LEVEL_L3] = 1 } },
		/* no SMT: the core folds into the PU; L2 shared by 2 cores */
		{ "pack:2 l2:2 core:2 pu:1", 15, 8, 3,
		  { [CM_LEVEL_PU] = 8, [CM_LEVEL_L2] = 4,
		    [CM_LEVEL_PACKAGE] = 2, [CM_LEVEL_MACHINE] = 1 } },
		/* NUMA node attached to the package: package folds into it */
		{ "pack:2 [numa] l3:2 core:2 pu:1", 15, 8, 3,
		  { [CM_LEVEL_PU] = 8, [CM_LEVEL_L3] = 4,
		    [CM_LEVEL_NUMA] = 2, [CM_LEVEL_MACHINE] = 1 } },
		/* an L3 holding two NUMA nodes is out of order: dropped */
		{ "pack:2 l3:2 numa:2 core:2 pu:2", 59, 32, 4,
		  { [CM_LEVEL_PU] = 32, [CM_LEVEL_CORE] = 16,
		    [CM_LEVEL_NUMA] = 8, [CM_LEVEL_PACKAGE] = 2,
		    [CM_LEVEL_MACHINE] = 1 } },
		/* instruction caches are not a sharing level (the package
		 * and its NUMA node fold into a NUMA root) */
		{ "pack:1 l1i:2 core:2 pu:1", 5, 4, 1,
		  { [CM_LEVEL_PU] = 4, [CM_LEVEL_NUMA] = 1 } },
		/* a single PU: the root is the leaf */
		{ "pu:1", 1, 1, 0, { [CM_LEVEL_PU] = 1 } },
		/* Die and Group levels are walked through */
		{ "pack:2 die:2 group:2 core:2 pu:1", 19, 16, 2,
		  { [CM_LEVEL_PU] = 16, [CM_LEVEL_PACKAGE] = 2,
		    [CM_LEVEL_MACHINE] = 1 } },
	};
	size_t s;
	int k;

	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const struct shape *sh = &shapes[s];
		struct cm_topo *t = load_syn(sh->spec);
		int kinds_ok = 1;

		if (!ok(t != NULL, "load \"%s\"", sh->spec))
			continue;
		is_int(cm_topo_npus(t), sh->npus, "  npus");
		is_int(cm_topo_depth(t), sh->depth, "  depth");
		for (k = 0; k < CM_LEVEL_COUNT; k++)
			if (count_kind(t, k) != sh->n[k]) {
				diag("  %s: %d nodes, want %d",
				     cm_level_name(k), count_kind(t, k),
				     sh->n[k]);
				kinds_ok = 0;
			}
		ok(kinds_ok, "  node count per kind");
		is_int(cm_topo_nnodes(t), sh->nnodes, "  nnodes");
		check_tree(t, sh->spec);
		cm_topo_free(t);
	}
}

/* The distances named in the issue, on the big synthetic machine. */
static void test_distances(void)
{
	struct cm_topo *t = load_syn("pack:2 numa:2 l3:2 core:8 pu:2");
	int i, in_order = 1;

	if (!ok(t != NULL, "load pack:2 numa:2 l3:2 core:8 pu:2"))
		return;
	is_int(cm_topo_distance(t, 5, 5), 0, "same PU: 0");
	is_int(cm_topo_distance(t, 0, 1), 1, "SMT siblings: 1");
	is_int(cm_topo_distance(t, 0, 2), 3, "same L3, other core: 3");
	is_int(cm_topo_distance(t, 0, 15), 3, "last PU of the L3: 3");
	is_int(cm_topo_distance(t, 0, 16), 4, "same NUMA, other L3: 4");
	is_int(cm_topo_distance(t, 0, 32), 5, "same package, other NUMA: 5");
	is_int(cm_topo_distance(t, 0, 64), 6, "across packages: 6");
	is_int(cm_topo_distance(t, 127, 64), 5, "127-64 same package: 5");
	is_int(cm_topo_distance(t, -1, 0), -1, "bad PU index: -1");
	is_int(cm_topo_distance(t, 0, 128), -1, "PU index past the end: -1");
	is_int(cm_topo_distance(t, 128, 128), -1, "same bad PU: -1");
	is_int(cm_topo_lca(t, 0, 1), cm_topo_node(t, cm_topo_leaf_of_pu(t, 0))
	       ->parent, "lca of SMT siblings is their core");
	is_int(cm_topo_lca(t, 3, 3), cm_topo_leaf_of_pu(t, 3),
	       "lca of a PU with itself is its leaf");
	is_int(cm_topo_pu_ancestor(t, 70, 0), 0, "ancestor at depth 0: root");
	is_int(cm_topo_pu_ancestor(t, 70, 99), cm_topo_leaf_of_pu(t, 70),
	       "ancestor past the leaf: the leaf");
	is_int(cm_topo_pu_ancestor(t, 70, -1), -1, "ancestor at depth -1");
	is_int(cm_topo_pu_ancestor(t, 128, 1), -1, "ancestor of a bad PU");
	is_int(cm_topo_node(t, cm_topo_pu_ancestor(t, 70, 1))->kind,
	       CM_LEVEL_PACKAGE, "depth 1 is the package");
	is_int(cm_topo_pu_os_index(t, 128), -1, "os index of a bad PU");
	is_int(cm_topo_pu_by_os_index(t, 500), -1, "PU of a missing OS index");
	is_int(cm_topo_pu_by_os_index(t, -3), -1, "PU of a negative index");
	ok(cm_topo_node(t, -1) == NULL && cm_topo_node(t, 207) == NULL,
	   "cm_topo_node out of range is NULL");
	is_int(cm_topo_leaf_of_pu(t, -1), -1, "leaf of a bad PU");
	for (i = 0; i < 128; i++)
		in_order &= cm_topo_pu_os_index(t, i) == i;
	ok(in_order, "synthetic PUs: PU index == OS index (logical order)");
	is_int(cm_level_weight(CM_LEVEL_MACHINE), 6, "machine weight 6");
	is_int(cm_level_weight(CM_LEVEL_L1), 1, "L1 weight 1");
	is_int(cm_level_weight(CM_LEVEL_COUNT), -1, "bad kind weight -1");
	is_str(cm_level_name(CM_LEVEL_NUMA), "NUMANode", "NUMA name");
	is_str(cm_level_name(CM_LEVEL_COUNT), "?", "bad kind name");
	cm_topo_free(t);
}

/* Folded kinds are reported on the node that absorbed them. */
static void test_kinds_mask(void)
{
	struct cm_topo *t = load_syn("pack:1 l3:1 l2:4 l1:1 core:1 pu:2");
	unsigned want_root = (1u << CM_LEVEL_MACHINE) |
		(1u << CM_LEVEL_PACKAGE) | (1u << CM_LEVEL_NUMA) |
		(1u << CM_LEVEL_L3);
	unsigned want_core = (1u << CM_LEVEL_CORE) | (1u << CM_LEVEL_L1) |
		(1u << CM_LEVEL_L2);

	if (!ok(t != NULL, "load the folding example"))
		return;
	is_int(cm_topo_node(t, 0)->kind, CM_LEVEL_L3, "root folds into L3");
	is_int(cm_topo_node_kinds(t, 0), want_root,
	       "root kinds: machine, package, NUMA, L3");
	is_int(cm_topo_node(t, 1)->kind, CM_LEVEL_CORE, "L2+L1+core -> core");
	is_int(cm_topo_node_kinds(t, 1), want_core, "core kinds: L2 L1 core");
	is_int(cm_topo_node_kinds(t, 99), 0, "kinds of a bad node: 0");
	is_int(cm_topo_distance(t, 0, 2), 3, "other core: L3 distance 3");
	cm_topo_free(t);
}

/* ---------------------------------------------------------------------- */
/* Restriction */

static void test_restrict(void)
{
	struct cm_topo *t = load_syn("pack:2 numa:2 l3:2 core:8 pu:2");
	struct cm_error err = { { 0 } };
	char *list;
	int rc;

	if (!ok(t != NULL, "load for restrict"))
		return;
	rc = cm_topo_restrict(t, "0-3,8,10-11,64-65", &err);
	if (!ok(rc == 0, "restrict to 0-3,8,10-11,64-65"))
		diag("  %s", err.text);
	is_int(cm_topo_npus(t), 9, "9 PUs left");
	list = cm_topo_cpulist(t);
	is_str(list, "0-3,8,10-11,64-65", "cpulist gives them back");
	free(list);
	is_int(pu_of_os(t, 8), 4, "OS 8 is PU 4 (renumbered)");
	is_int(pu_of_os(t, 64), 7, "OS 64 is PU 7");
	is_int(cm_topo_pu_os_index(t, 8), 65, "PU 8 is OS 65");
	is_int(pu_of_os(t, 4), -1, "OS 4 is not allowed any more");
	is_int(pu_of_os(t, 9), -1, "OS 9 (the hole) is not allowed");
	/* package 0 keeps one NUMA node and one L3: they fold into an L3
	 * node; package 1 keeps one core: it folds into that core. */
	is_int(count_kind(t, CM_LEVEL_PACKAGE), 0, "no package node left");
	is_int(count_kind(t, CM_LEVEL_NUMA), 0, "no NUMA node left");
	is_int(count_kind(t, CM_LEVEL_L3), 1, "one L3 node");
	is_int(count_kind(t, CM_LEVEL_CORE), 4, "cores {0,1} {2,3} {10,11} "
	       "{64,65}; {8} is a bare PU");
	is_int(cm_topo_nnodes(t), 15, "1 root + L3 + 4 cores + 9 PUs");
	is_int(dist_os(t, 0, 1), 1, "OS 0-1 SMT: 1");
	is_int(dist_os(t, 0, 8), 3, "OS 0-8 same L3: 3");
	is_int(dist_os(t, 8, 10), 3, "OS 8-10 same L3: 3");
	is_int(dist_os(t, 64, 65), 1, "OS 64-65 SMT: 1");
	is_int(dist_os(t, 3, 65), 6, "OS 3-65 across packages: 6");
	check_tree(t, "restricted");

	/* a second restriction narrows the first */
	rc = cm_topo_restrict(t, "2-3,8,64-127", &err);
	if (!ok(rc == 0, "restrict again to 2-3,8,64-127"))
		diag("  %s", err.text);
	list = cm_topo_cpulist(t);
	is_str(list, "2-3,8,64-65", "second restriction intersects");
	free(list);
	is_int(cm_topo_npus(t), 5, "5 PUs");
	check_tree(t, "restricted twice");

	/* one PU: the tree is a single leaf */
	ok(cm_topo_restrict(t, "64", &err) == 0, "restrict to one PU");
	is_int(cm_topo_nnodes(t), 1, "  one node");
	is_int(cm_topo_node(t, 0)->kind, CM_LEVEL_PU, "  which is a PU");
	is_int(cm_topo_distance(t, 0, 0), 0, "  distance to itself 0");
	check_tree(t, "one PU");
	cm_topo_free(t);

	/* holes that split SMT pairs: leaves at different depths */
	t = load_syn("pack:2 core:2 pu:2");
	if (!t)
		return;
	ok(cm_topo_restrict(t, "0-2,5", &err) == 0, "restrict to 0-2,5");
	is_int(cm_topo_node(t, cm_topo_leaf_of_pu(t, 3))->depth, 1,
	       "lone PU 5 folds its core and package: depth 1");
	is_int(cm_topo_node(t, cm_topo_leaf_of_pu(t, 0))->depth, 3,
	       "PU 0 keeps package and core: depth 3");
	is_int(dist_os(t, 0, 2), 5, "OS 0-2 same package: 5");
	is_int(dist_os(t, 2, 5), 6, "OS 2-5 across packages: 6");
	check_tree(t, "uneven leaves");
	cm_topo_free(t);
}

/* Random subsets (with holes) of a few shapes: after every restriction
 * the tree keeps its invariants and holds exactly the chosen PUs, in OS
 * order (synthetic machines number PUs in logical order). */
static int pick_subset(int npus, unsigned *x, int *chosen, char *list,
		       size_t size)
{
	int os, n = 0;

	list[0] = '\0';
	for (os = 0; os < npus; os++) {
		*x = *x * 1103515245u + 12345u;
		chosen[os] = (*x >> 16) % 3 != 0;
		if (chosen[os])
			snprintf(list + strlen(list), size - strlen(list),
				 "%s%d", n++ ? "," : "", os);
	}
	return n;
}

static void test_random_restrictions(void)
{
	static const char *const specs[] = {
		"pack:2 numa:2 l3:2 core:2 pu:2",
		"pack:2 l3:2 numa:2 core:2 pu:2",
		"pack:2 [numa] l2:2 core:2 pu:2",
	};
	unsigned x = 12345;
	size_t s;
	int round;

	for (s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		for (round = 0; round < 8; round++) {
			struct cm_topo *t = load_syn(specs[s]);
			char list[256], name[320];
			int chosen[64], os, n, all, next = 0, same = 1;

			if (!t || cm_topo_npus(t) > 64)
				break;
			all = cm_topo_npus(t);
			n = pick_subset(all, &x, chosen, list, sizeof(list));
			snprintf(name, sizeof(name), "%s restricted to %s",
				 specs[s], list);
			ok(n == 0 || cm_topo_restrict(t, list, NULL) == 0,
			   "%s", name);
			for (os = 0; n > 0 && os < all; os++) {
				int pu = cm_topo_pu_by_os_index(t, os);

				if (chosen[os] ? pu != next++ : pu != -1)
					same = 0;
			}
			ok(n == 0 || (same && cm_topo_npus(t) == n),
			   "  exactly the %d chosen PUs, in order", n);
			check_tree(t, "  tree");
			cm_topo_free(t);
		}
	}
}

struct bad_list {
	const char *list;
	int err;
	const char *named;	/* must appear in the message */
};

static void test_restrict_errors(void)
{
	static const struct bad_list bad[] = {
		{ "", EINVAL, "empty" },
		{ "0-3,x", EINVAL, "\"x\"" },
		{ "1,,2", EINVAL, "\"\"" },
		{ "3-1", EINVAL, "\"3-1\"" },
		{ "1-", EINVAL, "\"1-\"" },
		{ "-1", EINVAL, "\"-1\"" },
		{ "0-3,", EINVAL, "\"\"" },
		{ " 1", EINVAL, "\" 1\"" },
		{ "0x3", EINVAL, "\"0x3\"" },
		{ "1-2-3", EINVAL, "\"1-2-3\"" },
		{ "99999999999", EINVAL, "99999999999" },
		{ "0-7,8", EINVAL, "OS indices 8 " },
		{ "6-9,12", EINVAL, "8-9,12" },
		{ "0,100-2000000000", EINVAL, "100-2000000000" },
		{ "4-5", EINVAL, "no allowed PU" },
	};
	struct cm_topo *t = load_syn("pack:2 core:2 pu:2");
	size_t i;

	if (!ok(t != NULL, "load for restrict errors"))
		return;
	ok(cm_topo_restrict(t, "0-3", NULL) == 0,
	   "restrict to 0-3 (NULL error is fine)");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cm_error err = { { 0 } };
		char *list;
		int rc;

		errno = 0;
		rc = cm_topo_restrict(t, bad[i].list, &err);
		ok(rc == -1 && errno == bad[i].err,
		   "restrict \"%s\" fails with errno %d", bad[i].list,
		   bad[i].err);
		if (!ok(strstr(err.text, bad[i].named) != NULL,
			"  message names %s", bad[i].named))
			diag("  message: %s", err.text);
		list = cm_topo_cpulist(t);
		is_str(list, "0-3", "  topology unchanged");
		free(list);
	}
	is_int(cm_topo_npus(t), 4, "still 4 PUs after the failures");
	ok(cm_topo_restrict(t, NULL, NULL) == -1 && errno == EINVAL,
	   "NULL cpu list: EINVAL");
	cm_topo_free(t);
}

/* ---------------------------------------------------------------------- */
/* Loading errors, XML, this machine */

static void test_load_errors(void)
{
	static const char *const bad_specs[] = {
		"pack:2 foo:3", "pack:0", "", " ", "core:2 pack:2",
		"pack:2 core:x", "hello",
	};
	struct cm_topo *t = NULL;
	struct cm_error err = { { 0 } };
	char path[] = "/tmp/test_topology_XXXXXX";
	size_t i;
	int fd;

	for (i = 0; i < sizeof(bad_specs) / sizeof(bad_specs[0]); i++) {
		errno = 0;
		ok(cm_topo_load_synthetic(&t, bad_specs[i], &err) == -1 &&
		   errno == EINVAL, "synthetic \"%s\": EINVAL", bad_specs[i]);
		if (*bad_specs[i] && *bad_specs[i] != ' ')
			ok(strstr(err.text, bad_specs[i]) != NULL,
			   "  message names the spec (%s)", err.text);
	}
	ok(cm_topo_load_synthetic(&t, NULL, NULL) == -1 && errno == EINVAL,
	   "NULL synthetic spec: EINVAL");
	errno = 0;
	ok(cm_topo_load_xml(&t, "/nonexistent/dir/node.xml", &err) == -1 &&
	   errno == ENOENT, "missing XML: ENOENT");
	ok(strstr(err.text, "/nonexistent/dir/node.xml") != NULL,
	   "  message names the file (%s)", err.text);

	fd = mkstemp(path);
	if (fd >= 0) {
		const char junk[] = "<topology version=\"2.0\"><object type";

		ok(write(fd, junk, sizeof(junk) - 1) > 0, "write bad XML");
		close(fd);
		errno = 0;
		ok(cm_topo_load_xml(&t, path, &err) == -1 && errno == EINVAL,
		   "malformed XML: EINVAL");
		ok(strstr(err.text, path) != NULL, "  message names the file");
		unlink(path);
	}
	errno = 0;
	ok(cm_topo_load_xml(&t, "/tmp", &err) == -1 && errno != 0,
	   "a directory is not an XML file");
}

/* Compare two trees node by node and all distances. */
static int same_tree(const struct cm_topo *a, const struct cm_topo *b)
{
	int i, j, np = cm_topo_npus(a);

	if (cm_topo_nnodes(a) != cm_topo_nnodes(b) || np != cm_topo_npus(b))
		return 0;
	for (i = 0; i < cm_topo_nnodes(a); i++)
		if (memcmp(cm_topo_node(a, i), cm_topo_node(b, i),
			   sizeof(struct cm_topo_node)))
			return 0;
	for (i = 0; i < np; i++) {
		if (cm_topo_pu_os_index(a, i) != cm_topo_pu_os_index(b, i))
			return 0;
		for (j = 0; j < np; j++)
			if (cm_topo_distance(a, i, j) !=
			    cm_topo_distance(b, i, j))
				return 0;
	}
	return 1;
}

static void test_xml_roundtrip(void)
{
	struct cm_topo *t = load_syn("pack:2 numa:2 l3:2 core:4 pu:2");
	struct cm_topo *x = NULL;
	struct cm_error err = { { 0 } };
	char path[] = "/tmp/test_topology_XXXXXX";
	int fd;

	if (!ok(t != NULL, "load for XML export"))
		return;
	fd = mkstemp(path);
	if (!ok(fd >= 0, "temporary XML file"))
		goto out;
	close(fd);
	ok(hwloc_topology_export_xml(cm_topo_hwloc(t), path, 0) == 0,
	   "hwloc exports the synthetic topology to XML");
	if (!ok(cm_topo_load_xml(&x, path, &err) == 0, "reload the XML"))
		diag("  %s", err.text);
	else
		ok(same_tree(t, x), "XML tree is the synthetic tree");
	unlink(path);
out:
	cm_topo_free(x);
	cm_topo_free(t);
}

static void test_xml_files(void)
{
	struct cm_topo *t = NULL;
	struct cm_error err = { { 0 } };
	const char *p = data_path("tests/data/topology/xeon-2s8c2t.xml");
	char *s;
	int i, siblings = 1;

	if (!ok(cm_topo_load_xml(&t, p, &err) == 0, "load %s", p)) {
		diag("  %s", err.text);
		return;
	}
	is_int(cm_topo_npus(t), 32, "xeon: 32 PUs");
	is_int(count_kind(t, CM_LEVEL_CORE), 16, "xeon: 16 cores");
	is_int(count_kind(t, CM_LEVEL_L3), 2, "xeon: package+NUMA+L3 -> L3");
	ok(cm_topo_node_kinds(t, 1) & (1u << CM_LEVEL_NUMA),
	   "xeon: the L3 node is also the NUMA node");
	is_int(count_kind(t, CM_LEVEL_L2) + count_kind(t, CM_LEVEL_L1), 0,
	   "xeon: per-core L2, L1d and L1i fold into the core");
	is_int(cm_topo_nnodes(t), 51, "xeon: 1 + 2 + 16 + 32 nodes");
	/* Linux numbers hyperthreads g and g + 16: logical order pairs them */
	for (i = 0; i < 32; i += 2)
		siblings &= cm_topo_pu_os_index(t, i) + 16 ==
			cm_topo_pu_os_index(t, i + 1);
	ok(siblings, "xeon: PU 2k and 2k+1 are OS g and g+16");
	is_int(cm_topo_pu_os_index(t, 2), 1, "xeon: PU 2 is OS 1");
	is_int(dist_os(t, 0, 16), 1, "xeon: OS 0-16 hyperthreads: 1");
	is_int(dist_os(t, 0, 1), 3, "xeon: OS 0-1 same socket: 3");
	is_int(dist_os(t, 0, 8), 6, "xeon: OS 0-8 across sockets: 6");
	check_tree(t, "xeon");
	ok(cm_topo_restrict(t, "0-3,16-19", &err) == 0,
	   "xeon: restrict to 4 cores with their hyperthreads");
	s = cm_topo_cpulist(t);
	is_str(s, "0-3,16-19", "xeon: cpulist");
	free(s);
	is_int(cm_topo_pu_os_index(t, 1), 16, "xeon: PU 1 is still OS 16");
	is_int(cm_topo_pu_os_index(t, 7), 19, "xeon: PU 7 is OS 19");
	check_tree(t, "xeon restricted");
	s = cm_topo_synthetic(t);
	ok(s && strstr(s, "PU:2"), "xeon: synthetic export (%s)",
	   s ? s : "NULL");
	free(s);
	cm_topo_free(t);

	p = data_path("tests/integration/data/pack2-l3-core4-pu2.xml");
	if (!ok(cm_topo_load_xml(&t, p, &err) == 0, "load %s", p)) {
		diag("  %s", err.text);
		return;
	}
	is_int(cm_topo_npus(t), 16, "pack2: 16 PUs");
	is_int(cm_topo_node(t, 0)->kind, CM_LEVEL_MACHINE,
	       "pack2: a machine-wide NUMA node keeps the root a machine");
	is_int(dist_os(t, 0, 2), 3, "pack2: same package (its L3): 3");
	is_int(dist_os(t, 0, 8), 6, "pack2: across packages: 6");
	check_tree(t, "pack2 XML");
	cm_topo_free(t);
}

static void test_this_machine(void)
{
	struct cm_topo *t = NULL;
	struct cm_error err = { { 0 } };
	char *list;

	if (!ok(cm_topo_load_this(&t, &err) == 0, "load this machine")) {
		diag("  %s", err.text);
		return;
	}
	ok(cm_topo_npus(t) >= 1, "this machine has %d PUs", cm_topo_npus(t));
	is_int(cm_topo_npus(t), hwloc_get_nbobjs_by_type(cm_topo_hwloc(t),
							   HWLOC_OBJ_PU),
	       "as many PUs as hwloc sees");
	list = cm_topo_cpulist(t);
	diag("this machine: %d PUs, cpus %s, root %s", cm_topo_npus(t),
	     list ? list : "?", cm_level_name(cm_topo_node(t, 0)->kind));
	free(list);
	check_tree(t, "this machine");
	cm_topo_free(t);
}

/* cm_topo_hwloc and cm_topo_synthetic give the whole machine. */
static void test_hwloc_access(void)
{
	struct cm_topo *t = load_syn("pack:2 core:2 pu:2"), *u;
	char *s;

	if (!ok(t != NULL, "load for hwloc access"))
		return;
	ok(cm_topo_restrict(t, "1-2", NULL) == 0, "restrict to 1-2");
	is_int(hwloc_get_nbobjs_by_type(cm_topo_hwloc(t), HWLOC_OBJ_PU), 8,
	       "cm_topo_hwloc is not restricted");
	s = cm_topo_synthetic(t);
	is_str(s, "[NUMANode] Package:2 Core:2 PU:2",
	       "cm_topo_synthetic: the whole machine's levels, no attributes");
	u = s ? load_syn(s) : NULL;
	ok(u && cm_topo_npus(u) == 8 && cm_topo_nnodes(u) == 15,
	   "the export loads back (8 PUs, 15 nodes)");
	cm_topo_free(u);
	free(s);
	cm_topo_free(t);
}

int main(void)
{
	test_shapes();
	test_distances();
	test_kinds_mask();
	test_restrict();
	test_random_restrictions();
	test_restrict_errors();
	test_load_errors();
	test_xml_roundtrip();
	test_xml_files();
	test_this_machine();
	test_hwloc_access();
	return done_testing();
}
