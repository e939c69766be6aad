/* map_refine.c: local improvement of a mapping (docs/cost.md "Refine").
 *
 * Kernighan-Lin style, but local so that it scales to thousands of
 * threads on sparse matrices: a thread u is only offered positions near
 * its heaviest partners (the PUs of the partner's core, then of the next
 * tree levels up to a budget of PUs, only at levels closer to the partner
 * than u is now).  For each such PU b the gain of moving u there (if b has
 * room) and of swapping u with every thread on b is computed exactly from
 * the two threads' matrix rows, and the best strictly improving action is
 * applied.  Threads whose neighbourhood changed are queued again, until the
 * queue is empty or a pass limit is reached.  Every accepted action lowers
 * cm_cost() by more than a tiny relative epsilon, so the cost never rises
 * and the loop cannot cycle on rounding.  Loads: a PU never receives more
 * threads than max(cm_map_capacity(), its load on entry), and with
 * oversubscription never drops below floor(n / npus), so a valid mapping
 * stays valid (cm_map_validate()).  cm_map_refine_effort() bounds the
 * work (fewer partners and PUs, fewer passes, a stop when the gain per
 * visit falls too low) for auto's lean path at large n.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "map_internal.h"
#include "map_refine.h"

#define TOP_PARTNERS 3		/* partners whose surroundings are tried */
#define PU_BUDGET 16		/* PUs tried around one partner */
#define MAX_PASSES 16		/* visits per thread, on average */
#define TOP_UNKNOWN (-2)	/* top partners not looked up yet */

static const struct cm_refine_effort default_effort = {
	TOP_PARTNERS, PU_BUDGET, MAX_PASSES, 0
};

struct refine {
	const struct cm_matrix *m;
	int n, npus;
	int *pos;			/* the mapping being improved */
	/* the tree, compacted: parent, PU range and weight of each node */
	int *parent, *lo, *cnt, *weight, *leaf;
	int *limit, *load, floor_load;	/* per PU */
	int *slot_start, *slots, *slot_of;	/* threads on each PU */
	int *top;			/* n * TOP_PARTNERS, -1 padded */
	double *contrib;		/* each thread's share of the cost */
	int *in_pu;			/* scratch for struct region, */
	double *in_w;			/* as long as the longest row */
	int *queue;
	char *queued;
	int head, count;
	double eps;
	double gained;			/* cost removed so far */
	struct cm_refine_effort e;	/* partners <= TOP_PARTNERS */
};

struct action {
	double delta;
	int b;		/* target PU */
	int y;		/* thread to swap with, -1 for a move */
};

static int dist(const struct refine *r, int a, int b)
{
	int v;

	if (a == b)
		return 0;
	v = r->leaf[a];
	while (b < r->lo[v] || b >= r->lo[v] + r->cnt[v])
		v = r->parent[v];
	return r->weight[v];
}

/* Cost of thread u's edges with u on PU b, counting thread ex (if >= 0)
 * as being on PU ex_pu. */
static double cost_at(const struct refine *r, int u, int b, int ex,
		      int ex_pu)
{
	const struct cm_matrix_entry *e;
	int len = cm_matrix_row(r->m, u, &e);
	double c = 0;

	for (int k = 0; k < len; k++) {
		int q = e[k].col == ex ? ex_pu : r->pos[e[k].col];

		c += e[k].w * dist(r, b, q);
	}
	return c;
}

static void consider(struct action *best, double delta, int b, int y)
{
	if (delta < best->delta) {
		best->delta = delta;
		best->b = b;
		best->y = y;
	}
}

/* u's edges split for a region (the subtree of node x): the partners
 * outside it are at the same distance from every PU of the region, so
 * their cost is one number; the few inside are kept in a list. */
struct region {
	double outside;		/* also a lower bound on u's cost there */
	int lo, hi;		/* its PUs */
	int nin;
	int *in_pu;		/* PU of each partner inside */
	double *in_w;
};

static void split_region(const struct refine *r, int u, int x,
			 struct region *g)
{
	const struct cm_matrix_entry *e;
	int len = cm_matrix_row(r->m, u, &e);

	g->outside = 0;
	g->nin = 0;
	for (int k = 0; k < len; k++) {
		int q = r->pos[e[k].col], v = x;

		if (q >= r->lo[x] && q < r->lo[x] + r->cnt[x]) {
			g->in_pu[g->nin] = q;
			g->in_w[g->nin++] = e[k].w;
			continue;
		}
		while (q < r->lo[v] || q >= r->lo[v] + r->cnt[v])
			v = r->parent[v];
		g->outside += e[k].w * r->weight[v];
	}
}

