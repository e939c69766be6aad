/* placement.h: which threads a dynamic mapping places, and where, within
 * the placement invariant (commap/placement_check.h).
 *
 * Pure functions over arrays (no /proc, no pinning), driven by the agent
 * (agent_loop.c) and by the property test (tests/agent/
 * test_placement_property.c) alike.  PUs are indices of the step's
 * restricted topology; threads are the agent's thread numbers (every
 * thread the step ever had; alive[t] says which still run).
 *
 * The set: live threads with enough communication of their own
 * (cm_remap_thread_has_evidence) are mapped; the others stay where they
 * are, pinned or not.  The plan (cm_remap_plan) only sees the set, so it
 * may give a new thread the PU of a pinned thread outside the set, or
 * count a load limit over the set alone: cm_place_repair then moves the
 * fewest threads needed, each to the least loaded PU nearest to where it
 * was meant to go, so that no PU holds more than cm_placement_cap(live
 * threads, PUs).
 */
#ifndef COMMAP_PLACEMENT_H
#define COMMAP_PLACEMENT_H

#include "commap/error.h"
#include "commap/matrix.h"
#include "commap/topology.h"
#include "remap_policy.h"

struct cm_place_set {
	int *idx;	/* set position -> thread */
	int *pos;	/* thread -> set position, -1 */
	int n;
};

/* The set of threads 0..n-1 to map: alive and with evidence in the live
 * (aged) matrix m.  0, or -1/ENOMEM. */
int cm_place_set_build(const struct cm_matrix *m, int n, const int *alive,
		       struct cm_place_set *s);
void cm_place_set_free(struct cm_place_set *s);

/* The matrix of the set (s->n threads, set positions).  NULL on ENOMEM. */
struct cm_matrix *cm_place_sub_matrix(const struct cm_matrix *m,
				      const struct cm_place_set *s);

/* Make target (n threads, PU index or -1) obey the invariant over the
 * live threads: PUs above the cap give up threads, first those target
 * moves or places (target != cur), highest thread number first, each to
 * the least loaded PU below the cap, nearest to its PU.  Dead threads'
 * targets become -1.  Returns how many threads it moved, -1 with errno
 * EINVAL (bad argument, a PU index out of range) or ENOMEM. */
int cm_place_repair(const struct cm_topo *topo, int n, const int *alive,
		    const int *cur, int *target);

/* The dynamic step: cm_remap_plan for the set (sub: its matrix; avoid:
 * per set position, or NULL), written into target for every thread
 * (threads outside the set keep cur), then cm_place_repair.  *repaired:
 * the threads the repair moved.  0, or -1 with err as cm_remap_plan. */
int cm_place_plan(const struct cm_topo *topo, const struct cm_matrix *sub,
		  const struct cm_place_set *s, int n, const int *alive,
		  const int *cur, const int *avoid, double gain,
		  double near_seen, int *target, struct cm_remap_plan *plan,
		  int *repaired, struct cm_error *err);

/* Is there anything to gain by pinning nlive threads (those that compete
 * for the PUs in a way a placement changes: the agent passes its mapped
 * set) onto topo?  0 when
 * the PUs are equidistant (every pair of distinct PUs at one distance: a
 * flat machine, a cpuset inside one cache) and nlive <= PUs, so every
 * placement costs the same and pinning can only hurt; or when pu (the
 * mapping of sub's threads, may be NULL) costs more than (1 - gain) of
 * a random placement's expected cost (sum of weights x the mean distance
 * between distinct PUs).  Then why says which (>= 96 bytes).  1 when
 * pinning may gain. */
int cm_place_worth_pinning(const struct cm_topo *topo, int nlive,
			   const struct cm_matrix *sub, const int *pu,
			   double gain, char *why, size_t whylen);

#endif
