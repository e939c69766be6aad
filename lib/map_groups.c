/* map_groups.c: top-down placement of threads onto the sharing tree.
 *
 * At every tree node the threads assigned to it are split among its
 * children.  A node with k children is handled as a binary tree of splits:
 * the children are cut in two halves of (nearly) equal capacity and the
 * threads are bisected between the halves, recursively, which is how
 * LHMapping's GroupsToTopology (§3.3, Algorithm 5) walks the tree, and how
 * dual recursive bipartitioning (Scotch) follows a target architecture.
 *
 * The sizes of the two sides are the spread quota: threads go over whole
 * cores and caches before any are doubled up (commap/mapping.h).  With
 * CM_PLACE_FM, every bisection is improved by Fiduccia-Mattheyses passes at
 * fixed sizes, then by single moves with a strictly positive gain into the
 * free capacity of the other side, so that threads that communicate are
 * stacked together and only those.  A node whose cores will each hold two
 * threads is not bisected at all: its threads are paired by a matching
 * (improve_pairs()).  CM_PLACE_LEAN trades a little quality for several
 * times less work ("auto" at large n).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "map_bisect.h"
#include "map_coords.h"
#include "map_groups.h"
#include "map_internal.h"
#include "matching.h"

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
 * matching (improve_pairs()); above, greedy matching + 2-opt. */
#define PAIRS_EXACT_MAX 256

/* ---- indexed max-heap ------------------------------------------------ */

/* Without branches: on meshes many gains are equal, and which of two
 * keys is larger is a coin toss to the branch predictor (the test was an
 * eighth of the mispredicted branches of a mapping of 1024 threads,
 * cachegrind --branch-sim). */
static int heap_before(const struct cm_heap *h, int a, int b)
{
	double ka = h->key[a], kb = h->key[b];

	return (ka > kb) | ((ka == kb) & (a < b));
}

/* 1 if child c's sibling c + 1 exists and goes first, else 0: added to
 * c, not branched on (which child is better is a coin toss). */
static int better_sibling(const struct cm_heap *h, const int *item, int c,
			  int len)
{
	int s = c + 1 < len ? c + 1 : c;	/* before(x, x) is 0 */

	return heap_before(h, item[s], item[c]);
}

static void heap_set(struct cm_heap *h, int i, int id)
{
	h->item[i] = id;
	h->pos[id] = i;
}

static void heap_sift_up(struct cm_heap *h, int i)
{
	int id = h->item[i];

	while (i > 0) {
		int parent = (i - 1) / 2;

		if (!heap_before(h, id, h->item[parent]))
			break;
		heap_set(h, i, h->item[parent]);
		i = parent;
	}
	heap_set(h, i, id);
}

static void heap_sift_down(struct cm_heap *h, int i)
{
	int id = h->item[i];

	for (;;) {
		int c = 2 * i + 1;

		if (c >= h->len)
			break;
		c += better_sibling(h, h->item, c, h->len);
		if (!heap_before(h, h->item[c], id))
			break;
		heap_set(h, i, h->item[c]);
		i = c;
	}
	heap_set(h, i, id);
}

int cm_heap_init(struct cm_heap *h, int n, const double *key)
{
	size_t sz = (size_t)(n > 0 ? n : 1) * sizeof(int);

	h->item = malloc(sz);
	h->pos = malloc(sz);
	h->key = key;
	h->len = 0;
	if (!h->item || !h->pos) {
		cm_heap_free(h);
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < n; i++)
		h->pos[i] = -1;
	return 0;
}

void cm_heap_free(struct cm_heap *h)
{
	free(h->item);
	free(h->pos);
	h->item = NULL;
	h->pos = NULL;
	h->len = 0;
}

void cm_heap_push(struct cm_heap *h, int id)
{
	heap_set(h, h->len, id);
	h->len++;
	heap_sift_up(h, h->len - 1);
}

/* Remove the top (Floyd's bottom-up deletion): the hole at the root
 * sinks along the path of better children to a leaf, one comparison per
 * level, and the last item rises into it from there.  The order is total
 * (ties by id), so the path and the place of the last item are those that
 * sifting the last item down from the root finds: the same heap, with
 * about half the comparisons (the last item is usually near the bottom). */
static void heap_remove_top(struct cm_heap *h)
{
	int *item = h->item;
	int len = h->len, i = 0;

	for (;;) {
		int c = 2 * i + 1;

		if (c >= len)
			break;
		c += better_sibling(h, item, c, len);
		heap_set(h, i, item[c]);
		i = c;
	}
	heap_set(h, i, item[len]);	/* the last item, just cut off */
	heap_sift_up(h, i);
}

void cm_heap_remove(struct cm_heap *h, int id)
{
	int i = h->pos[id];
	int last = h->item[--h->len];

	h->pos[id] = -1;
	if (i == h->len)
		return;
	if (i == 0) {
		heap_remove_top(h);
		return;
	}
	heap_set(h, i, last);
	heap_sift_up(h, i);
	heap_sift_down(h, h->pos[last]);
}

int cm_heap_pop(struct cm_heap *h)
{
	int id = h->item[0];

	cm_heap_remove(h, id);
	return id;
}

void cm_heap_update(struct cm_heap *h, int id)
{
	int i = h->pos[id];

	heap_sift_up(h, i);
	if (h->pos[id] == i)	/* did not rise: it may have to sink */
		heap_sift_down(h, i);
}

void cm_heap_raise(struct cm_heap *h, int id)
{
	heap_sift_up(h, h->pos[id]);
}

void cm_heap_lower(struct cm_heap *h, int id)
{
	heap_sift_down(h, h->pos[id]);
}

void cm_heap_build(struct cm_heap *h)
{
	for (int i = h->len / 2 - 1; i >= 0; i--)
		heap_sift_down(h, i);
}

void cm_heap_clear(struct cm_heap *h)
{
	for (int i = 0; i < h->len; i++)
		h->pos[h->item[i]] = -1;
	h->len = 0;
}

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
static void range_quota(const struct cm_topo *topo, const int *node_cap,
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
				range_quota(topo, node_cap, node_cap, i, 0,
					    node->nchildren, quota[i], quota);
		}
		return;
	}
	cm_map_spread_weight(topo, spread);
	quota[0] = n;
	for (int i = 0; i < nnodes; i++) {
		const struct cm_topo_node *node = &nodes[i];

		if (node->nchildren > 0)
			range_quota(topo, node_cap, spread, i, 0,
				    node->nchildren, quota[i], quota);
	}
	free(spread);
}

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

/* The extra effort of large n (LEAN_LARGE_N): for the first split, whose
 * cut says what the graph is, and below it for meshes. */
static int large_effort(const struct place *p)
{
	return p->large && (!p->effort_set || p->mesh);
}

