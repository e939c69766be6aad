/* commap/mapping.h: placing threads on PUs.
 *
 * A mapping is an int array pu_of_thread[n]: the PU index (see
 * commap/topology.h, 0..npus-1, NOT the OS index) of each thread.
 *
 * Rules every algorithm follows:
 *  - only allowed PUs (the topology is already restricted to the cpuset);
 *  - n <= npus: at most one thread per PU, and threads are spread over whole
 *    cores/caches before SMT siblings or one L3 are doubled up, unless the
 *    matrix says they share;
 *  - n > npus: only if opts->oversubscribe; then every PU gets
 *    floor(n/npus) or ceil(n/npus) threads (balanced groups per PU);
 *    otherwise -1/ENOSPC with an error naming both numbers;
 *  - deterministic for a given seed.
 *
 * Algorithms:
 *  greedy      LHMapping §3.3 hierarchical grouping (GenerateOneLevel /
 *              UpdateMatrix / GroupsToTopology)
 *  matching    SPCD §IV-B: maximum-weight perfect matching per level
 *              (Edmonds), groups of groups combined with the H heuristic
 *  exact       exhaustive search with symmetry pruning and branch and bound,
 *              n <= CM_MAP_EXACT_MAX
 *  compact, scatter, roundrobin, random: baselines
 *  auto        the best of the above for the size at hand, refined
 * Unless opts->no_refine, greedy/matching/auto results are improved by
 * cm_map_refine().
 */
#ifndef COMMAP_MAPPING_H
#define COMMAP_MAPPING_H

#include <stdint.h>

#include "commap/error.h"
#include "commap/matrix.h"
#include "commap/topology.h"

#define CM_MAP_EXACT_MAX 12

enum cm_map_algorithm {
	CM_MAP_AUTO = 0,
	CM_MAP_GREEDY,
	CM_MAP_MATCHING,
	CM_MAP_EXACT,
	CM_MAP_COMPACT,
	CM_MAP_SCATTER,
	CM_MAP_ROUNDROBIN,
	CM_MAP_RANDOM,
	CM_MAP_ALGORITHM_COUNT
};

struct cm_map_options {
	enum cm_map_algorithm algorithm;
	uint64_t seed;
	int oversubscribe;	/* allow n > npus */
	int no_refine;		/* skip cm_map_refine() */
};

/* Parse "auto", "greedy", ...; -1/EINVAL with err listing valid names. */
int cm_map_algorithm_parse(const char *name, enum cm_map_algorithm *out,
			   struct cm_error *err);
const char *cm_map_algorithm_name(enum cm_map_algorithm alg);

/* Map the matrix's threads onto the topology.  pu_of_thread has room for
 * cm_matrix_nthreads(m) entries.  0 on success; -1 with errno/err (ENOSPC
 * too many threads, EINVAL bad options or exact with n too large, ENOMEM). */
int cm_map(const struct cm_topo *topo, const struct cm_matrix *m,
	   const struct cm_map_options *opts, int *pu_of_thread,
	   struct cm_error *err);

/* The individual algorithms, same contract as cm_map (no refinement). */
int cm_map_greedy(const struct cm_topo *topo, const struct cm_matrix *m,
		  const struct cm_map_options *opts, int *pu_of_thread,
		  struct cm_error *err);
int cm_map_matching(const struct cm_topo *topo, const struct cm_matrix *m,
		    const struct cm_map_options *opts, int *pu_of_thread,
		    struct cm_error *err);
int cm_map_exact(const struct cm_topo *topo, const struct cm_matrix *m,
		 const struct cm_map_options *opts, int *pu_of_thread,
		 struct cm_error *err);
int cm_map_baseline(const struct cm_topo *topo, const struct cm_matrix *m,
		    const struct cm_map_options *opts, int *pu_of_thread,
		    struct cm_error *err);

/* Improve a valid mapping in place by pairwise swaps and moves to free PUs
 * (Kernighan-Lin style), within and across groups; never increases
 * cm_cost() and keeps the per-PU load limits.  Returns the number of
 * improving moves made, -1 on error. */
int cm_map_refine(const struct cm_topo *topo, const struct cm_matrix *m,
		  int *pu_of_thread, int oversubscribe);

/* Relabel pu_of_thread (a valid mapping of n threads) by swapping
 * isomorphic sibling subtrees of the tree, so that as many threads as
 * possible stay under the node (and on the PU) they occupy in cur (PU
 * indices, -1 for threads not placed yet).  The cost is unchanged for
 * every matrix (an automorphism of the tree keeps all distances); used by
 * the node agent so that a remap migrates only the threads it must.
 * 0 on success; -1 with errno (EINVAL bad argument, ENOMEM). */
int cm_map_align(const struct cm_topo *topo, int n, const int *cur,
		 int *pu_of_thread);

/* Complete a partial mapping: threads with pu_of_thread[t] >= 0 stay on
 * that PU index; those at -1 are placed one at a time where they add the
 * least cost given the threads already placed (heaviest link to placed
 * threads first), on PUs below the load limit (1 per PU, or ceil(n/npus)
 * when n > npus, which needs oversubscribe).  Used by the node agent so
 * that threads appearing late do not move the placed ones.  Returns the
 * number of threads placed; -1 with errno/err (EINVAL bad argument or a
 * PU index out of range, ENOSPC n > npus without oversubscribe, ENOMEM). */
int cm_map_incremental(const struct cm_topo *topo, const struct cm_matrix *m,
		       int n, int *pu_of_thread, int oversubscribe,
		       struct cm_error *err);

/* Check a mapping: every entry a valid PU index, load limits respected.
 * 0 if valid, -1/EINVAL with err naming the first bad thread. */
int cm_map_validate(const struct cm_topo *topo, int n,
		    const int *pu_of_thread, int oversubscribe,
		    struct cm_error *err);

#endif