/* u's cost on PU b of the region, any thread on b counted at distance 0. */
static double region_cost(const struct refine *r, const struct region *g,
			  int b)
{
	double c = g->outside;

	for (int k = 0; k < g->nin; k++)
		c += g->in_w[k] * dist(r, b, g->in_pu[k]);
	return c;
}

/* Weight of the edge u-y (0 if none). */
static double edge_weight(const struct refine *r, int u, int y)
{
	const struct cm_matrix_entry *e;
	int len = cm_matrix_row(r->m, u, &e);

	for (int k = 0; k < len; k++)
		if (e[k].col == y)
			return e[k].w;
	return 0;
}

/* Gains of moving u to PU b and of swapping u with each thread on b.
 * Swaps are only priced when u itself gains from b (the ones that only
 * help the other thread are found when that thread is visited). */
static void try_pu(const struct refine *r, int u, int b,
		   const struct region *g, struct action *best)
{
	int a = r->pos[u];
	double cu;

	if (b == a)
		return;
	cu = region_cost(r, g, b);
	if (cu >= r->contrib[u] - r->eps)
		return;
	if (r->load[b] < r->limit[b] && r->load[a] > r->floor_load)
		consider(best, cu - r->contrib[u], b, -1);
	for (int s = 0; s < r->load[b]; s++) {
		int y = r->slots[r->slot_start[b] + s];
		double d = cu + edge_weight(r, u, y) * dist(r, a, b) -
			   r->contrib[u] +
			   cost_at(r, y, a, u, b) - r->contrib[y];

		consider(best, d, b, y);
	}
}

/* Try the PUs of [lo, hi) outward from the part [*done_lo, *done_hi)
 * already tried, alternating sides, within the budget. */
static void try_range(const struct refine *r, int u, const struct region *g,
		      int *done_lo, int *done_hi, int *budget,
		      struct action *best)
{
	int lo = g->lo, hi = g->hi;

	while (*budget > 0 && (*done_lo > lo || *done_hi < hi)) {
		if (*done_hi < hi) {
			try_pu(r, u, (*done_hi)++, g, best);
			--*budget;
		}
		if (*done_lo > lo && *budget > 0) {
			try_pu(r, u, --*done_lo, g, best);
			--*budget;
		}
	}
}

/* The PUs around partner PU q at the levels closer to q than u's PU is,
 * lowest level first, at most the effort's PU budget of them; levels
 * where u cannot gain (its cost there is at least the outside part) are
 * skipped. */
static void try_near(struct refine *r, int u, int q, struct action *best)
{
	int dq = dist(r, r->pos[u], q), budget = r->e.pu_budget;
	int done_lo = q, done_hi = q + 1;	/* PUs tried so far */
	struct region g = { .in_pu = r->in_pu, .in_w = r->in_w };

	if (dq == 0)
		return;
	split_region(r, u, r->leaf[q], &g);
	if (g.outside < r->contrib[u] - r->eps)
		try_pu(r, u, q, &g, best);
	for (int v = r->parent[r->leaf[q]]; v >= 0 && budget > 0;
	     v = r->parent[v]) {
		if (r->weight[v] >= dq)
			break;
		split_region(r, u, v, &g);
		if (g.outside >= r->contrib[u] - r->eps)
			continue;
		g.lo = r->lo[v];
		g.hi = r->lo[v] + r->cnt[v];
		try_range(r, u, &g, &done_lo, &done_hi, &budget, best);
	}
}

static void enqueue(struct refine *r, int t)
{
	if (r->queued[t])
		return;
	r->queued[t] = 1;
	r->queue[(r->head + r->count++) % r->n] = t;
}

/* Slot bookkeeping: the threads on each PU. */
static void slot_remove(struct refine *r, int t)
{
	int a = r->pos[t];
	int last = r->slots[r->slot_start[a] + --r->load[a]];

	r->slots[r->slot_of[t]] = last;
	r->slot_of[last] = r->slot_of[t];
}

static void slot_add(struct refine *r, int t, int b)
{
	r->slot_of[t] = r->slot_start[b] + r->load[b]++;
	r->slots[r->slot_of[t]] = t;
}

static void slot_swap(struct refine *r, int u, int y)
{
	int su = r->slot_of[u], sy = r->slot_of[y];

	r->slots[su] = y;
	r->slots[sy] = u;
	r->slot_of[u] = sy;
	r->slot_of[y] = su;
}

/* Set pos[t] = b, keeping every thread's contribution exact, and queue t
 * and its partners (their costs changed). */
static void relocate(struct refine *r, int t, int b)
{
	const struct cm_matrix_entry *e;
	int len = cm_matrix_row(r->m, t, &e), a = r->pos[t];

	for (int k = 0; k < len; k++) {
		int v = e[k].col;
		double dd = dist(r, b, r->pos[v]) - dist(r, a, r->pos[v]);

		r->contrib[v] += e[k].w * dd;
		r->contrib[t] += e[k].w * dd;
		enqueue(r, v);
	}
	r->pos[t] = b;
	enqueue(r, t);
}

