/* map_exact.c: optimal mapping of up to CM_MAP_EXACT_MAX threads by
 * exhaustive search (docs/cost.md "Exact search").
 *
 * The data-sharing placement paper (§3.2.1) tries every placement, "taking
 * into account the symmetry of the architecture", and keeps the best by its
 * metric.  Here the objective is cm_cost() (lower is better), searched depth
 * first with:
 *  - symmetry pruning: empty sibling subtrees of the same shape are
 *    interchangeable, so a thread only tries the first of them (the first
 *    thread therefore tries one PU on a symmetric machine);
 *  - branch and bound: a branch is cut when its partial cost plus a lower
 *    bound on the cost still to come cannot beat the best mapping found;
 *  - threads ordered by weight (each next thread the one most tied to those
 *    already placed) and candidate PUs tried cheapest first, so a good
 *    mapping is found first and bounds bite early.
 * Ties in cost are broken by spreading: among mappings of equal cost the one
 * whose non-communicating thread pairs are farthest apart wins, and threads
 * with no communication at all are placed last, each into the least loaded
 * subtree, so idle threads never crowd SMT siblings or one cache while
 * whole cores are free.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "map_internal.h"

/* Search nodes before the best mapping found so far is returned as is
 * (~0.3 s on the development VM).  Only matrices with many near-equal
 * optima (almost uniform all-to-all weights on a tree with few spare PUs)
 * get there, and the optimum was then found early; see docs/cost.md. */
#define EXACT_BUDGET 100000L
/* Search nodes after which the search stops even without a mapping (the
 * caller then falls back to a heuristic): bounds that never bite, as with
 * weights whose sums are no longer finite, must not make it endless. */
#define EXACT_HARD_BUDGET (2 * EXACT_BUDGET)

struct cand {
	int pu;
	double cost, pen;
};

struct exact {
	const struct cm_topo *topo;
	int n, npus, nnodes, dmax;
	int nc;			/* threads with communication, in order[] */
	int order[CM_MAP_EXACT_MAX];
	double w[CM_MAP_EXACT_MAX][CM_MAP_EXACT_MAX];
	int pos[CM_MAP_EXACT_MAX];
	int best_pos[CM_MAP_EXACT_MAX];
	double best_cost, best_pen, tol;
	int found;
	long nodes;		/* search nodes visited, up to EXACT_BUDGET */
	/* for among_bound(): the weights among order[k..nc-1] sorted,
	 * and the clusters of each distance */
	double wsorted[CM_MAP_EXACT_MAX * CM_MAP_EXACT_MAX *
		       (CM_MAP_EXACT_MAX + 1)];
	int wsorted_start[CM_MAP_EXACT_MAX + 2];
	int cluster_start[CM_LEVEL_COUNT + 1];
	int *clusters;		/* nnodes * CM_LEVEL_COUNT */
	unsigned char *dtab;	/* npus x npus distances, small machines */
	int *node_cap, *node_load, *shape, *same_prev;
	int *cand;		/* candidate PUs, npus per depth */
	struct cand *cands;	/* their scores, npus per depth */
	int *dscratch;		/* npus * CM_MAP_EXACT_MAX distances */
};

/* Distance of two PUs: the weight of their lowest common node, found by
 * walking up from a's leaf until the node's PU range holds b (or looked up
 * in a table on small machines). */
static int pu_distance(const struct exact *x, int a, int b)
{
	const struct cm_topo_node *v;

	if (x->dtab)
		return x->dtab[a * x->npus + b];
	if (a == b)
		return 0;
	v = cm_topo_node(x->topo, cm_topo_leaf_of_pu(x->topo, a));
	while (b < v->first_pu || b >= v->first_pu + v->npus)
		v = cm_topo_node(x->topo, v->parent);
	return cm_level_weight(v->kind);
}

static int level_weight_of(const struct exact *x, int node)
{
	return cm_level_weight(cm_topo_node(x->topo, node)->kind);
}

static int node_free(const struct exact *x, int node)
{
	return x->node_load[node] < x->node_cap[node];
}

