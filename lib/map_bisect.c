/* map_bisect.c: multilevel graph bisection (the scheme of Scotch and
 * METIS: Hendrickson & Leland; Karypis & Kumar).
 *
 * Coarsen the graph by heavy-edge matching (pairs of threads joined by
 * their heaviest edge become one vertex) until it is small, bisect the
 * coarsest graph by greedy growing from several seeds, then project the
 * split back level by level, improving it with Fiduccia-Mattheyses passes
 * that keep the weight of side 0 within the heaviest vertex of the target.
 * Flat FM only sees one thread at a time; on meshes and random graphs the
 * coarse levels move whole regions, which flat FM cannot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/rand.h"
#include "map_bisect.h"
#include "map_groups.h"

/* Tuning (tests/bench/map); overridable for experiments. */
#ifndef COARSE_MAX
#define COARSE_MAX 40		/* stop coarsening at this many vertices */
#endif
#define MAX_LEVELS 32
#ifndef INIT_TRIES
#define INIT_TRIES 6		/* greedy-growing starts on the coarsest */
#endif
#ifndef REFINE_CYCLES
#define REFINE_CYCLES 2		/* refinement V-cycles after tries > 1 */
#endif
#ifndef ML_FM_PASSES
#define ML_FM_PASSES 4
#endif
#ifndef ML_FM_PATIENCE
#define ML_FM_PATIENCE 60
#endif

struct graph {
	int nv;
	int *xadj;		/* nv + 1 */
	int *adj;
	double *ew;
	int *vw;
	double *tot;		/* weight of each vertex's edges */
	int *cmap;		/* vertex -> vertex of the next coarser graph */
	signed char *part;	/* refinement V-cycle: the split kept while
				 * coarsening (only same-side pairs merge) */
	int maxvw;
};

/* Scratch shared by all levels (sized for the finest graph). */
struct work {
	double *gain;
	signed char *side;
	signed char *best_side;
	char *locked;
	int *moves;
	int *perm;
	int *mark;
	int push;		/* move_vertex() queues unlocked neighbours */
	int fm_passes, fm_patience, starts;
	struct cm_heap heap[2];
	double eps;
};

/* The arrays of a graph are one block, starting at ew (one allocation
 * per level instead of six: the levels of every multilevel split are
 * allocated and freed again). */
static void graph_free(struct graph *g)
{
	free(g->ew);
	free(g->part);
	memset(g, 0, sizeof(*g));
}

static int graph_alloc(struct graph *g, int nv, int nnz)
{
	size_t v = (size_t)(nv > 0 ? nv : 1), e = (size_t)(nnz > 0 ? nnz : 1);
	char *block = malloc((e + v) * sizeof(double) +
			     (v + 1 + e + 2 * v) * sizeof(int));

	memset(g, 0, sizeof(*g));
	if (!block) {
		errno = ENOMEM;
		return -1;
	}
	g->nv = nv;
	g->ew = (double *)block;
	g->tot = g->ew + e;
	g->xadj = (int *)(g->tot + v);
	g->adj = g->xadj + v + 1;
	g->vw = g->adj + e;
	g->cmap = g->vw + v;
	return 0;
}

/* Row x of m, from ref if there is one. */
static int row_of(const struct cm_matrix *m, const struct cm_row_ref *ref,
		  int x, const struct cm_matrix_entry **row)
{
	if (ref) {
		*row = ref[x].e;
		return ref[x].len;
	}
	return cm_matrix_row(m, x, row);
}

/* The subgraph of m induced by T, vertex i = T[i]. */
static int graph_from_threads(struct graph *g, const struct cm_matrix *m,
			      const struct cm_row_ref *r, const int *T,
			      int t, int *loc)
{
	int nnz = 0, k = 0;

	for (int i = 0; i < t; i++) {
		const struct cm_matrix_entry *row;

		loc[T[i]] = i;
		nnz += row_of(m, r, T[i], &row);
	}
	if (graph_alloc(g, t, nnz))
		return -1;
	g->maxvw = 1;
	for (int i = 0; i < t; i++) {
		const struct cm_matrix_entry *row;
		int deg = row_of(m, r, T[i], &row);
		double tot = 0;

		g->xadj[i] = k;
		g->vw[i] = 1;
		for (int j = 0; j < deg; j++) {	/* no branch: */
			int in = loc[row[j].col] >= 0;	/* slot k kept if in */

			g->adj[k] = loc[row[j].col];
			g->ew[k] = row[j].w;
			tot += cm_keep(row[j].w, in);
			k += in;
		}
		g->tot[i] = tot;
	}
	g->xadj[t] = k;
	return 0;
}

