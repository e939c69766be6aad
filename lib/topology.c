/* topology.c: the machine as a compact tree of sharing levels (see
 * commap/topology.h and docs/topology.md): level kinds, loading and
 * queries.  The tree is built in topology_tree.c, restricted to a cpu
 * list in topology_restrict.c.
 *
 * The hwloc topology is kept whole (never restricted); the tree, the PU
 * numbering and the distance tables are rebuilt from it and the allowed
 * cpuset whenever the topology is loaded or restricted.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <hwloc.h>

#include "commap/topology.h"
#include "topology_internal.h"

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
	if (cm_tree_build(&topo->tree, hw, allowed, err) < 0) {
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
	cm_tree_free(&topo->tree);
	hwloc_topology_destroy(topo->hw);
	free(topo);
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