/* The share of the weight under which a first cut means loosely linked
 * pieces (LEAN_LOOSE_CUT, LEAN_LOOSE_REF_N). */
static double loose_cut(const struct place *p)
{
	return p->n > LEAN_LOOSE_REF_N
	       ? LEAN_LOOSE_CUT * sqrt((double)LEAN_LOOSE_REF_N / p->n)
	       : LEAN_LOOSE_CUT;
}

/* A first cut of this share of the weight: neither loosely linked pieces
 * nor an expander (adapt_effort()). */
static int meshlike(const struct place *p, double share)
{
	return share >= loose_cut(p) && share <= LEAN_EXPANDER_CUT;
}

/* The first split found a loosely linked graph (LEAN_LOOSE_CUT). */
static int loose(const struct place *p)
{
	return p->effort_set && p->ml_min > p->n;
}

/* Row x of the matrix (its own storage: a copy of all rows in one block
 * cost more in page faults than it saved in cache misses). */
static int place_row(const struct place *p, int x,
		     const struct cm_matrix_entry **row)
{
	*row = p->ref[x].e;
	return p->ref[x].len;
}

/* Look the rows of m up once, and set eps from the largest weight (as
 * cm_matrix_max() finds it); 0 or -1. */
static int find_rows(struct place *p)
{
	double wmax = 0;

	p->ref = malloc(sizeof(*p->ref) * ((size_t)p->n + 1));
	if (!p->ref)
		return -1;
	for (int x = 0; x < p->n; x++) {
		const struct cm_matrix_entry *row;
		int deg = cm_matrix_row(p->m, x, &row);

		p->ref[x].e = row;
		p->ref[x].len = deg;
		for (int k = 0; k < deg; k++)
			if (row[k].w > wmax)
				wmax = row[k].w;
	}
	p->eps = 1e-12 * wmax;
	return 0;
}

#define PUSH_SIDE_B 2

/* Move x to the other side and update its neighbours' gains (and their
 * heap positions, wherever they are).  The arrays are in locals: the heap
 * calls could change anything behind p as far as the compiler knows. */
static void move_thread(struct place *p, int x)
{
	const struct cm_matrix_entry *row;
	int deg = place_row(p, x, &row);
	signed char *side = p->side;
	double *gain = p->gain;
	const char *locked = p->locked;
	int push = p->push_neighbours;
	int to = !side[x];

	side[x] = (signed char)to;
	gain[x] = -gain[x];
	for (int k = 0; k < deg; k++) {
		int y = row[k].col, sy = side[y];
		struct cm_heap *h = &p->heap[sy & 1];

		/* a thread outside the split (side -1) is never in a heap,
		 * and the gain it gets here is not read: the split of its
		 * own group sets its gain anew.  One branch less, and one
		 * that is a coin toss where splits are small. */
		gain[y] += cm_signed(2 * row[k].w, sy != to);
		if (cm_heap_contains(h, y)) {
			if (sy == to)	/* y's link now stays inside */
				cm_heap_lower(h, y);
			else
				cm_heap_raise(h, y);
			continue;
		}
		if ((sy >= 0) & (push != 0) & !locked[y] &
		    ((push != PUSH_SIDE_B) | (sy == 1)))
			cm_heap_push(h, y);
	}
}

/* Move x back when the heaps are empty (the end of an FM pass): the gains
 * change as in move_thread(), with no heap to look at. */
static void undo_thread(struct place *p, int x)
{
	const struct cm_matrix_entry *row;
	int deg = place_row(p, x, &row);
	int to = !p->side[x];

	p->side[x] = (signed char)to;
	p->gain[x] = -p->gain[x];
	for (int k = 0; k < deg; k++) {
		int y = row[k].col;

		/* outside the split: not read (move_thread()) */
		p->gain[y] += cm_signed(2 * row[k].w, p->side[y] != to);
	}
}

/* Queue the threads of T on the border (links to the other side): only
 * they can have a useful gain; others join when a neighbour moves.  The
 * weight to the other side is (gain + tot) / 2, so no row is scanned;
 * what rounding leaves of a cancelled sum is not a link. */
static void push_border(struct place *p, const int *T, int t)
{
	for (int i = 0; i < t; i++) {
		int x = T[i];

		cm_heap_append(&p->heap[p->side[x]], x,
			       p->gain[x] + p->tot[x] > 1e-9 * p->tot[x]);
	}
	cm_heap_build(&p->heap[0]);
	cm_heap_build(&p->heap[1]);
}

static void compute_gains(struct place *p, const int *T, int t)
{
	for (int i = 0; i < t; i++) {
		const struct cm_matrix_entry *row;
		int x = T[i];
		int deg = place_row(p, x, &row);
		double g = 0, tot = 0;

		for (int k = 0; k < deg; k++) {
			int y = row[k].col;

			if (p->side[y] >= 0) {
				g += p->side[y] != p->side[x] ? row[k].w
							      : -row[k].w;
				tot += row[k].w;
			}
		}
		p->gain[x] = g;
		p->tot[x] = tot;
	}
}

/* The last thread reached by a breadth-first search inside T: a
 * peripheral thread, a good seed for growing (George & Liu).  Called
 * before the first move, when every thread of T is on side B (side 1,
 * the rest -1): a reached thread is marked by side 2, so a link costs one
 * test (this search scans all of T's rows at every flat split, 10% of a
 * 1024-thread mapping of clusters16 with two tests). */
static int peripheral_thread(struct place *p, const int *T, int t)
{
	int *queue = p->moves;
	int head = 0, tail = 0, start = T[p->seed % (uint64_t)t];

	queue[tail++] = start;
	p->side[start] = 2;
	while (head < tail) {
		const struct cm_matrix_entry *row;
		int x = queue[head++];
		int deg = place_row(p, x, &row);

		for (int k = 0; k < deg; k++) {	/* no branch */
			int y = row[k].col, fresh = p->side[y] == 1;

			p->side[y] = (signed char)(fresh ? 2 : p->side[y]);
			queue[tail] = y;	/* kept if fresh; queue has
						 * room for one past T */
			tail += fresh;
		}
	}
	for (int i = 0; i < tail; i++)
		p->side[queue[i]] = 1;
	return queue[tail - 1];
}

/* Greedy graph growing: side A grows from a peripheral seed by the best
 * FM gain among the threads adjacent to it; when no thread is adjacent,
 * the first remaining thread of T seeds a new region. */