static void apply(struct refine *r, int u, const struct action *act)
{
	int a = r->pos[u];

	if (act->y < 0) {
		slot_remove(r, u);
		slot_add(r, u, act->b);
		relocate(r, u, act->b);
		return;
	}
	/* A swap as two relocations: u joins y on b, then y goes to a. */
	slot_swap(r, u, act->y);
	relocate(r, u, act->b);
	relocate(r, act->y, a);
}

static void find_top_partners(struct refine *r, int u);

/* Best action for u; 1 if one was applied. */
static int improve_thread(struct refine *r, int u)
{
	struct action best = { -r->eps, -1, -1 };

	if (r->contrib[u] <= 0)
		return 0;
	if (r->top[u * TOP_PARTNERS] == TOP_UNKNOWN)
		find_top_partners(r, u);
	for (int k = 0; k < r->e.partners; k++) {
		int v = r->top[u * TOP_PARTNERS + k];

		if (v >= 0)
			try_near(r, u, r->pos[v], &best);
	}
	if (best.b < 0)
		return 0;
	apply(r, u, &best);
	r->gained -= best.delta;
	return 1;
}

/* Insert partner c of weight w into the sorted top list (heaviest first,
 * ties: lower index). */
static void top_insert(int *top, double *tw, int c, double w)
{
	int i = TOP_PARTNERS;

	while (i > 0 && (top[i - 1] < 0 || tw[i - 1] < w ||
			 (tw[i - 1] == w && top[i - 1] > c))) {
		if (i < TOP_PARTNERS) {
			top[i] = top[i - 1];
			tw[i] = tw[i - 1];
		}
		i--;
	}
	if (i < TOP_PARTNERS) {
		top[i] = c;
		tw[i] = w;
	}
}

/* TOP_PARTNERS heaviest partners of thread u, found when u is first
 * visited (many threads never need them). */
static void find_top_partners(struct refine *r, int u)
{
	const struct cm_matrix_entry *e;
	int len = cm_matrix_row(r->m, u, &e);
	int *top = r->top + u * TOP_PARTNERS;
	double tw[TOP_PARTNERS];

	for (int k = 0; k < TOP_PARTNERS; k++) {
		top[k] = -1;
		tw[k] = 0;
	}
	for (int k = 0; k < len; k++)
		top_insert(top, tw, e[k].col, e[k].w);
}

static void copy_tree(struct refine *r, const struct cm_topo *topo)
{
	for (int v = 0; v < cm_topo_nnodes(topo); v++) {
		const struct cm_topo_node *node = cm_topo_node(topo, v);

		r->parent[v] = node->parent;
		r->lo[v] = node->first_pu;
		r->cnt[v] = node->npus;
		r->weight[v] = cm_level_weight(node->kind);
	}
	for (int p = 0; p < r->npus; p++)
		r->leaf[p] = cm_topo_leaf_of_pu(topo, p);
}

/* Loads, limits and slots from the entry mapping. */
static int setup_loads(struct refine *r, const struct cm_topo *topo,
		       int oversubscribe)
{
	int total = 0;

	if (cm_map_capacity(topo, r->n, oversubscribe, r->limit, NULL) < 0)
		return -1;
	memset(r->load, 0, sizeof(int) * (size_t)r->npus);
	for (int t = 0; t < r->n; t++)
		r->load[r->pos[t]]++;
	for (int p = 0; p < r->npus; p++) {
		if (r->load[p] > r->limit[p])
			r->limit[p] = r->load[p];
		r->slot_start[p] = total;
		total += r->limit[p];
	}
	r->slots = malloc(sizeof(int) * (size_t)(total + 1));
	if (!r->slots)
		return -1;
	memset(r->load, 0, sizeof(int) * (size_t)r->npus);
	for (int t = 0; t < r->n; t++)
		slot_add(r, t, r->pos[t]);
	r->floor_load = r->n > r->npus ? r->n / r->npus : 0;
	return 0;
}

static double setup_costs(struct refine *r)
{
	double total = 0;

	for (int t = 0; t < r->n; t++) {
		r->contrib[t] = cost_at(r, t, r->pos[t], -1, 0);
		total += r->contrib[t];
	}
	return total / 2;
}

/* Gain-per-work stop (effort min_gain > 0): after every window of n / 8
 * visits, stop if the window removed less than min_gain of the cost. */
static int window_useless(const struct refine *r, long visits, double cost0,
			  double *mark)
{
	long window = r->n / 8 > 0 ? r->n / 8 : 1;
	int useless;

	if (!(r->e.min_gain > 0) || visits % window != 0)
		return 0;
	useless = r->gained - *mark < r->e.min_gain * cost0;
	*mark = r->gained;
	return useless;
}