static void add_load(struct exact *x, int pu, int delta)
{
	for (int v = cm_topo_leaf_of_pu(x->topo, pu); v >= 0;
	     v = cm_topo_node(x->topo, v)->parent)
		x->node_load[v] += delta;
}

/* Distance from PU q to the nearest slot still free (0: q itself). */
static int dist_to_free(const struct exact *x, int q)
{
	int v = cm_topo_leaf_of_pu(x->topo, q);

	while (v >= 0 && !node_free(x, v))
		v = cm_topo_node(x->topo, v)->parent;
	return v < 0 ? x->dmax : level_weight_of(x, v);
}

/* Bound on the edges among the k unplaced threads order[from..nc-1].
 * Pairs at distance <= d share a "cluster", a node of weight <= d whose
 * parent is heavier; packing the k threads into the clusters with the most
 * free slots first gives within(d), the most pairs that can be at distance
 * <= d.  So in any completion the i-th closest pair is at distance at least
 * the least d with within(d) >= i, and pairing those distances with the
 * weights sorted heaviest first bounds the cost (rearrangement
 * inequality).  Free slots are counted with the current loads. */
#define MAXD CM_LEVEL_COUNT
#define MAXK (CM_MAP_EXACT_MAX + 1)

static int pairs_within(const struct exact *x, int d, int k)
{
	int top[MAXK] = { 0 };	/* most free slots, descending */
	int within = 0;

	for (int c = x->cluster_start[d]; c < x->cluster_start[d + 1]; c++) {
		int v = x->clusters[c], i = k - 1;
		int f = x->node_cap[v] - x->node_load[v];

		if (k == 0 || f <= top[i])
			continue;
		while (i > 0 && top[i - 1] < f) {
			top[i] = top[i - 1];
			i--;
		}
		top[i] = f;
	}
	for (int i = 0; i < k && k > 0; i++) {
		int take = top[i] < k ? top[i] : k;

		within += take * (take - 1) / 2;
		k -= take;
	}
	return within;
}

static double among_bound(const struct exact *x, int from)
{
	const double *w = x->wsorted + x->wsorted_start[from];
	int np = x->wsorted_start[from + 1] - x->wsorted_start[from];
	int k = x->nc - from, d = 0, within;
	double lb = 0;

	if (np == 0)
		return 0;
	within = pairs_within(x, 0, k);
	for (int i = 1; i <= np && w[i - 1] > 0; i++) {
		while (d < MAXD - 1 && within < i)
			within = pairs_within(x, ++d, k);
		lb += w[i - 1] * d;
	}
	return lb;
}

static int weight_desc(const void *a, const void *b)
{
	double wa = *(const double *)a, wb = *(const double *)b;

	return wa < wb ? 1 : wa > wb ? -1 : 0;
}

/* The weights among order[from..nc-1], heaviest first, for every from. */
static void sort_among_weights(struct exact *x)
{
	int np = 0;

	for (int from = 0; from <= x->nc; from++) {
		x->wsorted_start[from] = np;
		for (int i = from; i < x->nc; i++)
			for (int j = i + 1; j < x->nc; j++)
				x->wsorted[np++] =
					x->w[x->order[i]][x->order[j]];
		qsort(x->wsorted + x->wsorted_start[from],
		      (size_t)(np - x->wsorted_start[from]),
		      sizeof(double), weight_desc);
	}
	x->wsorted_start[x->nc + 1] = np;
}

/* clusters[cluster_start[d] ..]: the nodes of weight <= d whose parent is
 * heavier (the root for the largest d). */
static void find_clusters(struct exact *x)
{
	int k = 0;

	for (int d = 0; d < MAXD; d++) {
		x->cluster_start[d] = k;
		for (int v = 0; v < x->nnodes; v++) {
			int p = cm_topo_node(x->topo, v)->parent;

			if (level_weight_of(x, v) <= d &&
			    (p < 0 || level_weight_of(x, p) > d))
				x->clusters[k++] = v;
		}
	}
	x->cluster_start[MAXD] = k;
}

/* Lower bound on the cost of the threads order[from..nc-1]: each edge to a
 * placed thread costs at least its weight times that thread's distance to
 * a free slot; the edges among them cost at least among_bound(). */