static void grow_side_a(struct place *p, const int *T, int t, int ta,
			int *order)
{
	struct cm_heap *front = &p->heap[1];
	int next = 0;

	/* All of T on side B: a gain is minus the weight to the rest of T,
	 * which the split that made T left in tot (bisect()). */
	if (p->tot_inherited)
		for (int i = 0; i < t; i++)
			p->gain[T[i]] = -p->tot[T[i]];
	else
		compute_gains(p, T, t);
	for (int placed = 0; placed < ta; placed++) {
		int x;

		if (front->len > 0) {
			x = cm_heap_pop(front);
		} else if (placed == 0) {
			x = peripheral_thread(p, T, t);
		} else {
			while (p->side[T[next]] != 1)
				next++;
			x = T[next];
		}
		/* the front gains x's neighbours on side B as x moves (the
		 * heap's order is total, so when they join does not matter) */
		p->push_neighbours = PUSH_SIDE_B;
		move_thread(p, x);
		p->push_neighbours = 0;
		if (order)
			order[placed] = x;
	}
	cm_heap_clear(front);
}

/* Loose graphs (LEAN_LOOSE_CUT), the first flat split of a group of
 * threads: grow side A over all of T instead of ta threads and keep the
 * order of growing in T; side A is its first ta threads, as growing ta
 * would have made it.  bisect() keeps the relative order of each side,
 * so the splits below cut the order of their threads (marked in
 * p->ordered) instead of growing again: prefixes of a growing order are
 * compact (whole groups, runs of a ring or of pairs), and FM then mends
 * the borders.  Greedy growing was a fifth of a mapping of 1024 threads
 * in groups of 16. */
static void grow_order(struct place *p, int *T, int t, int ta)
{
	grow_side_a(p, T, t, t, p->buf);
	for (int i = 0; i < t; i++) {
		T[i] = p->buf[i];
		p->side[T[i]] = i >= ta;
		p->ordered[T[i]] = 1;
	}
	compute_gains(p, T, t);
}

/* A gain counts only above rounding noise, so that moves cannot cycle. */
static int improved(const struct place *p, double now, double best)
{
	return now > best + p->eps;
}

/* FM tuning (tests/bench/map): a pass stops after this many moves without
 * a better balanced cut; at most this many passes per bisection. */
#ifndef FM_PATIENCE
#define FM_PATIENCE 50
#endif
#ifndef FM_PASSES
#define FM_PASSES 4
#endif

struct sizes {
	int t, ta, cap_a, cap_b, na;
};

/* Which side to move a thread from during an FM pass at fixed sizes: the
 * larger one when unbalanced, else the one with the better top gain (one
 * thread over a side's capacity is allowed in between: only balanced
 * states are ever kept); -1 if none. */
static int fm_pick_side(struct place *p, const struct sizes *z)
{
	int can_a = p->heap[0].len > 0;
	int can_b = p->heap[1].len > 0;

	if (z->na > z->ta)
		return can_a ? 0 : -1;
	if (z->na < z->ta)
		return can_b ? 1 : -1;
	if (can_a && can_b)
		return p->gain[p->heap[1].item[0]] >
		       p->gain[p->heap[0].item[0]];
	return can_a ? 0 : can_b ? 1 : -1;
}

/* One Fiduccia-Mattheyses pass: move every thread at most once, always
 * the best one, keep the best prefix that ends balanced.  Returns the cut
 * reduction. */
static double fm_pass(struct place *p, const int *T, struct sizes *z)
{
	int nmoves = 0, keep = 0, since = 0;
	int patience = !(p->flags & CM_PLACE_LEAN) ? FM_PATIENCE
		       : large_effort(p) ? LEAN_LARGE_FM_PATIENCE
		       : loose(p) ? LEAN_LOOSE_FM_PATIENCE
		       : LEAN_FM_PATIENCE;
	double sum = 0, best = 0;

	push_border(p, T, z->t);
	p->push_neighbours = 1;
	while (since <= patience) {
		int s = fm_pick_side(p, z);
		int x;

		if (s < 0)
			break;
		x = cm_heap_pop(&p->heap[s]);
		sum += p->gain[x];
		p->locked[x] = 1;
		move_thread(p, x);
		z->na += s == 1 ? 1 : -1;
		p->moves[nmoves++] = x;
		since++;
		if (z->na == z->ta && improved(p, sum, best)) {
			best = sum;
			keep = nmoves;
			since = 0;
		}
	}
	p->push_neighbours = 0;
	cm_heap_clear(&p->heap[0]);
	cm_heap_clear(&p->heap[1]);
	for (int k = 0; k < nmoves; k++)
		p->locked[p->moves[k]] = 0;
	while (nmoves > keep) {
		int x = p->moves[--nmoves];

		z->na += p->side[x] == 1 ? 1 : -1;
		undo_thread(p, x);
	}
	return best;
}

/* Moves with a strictly positive gain into free capacity: threads that
 * communicate leave the spread quota to sit together. */
static void stack_moves(struct place *p, const int *T, struct sizes *z)
{
	push_border(p, T, z->t);
	p->push_neighbours = 1;
	for (;;) {
		int can_a = p->heap[0].len > 0 && z->t - z->na + 1 <= z->cap_b;
		int can_b = p->heap[1].len > 0 && z->na + 1 <= z->cap_a;
		double ga = can_a ? p->gain[p->heap[0].item[0]] : 0;
		double gb = can_b ? p->gain[p->heap[1].item[0]] : 0;
		int s = gb > ga ? 1 : 0;
		int x;

		if (!improved(p, s ? gb : ga, 0))
			break;
		x = cm_heap_pop(&p->heap[s]);
		move_thread(p, x);
		cm_heap_push(&p->heap[!s], x);
		z->na += s == 1 ? 1 : -1;
	}
	p->push_neighbours = 0;
	cm_heap_clear(&p->heap[0]);
	cm_heap_clear(&p->heap[1]);
}

#define REBALANCE_SCAN_MAX 2

/* The thread of T on side s that a heap of side s would pop first: the
 * highest gain, the lowest id among equal gains. */
static int best_on_side(const struct place *p, const int *T, int t, int s)
{
	int best = -1;

	for (int i = 0; i < t; i++) {
		int x = T[i];

		if (p->side[x] != s)
			continue;
		if (best < 0 || p->gain[x] > p->gain[best] ||
		    (p->gain[x] == p->gain[best] && x < best))
			best = x;
	}
	return best;
}

/* Bring side A to exactly ta threads by moving the best-gain threads off
 * the larger side. */
static void rebalance(struct place *p, const int *T, struct sizes *z)
{
	int from = z->na > z->ta ? 0 : 1;

	if (z->na == z->ta)
		return;
	/* a multilevel split is one thread off at most: a scan for the one
	 * thread is cheaper than queueing a whole side */
	if (llabs((long long)z->na - z->ta) <= REBALANCE_SCAN_MAX) {
		while (z->na != z->ta) {
			move_thread(p, best_on_side(p, T, z->t, from));
			z->na += from == 1 ? 1 : -1;
		}
		return;
	}
	for (int i = 0; i < z->t; i++)
		if (p->side[T[i]] == from)
			cm_heap_push(&p->heap[from], T[i]);
	while (z->na != z->ta) {
		move_thread(p, cm_heap_pop(&p->heap[from]));
		z->na += from == 1 ? 1 : -1;
	}
	cm_heap_clear(&p->heap[from]);
}