/* Heavy-edge matching in a seeded random order; match[] must hold nv
 * entries.  Returns the number of coarse vertices, cmap filled. */
static int match_heavy_edges(struct graph *g, int limit, uint64_t *rng,
			     int *match, int *perm)
{
	const int *adj = g->adj, *vw = g->vw;
	const double *ew = g->ew;
	const signed char *part = g->part;
	int *cmap = g->cmap;
	int nc = 0;

	for (int u = 0; u < g->nv; u++) {
		match[u] = -1;
		cmap[u] = -1;
		perm[u] = u;
	}
	cm_rand_shuffle(rng, perm, g->nv);
	for (int i = 0; i < g->nv; i++) {
		int u = perm[i], best = u;
		double bw = 0;

		if (match[u] >= 0)
			continue;
		/* the weight test first: on meshes most edges weigh the
		 * same, and it fails without reading match[] */
		for (int e = g->xadj[u], end = g->xadj[u + 1]; e < end; e++) {
			int v = adj[e];

			if (ew[e] > bw && match[v] < 0 && v != u &&
			    vw[u] + vw[v] <= limit &&
			    (!part || part[u] == part[v])) {
				best = v;
				bw = ew[e];
			}
		}
		match[u] = best;
		match[best] = u;
	}
	/* number the coarse vertices at their first member, without a
	 * branch (a member seen second writes the number it has again; the
	 * representative slot perm[nc] is kept only for a new one) */
	for (int u = 0; u < g->nv; u++) {
		int fresh = cmap[u] < 0;
		int cv = fresh ? nc : cmap[u];

		cmap[u] = cv;
		cmap[match[u]] = cv;
		perm[nc] = u;		/* representative */
		nc += fresh;
	}
	return nc;
}

/* Add the edges of fine vertex u to the coarse vertex cv of c being
 * built, merging those that reach the same coarse vertex through mark (-1
 * where unset; mark[cv] is the spare slot past the last edge, which takes
 * the edges inside cv).
 * Without branches: whether a coarse neighbour is new, or cv itself, is a
 * coin toss to the branch predictor on meshes (a seventh of the
 * mispredicted branches of a mapping of 1024 threads, cachegrind
 * --branch-sim).  Slot k is written for every edge and kept only when the
 * neighbour is new; a new weight is 0 + w, which is w.  The bounds and
 * arrays are in locals: the stores to int arrays could alias g->xadj as
 * far as the compiler knows. */
static int add_edges(const struct graph *g, struct graph *c, int u, int k,
		     int *mark)
{
	const int *adj = g->adj, *cmap = g->cmap;
	const double *ew = g->ew;
	int *cadj = c->adj;
	double *cew = c->ew;

	for (int e = g->xadj[u], end = g->xadj[u + 1]; e < end; e++) {
		int h = cmap[adj[e]];
		int at = mark[h];
		int fresh = at < 0;

		at = fresh ? k : at;
		cadj[k] = h;
		cew[k] = 0;
		cew[at] += ew[e];
		mark[h] = at;
		k += fresh;
	}
	return k;
}

/* Contract g along its matching into c (nc vertices, reps in perm). */
static int contract(const struct graph *g, struct graph *c, int nc,
		    const int *match, const int *perm, int *mark)
{
	int k = 0, spare = g->xadj[g->nv];	/* add_edges() */

	if (graph_alloc(c, nc, spare + 1))
		return -1;
	if (g->part) {
		c->part = malloc((size_t)nc);
		if (!c->part) {
			graph_free(c);
			errno = ENOMEM;
			return -1;
		}
		for (int cv = 0; cv < nc; cv++)
			c->part[cv] = g->part[perm[cv]];
	}
	c->maxvw = 1;
	for (int cv = 0; cv < nc; cv++) {
		int u = perm[cv], v = match[u];
		int start = k;
		double tot = 0;

		c->xadj[cv] = k;
		c->vw[cv] = g->vw[u];
		mark[cv] = spare;
		k = add_edges(g, c, u, k, mark);
		if (v != u) {
			c->vw[cv] += g->vw[v];
			k = add_edges(g, c, v, k, mark);
		}
		mark[cv] = -1;
		for (int e = start; e < k; e++) {
			mark[c->adj[e]] = -1;
			tot += c->ew[e];
		}
		c->tot[cv] = tot;
		if (c->vw[cv] > c->maxvw)
			c->maxvw = c->vw[cv];
	}
	c->xadj[nc] = k;
	return 0;
}