static double remaining_bound(const struct exact *x, int from)
{
	int dfree[CM_MAP_EXACT_MAX];
	double lb = among_bound(x, from);

	for (int k = 0; k < from; k++)
		dfree[k] = dist_to_free(x, x->pos[x->order[k]]);
	for (int i = from; i < x->nc; i++) {
		int u = x->order[i];

		for (int k = 0; k < from; k++)
			lb += x->w[u][x->order[k]] * dfree[k];
	}
	return lb;
}

/* Is child c of its parent an empty subtree with an earlier empty sibling
 * of the same shape (so trying c would repeat that sibling's search)? */
static int repeats_sibling(const struct exact *x, int c)
{
	if (x->node_load[c] != 0)
		return 0;
	for (int s = x->same_prev[c]; s >= 0; s = x->same_prev[s])
		if (x->node_load[s] == 0)
			return 1;
	return 0;
}

/* Candidate PUs for the next thread: one per class of equivalent slots. */
static int gen_candidates(const struct exact *x, int v, int *out, int k)
{
	const struct cm_topo_node *node = cm_topo_node(x->topo, v);

	if (!node_free(x, v))
		return k;
	if (node->first_child < 0) {
		out[k++] = node->pu;
		return k;
	}
	for (int c = node->first_child; c < node->first_child +
	     node->nchildren; c++)
		if (!repeats_sibling(x, c))
			k = gen_candidates(x, c, out, k);
	return k;
}

/* Cost and tie-break penalty of putting thread t on PU p, against the
 * threads order[0..depth-1]. */
static struct cand score(const struct exact *x, int depth, int t, int p)
{
	struct cand c = { p, 0, 0 };

	for (int k = 0; k < depth; k++) {
		int v = x->order[k];
		int d = pu_distance(x, p, x->pos[v]);

		if (x->w[t][v] > 0)
			c.cost += x->w[t][v] * d;
		else
			c.pen += x->dmax - d;
	}
	return c;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *ca = a, *cb = b;

	if (ca->cost != cb->cost)
		return ca->cost < cb->cost ? -1 : 1;
	if (ca->pen != cb->pen)
		return ca->pen < cb->pen ? -1 : 1;
	return ca->pu - cb->pu;
}

/* Can a branch with this partial cost, bound and penalty still win? */
static int can_win(const struct exact *x, double cost, double lb, double pen)
{
	if (!x->found)
		return 1;
	if (cost + lb > x->best_cost + x->tol)
		return 0;
	if (cost + lb >= x->best_cost - x->tol && pen >= x->best_pen)
		return 0;
	return 1;
}

static void record(struct exact *x, double cost, double pen)
{
	if (x->found && !(cost < x->best_cost - x->tol ||
			  (cost <= x->best_cost + x->tol &&
			   pen < x->best_pen)))
		return;
	x->found = 1;
	x->best_cost = cost;
	x->best_pen = pen;
	memcpy(x->best_pos, x->pos, sizeof(x->pos));
}

/* Minimum-cost assignment of rows 0..k-1 to distinct columns 0..m-1 of
 * cost[i * LAP_MAX_COLS + j], k <= m (Hungarian method with potentials,
 * O(k^2 m)). */
#define LAP_MAX_COLS 32

static double assignment_cost(const double *cost, int k, int m)
{
	double u[CM_MAP_EXACT_MAX + 1] = { 0 }, v[LAP_MAX_COLS + 1] = { 0 };
	double minv[LAP_MAX_COLS + 1];
	int p[LAP_MAX_COLS + 1] = { 0 }, way[LAP_MAX_COLS + 1] = { 0 };
	char used[LAP_MAX_COLS + 1];

	for (int i = 1; i <= k; i++) {
		int j0 = 0;

		p[0] = i;
		for (int j = 0; j <= m; j++) {
			minv[j] = INFINITY;
			used[j] = 0;
		}
		do {
			int i0 = p[j0], j1 = 0;
			double delta = INFINITY;

			used[j0] = 1;
			for (int j = 1; j <= m; j++) {
				double cur;

				if (used[j])
					continue;
				cur = cost[(i0 - 1) * LAP_MAX_COLS + j - 1] -
				      u[i0] - v[j];
				if (cur < minv[j]) {
					minv[j] = cur;
					way[j] = j0;
				}
				if (minv[j] < delta) {
					delta = minv[j];
					j1 = j;
				}
			}
			/* No finite reduced cost left (sums of weights near
			 * DBL_MAX overflow): 0 is still a lower bound. */
			if (j1 == 0)
				return 0;
			for (int j = 0; j <= m; j++) {
				if (used[j]) {
					u[p[j]] += delta;
					v[j] -= delta;
				} else {
					minv[j] -= delta;
				}
			}
			j0 = j1;
		} while (p[j0] != 0);
		do {
			int j1 = way[j0];

			p[j0] = p[j1];
			j0 = j1;
		} while (j0);
	}
	return -v[0];
}