/* Large splits: multilevel; side A may come out one thread off. */
static int multilevel_split(struct place *p, const int *T, struct sizes *z)
{
	static const struct cm_bisect_effort lean_effort = {
		LEAN_ML_PASSES, LEAN_ML_PATIENCE, 0, LEAN_ML_STARTS
	};
	int lean = (p->flags & CM_PLACE_LEAN) != 0;
	/* the splits near the root cut the most expensive links: more
	 * V-cycles there, unless lean */
	int tries = !lean && z->t * TOP_SHARE >= p->n && z->t >= 256 ?
		    TOP_TRIES : 1;
	struct cm_bisect_effort e = lean_effort;

	if (large_effort(p)) {
		e.fm_patience = LEAN_LARGE_ML_PATIENCE;
		if (2 * z->t >= p->n)
			tries = LEAN_LARGE_TOP_TRIES;
		if (p->mesh && (long long)LEAN_LARGE_MESH_SHARE * z->t >= p->n)
			tries = LEAN_LARGE_MESH_TRIES;
	}
	if (cm_bisect_multilevel_rows(p->m, p->ref, T, z->t, z->ta, tries,
				      p->seed, p->eps, lean ? &e : NULL,
				      p->loc, p->ml_side, p->gain, p->tot))
		return -1;
	z->na = 0;
	for (int i = 0; i < z->t; i++) {
		p->side[T[i]] = p->ml_side[i];
		z->na += p->ml_side[i] == 0;
	}
	rebalance(p, T, z);	/* the gains came with the split */
	return 0;
}

static int wants_multilevel(const struct place *p, const struct sizes *z)
{
	return !p->use_order && (p->flags & CM_PLACE_FM) &&
	       !(p->flags & CM_PLACE_FLAT) && z->t >= p->ml_min &&
	       z->ta > 0 && z->ta < z->t;
}

/* CM_PLACE_LEAN, after the first split of all n threads: the share of
 * the communication it cut sets ml_min for the splits below (see
 * LEAN_LOOSE_CUT).  Both sums count every link twice. */
static void adapt_effort(struct place *p, const int *T, int t)
{
	double cut = 0, total = 0, share;

	for (int i = 0; i < t; i++) {
		const struct cm_matrix_entry *row;
		int x = T[i];
		int deg = place_row(p, x, &row);

		for (int k = 0; k < deg; k++) {
			total += row[k].w;
			cut += cm_keep(row[k].w,
				       p->side[row[k].col] != p->side[x]);
		}
	}
	p->effort_set = 1;
	if (!(total > 0))
		return;
	share = cut / total;
	if (share < loose_cut(p)) {
		p->ml_min = p->n + 1;
	} else if (meshlike(p, share)) {
		p->mesh = 1;
		if (p->large && p->ml_min > LEAN_LARGE_ML_MIN)
			p->ml_min = LEAN_LARGE_ML_MIN;
	} else if (p->ml_min < LEAN_EXPANDER_ML_MIN) {	/* an expander */
		p->ml_min = LEAN_EXPANDER_ML_MIN;
	}
}

/* The starting split: multilevel, the given order cut after ta threads,
 * or greedy growing (also the fallback when multilevel runs out of
 * memory).  All of T starts on side B. */
static void initial_split(struct place *p, int *T, struct sizes *z)
{
	for (int i = 0; i < z->t; i++)
		p->side[T[i]] = 1;
	z->na = z->ta;
	if (wants_multilevel(p, z) && multilevel_split(p, T, z) == 0)
		return;
	if (p->use_order || p->ordered[T[0]]) {
		for (int i = 0; i < z->ta; i++)
			p->side[T[i]] = 0;
		compute_gains(p, T, z->t);
	} else if ((p->flags & CM_PLACE_LEAN) && loose(p) && z->ta > 0 &&
		   z->ta < z->t) {
		grow_order(p, T, z->t, z->ta);
	} else {
		grow_side_a(p, T, z->t, z->ta, NULL);
	}
}

/* FM passes at fixed sizes on the split of T. */
static void fm_passes(struct place *p, const int *T, struct sizes *z)
{
	if ((p->flags & CM_PLACE_FM) && z->t > 1) {
		/* large n: the full passes (random 4096 -0.04%, and no
		 * more instructions there) */
		int passes = p->flags & CM_PLACE_LEAN && !p->large
			     ? LEAN_FM_PASSES : FM_PASSES;

		for (int pass = 0; pass < passes; pass++)
			if (!improved(p, fm_pass(p, T, z), 0))
				break;
	}
}

/* A straight split (map_coords.c; prune: cm_coords_split()) improved by
 * FM passes, unless before them it cuts more than limit: -1 then (the
 * sides set, the gains not). */
static int coord_split(struct place *p, int *T, struct sizes *z, int prune,
		       double limit)
{
	if (cm_coords_split(&p->coords, p->ref, T, z->t, z->ta, prune,
			    p->side, p->moves) > limit)
		return -1;
	compute_gains(p, T, z->t);
	z->na = z->ta;
	fm_passes(p, T, z);
	return 0;
}

/* Weight cut by the split of T: a thread's weight to the other side is
 * (gain + tot) / 2, and the sum counts each link twice. */
static double split_cut(const struct place *p, const int *T, int t)
{
	double cut = 0;

	for (int i = 0; i < t; i++)
		cut += p->gain[T[i]] + p->tot[T[i]];
	return cut / 4;
}

/* Back to the split saved in p->ml_side. */
static void restore_split(struct place *p, const int *T, struct sizes *z)
{
	for (int i = 0; i < z->t; i++)
		p->side[T[i]] = p->ml_side[i];
	compute_gains(p, T, z->t);
	z->na = z->ta;
}

/* The first split of a large matrix of a mesh (the share of the weight
 * it cut is neither loose nor an expander's, as in adapt_effort()): is
 * the straight split as good as the multilevel one just made?  Then the
 * planes are the graph's best cuts, and every split below is straight
 * (p->geometric); else the multilevel split stays.  A straight split
 * that cuts more before FM is not refined. */