/* ---- FM with weighted vertices ----------------------------------------- */

static double gain_of(const struct graph *g, const struct work *w, int u)
{
	const signed char *side = w->side;
	int su = side[u];
	double gain = 0;

	for (int e = g->xadj[u], end = g->xadj[u + 1]; e < end; e++)
		gain += cm_signed(g->ew[e], side[g->adj[e]] != su);
	return gain;
}

static void compute_gains(const struct graph *g, struct work *w)
{
	for (int u = 0; u < g->nv; u++)
		w->gain[u] = gain_of(g, w, u);
}

/* The arrays and bounds are in locals: the heap calls could change
 * anything behind a pointer as far as the compiler knows. */
static void move_vertex(const struct graph *g, struct work *w, int u)
{
	const int *adj = g->adj;
	const double *ew = g->ew;
	signed char *side = w->side;
	double *gain = w->gain;
	const char *locked = w->locked;
	int to = !side[u], push = w->push;

	side[u] = (signed char)to;
	gain[u] = -gain[u];
	for (int e = g->xadj[u], end = g->xadj[u + 1]; e < end; e++) {
		int v = adj[e], inside = side[v] == to;	/* now */
		struct cm_heap *h = &w->heap[side[v]];

		gain[v] += cm_signed(2 * ew[e], !inside);
		if (cm_heap_contains(h, v)) {
			if (inside)
				cm_heap_lower(h, v);
			else
				cm_heap_raise(h, v);
			continue;
		}
		if (push && !locked[v])
			cm_heap_push(h, v);
	}
}

/* Move u back when the heaps are empty (the end of an FM pass): the gains
 * change as in move_vertex(), with no heap to look at. */
static void undo_move(const struct graph *g, struct work *w, int u)
{
	const int *adj = g->adj;
	const double *ew = g->ew;
	signed char *side = w->side;
	double *gain = w->gain;
	int to = !side[u];

	side[u] = (signed char)to;
	gain[u] = -gain[u];
	for (int e = g->xadj[u], end = g->xadj[u + 1]; e < end; e++)
		gain[adj[e]] += cm_signed(2 * ew[e], side[adj[e]] != to);
}

/* The vertices with edges to the other side, whose weight is (gain +
 * tot) / 2: no adjacency is scanned; what rounding leaves of a cancelled
 * sum is not an edge. */
static void push_border(const struct graph *g, struct work *w)
{
	for (int u = 0; u < g->nv; u++)
		cm_heap_append(&w->heap[w->side[u]], u,
			       w->gain[u] + g->tot[u] > 1e-9 * g->tot[u]);
	cm_heap_build(&w->heap[0]);
	cm_heap_build(&w->heap[1]);
}

static long long side_weight(const struct graph *g, const struct work *w)
{
	long long wa = 0;

	for (int u = 0; u < g->nv; u++)
		wa += (long long)(w->side[u] == 0) * g->vw[u];
	return wa;
}

/* Can u leave its side with the weight of side 0 ending within tol of ta,
 * or at least closer to it than now? */
static int feasible(const struct graph *g, const struct work *w, int u,
		    long long wa, long long ta, long long tol)
{
	long long after = w->side[u] == 0 ? wa - g->vw[u] : wa + g->vw[u];

	return llabs(after - ta) <= tol || llabs(after - ta) < llabs(wa - ta);
}

static int pick_move(const struct graph *g, const struct work *w,
		     long long wa, long long ta, long long tol)
{
	int best = -1;

	for (int s = 0; s < 2; s++) {
		int u;

		if (w->heap[s].len == 0)
			continue;
		u = w->heap[s].item[0];
		if (!feasible(g, w, u, wa, ta, tol))
			continue;
		if (best < 0 || w->gain[u] > w->gain[best])
			best = u;
	}
	return best;
}