/* The weights of thread order[from + r] to the other unplaced threads,
 * heaviest first, in out[0..k-2]. */
static void unplaced_weights(const struct exact *x, int from, int r,
			     double *out)
{
	const double *w = x->w[x->order[from + r]];
	int n = 0;

	for (int j = from; j < x->nc; j++) {
		int i = n++;

		if (j == from + r) {
			n--;
			continue;
		}
		while (i > 0 && out[i - 1] < w[x->order[j]]) {
			out[i] = out[i - 1];
			i--;
		}
		out[i] = w[x->order[j]];
	}
}

/* Gilmore-Lawler bound with few free slots: thread u on free slot s costs
 * its edges to the placed threads, plus half of its edges to the other
 * unplaced threads, bounded by pairing its weights (heaviest first) with
 * the distances from s to the other free slots (nearest first); then the
 * cheapest assignment of threads to distinct slots.  Only for at most
 * LAP_MAX_COLS free slots: -1 otherwise. */
static double slot_bound(struct exact *x, int from)
{
	double cost[CM_MAP_EXACT_MAX * LAP_MAX_COLS];
	double wq[CM_MAP_EXACT_MAX][CM_MAP_EXACT_MAX];
	int slots[LAP_MAX_COLS], m = 0, k = x->nc - from;
	int d[LAP_MAX_COLS][CM_MAP_EXACT_MAX], hist[LAP_MAX_COLS][MAXD];

	for (int p = 0; p < x->npus; p++) {
		int leaf = cm_topo_leaf_of_pu(x->topo, p);
		int f = x->node_cap[leaf] - x->node_load[leaf];

		for (; f > 0; f--) {
			if (m == LAP_MAX_COLS)
				return -1;
			slots[m++] = p;
		}
	}
	memset(hist, 0, sizeof(hist));
	for (int j = 0; j < m; j++) {
		for (int i = 0; i < from; i++)
			d[j][i] = pu_distance(x, slots[j],
					      x->pos[x->order[i]]);
		for (int i = j + 1; i < m; i++) {
			int dd = pu_distance(x, slots[j], slots[i]);

			hist[j][dd]++;
			hist[i][dd]++;
		}
	}
	for (int r = 0; r < k; r++)
		unplaced_weights(x, from, r, wq[r]);
	for (int r = 0; r < k; r++) {
		const double *w = x->w[x->order[from + r]];

		for (int j = 0; j < m; j++) {
			double c = 0;
			int dd = 0, left = hist[j][0];

			for (int i = 0; i < from; i++)
				c += w[x->order[i]] * d[j][i];
			for (int i = 0; i < k - 1; i++) {
				while (left == 0 && dd < MAXD - 1)
					left = hist[j][++dd];
				c += 0.5 * wq[r][i] * dd;
				left--;
			}
			cost[r * LAP_MAX_COLS + j] = c;
		}
	}
	return assignment_cost(cost, k, m);
}

/* A tighter bound once the candidate PUs of the next level are known:
 * each unplaced thread costs at least its cheapest candidate against the
 * placed threads (every free PU is equivalent to some candidate); with few
 * free slots, the Gilmore-Lawler bound instead (slot_bound). */