static void try_straight(struct place *p, int *T, struct sizes *z)
{
	double ml = split_cut(p, T, z->t), total = 0;

	for (int i = 0; i < z->t; i++)
		total += p->tot[T[i]];
	/* without them (out of memory) the splits stay multilevel */
	if (!meshlike(p, ml / (total / 2)) ||
	    cm_coords_init(&p->coords, p->ref, p->n, LEAN_COORD_PIVOTS,
			   p->seed) < 0)
		return;
	for (int i = 0; i < z->t; i++)
		p->ml_side[i] = p->side[T[i]];
	if (coord_split(p, T, z, 1, ml + p->eps) == 0 &&
	    split_cut(p, T, z->t) <= ml + p->eps)
		p->geometric = 1;
	else
		restore_split(p, T, z);
}

/* Split T into side A (first ta in the result) and B; returns |A|. */
static int bisect(struct place *p, int *T, struct sizes *z)
{
	int na = 0, next[2];
	int straight = p->try_coords && z->ta > 0 && z->ta < z->t &&
		       (p->geometric || (!p->effort_set && z->t == p->n));

	if (straight && p->geometric) {
		coord_split(p, T, z, 0, INFINITY);
	} else {
		initial_split(p, T, z);
		fm_passes(p, T, z);
		if (straight)
			try_straight(p, T, z);
	}
	if ((p->flags & CM_PLACE_FM) && z->t > 1 &&
	    z->t < z->cap_a + z->cap_b)
		stack_moves(p, T, z);
	if ((p->flags & CM_PLACE_LEAN) && !p->effort_set && z->t == p->n &&
	    z->ta > 0 && z->ta < z->t)
		adapt_effort(p, T, z->t);
	/* The gains are current: a thread's weight to its own side, which
	 * the next split of that side starts from, is (tot - gain) / 2; no
	 * row need be scanned again there. */
	for (int i = 0; i < z->t; i++) {
		p->tot[T[i]] = (p->tot[T[i]] - p->gain[T[i]]) / 2;
		na += p->side[T[i]] == 0;
	}
	p->tot_inherited = 1;
	/* stable partition: A first, B after, each in the order of T */
	next[0] = 0;
	next[1] = na;	/* indexed by side, not a branch: a coin toss */
	for (int i = 0; i < z->t; i++)
		p->buf[next[p->side[T[i]] != 0]++] = T[i];
	for (int i = 0; i < z->t; i++) {
		p->side[p->buf[i]] = -1;
		T[i] = p->buf[i];
	}
	return na;
}

/* Cut children lo..hi-1 of v in two halves of nearly equal capacity. */
static int split_children(const struct place *p, int v, int lo, int hi)
{
	int first = p->nodes[v].first_child;
	long long total = 0, left = 0, best_diff = -1;
	int best = lo + 1;

	for (int c = lo; c < hi; c++)
		total += p->node_cap[first + c];
	for (int mid = lo + 1; mid < hi; mid++) {
		long long diff;

		left += p->node_cap[first + mid - 1];
		diff = llabs(2 * left - total);
		if (best_diff < 0 || diff < best_diff) {
			best_diff = diff;
			best = mid;
		}
	}
	return best;
}

/* Does node v take exactly two threads on every child, each child a core
 * of two PUs?  Then improve_pairs() pairs its threads by a matching,
 * whatever bisection would have done (every link between two of its cores
 * costs the same), so bisecting below v is wasted work. */
static int full_pairs_node(const struct place *p, int v, int t)
{
	const struct cm_topo_node *node = &p->nodes[v];

	if (!(p->flags & CM_PLACE_FM) || node->nchildren < 2 ||
	    t != 2 * node->nchildren || t > PAIRS_EXACT_MAX)
		return 0;
	for (int k = 0; k < node->nchildren; k++) {
		const struct cm_topo_node *c =
			&p->nodes[node->first_child + k];

		if (c->pu >= 0 || c->nchildren != 2 ||
		    p->node_cap[node->first_child + k] != 2 ||
		    p->nodes[c->first_child].pu < 0 ||
		    p->nodes[c->first_child + 1].pu < 0)
			return 0;
	}
	return 1;
}

/* Two threads on each core of a full pairs node, in the order of T (a
 * bisection order keeps neighbours close; the matching decides). */
static void place_pairs_node(struct place *p, int v, const int *T)
{
	const struct cm_topo_node *node = &p->nodes[v];

	for (int k = 0; k < node->nchildren; k++) {
		const struct cm_topo_node *c =
			&p->nodes[node->first_child + k];

		p->pu_of_thread[T[2 * k]] =
			p->nodes[c->first_child].pu;
		p->pu_of_thread[T[2 * k + 1]] =
			p->nodes[c->first_child + 1].pu;
	}
}

/* Cut T among children lo..hi-1 of v by recursive bisection (halves of
 * the children, spread-quota sizes); T ends ordered by child, and child
 * c gets p->count[first child + c] threads. */
static void split_range(struct place *p, int v, int lo, int hi, int *T,
			int t)
{
	const struct cm_topo_node *node = &p->nodes[v];
	struct sizes z = { .t = t };
	int first = node->first_child, mid, na;

	if (hi - lo == 1 || t == 0) {
		for (int c = lo; c < hi; c++)
			p->count[first + c] = c == lo ? t : 0;
		return;
	}
	mid = split_children(p, v, lo, hi);
	range_quota(p->topo, p->node_cap, p->spread, v, lo, hi, t, p->quota);
	for (int c = lo; c < hi; c++) {
		if (c < mid) {
			z.ta += p->quota[first + c];
			z.cap_a += p->node_cap[first + c];
		} else {
			z.cap_b += p->node_cap[first + c];
		}
	}
	na = bisect(p, T, &z);
	split_range(p, v, lo, mid, T, na);
	split_range(p, v, mid, hi, T + na, t - na);
}

/* Place T under node v: split among the children, then recurse. */
static void place_node(struct place *p, int v, int *T, int t)
{
	const struct cm_topo_node *node = &p->nodes[v];
	int off = 0;

	if (t == 0)
		return;
	if (node->pu >= 0) {
		for (int i = 0; i < t; i++)
			p->pu_of_thread[T[i]] = node->pu;
		return;
	}
	if (full_pairs_node(p, v, t)) {
		place_pairs_node(p, v, T);
		return;
	}
	split_range(p, v, 0, node->nchildren, T, t);
	for (int c = 0; c < node->nchildren; c++) {
		int cnt = p->count[node->first_child + c];

		place_node(p, node->first_child + c, T + off, cnt);
		off += cnt;
	}
}

/* ---- pairs under a cache: a matching as the last step ----------------- */

/* Under a node whose children are cores holding two threads each, every
 * edge between different cores costs the node's weight, so the best
 * arrangement of those threads is a maximum-weight perfect matching of
 * them (SPCD §IV-B): recursive bisection only approximates it.  The set of
 * threads under the node does not change, so nothing else does.  A greedy
 * pairing that reaches an upper bound is taken as it is (usual on meshes
 * and clusters); otherwise the exact matching for up to exact_max
 * threads, greedy matching + 2-opt above. */