/* One pass; returns the cut reduction kept (>= 0 unless the start was
 * out of balance and had to be repaired). */
static double fm_pass(const struct graph *g, struct work *w, long long ta,
		      long long tol)
{
	long long wa = side_weight(g, w);
	long long best_imb = llabs(wa - ta);
	double sum = 0, best = 0;
	int nmoves = 0, keep = 0, since = 0;

	push_border(g, w);
	w->push = 1;
	while (since <= w->fm_patience) {
		int u = pick_move(g, w, wa, ta, tol);
		long long imb;

		if (u < 0)
			break;
		cm_heap_remove(&w->heap[w->side[u]], u);
		sum += w->gain[u];
		wa += w->side[u] == 0 ? -g->vw[u] : g->vw[u];
		w->locked[u] = 1;
		move_vertex(g, w, u);
		w->moves[nmoves++] = u;
		since++;
		imb = llabs(wa - ta);
		if (best_imb > tol ? imb < best_imb ||
		    (imb == best_imb && sum > best + w->eps) :
		    imb <= tol && sum > best + w->eps) {
			best = sum;
			best_imb = imb;
			keep = nmoves;
			since = 0;
		}
	}
	w->push = 0;
	cm_heap_clear(&w->heap[0]);
	cm_heap_clear(&w->heap[1]);
	for (int k = 0; k < nmoves; k++)
		w->locked[w->moves[k]] = 0;
	while (nmoves > keep)
		undo_move(g, w, w->moves[--nmoves]);
	return best;
}

/* FM passes on one level; w->gain must be current. */
static void refine_level(const struct graph *g, struct work *w, long long ta)
{
	long long tol = g->maxvw;

	for (int pass = 0; pass < w->fm_passes; pass++)
		if (!(fm_pass(g, w, ta, tol) > w->eps))
			break;
}

/* ---- initial split of the coarsest graph ------------------------------- */

static double cut_of(const struct graph *g, const struct work *w)
{
	double cut = 0;

	for (int u = 0; u < g->nv; u++)
		for (int e = g->xadj[u]; e < g->xadj[u + 1]; e++)
			cut += cm_keep(g->ew[e],
				       w->side[g->adj[e]] != w->side[u]);
	return cut / 2;
}

/* Grow side 0 from seed by best gain among its neighbours until it
 * weighs about ta (a new seed when the region has no neighbours left). */
static void grow(const struct graph *g, struct work *w, int seed,
		 long long ta)
{
	struct cm_heap *front = &w->heap[1];
	long long wa = 0;
	int next = 0;

	memset(w->side, 1, (size_t)g->nv);
	compute_gains(g, w);
	while (wa < ta) {
		int u;

		if (front->len > 0) {
			u = front->item[0];
		} else if (w->side[seed] == 1) {
			u = seed;
		} else {
			while (next < g->nv && w->side[next] == 0)
				next++;
			if (next == g->nv)
				break;
			u = next;
		}
		/* stop short rather than overshoot by more */
		if (wa > 0 && wa + g->vw[u] - ta > ta - wa)
			break;
		if (cm_heap_contains(front, u))
			cm_heap_remove(front, u);
		wa += g->vw[u];
		move_vertex(g, w, u);
		for (int e = g->xadj[u]; e < g->xadj[u + 1]; e++) {
			int v = g->adj[e];

			if (w->side[v] == 1 && !cm_heap_contains(front, v))
				cm_heap_push(front, v);
		}
	}
	cm_heap_clear(front);
}

static void initial_split(const struct graph *g, struct work *w,
			  long long ta)
{
	double best_cut = -1;
	long long best_imb = 0;

	for (int k = 0; k < w->starts && k < g->nv; k++) {
		int seed = (int)((long long)k * g->nv / w->starts);
		long long imb;
		double cut;

		grow(g, w, seed, ta);	/* leaves the gains current */
		refine_level(g, w, ta);
		cut = cut_of(g, w);
		imb = llabs(side_weight(g, w) - ta);
		if (best_cut < 0 || imb < best_imb ||
		    (imb == best_imb && cut < best_cut - w->eps)) {
			best_cut = cut;
			best_imb = imb;
			memcpy(w->best_side, w->side, (size_t)g->nv);
		}
	}
	memcpy(w->side, w->best_side, (size_t)g->nv);
	compute_gains(g, w);
}

