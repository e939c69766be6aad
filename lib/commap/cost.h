/* commap/cost.h: how good a mapping is (docs/mapping.md).
 *
 * cm_cost: sum over pairs i < j of comm(i,j) * distance(pu(i), pu(j)),
 *   distance from cm_topo_distance().  Lower is better; 0 when all
 *   communication is between threads on one PU.
 * cm_cost_data_sharing: the data-sharing placement paper's metric (§3.1):
 *   the fraction of the total communication that happens between threads
 *   sharing a cache level of kind <= level (e.g. CM_LEVEL_L3: the share of
 *   communication kept under a common L3).  Higher is better, in [0, 1].
 * cm_mapping_accuracy: LHMapping eq. 9, MappingAccuracy: for each thread,
 *   whether its heaviest partner sits at the closest PU distance available
 *   to it, averaged over threads that communicate; in [0, 1].
 */
#ifndef COMMAP_COST_H
#define COMMAP_COST_H

#include "commap/matrix.h"
#include "commap/topology.h"

double cm_cost(const struct cm_topo *topo, const struct cm_matrix *m,
	       const int *pu_of_thread);
double cm_cost_data_sharing(const struct cm_topo *topo,
			    const struct cm_matrix *m,
			    const int *pu_of_thread,
			    enum cm_level_kind level);
double cm_mapping_accuracy(const struct cm_topo *topo,
			   const struct cm_matrix *m,
			   const int *pu_of_thread);

#endif