static double candidate_bound(struct exact *x, int from, const int *pus,
			      int npu)
{
	int *d = x->dscratch;	/* d[i * from + k]: pus[i] to order[k] */
	double lb = among_bound(x, from), gl = slot_bound(x, from);

	if (gl >= 0)
		return gl;

	for (int i = 0; i < npu; i++)
		for (int k = 0; k < from; k++)
			d[i * from + k] = pu_distance(x, pus[i],
						      x->pos[x->order[k]]);
	for (int j = from; j < x->nc; j++) {
		const double *w = x->w[x->order[j]];
		double best = -1;

		for (int i = 0; i < npu; i++) {
			double c = 0;

			for (int k = 0; k < from; k++)
				c += w[x->order[k]] * d[i * from + k];
			if (best < 0 || c < best)
				best = c;
		}
		lb += best > 0 ? best : 0;
	}
	return lb;
}

/* Place order[depth] on each candidate PU in turn, cheapest first. */
static void search(struct exact *x, int depth, double cost, double pen,
		   const int *pus, int npu)
{
	struct cand *cands = x->cands + (size_t)depth * x->npus;
	int *next = x->cand + (size_t)(depth + 1) * x->npus;
	int t;

	if (depth == x->nc) {
		record(x, cost, pen);
		return;
	}
	if (++x->nodes > EXACT_BUDGET && (x->found ||
					   x->nodes > EXACT_HARD_BUDGET))
		return;
	t = x->order[depth];
	for (int k = 0; k < npu; k++)
		cands[k] = score(x, depth, t, pus[k]);
	qsort(cands, (size_t)npu, sizeof(*cands), cand_cmp);
	for (int k = 0; k < npu && (x->nodes <= EXACT_BUDGET ||
				    (!x->found &&
				     x->nodes <= EXACT_HARD_BUDGET)); k++) {
		double c = cost + cands[k].cost, p = pen + cands[k].pen;
		int nnext = 0;

		x->pos[t] = cands[k].pu;
		add_load(x, cands[k].pu, 1);
		if (can_win(x, c, remaining_bound(x, depth + 1), p)) {
			if (depth + 1 < x->nc)
				nnext = gen_candidates(x, 0, next, 0);
			if (depth + 1 == x->nc ||
			    can_win(x, c, candidate_bound(x, depth + 1, next,
							  nnext), p))
				search(x, depth + 1, c, p, next, nnext);
		}
		add_load(x, cands[k].pu, -1);
		x->pos[t] = -1;
	}
}

/* Threads by weight: first the heaviest row, then repeatedly the thread
 * most tied to those already ordered (ties: heavier row, lower index).
 * Threads without communication are left out (nc counts the others). */
static void order_threads(struct exact *x)
{
	double rowsum[CM_MAP_EXACT_MAX], tie[CM_MAP_EXACT_MAX];
	int used[CM_MAP_EXACT_MAX] = { 0 };

	for (int i = 0; i < x->n; i++) {
		rowsum[i] = 0;
		tie[i] = 0;
		for (int j = 0; j < x->n; j++)
			rowsum[i] += x->w[i][j];
	}
	for (x->nc = 0; x->nc < x->n; x->nc++) {
		int best = -1;

		for (int i = 0; i < x->n; i++)
			if (!used[i] && rowsum[i] > 0 &&
			    (best < 0 || tie[i] > tie[best] ||
			     (tie[i] == tie[best] &&
			      rowsum[i] > rowsum[best])))
				best = i;
		if (best < 0)
			break;
		used[best] = 1;
		x->order[x->nc] = best;
		for (int i = 0; i < x->n; i++)
			tie[i] += x->w[i][best];
	}
}

/* Shapes: two nodes get the same id when their subtrees are isomorphic
 * with the same capacities.  Children come after parents in the node
 * array, so one backward pass sees every child before its parent. */