/* Project the split of coarse onto g (a vertex takes its coarse vertex's
 * side) with the gains of g.  A coarse vertex without an edge to the
 * other side has all its members' neighbours on its side, so their gain
 * is minus their edge weight, bitwise as a full scan would add it up; only
 * the members of coarse border vertices are scanned (as METIS projects
 * its boundary).  w->gain must be current on coarse.  A residue of the
 * coarse gain at most eps is no edge (rounding noise, as in FM).
 *
 * In place, from the last vertex down: a coarse vertex is numbered at its
 * first member (match_heavy_edges()), so cmap[u] <= u, and what vertex u
 * reads at cmap[u] is not yet overwritten by a fine value. */
static void project(const struct graph *g, const struct graph *coarse,
		    struct work *w)
{
	const int *cmap = g->cmap;
	signed char *side = w->side;
	double *gain = w->gain;

	for (int u = g->nv - 1; u >= 0; u--)
		side[u] = side[cmap[u]];
	for (int u = g->nv - 1; u >= 0; u--) {
		int c = cmap[u];

		gain[u] = gain[c] + coarse->tot[c] > w->eps ? gain_of(g, w, u)
							    : -g->tot[u];
	}
}

/* ---- driver ------------------------------------------------------------ */

static void work_free(struct work *w)
{
	free(w->gain);
	free(w->side);
	free(w->best_side);
	free(w->locked);
	free(w->moves);
	free(w->perm);
	free(w->mark);
	cm_heap_free(&w->heap[0]);
	cm_heap_free(&w->heap[1]);
}

static int work_alloc(struct work *w, int nv)
{
	size_t n = (size_t)(nv > 0 ? nv : 1);

	memset(w, 0, sizeof(*w));
	w->gain = calloc(n, sizeof(double));
	w->side = malloc(n);
	w->best_side = malloc(n);
	w->locked = calloc(n, 1);
	w->moves = malloc(n * sizeof(int));
	w->perm = malloc(n * sizeof(int));
	w->mark = malloc(n * sizeof(int));
	if (!w->gain || !w->side || !w->best_side || !w->locked ||
	    !w->moves || !w->perm || !w->mark ||
	    cm_heap_init(&w->heap[0], nv, w->gain) ||
	    cm_heap_init(&w->heap[1], nv, w->gain)) {
		work_free(w);
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < nv; i++)
		w->mark[i] = -1;
	return 0;
}

/* Coarsen level by level; returns the number of levels built (>= 1). */
static int coarsen(struct graph *lv, struct work *w, long long ta,
		   long long t, uint64_t *rng)
{
	long long small = ta < t - ta ? ta : t - ta;
	int limit = (int)(small / 8 > 1 ? small / 8 : 1);
	int nl = 1;

	while (nl < MAX_LEVELS && lv[nl - 1].nv > COARSE_MAX) {
		struct graph *g = &lv[nl - 1];
		int nc = match_heavy_edges(g, limit, rng, w->moves, w->perm);

		if (nc > g->nv - g->nv / 20)
			break;
		if (contract(g, &lv[nl], nc, w->moves, w->perm, w->mark))
			return -1;
		nl++;
	}
	return nl;
}

/* One V-cycle: coarsen, split the coarsest, project back with FM. */
static int v_cycle(struct graph *lv, struct work *w, int ta, uint64_t *rng)
{
	int nl = coarsen(lv, w, ta, lv[0].nv, rng);

	if (nl < 0)
		return -1;
	initial_split(&lv[nl - 1], w, ta);
	for (int l = nl - 2; l >= 0; l--) {
		project(&lv[l], &lv[l + 1], w);
		refine_level(&lv[l], w, ta);
	}
	for (int l = 1; l < nl; l++)
		graph_free(&lv[l]);
	return 0;
}

/* A refinement V-cycle (Karypis & Kumar): coarsen without merging across
 * the split in side, so that the coarsest graph carries it, and improve it
 * with FM on the way back; larger moves than FM on the threads alone. */