struct pairs_ctx {
	const struct cm_topo *topo;
	const struct cm_topo_node *nodes;	/* the tree's node array */
	const struct cm_matrix *m;
	const struct place *pl;	/* for its copy of the rows */
	int *pu_of_thread;
	int n;
	int *first, *second;	/* per node: its threads, -1 if none */
	int *loc;		/* thread -> index in the set, -1 */
	int *deg;		/* per index in the set: unpaired partners */
	double *best;		/* per index: heaviest edge in the set */
	int exact_max;		/* larger sets: greedy matching + 2-opt */
};

static int core_of_thread(const struct pairs_ctx *c, int t)
{
	int leaf = cm_topo_leaf_of_pu(c->topo, c->pu_of_thread[t]);

	return c->nodes[leaf].parent;
}

/* Does every child of v hold exactly two threads on PUs directly below
 * it? */
static int node_of_pairs(const struct pairs_ctx *c, int v)
{
	const struct cm_topo_node *node = &c->nodes[v];

	if (node->nchildren < 2)
		return 0;
	for (int k = 0; k < node->nchildren; k++) {
		int ch = node->first_child + k;

		if (c->nodes[ch].pu >= 0 || c->second[ch] < 0)
			return 0;
	}
	return 1;
}

/* Weight of the link a-b: a short row is scanned (cheaper than the
 * matrix's hash lookup, which was 1% of a mapping of 1024 threads: one
 * lookup per core); the same value either way. */
#define PAIR_SCAN_MAX 32

static double pair_weight(const struct pairs_ctx *c, int a, int b)
{
	const struct cm_matrix_entry *row;
	int deg = place_row(c->pl, a, &row);

	if (deg > PAIR_SCAN_MAX)
		return cm_matrix_get(c->m, a, b);
	for (int j = 0; j < deg; j++)
		if (row[j].col == b)
			return row[j].w;
	return 0;
}

static int match_threads(const struct pairs_ctx *c, const int *set, int k,
			 int *mate)
{
	struct cm_match_edge *edges;
	size_t ne = 0, cap = 0;
	int rv;

	for (int i = 0; i < k; i++) {
		const struct cm_matrix_entry *row;

		cap += (size_t)place_row(c->pl, set[i], &row);
	}
	edges = malloc(sizeof(*edges) * (cap ? cap : 1));
	if (!edges)
		return -1;
	for (int i = 0; i < k; i++) {
		const struct cm_matrix_entry *row;
		int deg = place_row(c->pl, set[i], &row);
		size_t start = ne;

		for (int j = 0; j < deg; j++) {
			int o = c->loc[row[j].col];

			if (o > i) {
				/* insertion by o: the edges come sorted, so
				 * the matching need not sort them */
				size_t at = ne++;

				while (at > start && edges[at - 1].v > o) {
					edges[at] = edges[at - 1];
					at--;
				}
				edges[at].u = i;
				edges[at].v = o;
				edges[at].w = row[j].w;
			}
		}
	}
	rv = k <= c->exact_max ? cm_matching_perfect(k, edges, ne, mate)
				  : cm_matching_perfect_greedy(k, edges, ne,
							       mate);
	free(edges);
	return rv;
}

/* Give pair j (by decreasing weight) the j-th core of v by increasing
 * distance between its two slots. */
static void assign_pairs(struct pairs_ctx *c, int v, const int *set,
			 const int *mate)
{
	const struct cm_topo_node *node = &c->nodes[v];
	int nc = node->nchildren, np = 0;
	int *pa = malloc(sizeof(int) * (size_t)nc * 5);
	double *pw = malloc(sizeof(double) * (size_t)nc);
	int *slot_a, *slot_b, *order, *sd;

	if (!pa || !pw)
		goto out;
	slot_a = pa + nc;
	slot_b = pa + 2 * nc;
	order = pa + 3 * nc;
	sd = pa + 4 * nc;
	for (int i = 0; i < 2 * nc; i++)
		if (mate[i] > i) {
			pw[np] = pair_weight(c, set[i], set[mate[i]]);
			pa[np++] = i;
		}
	for (int i = 0; i < nc; i++) {
		int ch = node->first_child + i;

		slot_a[i] = c->pu_of_thread[c->first[ch]];
		slot_b[i] = c->pu_of_thread[c->second[ch]];
		sd[i] = cm_topo_distance(c->topo, slot_a[i], slot_b[i]);
		order[i] = i;
	}
	/* insertion sorts (stable; both lists are short): pairs by
	 * decreasing weight, cores by increasing distance of their slots */
	for (int i = 1; i < np; i++)
		for (int j = i; j > 0 && pw[j] > pw[j - 1]; j--) {
			int tmp = pa[j];
			double tw = pw[j];

			pa[j] = pa[j - 1];
			pa[j - 1] = tmp;
			pw[j] = pw[j - 1];
			pw[j - 1] = tw;
		}
	for (int i = 1; i < nc; i++)
		for (int j = i; j > 0 && sd[order[j]] < sd[order[j - 1]]; j--) {
			int tmp = order[j];

			order[j] = order[j - 1];
			order[j - 1] = tmp;
		}
	for (int j = 0; j < np; j++) {
		c->pu_of_thread[set[pa[j]]] = slot_a[order[j]];
		c->pu_of_thread[set[mate[pa[j]]]] = slot_b[order[j]];
	}
out:
	free(pa);
	free(pw);
}

/* No pairing of the set weighs more than half the sum of each thread's
 * heaviest edge inside the set (best[i], 0 if none).  Also counts each
 * thread's partners in the set (c->deg[i]) for greedy_pairing(), in the
 * same scan. */
static double pairing_bound(const struct pairs_ctx *c, const int *set, int k,
			    double *best)
{
	double sum = 0;

	for (int i = 0; i < k; i++) {
		const struct cm_matrix_entry *row;
		int deg = place_row(c->pl, set[i], &row), in = 0;

		best[i] = 0;
		for (int j = 0; j < deg; j++) {
			int o = c->loc[row[j].col];
			double w = cm_keep(row[j].w, o >= 0);

			best[i] = w > best[i] ? w : best[i];	/* maxsd */
			in += (o >= 0) & (o != i);
		}
		c->deg[i] = in;
		sum += best[i];
	}
	return sum / 2;
}

/* A pairing reaches the bound only if every thread is paired along an
 * edge that is the heaviest of both its ends (or has no edge in the set):
 * 0 when one of the first REACH_CHECK threads has no such edge.  That
 * spares the greedy pairing, which cannot reach the bound then (on random
 * graphs the first few threads show it), and changes nothing else; on
 * meshes, where it usually can, only a few rows are scanned. */
#define REACH_CHECK 8