static int run(struct refine *r)
{
	long visits = 0, max_visits = (long)r->e.max_passes * r->n;
	double cost0, mark = 0;
	int moves = 0;

	for (int t = 0; t < r->n; t++)
		r->top[t * TOP_PARTNERS] = TOP_UNKNOWN;
	cost0 = setup_costs(r);
	if (!(cost0 > 0) || !isfinite(cost0))
		return 0;
	/* Sums of up to n * degree products: relative rounding is far below
	 * 1e-9 of the cost, so a smaller "gain" is noise. */
	r->eps = 1e-9 * cost0;
	for (int t = 0; t < r->n; t++)
		enqueue(r, t);
	while (r->count > 0 && visits++ < max_visits) {
		int u = r->queue[r->head];

		r->head = (r->head + 1) % r->n;
		r->count--;
		r->queued[u] = 0;
		moves += improve_thread(r, u);
		if (window_useless(r, visits, cost0, &mark))
			break;
	}
	return moves;
}

static void free_refine(struct refine *r)
{
	free(r->parent);
	free(r->lo);
	free(r->cnt);
	free(r->weight);
	free(r->leaf);
	free(r->limit);
	free(r->load);
	free(r->slot_start);
	free(r->slots);
	free(r->slot_of);
	free(r->top);
	free(r->contrib);
	free(r->queue);
	free(r->queued);
	free(r->in_pu);
	free(r->in_w);
}

static int alloc_refine(struct refine *r, int nnodes)
{
	size_t n = (size_t)r->n, np = (size_t)r->npus, nn = (size_t)nnodes;
	size_t maxrow = 1;

	for (int t = 0; t < r->n; t++) {
		const struct cm_matrix_entry *e;
		size_t len = (size_t)cm_matrix_row(r->m, t, &e);

		if (len > maxrow)
			maxrow = len;
	}
	r->in_pu = malloc(sizeof(int) * maxrow);
	r->in_w = malloc(sizeof(double) * maxrow);

	r->parent = malloc(sizeof(int) * nn);
	r->lo = malloc(sizeof(int) * nn);
	r->cnt = malloc(sizeof(int) * nn);
	r->weight = malloc(sizeof(int) * nn);
	r->leaf = malloc(sizeof(int) * np);
	r->limit = malloc(sizeof(int) * np);
	r->load = malloc(sizeof(int) * np);
	r->slot_start = malloc(sizeof(int) * np);
	r->slot_of = malloc(sizeof(int) * n);
	r->top = malloc(sizeof(int) * n * TOP_PARTNERS);
	r->contrib = malloc(sizeof(double) * n);
	r->queue = malloc(sizeof(int) * n);
	r->queued = calloc(n, 1);
	return r->parent && r->lo && r->cnt && r->weight && r->leaf &&
	       r->limit && r->load && r->slot_start && r->slot_of && r->top &&
	       r->contrib && r->queue && r->queued && r->in_pu && r->in_w ?
	       0 : -1;
}

int cm_map_refine(const struct cm_topo *topo, const struct cm_matrix *m,
		  int *pu_of_thread, int oversubscribe)
{
	return cm_map_refine_effort(topo, m, pu_of_thread, oversubscribe,
				    NULL);
}

int cm_map_refine_effort(const struct cm_topo *topo,
			 const struct cm_matrix *m, int *pu_of_thread,
			 int oversubscribe, const struct cm_refine_effort *e)
{
	struct refine r = { .m = m, .pos = pu_of_thread };
	int rv = -1;

	r.e = e ? *e : default_effort;
	if (r.e.partners > TOP_PARTNERS)
		r.e.partners = TOP_PARTNERS;
	if (r.e.partners < 1)
		r.e.partners = 1;
	if (r.e.pu_budget < 1)
		r.e.pu_budget = 1;
	if (r.e.max_passes < 1)
		r.e.max_passes = 1;

	if (!topo || !m) {
		errno = EINVAL;
		return -1;
	}
	r.n = cm_matrix_nthreads(m);
	r.npus = cm_topo_npus(topo);
	if (r.n == 0)
		return 0;
	if (cm_map_validate(topo, r.n, pu_of_thread, oversubscribe,
			    NULL) < 0)
		return -1;
	if (alloc_refine(&r, cm_topo_nnodes(topo)) < 0) {
		errno = ENOMEM;
		goto out;
	}
	copy_tree(&r, topo);
	if (setup_loads(&r, topo, oversubscribe) < 0) {
		errno = ENOMEM;
		goto out;
	}
	rv = run(&r);
out:
	free_refine(&r);
	return rv;
}
