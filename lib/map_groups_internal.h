/* map_groups_internal.h (internal): what the parts of cm_map_place()
 * share: the tuning of the splits, the placement context and the steps
 * that one part calls in another.  Only for lib/map_groups*.c.
 *
 *  map_groups.c        the tree walk and the entry points
 *  map_groups_heap.c   the indexed max-heap of FM gains
 *  map_groups_quota.c  spread weights and quotas
 *  map_groups_split.c  one bisection (greedy growing, FM, multilevel,
 *                      straight splits)
 *  map_groups_pairs.c  the matching of pairs under a cache */
#ifndef COMMAP_MAP_GROUPS_INTERNAL_H
#define COMMAP_MAP_GROUPS_INTERNAL_H

#include <stdint.h>

#include "map_bisect.h"
#include "map_coords.h"
#include "map_groups.h"

/* Splits of at least this many threads use multilevel bisection. */
#ifndef MULTILEVEL_MIN
#define MULTILEVEL_MIN 64
#endif
/* V-cycles for splits of at least a quarter of all threads (and 256;
 * below, auto's restarts give the same variety). */
#ifndef TOP_TRIES
#define TOP_TRIES 4
#endif
#ifndef TOP_SHARE
#define TOP_SHARE 4		/* "near the root": t >= n / TOP_SHARE */
#endif
/* CM_PLACE_LEAN ("auto" above 512 threads; tuned on tests/bench/map,
 * docs/PERFORMANCE.md "Mapping"): multilevel only for splits of at least
 * LEAN_ML_MIN threads, one V-cycle each (also near the root), one FM pass
 * per level, LEAN_ML_STARTS grown starts on the coarsest graph; shorter
 * flat FM passes; pairs under a cache by Karp-Sipser greedy pairing, else
 * greedy matching + 2-opt instead of the exact matching. */
#ifndef LEAN_ML_MIN
#define LEAN_ML_MIN 256
#endif
#ifndef LEAN_ML_PASSES
#define LEAN_ML_PASSES 1
#endif
#ifndef LEAN_ML_PATIENCE
#define LEAN_ML_PATIENCE 20	/* as good as 60 on tests/bench/map,
				 * 10% less work */
#endif
#ifndef LEAN_ML_STARTS
#define LEAN_ML_STARTS 3
#endif
#ifndef LEAN_FM_PATIENCE
#define LEAN_FM_PATIENCE 15
#endif
#ifndef LEAN_FM_PASSES
#define LEAN_FM_PASSES 2	/* below LEAN_LARGE_N: the same costs as 4 on
				 * tests/bench/map (random 1024: -0.002%),
				 * 2% fewer instructions there */
#endif
#ifndef LEAN_PAIRS_EXACT_MAX
#define LEAN_PAIRS_EXACT_MAX 0
#endif
/* CM_PLACE_LEAN also adapts the effort below the first split of all the
 * threads to how much of the communication it had to cut (a free
 * predictor: that split is computed anyway).  Below LEAN_LOOSE_CUT the
 * graph falls apart into loosely linked pieces (clusters, pairs, rings):
 * greedy growing finds them, multilevel adds nothing.  Above
 * LEAN_EXPANDER_CUT it is an expander (random partners): coarsening pays
 * only for the largest splits.  In between (meshes) the lean default. */
#ifndef LEAN_LOOSE_CUT
#define LEAN_LOOSE_CUT 0.005
#endif
/* ... up to this many threads; above, LEAN_LOOSE_CUT x sqrt(this / n):
 * a 2D mesh's first cut falls as n^(-1/2) (0.8% of its weight at 2048
 * and 4096 threads, 0.43% at 8192, where the fixed threshold took the
 * 64 x 128 grid for loose pieces and cost 1.086 x Scotch), a ring's as
 * 1/n (0.05% at 4096, 0.024% at 8192), clusters' stay near 0.001%. */