static int bound_reachable(const struct pairs_ctx *c, const int *set, int k,
			   const double *best)
{
	for (int i = 0; i < k && i < REACH_CHECK; i++) {
		const struct cm_matrix_entry *row;
		int deg = place_row(c->pl, set[i], &row), mutual = best[i] == 0;

		for (int j = 0; j < deg && !mutual; j++) {
			int o = c->loc[row[j].col];

			mutual = o >= 0 && o != i && row[j].w == best[i] &&
				 row[j].w == best[o];
		}
		if (!mutual)
			return 0;
	}
	return 1;
}

/* Unpaired partners of set[i] inside the set lose one: set[i] was paired.
 * With byd (k <= 64), each moves to the mask of its new degree. */
static void unlink_paired(const struct pairs_ctx *c, const int *set, int i,
			  const int *mate, uint64_t *byd)
{
	const struct cm_matrix_entry *row;
	int deg = place_row(c->pl, set[i], &row);

	for (int j = 0; j < deg; j++) {
		int o = c->loc[row[j].col];

		if (o >= 0 && o != i && mate[o] < 0) {
			if (byd) {
				byd[c->deg[o]] &= ~((uint64_t)1 << o);
				byd[c->deg[o] - 1] |= (uint64_t)1 << o;
			}
			c->deg[o]--;
		}
	}
}

/* The unpaired thread with the fewest unpaired partners (at least one),
 * ties: the lower index; -1 if none.  byd[d] (k <= 64) has bit i set for
 * each unpaired i with d partners: the first non-empty mask from d = 1
 * gives the same thread as the scan, without scanning the set at every
 * step (the scan was O(k^2) per node of pairs). */
static int fewest_partners(const struct pairs_ctx *c, int k, const int *mate,
			   const uint64_t *byd)
{
	int u = -1;

	if (byd) {
		for (int d = 1; d < k; d++)
			if (byd[d])
				return __builtin_ctzll(byd[d]);
		return -1;
	}
	/* (one partner left is the fewest there can be: the first such
	 * thread is the one) */
	for (int i = 0; i < k && (u < 0 || c->deg[u] > 1); i++)
		if (mate[i] < 0 && c->deg[i] > 0 &&
		    (u < 0 || c->deg[i] < c->deg[u]))
			u = i;
	return u;
}

/* The heaviest unpaired partner of set[i] in the set (ties: the lower
 * index), -1 if none; its weight in *w. */
static int heaviest_unpaired(const struct pairs_ctx *c, const int *set,
			     int i, const int *mate, double *w)
{
	const struct cm_matrix_entry *row;
	int deg = place_row(c->pl, set[i], &row), best = -1;

	*w = 0;
	for (int j = 0; j < deg; j++) {
		int o = c->loc[row[j].col];

		if (o < 0 || o == i || mate[o] >= 0)
			continue;
		if (best < 0 || row[j].w > *w || (row[j].w == *w && o < best)) {
			best = o;
			*w = row[j].w;
		}
	}
	return best;
}

/* Greedy pairing in Karp-Sipser order: the thread with the fewest unpaired
 * partners goes first (with one left it must take it or lose it), with
 * its heaviest unpaired partner; threads left without partners are paired
 * in order.  On meshes and clusters this usually reaches the bound, so the
 * exact matching is not needed.  c->deg must hold the partners in the set
 * (pairing_bound()).  Returns the weight. */
static double greedy_pairing(const struct pairs_ctx *c, const int *set,
			     int k, int *mate)
{
	double total = 0, w;
	int pending = -1;
	uint64_t masks[64], *byd = k <= 64 ? masks : NULL;

	if (byd)
		memset(masks, 0, sizeof(masks));
	for (int i = 0; i < k; i++) {
		mate[i] = -1;	/* c->deg[i]: from pairing_bound() */
		if (c->deg[i] >= k)	/* a column listed twice: scan */
			byd = NULL;
		if (byd)
			byd[c->deg[i]] |= (uint64_t)1 << i;
	}
	for (;;) {
		int u = fewest_partners(c, k, mate, byd), b;

		if (u < 0)
			break;
		b = heaviest_unpaired(c, set, u, mate, &w);
		mate[u] = b;
		mate[b] = u;
		if (byd) {
			byd[c->deg[u]] &= ~((uint64_t)1 << u);
			byd[c->deg[b]] &= ~((uint64_t)1 << b);
		}
		total += w;
		unlink_paired(c, set, u, mate, byd);
		unlink_paired(c, set, b, mate, byd);
	}
	for (int i = 0; i < k; i++) {
		if (mate[i] >= 0)
			continue;
		if (pending < 0) {
			pending = i;
		} else {
			mate[i] = pending;
			mate[pending] = i;
			pending = -1;
		}
	}
	return total;
}

/* A heavier pairing of the set than the current one (weight now) in
 * mate: 1, or 0 if there is none.  The exact matching runs only when the
 * current and the greedy pairing both stay below the bound. */
static int better_pairing(const struct pairs_ctx *c, const int *set, int k,
			  double now, int *mate)
{
	double bound = pairing_bound(c, set, k, c->best), then = 0;
	double tol = 1e-12 * bound;

	if (now >= bound - tol)
		return 0;
	if (bound_reachable(c, set, k, c->best) &&
	    greedy_pairing(c, set, k, mate) >= bound - tol)
		return 1;
	if (match_threads(c, set, k, mate))
		return 0;
	for (int i = 0; i < k; i++)
		if (mate[i] > i)
			then += pair_weight(c, set[i], set[mate[i]]);
	return then > now * (1 + 1e-12);
}

/* Re-pair the threads under v; the heaviest pairs go to the cores whose
 * two PUs are closest (the same PU when oversubscribed). */
static void repair_node(struct pairs_ctx *c, int v, int *set, int *mate)
{
	const struct cm_topo_node *node = &c->nodes[v];
	int k = 0;
	double now = 0;

	for (int i = 0; i < node->nchildren; i++) {
		int ch = node->first_child + i;

		set[k++] = c->first[ch];
		set[k++] = c->second[ch];
		now += pair_weight(c, c->first[ch], c->second[ch]);
	}
	for (int i = 0; i < k; i++)
		c->loc[set[i]] = i;
	if (better_pairing(c, set, k, now, mate))
		assign_pairs(c, v, set, mate);
	for (int i = 0; i < k; i++)
		c->loc[set[i]] = -1;
}

/* Apply repair_node() to every node of pairs; 0, or -1/ENOMEM (then the
 * mapping is still the valid one from before). */