static int refine_cycle(struct graph *lv, struct work *w, int ta,
			uint64_t *rng, const signed char *side)
{
	int nl;

	lv[0].part = malloc((size_t)lv[0].nv);
	if (!lv[0].part) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(lv[0].part, side, (size_t)lv[0].nv);
	nl = coarsen(lv, w, ta, lv[0].nv, rng);
	if (nl < 0)
		return -1;
	memcpy(w->side, lv[nl - 1].part, (size_t)lv[nl - 1].nv);
	compute_gains(&lv[nl - 1], w);
	refine_level(&lv[nl - 1], w, ta);
	for (int l = nl - 2; l >= 0; l--) {
		project(&lv[l], &lv[l + 1], w);
		refine_level(&lv[l], w, ta);
	}
	for (int l = 1; l < nl; l++)
		graph_free(&lv[l]);
	free(lv[0].part);
	lv[0].part = NULL;
	return 0;
}

int cm_bisect_multilevel(const struct cm_matrix *m, const int *T, int t,
			 int ta, int tries, uint64_t seed, double eps,
			 int *loc, signed char *side)
{
	return cm_bisect_multilevel_effort(m, T, t, ta, tries, seed, eps,
					   NULL, loc, side, NULL, NULL);
}

int cm_bisect_multilevel_effort(const struct cm_matrix *m, const int *T,
				int t, int ta, int tries, uint64_t seed,
				double eps, const struct cm_bisect_effort *e,
				int *loc, signed char *side, double *gain,
				double *tot)
{
	return cm_bisect_multilevel_rows(m, NULL, T, t, ta, tries, seed, eps,
					 e, loc, side, gain, tot);
}

int cm_bisect_multilevel_rows(const struct cm_matrix *m,
			      const struct cm_row_ref *rows, const int *T,
			      int t, int ta, int tries, uint64_t seed,
			      double eps, const struct cm_bisect_effort *e,
			      int *loc, signed char *side, double *gain,
			      double *tot)
{
	struct graph lv[MAX_LEVELS];
	struct work w;
	uint64_t rng = seed ^ 0x9e3779b97f4a7c15ull;
	double best_cut = -1;
	long long best_imb = 0;
	int rv = -1, cycles, last_best = 0;

	memset(lv, 0, sizeof(lv));
	if (work_alloc(&w, t))
		return -1;
	w.eps = eps;
	w.fm_passes = e ? e->fm_passes : ML_FM_PASSES;
	w.fm_patience = e ? e->fm_patience : ML_FM_PATIENCE;
	w.starts = e && e->starts > 0 ? e->starts : INIT_TRIES;
	if (graph_from_threads(&lv[0], m, rows, T, t, loc))
		goto out;
	if (tries < 1)
		tries = 1;
	cycles = e ? e->refine_cycles : tries > 1 ? REFINE_CYCLES : 0;
	for (int k = 0; k < tries + cycles; k++) {
		long long imb;
		double cut;

		if (k < tries ? v_cycle(lv, &w, ta, &rng) :
		    refine_cycle(lv, &w, ta, &rng, side))
			goto out;
		if (tries + cycles == 1) {	/* nothing to compare */
			memcpy(side, w.side, (size_t)t);
			last_best = 1;
			break;
		}
		cut = cut_of(&lv[0], &w);
		imb = llabs(side_weight(&lv[0], &w) - ta);
		if (best_cut < 0 || imb < best_imb ||
		    (imb == best_imb && cut < best_cut - eps)) {
			best_cut = cut;
			best_imb = imb;
			memcpy(side, w.side, (size_t)t);
		}
		last_best = memcmp(side, w.side, (size_t)t) == 0;
	}
	if (gain) {
		/* FM leaves w.gain current for w.side */
		if (!last_best) {
			memcpy(w.side, side, (size_t)t);
			compute_gains(&lv[0], &w);
		}
		for (int i = 0; i < t; i++) {
			gain[T[i]] = w.gain[i];
			tot[T[i]] = lv[0].tot[i];
		}
	}
	rv = 0;
out:
	for (int i = 0; i < t; i++)
		loc[T[i]] = -1;
	for (int l = 0; l < MAX_LEVELS; l++)
		graph_free(&lv[l]);
	work_free(&w);
	return rv;
}
