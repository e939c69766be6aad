/* map_refine.h (internal): cm_map_refine() with a bounded effort, for the
 * lean path of "auto" at large n (lib/mapping.c). */
#ifndef COMMAP_MAP_REFINE_H
#define COMMAP_MAP_REFINE_H

#include "commap/matrix.h"
#include "commap/topology.h"

/* How much cm_map_refine_effort() tries: positions near the `partners`
 * heaviest partners of a thread (1..3), at most `pu_budget` PUs around
 * each, and at most `max_passes` visits per thread on average; with
 * min_gain > 0 it also stops as soon as n / 8 consecutive visits removed
 * less than min_gain times the starting cost (gain per unit of work).
 * cm_map_refine() uses 3, 16, 16, 0. */
struct cm_refine_effort {
	int partners;
	int pu_budget;
	int max_passes;
	double min_gain;
};

/* cm_map_refine() with the given effort (NULL: the default); the same
 * guarantees: never raises the cost, keeps the load limits. */
int cm_map_refine_effort(const struct cm_topo *topo,
			 const struct cm_matrix *m, int *pu_of_thread,
			 int oversubscribe, const struct cm_refine_effort *e);

#endif
