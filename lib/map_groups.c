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
 * (cm_place_improve_pairs()).  CM_PLACE_LEAN trades a little quality for several
 * times less work ("auto" at large n).
 *
 * This file walks the tree; the parts are listed in map_groups_internal.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "map_groups.h"
#include "map_groups_internal.h"
#include "map_internal.h"

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
 * of two PUs?  Then cm_place_improve_pairs() pairs its threads by a matching,
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
	cm_map_range_quota(p->topo, p->node_cap, p->spread, v, lo, hi, t, p->quota);
	for (int c = lo; c < hi; c++) {
		if (c < mid) {
			z.ta += p->quota[first + c];
			z.cap_a += p->node_cap[first + c];
		} else {
			z.cap_b += p->node_cap[first + c];
		}
	}
	na = cm_place_bisect(p, T, &z);
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
	    !p->tot || !p->moves || !p->buf || cm_place_find_rows(p)) {
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
	    cm_place_improve_pairs(&p, flags & CM_PLACE_LEAN && !p.geometric
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