#ifndef LEAN_LOOSE_REF_N
#define LEAN_LOOSE_REF_N 4096
#endif
#ifndef LEAN_EXPANDER_CUT
#define LEAN_EXPANDER_CUT 0.10
#endif
/* FM patience of the flat splits below a loose first split: greedy
 * growing takes whole groups there, and what FM still finds are single
 * swaps across the light links (a pair of moves); 15 moves without a gain
 * found nothing more on tests/bench/map (clusters, pairs, ring: the same
 * costs at every size with 1, 3, 6 or 15) and cost 9% of clusters16 at
 * 1024 threads. */
#ifndef LEAN_LOOSE_FM_PATIENCE
#define LEAN_LOOSE_FM_PATIENCE 3
#endif
#ifndef LEAN_EXPANDER_ML_MIN
#define LEAN_EXPANDER_ML_MIN 512
#endif
/* CM_PLACE_LEAN from LEAN_LARGE_N threads on (4096 on tests/bench/map),
 * where the time target leaves room (20 ms for 4096 threads, against 2 ms
 * for 1024): the lean settings cut the shuffled stencils 0.9-1.5% worse
 * than Scotch, and the loss was spread over every level of splits (each
 * cut 5-20% above the planes of a coordinate bisection).  Longer FM
 * passes were what paid best there (FM on meshes walks plateaus of equal
 * gains, and a short patience stops on them), with the full FM passes.
 * Two V-cycles for the splits of at least half of the threads and
 * multilevel down to 128 threads gained more but cost too much time
 * (LEAN_LARGE_TOP_TRIES, LEAN_LARGE_ML_MIN below).  These apply to the
 * first split, and below it to meshes (neither loose nor an expander:
 * clusters, pairs, rings and random graphs already cost no more than
 * Scotch there) (docs/PERFORMANCE.md, "Mapping").  Tried there and dropped: banded
 * diffusion (Pellegrini 2007) before FM at every level, exact planes on
 * the 3D grid only with 40 passes at 2.4x the instructions and no gain
 * in 2D; several grown starts for the small flat splits. */
#ifndef LEAN_LARGE_N
#define LEAN_LARGE_N 2048
#endif
#ifndef LEAN_LARGE_FM_PATIENCE
#define LEAN_LARGE_FM_PATIENCE 60
#endif
#ifndef LEAN_LARGE_ML_PATIENCE
#define LEAN_LARGE_ML_PATIENCE 40
#endif
#ifndef LEAN_LARGE_TOP_TRIES
#define LEAN_LARGE_TOP_TRIES 1
#endif
/* Two V-cycles at the top and multilevel down to 128 threads brought the
 * 4096 3D stencil level with Scotch, but took it to 21-23 ms on the
 * quiet 2-core Xeon VM, over the 20 ms target (the old path took
 * 15.5-18.6 ms there).  One V-cycle and multilevel from 256 threads
 * (the lean default) keep 15.9 ms, at 1.0036 (2D) and 1.0075 (3D) of
 * Scotch's cost, against 1.0096 and 1.0133 without the large effort
 * (docs/PERFORMANCE.md, "Mapping"). */
#ifndef LEAN_LARGE_ML_MIN
#define LEAN_LARGE_ML_MIN 256
#endif
/* CM_PLACE_LEAN from LEAN_COORD_MIN_N threads on, meshes: straight
 * splits (map_coords.c, hop distances from LEAN_COORD_PIVOTS pivots)
 * replace multilevel bisection when, at the first split, they cut no
 * more than it (try_straight()).  On the shuffled grids of 4096 threads
 * every split is then a plane: stencil2d 22400 and stencil3d 36352, the
 * costs of recursive coordinate bisection, 0.9932 and 1.0000 of Scotch
 * (0.9917-0.9981 and 0.9855-1.0000 over five seeds), in less time than
 * the multilevel splits (docs/PERFORMANCE.md, "Meshes at 4096
 * threads").  At 1024 threads the costs are already Scotch's or
 * lower and the straight splits cost more time than lean multilevel. */
