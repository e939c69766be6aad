/* map_baseline.c: placements that ignore the matrix, for comparison
 * (docs/cost.md "Baselines").
 *
 *  compact     thread i on the i-th PU in tree order (SMT siblings, then
 *              cores, caches, ... filled in turn);
 *  scatter     successive threads as far apart as possible: different
 *              packages, then NUMA nodes, caches, cores; SMT siblings last;
 *  roundrobin  one thread per core, cores in tree order, then the second
 *              PU of every core, ... (Slurm's cyclic over cores);
 *  random      a seeded permutation of the allowed PUs.
 *
 * A "core unit" below is the group of SMT siblings: an internal node of
 * kind CORE or L1 whose children are PUs, or a lone PU whose parent is not
 * such a node (a core with one allowed PU, or a machine without cores).
 * With oversubscription the per-PU loads are those of cm_map_capacity().
 */
#include <errno.h>
#include <stdlib.h>

#include "commap/rand.h"
#include "map_internal.h"

/* Does node x group SMT siblings? */
static int is_core_node(const struct cm_topo *topo, int x)
{
	const struct cm_topo_node *node = cm_topo_node(topo, x);

	if (node->first_child < 0 || node->kind > CM_LEVEL_L1)
		return 0;
	for (int c = 0; c < node->nchildren; c++)
		if (cm_topo_node(topo, node->first_child + c)->first_child >= 0)
			return 0;
	return 1;
}

/* unit[x] = 1 for the nodes that are core units; counts[x] = number of
 * units in the subtree of x. */
static void mark_units(const struct cm_topo *topo, char *unit, int *counts)
{
	int nnodes = cm_topo_nnodes(topo);

	for (int x = 0; x < nnodes; x++) {
		const struct cm_topo_node *node = cm_topo_node(topo, x);

		unit[x] = is_core_node(topo, x) ||
			  (node->first_child < 0 &&
			   (node->parent < 0 || !is_core_node(topo,
							     node->parent)));
		counts[x] = unit[x];
	}
	for (int x = nnodes - 1; x > 0; x--) {
		const struct cm_topo_node *node = cm_topo_node(topo, x);

		if (!unit[node->parent])
			counts[node->parent] += counts[x];
	}
}

/* Units of subtree x in spread order: the spread order of each child,
 * interleaved round-robin (first unit of every child, then the second, ...;
 * exhausted children are skipped).  Returns the count, -1 on ENOMEM. */
static int spread_units(const struct cm_topo *topo, int x, const char *unit,
			const int *counts, int *out)
{
	const struct cm_topo_node *node = cm_topo_node(topo, x);
	int nch = node->nchildren, total = counts[x], k = 0;
	int *buf, *off, *len;

	if (unit[x]) {
		out[0] = x;
		return 1;
	}
	buf = malloc(sizeof(*buf) * (size_t)(total + 2 * nch + 1));
	if (!buf)
		return -1;
	off = buf + total;
	len = off + nch;
	for (int c = 0, o = 0; c < nch; c++) {
		off[c] = o;
		len[c] = spread_units(topo, node->first_child + c, unit, counts,
				      buf + o);
		if (len[c] < 0) {
			free(buf);
			return -1;
		}
		o += len[c];
	}
	for (int r = 0; k < total; r++)
		for (int c = 0; c < nch; c++)
			if (r < len[c])
				out[k++] = buf[off[c] + r];
	free(buf);
	return total;
}

/* Units of the whole tree in tree order. */
static int tree_units(const struct cm_topo *topo, const char *unit, int *out)
{
	int npus = cm_topo_npus(topo), k = 0, last = -1;

	for (int p = 0; p < npus; p++) {
		int leaf = cm_topo_leaf_of_pu(topo, p);
		int parent = cm_topo_node(topo, leaf)->parent;
		int u = unit[leaf] ? leaf : parent;

		if (u != last)
			out[k++] = u;
		last = u;
	}
	return k;
}

/* PU order from a unit order: the first PU of every unit, then the second
 * PU of every unit that has one, and so on (SMT siblings last). */
static void units_to_pus(const struct cm_topo *topo, const int *units,
			 int nunits, int *order)
{
	int k = 0, npus = cm_topo_npus(topo);

	for (int r = 0; k < npus; r++)
		for (int u = 0; u < nunits; u++) {
			const struct cm_topo_node *node;

			node = cm_topo_node(topo, units[u]);
			if (r < node->npus)
				order[k++] = node->first_pu + r;
		}
}