static int shape_equal(const struct exact *x, int a, int b, int *tmp)
{
	const struct cm_topo_node *na = cm_topo_node(x->topo, a);
	const struct cm_topo_node *nb = cm_topo_node(x->topo, b);
	int nch = na->nchildren, same = 1;

	if (na->kind != nb->kind || na->nchildren != nb->nchildren ||
	    x->node_cap[a] != x->node_cap[b] || na->npus != nb->npus)
		return 0;
	/* Multisets of child shapes: count up for a, down for b. */
	for (int c = 0; c < nch; c++) {
		tmp[x->shape[na->first_child + c]]++;
		tmp[x->shape[nb->first_child + c]]--;
	}
	for (int c = 0; c < nch; c++) {
		if (tmp[x->shape[na->first_child + c]] != 0)
			same = 0;
		tmp[x->shape[na->first_child + c]] = 0;
		tmp[x->shape[nb->first_child + c]] = 0;
	}
	return same;
}

static int compute_shapes(struct exact *x)
{
	int *rep = malloc(sizeof(*rep) * (size_t)x->nnodes);
	int *tmp = calloc((size_t)x->nnodes, sizeof(*tmp));
	int nshapes = 0;

	if (!rep || !tmp) {
		free(rep);
		free(tmp);
		return -1;
	}
	for (int v = x->nnodes - 1; v >= 0; v--) {
		int s = 0;

		while (s < nshapes && !shape_equal(x, rep[s], v, tmp))
			s++;
		if (s == nshapes)
			rep[nshapes++] = v;
		x->shape[v] = s;
	}
	for (int v = 0; v < x->nnodes; v++) {
		const struct cm_topo_node *node = cm_topo_node(x->topo, v);

		for (int c = node->first_child; c >= 0 &&
		     c < node->first_child + node->nchildren; c++) {
			int s = c - 1;

			while (s >= node->first_child &&
			       x->shape[s] != x->shape[c])
				s--;
			x->same_prev[c] = s >= node->first_child ? s : -1;
		}
	}
	x->same_prev[0] = -1;
	free(rep);
	free(tmp);
	return 0;
}

/* Threads without communication: each into the least loaded subtree
 * (load / capacity, ties: first child), i.e. spread like scatter. */
static void place_idle(struct exact *x, int *pu_of_thread)
{
	for (int t = 0; t < x->n; t++) {
		int v = 0;

		if (x->pos[t] >= 0)
			continue;
		while (cm_topo_node(x->topo, v)->first_child >= 0) {
			const struct cm_topo_node *node;
			int best = -1;

			node = cm_topo_node(x->topo, v);
			for (int c = node->first_child; c < node->first_child +
			     node->nchildren; c++)
				if (node_free(x, c) && (best < 0 ||
				    (long long)x->node_load[c] *
				    x->node_cap[best] <
				    (long long)x->node_load[best] *
				    x->node_cap[c]))
					best = c;
			v = best;
		}
		x->pos[t] = cm_topo_node(x->topo, v)->pu;
		add_load(x, x->pos[t], 1);
	}
	memcpy(pu_of_thread, x->pos, sizeof(int) * (size_t)x->n);
}

/* Weights above this are scaled down for the search (the mapping depends
 * only on their ratios): with at most CM_MAP_EXACT_MAX^2 weights times a
 * level weight, every sum the search forms stays finite. */
#define EXACT_WEIGHT_MAX 1e300

static void load_weights(struct exact *x, const struct cm_matrix *m)
{
	double total = 0, scale = 1, max = cm_matrix_max(m);

	if (max > EXACT_WEIGHT_MAX)
		scale = EXACT_WEIGHT_MAX / max;
	memset(x->w, 0, sizeof(x->w));
	for (int i = 0; i < x->n; i++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(m, i, &e);

		for (int k = 0; k < len; k++) {
			x->w[i][e[k].col] = e[k].w * scale;
			total += e[k].w * scale;
		}
	}
	/* Costs are sums of weight * distance: differences below this are
	 * rounding, not a better mapping. */
	x->tol = 1e-9 * total * x->dmax + 1e-300;
}

/* A distance table when it is small (<= 64 KiB); NULL otherwise. */
#define DTAB_MAX_PUS 256

static void fill_distance_table(struct exact *x)
{
	unsigned char *tab;

	if (x->npus > DTAB_MAX_PUS)
		return;
	tab = malloc((size_t)x->npus * (size_t)x->npus);
	if (!tab)
		return;		/* the walk works without it */
	for (int a = 0; a < x->npus; a++)
		for (int b = 0; b < x->npus; b++)
			tab[a * x->npus + b] = (unsigned char)pu_distance(x, a,
									  b);
	x->dtab = tab;
}

