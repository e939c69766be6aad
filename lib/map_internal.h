/* map_internal.h (internal): helpers shared by the mapping algorithms.
 * Not installed; the public contract is commap/mapping.h. */
#ifndef COMMAP_MAP_INTERNAL_H
#define COMMAP_MAP_INTERNAL_H

#include "commap/error.h"
#include "commap/mapping.h"
#include "commap/topology.h"

/* How many threads each PU (by PU index) may hold, written to cap[npus].
 *  n <= npus: 1 per PU (some stay free).
 *  n > npus:  only with oversubscribe: floor(n / npus) per PU, plus one for
 *             n % npus PUs spread evenly in tree order, so that the extra
 *             load falls on different packages and caches; sum(cap) == n.
 * 0 on success; -1/ENOSPC with err naming both numbers when n > npus and
 * oversubscription is off; -1/EINVAL for n < 0. */
int cm_map_capacity(const struct cm_topo *topo, int n, int oversubscribe,
		    int *cap, struct cm_error *err);

/* Capacity of every tree node (sum of its PUs' cap), node_cap[nnodes]. */
void cm_map_node_capacity(const struct cm_topo *topo, const int *cap,
			  int *node_cap);

#endif