/* The PU order of scatter or roundrobin.  -1 on ENOMEM. */
static int unit_order(const struct cm_topo *topo, int spread, int *order)
{
	int nnodes = cm_topo_nnodes(topo);
	char *unit = malloc((size_t)nnodes);
	int *counts = malloc(sizeof(*counts) * (size_t)nnodes);
	int *units = malloc(sizeof(*units) * (size_t)nnodes);
	int nunits, rv = -1;

	if (!unit || !counts || !units)
		goto out;
	mark_units(topo, unit, counts);
	if (spread)
		nunits = spread_units(topo, 0, unit, counts, units);
	else
		nunits = tree_units(topo, unit, units);
	if (nunits < 0)
		goto out;
	units_to_pus(topo, units, nunits, order);
	rv = 0;
out:
	free(unit);
	free(counts);
	free(units);
	return rv;
}

/* Threads take the PUs of order in turn, pass after pass, each PU until it
 * holds cap[p] threads (one pass when n <= npus). */
static void fill_in_passes(int n, int npus, const int *order, const int *cap,
			   int *pu_of_thread)
{
	int t = 0;

	for (int pass = 1; t < n; pass++)
		for (int k = 0; k < npus && t < n; k++)
			if (cap[order[k]] >= pass)
				pu_of_thread[t++] = order[k];
}

/* Compact: PU p takes cap[p] consecutive threads. */
static void fill_compact(int n, int npus, const int *cap, int *pu_of_thread)
{
	int t = 0;

	for (int p = 0; p < npus && t < n; p++)
		for (int c = 0; c < cap[p] && t < n; c++)
			pu_of_thread[t++] = p;
}

/* Random: a seeded shuffle of all PU slots (each PU cap[p] times when
 * oversubscribed, once otherwise); thread i takes slot i. */
static int fill_random(int n, int npus, const int *cap, uint64_t seed,
		       int *pu_of_thread)
{
	int nslots = n > npus ? n : npus, k = 0;
	int *slots = malloc(sizeof(*slots) * (size_t)nslots);

	if (!slots)
		return -1;
	for (int p = 0; p < npus; p++)
		for (int c = 0; c < (n > npus ? cap[p] : 1); c++)
			slots[k++] = p;
	cm_rand_shuffle(&seed, slots, nslots);
	for (int t = 0; t < n; t++)
		pu_of_thread[t] = slots[t];
	free(slots);
	return 0;
}

static int fill_baseline(const struct cm_topo *topo, int n,
			 const struct cm_map_options *opts, const int *cap,
			 int *pu_of_thread)
{
	int npus = cm_topo_npus(topo);
	int *order;
	int rv;

	if (opts->algorithm == CM_MAP_COMPACT) {
		fill_compact(n, npus, cap, pu_of_thread);
		return 0;
	}
	if (opts->algorithm == CM_MAP_RANDOM)
		return fill_random(n, npus, cap, opts->seed, pu_of_thread);
	order = malloc(sizeof(*order) * (size_t)npus);
	if (!order)
		return -1;
	rv = unit_order(topo, opts->algorithm == CM_MAP_SCATTER, order);
	if (rv == 0)
		fill_in_passes(n, npus, order, cap, pu_of_thread);
	free(order);
	return rv;
}

static int is_baseline(enum cm_map_algorithm alg)
{
	return alg == CM_MAP_COMPACT || alg == CM_MAP_SCATTER ||
	       alg == CM_MAP_ROUNDROBIN || alg == CM_MAP_RANDOM;
}

int cm_map_baseline(const struct cm_topo *topo, const struct cm_matrix *m,
		    const struct cm_map_options *opts, int *pu_of_thread,
		    struct cm_error *err)
{
	int n, *cap, rv;

	if (!topo || !m || !opts)
		return cm_errorf(err, EINVAL, "baseline mapping needs a "
				 "topology, a matrix and options");
	if (!is_baseline(opts->algorithm))
		return cm_errorf(err, EINVAL, "algorithm '%s' is not a "
				 "baseline (compact, scatter, roundrobin, "
				 "random)",
				 cm_map_algorithm_name(opts->algorithm) ?
				 cm_map_algorithm_name(opts->algorithm) :
				 "?");
	n = cm_matrix_nthreads(m);
	if (n > 0 && !pu_of_thread)
		return cm_errorf(err, EINVAL, "no room for the mapping");
	cap = malloc(sizeof(*cap) * (size_t)(cm_topo_npus(topo) + 1));
	if (!cap)
		return cm_errorf(err, ENOMEM, "out of memory");
	rv = cm_map_capacity(topo, n, opts->oversubscribe, cap, err);
	if (rv == 0 && fill_baseline(topo, n, opts, cap, pu_of_thread) < 0)
		rv = cm_errorf(err, ENOMEM, "out of memory mapping %d "
			       "threads", n);
	free(cap);
	return rv;
}
