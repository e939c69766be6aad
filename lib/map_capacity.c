/* map_capacity.c: how many threads each PU and tree node may hold. */
#include <errno.h>

#include "map_internal.h"

/* Mark the PUs that take one extra thread: extra of them, evenly spaced in
 * tree order (PU index order), so each package/cache gets its share. */
static void mark_extra_pus(int npus, int extra, int *cap)
{
	for (int k = 0; k < extra; k++)
		cap[(int)((long long)k * npus / extra)]++;
}

int cm_map_capacity(const struct cm_topo *topo, int n, int oversubscribe,
		    int *cap, struct cm_error *err)
{
	int npus = cm_topo_npus(topo);

	if (n < 0)
		return cm_errorf(err, EINVAL, "negative thread count %d", n);
	if (npus <= 0)
		return cm_errorf(err, EINVAL, "topology has no PUs");
	if (n > npus && !oversubscribe)
		return cm_errorf(err, ENOSPC,
				 "%d threads but only %d PUs; oversubscription "
				 "is disabled", n, npus);
	if (n <= npus) {
		for (int p = 0; p < npus; p++)
			cap[p] = 1;
		return 0;
	}
	for (int p = 0; p < npus; p++)
		cap[p] = n / npus;
	mark_extra_pus(npus, n % npus, cap);
	return 0;
}

void cm_map_node_capacity(const struct cm_topo *topo, const int *cap,
			  int *node_cap)
{
	int nnodes = cm_topo_nnodes(topo);
	/* one array (commap/topology.h): no call per node */
	const struct cm_topo_node *nodes = cm_topo_node(topo, 0);

	/* Children follow their parents in the node array (breadth-first
	 * or depth-first, either way parent index < child index), so one
	 * backward pass sums leaves into their ancestors. */
	for (int i = 0; i < nnodes; i++) {
		const struct cm_topo_node *node = &nodes[i];

		node_cap[i] = node->pu >= 0 ? cap[node->pu] : 0;
	}
	for (int i = nnodes - 1; i > 0; i--)
		node_cap[nodes[i].parent] += node_cap[i];
}