static int run_exact(struct exact *x, const struct cm_matrix *m,
		     const int *cap, int *pu_of_thread)
{
	int ncand;

	cm_map_node_capacity(x->topo, cap, x->node_cap);
	memset(x->node_load, 0, sizeof(int) * (size_t)x->nnodes);
	if (compute_shapes(x) < 0)
		return -1;
	load_weights(x, m);
	order_threads(x);
	sort_among_weights(x);
	find_clusters(x);
	fill_distance_table(x);
	for (int t = 0; t < x->n; t++)
		x->pos[t] = -1;
	ncand = gen_candidates(x, 0, x->cand, 0);
	search(x, 0, 0, 0, x->cand, ncand);
	if (!x->found && x->nc > 0)
		return errno = ETIME, -1;
	if (x->found)
		memcpy(x->pos, x->best_pos, sizeof(x->pos));
	for (int t = 0; t < x->n; t++)
		if (x->pos[t] >= 0)
			add_load(x, x->pos[t], 1);
	place_idle(x, pu_of_thread);
	return 0;
}

int cm_map_exact(const struct cm_topo *topo, const struct cm_matrix *m,
		 const struct cm_map_options *opts, int *pu_of_thread,
		 struct cm_error *err)
{
	struct exact x = { .topo = topo };
	int *cap = NULL, rv = -1;

	if (!topo || !m || (cm_matrix_nthreads(m) > 0 && !pu_of_thread))
		return cm_errorf(err, EINVAL, "exact mapping needs a "
				 "topology, a matrix and room for the mapping");
	x.n = cm_matrix_nthreads(m);
	if (x.n > CM_MAP_EXACT_MAX)
		return cm_errorf(err, EINVAL, "exact mapping handles at most "
				 "%d threads, the matrix has %d; use greedy "
				 "or matching", CM_MAP_EXACT_MAX, x.n);
	x.npus = cm_topo_npus(topo);
	x.nnodes = cm_topo_nnodes(topo);
	x.dmax = cm_level_weight(cm_topo_node(topo, 0)->kind);
	cap = malloc(sizeof(*cap) * (size_t)(x.npus + 1));
	if (!cap)
		return cm_errorf(err, ENOMEM, "out of memory");
	if (cm_map_capacity(topo, x.n, opts ? opts->oversubscribe : 0, cap,
			    err) < 0)
		goto out;
	x.node_cap = malloc(sizeof(int) * (size_t)x.nnodes);
	x.node_load = malloc(sizeof(int) * (size_t)x.nnodes);
	x.shape = malloc(sizeof(int) * (size_t)x.nnodes);
	x.same_prev = malloc(sizeof(int) * (size_t)x.nnodes);
	x.cand = malloc(sizeof(int) * (size_t)x.npus * (x.n + 1));
	x.cands = malloc(sizeof(*x.cands) * (size_t)x.npus * (x.n + 1));
	x.dscratch = malloc(sizeof(int) * (size_t)x.npus * (x.n + 1));
	x.clusters = malloc(sizeof(int) * (size_t)x.nnodes * CM_LEVEL_COUNT);
	if (!x.node_cap || !x.node_load || !x.shape || !x.same_prev ||
	    !x.cand || !x.cands || !x.dscratch || !x.clusters ||
	    run_exact(&x, m, cap, pu_of_thread) < 0)
		cm_errorf(err, errno == ETIME ? ETIME : ENOMEM,
			  errno == ETIME ? "exact search found no mapping of "
			  "%d threads on %d PUs within its step budget" :
			  "out of memory searching %d threads on %d PUs",
			  x.n, x.npus);
	else
		rv = 0;
out:
	free(x.node_cap);
	free(x.node_load);
	free(x.shape);
	free(x.same_prev);
	free(x.cand);
	free(x.cands);
	free(x.dscratch);
	free(x.clusters);
	free(x.dtab);
	free(cap);
	return rv;
}