static int improve_pairs(const struct place *p, int exact_max)
{
	const struct cm_topo *topo = p->topo;
	int nnodes = cm_topo_nnodes(topo), n = p->n;
	struct pairs_ctx c = { .topo = topo, .nodes = p->nodes, .m = p->m,
			       .pl = p, .pu_of_thread = p->pu_of_thread, .n = n,
			       .exact_max = exact_max };
	int *set = malloc(sizeof(int) * (size_t)n * 2);
	int rv = -1;

	c.first = malloc(sizeof(int) * (size_t)nnodes * 2);
	c.loc = malloc(sizeof(int) * (size_t)n);
	c.deg = malloc(sizeof(int) * (size_t)n);
	c.best = malloc(sizeof(double) * (size_t)n);
	if (!set || !c.first || !c.loc || !c.deg || !c.best)
		goto out;
	c.second = c.first + nnodes;
	for (int i = 0; i < 2 * nnodes; i++)
		c.first[i] = -1;
	for (int t = 0; t < n; t++) {
		int core = core_of_thread(&c, t);

		c.loc[t] = -1;
		if (c.first[core] < 0)
			c.first[core] = t;
		else if (c.second[core] < 0)
			c.second[core] = t;
		else
			c.second[core] = n;	/* three or more: not a pair */
	}
	for (int i = 0; i < nnodes; i++) {
		if (c.second[i] == n) {
			c.first[i] = -1;
			c.second[i] = -1;
		}
	}
	for (int v = 0; v < nnodes; v++)
		if (node_of_pairs(&c, v))
			repair_node(&c, v, set, set + n);
	rv = 0;
out:
	free(set);
	free(c.first);
	free(c.loc);
	free(c.deg);
	free(c.best);
	return rv;
}

static void place_free(struct place *p)
{
	free(p->node_cap);
	free(p->spread);
	free(p->quota);
	free(p->side);
	free(p->locked);
	free(p->ordered);
	free(p->gain);
	free(p->tot);
	free(p->moves);
	free(p->buf);
	free(p->loc);
	free(p->ml_side);
	free(p->count);
	free(p->ref);
	cm_coords_free(&p->coords);
	cm_heap_free(&p->heap[0]);
	cm_heap_free(&p->heap[1]);
}

static int place_alloc(struct place *p, int n, int nnodes)
{
	size_t nn = (size_t)(n > 0 ? n : 1), nk = (size_t)nnodes;

	p->node_cap = malloc(nk * sizeof(int));
	p->spread = malloc(nk * sizeof(int));
	p->quota = malloc(nk * sizeof(int));
	p->side = malloc(nn);
	p->locked = calloc(nn, 1);
	p->ordered = calloc(nn, 1);
	p->gain = calloc(nn, sizeof(double));
	p->tot = calloc(nn, sizeof(double));
	p->moves = malloc((nn + 1) * sizeof(int));	/* peripheral_thread() */
	p->buf = malloc(nn * sizeof(int));
	p->loc = malloc(nn * sizeof(int));
	p->ml_side = malloc(nn);
	p->count = malloc(nk * sizeof(int));
	if (!p->loc || !p->ml_side || !p->count ||
	    cm_heap_init(&p->heap[0], n, p->gain) ||
	    cm_heap_init(&p->heap[1], n, p->gain) || !p->node_cap ||
	    !p->spread || !p->quota || !p->side || !p->locked ||
	    !p->ordered || !p->gain ||
	    !p->tot || !p->moves || !p->buf || find_rows(p)) {
		place_free(p);
		errno = ENOMEM;
		return -1;
	}
	memset(p->side, -1, nn);
	for (int i = 0; i < n; i++)
		p->loc[i] = -1;
	return 0;
}

int cm_map_place(const struct cm_topo *topo, const struct cm_matrix *m,
		 const int *cap, const int *order, unsigned flags,
		 int *pu_of_thread)
{
	return cm_map_place_seeded(topo, m, cap, order, flags, 0,
				   pu_of_thread);
}

int cm_map_place_seeded(const struct cm_topo *topo,
			const struct cm_matrix *m, const int *cap,
			const int *order, unsigned flags, uint64_t seed,
			int *pu_of_thread)
{
	struct place p = { .topo = topo, .nodes = cm_topo_node(topo, 0),
			   .m = m, .flags = flags, .seed = seed,
			   .n = cm_matrix_nthreads(m),
			   .use_order = order != NULL,
			   .pu_of_thread = pu_of_thread };
	int n = cm_matrix_nthreads(m);
	int *T;

	if (n == 0)
		return 0;
	if (place_alloc(&p, n, cm_topo_nnodes(topo)))
		return -1;
	T = malloc(sizeof(int) * (size_t)n);
	if (!T) {
		place_free(&p);
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < n; i++)
		T[i] = order ? order[i] : i;
	p.ml_min = flags & CM_PLACE_LEAN ? LEAN_ML_MIN : MULTILEVEL_MIN;
	p.large = (flags & CM_PLACE_LEAN) && n >= LEAN_LARGE_N;
	p.try_coords = (flags & CM_PLACE_LEAN) && n >= LEAN_COORD_MIN_N;
	cm_map_node_capacity(topo, cap, p.node_cap);
	cm_map_spread_weight(topo, p.spread);
	place_node(&p, 0, T, n);
	free(T);
	if ((flags & CM_PLACE_FM) &&
	    improve_pairs(&p, flags & CM_PLACE_LEAN && !p.geometric
			      ? LEAN_PAIRS_EXACT_MAX : PAIRS_EXACT_MAX)) {
		place_free(&p);
		errno = ENOMEM;
		return -1;
	}
	place_free(&p);
	return 0;
}

int cm_map_by_order(const struct cm_topo *topo, const struct cm_matrix *m,
		    const struct cm_map_options *opts, const char *name,
		    cm_map_order_fn order_fn, int *pu_of_thread,
		    struct cm_error *err)
{
	int n, *cap = NULL, *order = NULL, rv = -1;

	if (!topo || !m || !opts || (!pu_of_thread && cm_matrix_nthreads(m)))
		return cm_errorf(err, EINVAL, "%s: missing topology, matrix, "
				 "options or output", name);
	n = cm_matrix_nthreads(m);
	if (n == 0)
		return 0;
	cap = malloc(sizeof(int) * (size_t)(cm_topo_npus(topo) + 1));
	order = malloc(sizeof(int) * (size_t)n);
	if (!cap || !order) {
		cm_errorf(err, ENOMEM, "%s: out of memory", name);
		goto out;
	}
	if (cm_map_capacity(topo, n, opts->oversubscribe, cap, err))
		goto out;
	errno = 0;
	if (order_fn(topo, m, cap, order) ||
	    cm_map_place(topo, m, cap, order, 0, pu_of_thread)) {
		cm_errorf(err, errno ? errno : ENOMEM,
			  "%s of %d threads: out of memory", name, n);
		goto out;
	}
	rv = 0;
out:
	free(cap);
	free(order);
	return rv;
}
