/* map_coords.h (internal): hop distances from a few far-apart pivot
 * threads, and the split of a set of threads across the level sets of
 * two pivots' distance difference: straight cuts on meshes. */
#ifndef COMMAP_MAP_COORDS_H
#define COMMAP_MAP_COORDS_H

#include <stdint.h>

#include "map_bisect.h"

struct cm_coords {
	int n;			/* threads */
	int k;			/* pivots */
	int *dist;		/* k x n hop distances, pivot-major */
	int maxd;		/* the largest distance (unreachable: maxd) */
	int *queue, *hist;	/* scratch: n, 4 maxd + 3 */
	int npairs;		/* pivot pairs still tried */
	int *pair_i, *pair_j;	/* k (k - 1) / 2 each */
	double *pair_cut;
};

/* Hop distances of the n threads of rows ref (one row per thread) from k
 * pivots chosen farthest first, the first the farthest from thread seed
 * % n.  0, or -1/ENOMEM. */
int cm_coords_init(struct cm_coords *c, const struct cm_row_ref *ref, int n,
		   int k, uint64_t seed);
void cm_coords_free(struct cm_coords *c);

/* Split T[0..t-1] into ta threads on side 0 and the rest on side 1,
 * across the level sets of dist[i] - dist[j] for the pair of pivots
 * (i, j) whose split cuts the least weight (ties on the threshold level:
 * nearer to pivot i first).  side[] must be -1 outside T; side[T[x]] is
 * set.  tie is scratch of t entries.  With prune, the pairs that cut more
 * than twice the best are not tried again (on a grid: the diagonals, and
 * pairs of pivots that are not corners).  Returns the weight cut. */
double cm_coords_split(struct cm_coords *c, const struct cm_row_ref *ref,
		       const int *T, int t, int ta, int prune,
		       signed char *side, int *tie);

#endif
