/* map_groups_quota.c: how many threads each tree node receives when they
 * are spread over cores and caches before any are doubled up. */
#include <stdlib.h>

#include "map_groups.h"
#include "map_groups_internal.h"

/* ---- spread quota -------------------------------------------------- */

void cm_map_spread_weight(const struct cm_topo *topo, int *spread)
{
	int nnodes = cm_topo_nnodes(topo);
	/* the nodes are one array (commap/topology.h): indexed directly,
	 * no call per node */
	const struct cm_topo_node *nodes = cm_topo_node(topo, 0);

	for (int i = 0; i < nnodes; i++) {
		const struct cm_topo_node *node = &nodes[i];
		int under_core = node->parent >= 0 &&
			nodes[node->parent].kind == CM_LEVEL_CORE;

		spread[i] = node->kind == CM_LEVEL_CORE ||
			    (node->pu >= 0 && !under_core);
	}
	for (int i = nnodes - 1; i > 0; i--)
		spread[nodes[i].parent] += spread[i];
}

/* Split t threads among children lo..hi-1 of node v in proportion to their
 * spread weight, capped by capacity (water filling), rounding by largest
 * remainder; writes quota[child node].  Exact integer arithmetic so that
 * the result does not depend on floating point. */
void cm_map_range_quota(const struct cm_topo *topo, const int *node_cap,
			const int *spread, int v, int lo, int hi, int t,
			int *quota)
{
	int first = cm_topo_node(topo, v)->first_child;
	int rem = t, again = 1;

	for (int c = first + lo; c < first + hi; c++)
		quota[c] = -1;		/* -1: not fixed yet */
	while (again) {
		long long s = 0;

		again = 0;
		for (int c = first + lo; c < first + hi; c++)
			if (quota[c] < 0)
				s += spread[c] > 0 ? spread[c] : 1;
		for (int c = first + lo; c < first + hi && s > 0; c++) {
			long long sc = spread[c] > 0 ? spread[c] : 1;

			if (quota[c] < 0 && (long long)rem * sc >
			    (long long)node_cap[c] * s) {
				quota[c] = node_cap[c];
				rem -= node_cap[c];
				again = 1;
			}
		}
	}
	long long s = 0;
	int left = rem;

	for (int c = first + lo; c < first + hi; c++)
		if (quota[c] < 0)
			s += spread[c] > 0 ? spread[c] : 1;
	if (s == 0)
		return;
	/* Unfixed children get their floor, kept encoded as -1 - floor so
	 * that they stay distinguishable from fixed (>= 0) ones. */
	for (int c = first + lo; c < first + hi; c++) {
		if (quota[c] >= 0)
			continue;
		long long sc = spread[c] > 0 ? spread[c] : 1;

		quota[c] = -1 - (int)(((long long)rem * sc) / s);
		left -= (int)(((long long)rem * sc) / s);
	}
	/* Unfixed children now hold -1 - floor.  Hand out the leftover one
	 * by one to the largest remainder (ties: the first child). */
	while (left > 0) {
		int best = -1;
		long long best_frac = -1;

		for (int c = first + lo; c < first + hi; c++) {
			long long sc = spread[c] > 0 ? spread[c] : 1;
			long long frac = ((long long)rem * sc) % s;

			if (quota[c] < 0 && frac > best_frac) {
				best = c;
				best_frac = frac;
			}
		}
		if (best < 0)
			break;
		quota[best] = -1 - quota[best] + 1;
		left--;
	}
	for (int c = first + lo; c < first + hi; c++)
		if (quota[c] < 0)
			quota[c] = -1 - quota[c];
}

void cm_map_spread_quota(const struct cm_topo *topo, const int *node_cap,
			 int n, int *quota)
{
	int nnodes = cm_topo_nnodes(topo);
	const struct cm_topo_node *nodes = cm_topo_node(topo, 0);
	int *spread = malloc(sizeof(int) * (size_t)nnodes);

	if (!spread) {
		/* Degrade to capacity-proportional quota: spread = cap. */
		quota[0] = n;
		for (int i = 0; i < nnodes; i++) {
			const struct cm_topo_node *node = &nodes[i];

			if (node->nchildren > 0)
				cm_map_range_quota(topo, node_cap, node_cap, i, 0,
					    node->nchildren, quota[i], quota);
		}
		return;
	}
	cm_map_spread_weight(topo, spread);
	quota[0] = n;
	for (int i = 0; i < nnodes; i++) {
		const struct cm_topo_node *node = &nodes[i];

		if (node->nchildren > 0)
			cm_map_range_quota(topo, node_cap, spread, i, 0,
				    node->nchildren, quota[i], quota);
	}
	free(spread);
}