#ifndef LEAN_COORD_PIVOTS
#define LEAN_COORD_PIVOTS 8
#endif
#ifndef LEAN_COORD_MIN_N
#define LEAN_COORD_MIN_N LEAN_LARGE_N
#endif
/* Meshes at large n whose straight splits do not win (above), below the
 * first split: two V-cycles (the better kept) for the splits of at least
 * n / LEAN_LARGE_MESH_SHARE threads.  One V-cycle leaves a cut 10-40%
 * above the planes about as often as not, and a jagged block is cut
 * worse at every level below it.  Measured on the grids with multilevel
 * splits only (before the straight ones), over five seeds at 4096
 * threads: stencil2d 1.0053 of Scotch on average (was 1.0068), stencil3d
 * 0.9976 (was 1.0024), for a third more work (docs/PERFORMANCE.md,
 * "Meshes at 4096 threads"). */
#ifndef LEAN_LARGE_MESH_SHARE
#define LEAN_LARGE_MESH_SHARE 8
#endif
#ifndef LEAN_LARGE_MESH_TRIES
#define LEAN_LARGE_MESH_TRIES 2
#endif

/* Nodes of pairs with up to this many threads are re-paired by an exact
 * matching (cm_place_improve_pairs()); above, greedy matching + 2-opt. */
#define PAIRS_EXACT_MAX 256

/* ---- placement context ----------------------------------------------- */

struct place {
	const struct cm_topo *topo;
	const struct cm_topo_node *nodes;	/* the tree's node array */
	const struct cm_matrix *m;
	unsigned flags;
	uint64_t seed;
	int n;
	int use_order;
	int *pu_of_thread;
	int *node_cap;
	int *spread;
	int *quota;		/* per node, scratch */
	signed char *side;	/* per thread: -1 outside the split, 0 A, 1 B */
	char *locked;		/* moved in this FM pass */
	char *ordered;		/* per thread: its group of threads is in
				 * an order of growing (grow_order()) */
	int push_neighbours;	/* move_thread() queues unlocked neighbours
				 * (PUSH_SIDE_B: only those on side B, the
				 * front of greedy growing) */
	double *gain;		/* FM gain of a move to the other side */
	double *tot;		/* weight to the other threads of the split */
	double eps;		/* gains below this are rounding noise */
	int *moves;
	int *buf;
	int *loc;		/* scratch for cm_bisect_multilevel(), -1 */
	signed char *ml_side;
	struct cm_heap heap[2];
	int *count;		/* per node: threads its parent gave it */
	struct cm_row_ref *ref;	/* the matrix's rows, looked up once */
	int ml_min;		/* splits of this many threads: multilevel */
	int effort_set;		/* CM_PLACE_LEAN: ml_min was adapted */
	int large;		/* CM_PLACE_LEAN with n >= LEAN_LARGE_N */
	int tot_inherited;	/* tot[] of the threads of the next split is
				 * already their weight to each other */
	int mesh;		/* the first split found neither a loose graph
				 * nor an expander */
	struct cm_coords coords;	/* pivot distances (try_straight()) */
	int try_coords;		/* large n: at the first split of a mesh */
	int geometric;		/* straight splits cut no more than it */
};

/* The sizes of one bisection: t threads, ta of them to side A, the
 * capacities of both sides; na: threads on side A so far. */
struct sizes {
	int t, ta, cap_a, cap_b, na;
};

/* Split t threads among children lo..hi-1 of node v by spread weight,
 * capped by capacity (map_groups_quota.c); writes quota[child node]. */
void cm_map_range_quota(const struct cm_topo *topo, const int *node_cap,
			const int *spread, int v, int lo, int hi, int t,
			int *quota);

/* Row x of the matrix (its own storage: a copy of all rows in one block
 * cost more in page faults than it saved in cache misses). */
static inline int cm_place_row(const struct place *p, int x,
			       const struct cm_matrix_entry **row)
{
	*row = p->ref[x].e;
	return p->ref[x].len;
}

/* Look the rows of p->m up once into p->ref, and set p->eps from the
 * largest weight (map_groups_split.c); 0 or -1. */
int cm_place_find_rows(struct place *p);

/* Split T into side A (first z->ta in the result) and B; returns |A|
 * (map_groups_split.c). */
int cm_place_bisect(struct place *p, int *T, struct sizes *z);

/* Re-pair the threads of every node of pairs by a matching
 * (map_groups_pairs.c); 0, or -1/ENOMEM (then the mapping is still the
 * valid one from before). */
int cm_place_improve_pairs(const struct place *p, int exact_max);

#endif
