/* cost.c: how good a mapping is (commap/cost.h, docs/cost.md).
 *
 * Every function is O(edges * tree depth): each edge of the sparse matrix is
 * visited once (column > row) and the lowest common tree node of its two
 * PUs is found by walking up from one leaf.  A mapping entry that is not a
 * valid PU index makes the result NaN (the functions have no error return).
 */
#include <math.h>
#include <stddef.h>

#include "commap/cost.h"

/* Is every entry of the mapping a valid PU index? */
static int mapping_in_range(const struct cm_topo *topo, int n,
			    const int *pu_of_thread)
{
	int npus = cm_topo_npus(topo);

	for (int i = 0; i < n; i++)
		if (pu_of_thread[i] < 0 || pu_of_thread[i] >= npus)
			return 0;
	return 1;
}

static int args_usable(const struct cm_topo *topo, const struct cm_matrix *m,
		       const int *pu_of_thread)
{
	int n;

	if (!topo || !m)
		return 0;
	n = cm_matrix_nthreads(m);
	if (n > 0 && !pu_of_thread)
		return 0;
	return mapping_in_range(topo, n, pu_of_thread);
}

/* The lowest tree node holding both PUs (the leaf itself when a == b). */
static const struct cm_topo_node *common_node(const struct cm_topo *topo,
					      int a, int b)
{
	const struct cm_topo_node *x;

	x = cm_topo_node(topo, cm_topo_leaf_of_pu(topo, a));
	while (x->parent >= 0 &&
	       (b < x->first_pu || b >= x->first_pu + x->npus))
		x = cm_topo_node(topo, x->parent);
	return x;
}

double cm_cost(const struct cm_topo *topo, const struct cm_matrix *m,
	       const int *pu_of_thread)
{
	double cost = 0;
	int n;

	if (!args_usable(topo, m, pu_of_thread))
		return NAN;
	n = cm_matrix_nthreads(m);
	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(m, i, &e);

		for (int k = 0; k < len; k++)
			if (e[k].col > i)
				cost += e[k].w * cm_topo_distance(topo,
						pu_of_thread[i],
						pu_of_thread[e[k].col]);
	}
	return cost;
}

/* The data-sharing placement paper (§3.1) sums, over every cache, the
 * communication of the thread pairs that can share data through it.  Here
 * one level at a time, as a fraction: the communication of pairs whose
 * lowest common node is of kind <= level, over all communication.  (The
 * paper's sum is the sum of these numerators over the cache levels.) */
double cm_cost_data_sharing(const struct cm_topo *topo,
			    const struct cm_matrix *m,
			    const int *pu_of_thread,
			    enum cm_level_kind level)
{
	double shared = 0, total = 0;
	int n;

	if (!args_usable(topo, m, pu_of_thread))
		return NAN;
	n = cm_matrix_nthreads(m);
	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(m, i, &e);

		for (int k = 0; k < len; k++) {
			int j = e[k].col;

			if (j <= i)
				continue;
			total += e[k].w;
			if (common_node(topo, pu_of_thread[i],
					pu_of_thread[j])->kind <= level)
				shared += e[k].w;
		}
	}
	return total > 0 ? shared / total : 0;
}

/* The smallest distance from PU p to any other PU: the weight of the lowest
 * ancestor of its leaf that holds more than one PU (0 on a one-PU topo). */
static int closest_other_distance(const struct cm_topo *topo, int p)
{
	const struct cm_topo_node *x;

	x = cm_topo_node(topo, cm_topo_leaf_of_pu(topo, p));
	while (x->npus < 2) {
		if (x->parent < 0)
			return 0;
		x = cm_topo_node(topo, x->parent);
	}
	return cm_level_weight(x->kind);
}

/* The heaviest partner of thread i (ties: lower index), -1 if none. */
static int heaviest_partner(const struct cm_matrix *m, int i)
{
	const struct cm_matrix_entry *e;
	int len = cm_matrix_row(m, i, &e);
	int best = -1;
	double best_w = 0;

	for (int k = 0; k < len; k++)
		if (e[k].w > best_w || (e[k].w == best_w && e[k].col < best)) {
			best = e[k].col;
			best_w = e[k].w;
		}
	return best;
}

/* LHMapping §4.2.1 evaluates mappings with MappingAccuracy (eq. 9), the sum
 * of Comm[i][j] / latency[map[i]][map[j]], which needs measured latencies
 * and has no fixed scale.  commap uses a normalised form of the same idea
 * (cost.h): the share of communicating threads whose heaviest partner sits
 * as close as the tree allows. */
double cm_mapping_accuracy(const struct cm_topo *topo,
			   const struct cm_matrix *m,
			   const int *pu_of_thread)
{
	int n, counted = 0, hits = 0;

	if (!args_usable(topo, m, pu_of_thread))
		return NAN;
	n = cm_matrix_nthreads(m);
	for (int i = 0; i < n; i++) {
		int j = heaviest_partner(m, i);
		int p = pu_of_thread[i];

		if (j < 0)
			continue;
		counted++;
		if (cm_topo_distance(topo, p, pu_of_thread[j]) <=
		    closest_other_distance(topo, p))
			hits++;
	}
	return counted ? (double)hits / counted : 0;
}
