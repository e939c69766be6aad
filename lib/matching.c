/* matching.c: maximum-weight perfect matching for the SPCD §IV-B mapper:
 * the input checked and its weights quantised to integers, then the exact
 * solver (matching_blossom.c) or greedy matching + 2-opt; and the dense
 * convenience functions.
 *
 * The graph is complete with weights >= 0, so a maximum-weight matching on
 * the positive edges, completed by pairing the single vertices arbitrarily
 * (they are joined by weight-0 pairs), is a maximum-weight perfect matching.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "matching.h"
#include "matching_internal.h"

/* Largest quantised weight: 2^40 keeps duals (<= 2 * 2^41 in magnitude)
 * and their sums far inside int64 while resolving weights to ~1e-12. */
#define QUANT_MAX 1099511627776.0

static int cmp_edge_key(const void *a, const void *b)
{
	const struct iedge *x = a, *y = b;

	if (x->u != y->u)
		return x->u < y->u ? -1 : 1;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return 0;
}

static int cmp_weight_desc(const void *a, const void *b);

/* Edge order: by (u, v), or by decreasing weight then (u, v). */
/* Without branches: in a merge, which run the next edge comes from is a
 * coin toss (the merges were a third of the mispredicted branches of the
 * greedy matching on random graphs, cachegrind --branch-sim). */
static int edge_before(const struct iedge *x, const struct iedge *y,
		       int by_weight)
{
	int key = (x->u < y->u) | ((x->u == y->u) & (x->v < y->v));

	if (!by_weight)
		return key;
	return (x->w > y->w) | ((x->w == y->w) & key);
}

/* Bottom-up merge sort of q[0..m-1]: the same order as qsort with
 * cmp_edge_key / cmp_weight_desc (total orders on distinct edges), without
 * a call per comparison; these sorts ran for every node of pairs of the
 * lean mapper.  Falls back to qsort when out of memory. */
static void sort_edges(struct iedge *q, int m, int by_weight)
{
	struct iedge *tmp = m > 1 ? malloc(sizeof(*q) * (size_t)m) : NULL;
	struct iedge *src = q, *dst = tmp;

	if (m < 2)
		return;
	/* already in order (callers often build edges row by row): the
	 * sort is stable, so nothing would move */
	int sorted = 1;

	for (int i = 1; i < m && sorted; i++)
		sorted = !edge_before(&q[i], &q[i - 1], by_weight);
	if (sorted) {
		free(tmp);
		return;
	}
	if (!tmp) {
		qsort(q, (size_t)m, sizeof(*q), by_weight ? cmp_weight_desc
							  : cmp_edge_key);
		return;
	}
	for (int width = 1; width < m; width *= 2) {
		for (int lo = 0; lo < m; lo += 2 * width) {
			int mid = lo + width < m ? lo + width : m;
			int hi = lo + 2 * width < m ? lo + 2 * width : m;
			int a = lo, b = mid, k = lo;

			while (a < mid && b < hi) {
				int from_b = edge_before(&src[b], &src[a],
							 by_weight);

				dst[k++] = src[from_b ? b : a];
				b += from_b;
				a += !from_b;
			}
			while (a < mid)
				dst[k++] = src[a++];
			while (b < hi)
				dst[k++] = src[b++];
		}
		struct iedge *t = src;

		src = dst;
		dst = t;
	}
	if (src != q)
		memcpy(q, src, sizeof(*q) * (size_t)m);
	free(tmp);
}

static int check_input(int n, const struct cm_match_edge *edges,
		       size_t nedges, const int *mate)
{
	if (n < 0 || n % 2 != 0 || (n > 0 && !mate) ||
	    (nedges > 0 && !edges) || nedges > (size_t)INT32_MAX / 4) {
		errno = EINVAL;
		return -1;
	}
	for (size_t k = 0; k < nedges; k++) {
		const struct cm_match_edge *e = &edges[k];

		if (e->u < 0 || e->u >= n || e->v < 0 || e->v >= n ||
		    e->u == e->v || !isfinite(e->w) || e->w < 0) {
			errno = EINVAL;
			return -1;
		}
	}
	return 0;
}

/* The positive edges, quantised, u < v, sorted, duplicates summed.
 * *out is malloc'd (NULL when there are none). */
static int quantise(const struct cm_match_edge *edges, size_t nedges,
		    struct iedge **out, int *nout)
{
	double maxw = 0;
	struct iedge *q;
	int m = 0;

	*out = NULL;
	*nout = 0;
	for (size_t k = 0; k < nedges; k++)
		if (edges[k].w > maxw)
			maxw = edges[k].w;
	if (maxw <= 0)
		return 0;
	q = malloc(sizeof(*q) * nedges);
	if (!q)
		return -1;
	for (size_t k = 0; k < nedges; k++) {
		/* Divide first: maxw may be tiny (1e-300) or huge. */
		int64_t w = (int64_t)llround(edges[k].w / maxw * QUANT_MAX);
		int u = edges[k].u, v = edges[k].v;

		if (w <= 0)
			continue;
		q[m].u = u < v ? u : v;
		q[m].v = u < v ? v : u;
		q[m++].w = w;
	}
	sort_edges(q, m, 0);
	int w = 0;

	for (int r = 0; r < m; r++) {
		if (w > 0 && q[w - 1].u == q[r].u && q[w - 1].v == q[r].v)
			q[w - 1].w += q[r].w;
		else
			q[w++] = q[r];
	}
	*out = q;
	*nout = w;
	return 0;
}

/* Pair the vertices left single, in index order (weight-0 pairs). */
static void complete_matching(int n, int *mate)
{
	int pending = -1;

	for (int v = 0; v < n; v++) {
		if (mate[v] >= 0)
			continue;
		if (pending < 0) {
			pending = v;
		} else {
			mate[v] = pending;
			mate[pending] = v;
			pending = -1;
		}
	}
}

int cm_matching_perfect(int n, const struct cm_match_edge *edges,
			size_t nedges, int *mate)
{
	struct iedge *q;
	int m;

	if (check_input(n, edges, nedges, mate) < 0)
		return -1;
	if (n == 0)
		return 0;
	if (quantise(edges, nedges, &q, &m) < 0)
		return -1;
	if (m == 0) {
		for (int v = 0; v < n; v++)
			mate[v] = -1;
	} else if (cm_match_blossom_run(n, q, m, mate) < 0) {
		free(q);
		return -1;
	}
	free(q);
	complete_matching(n, mate);
	return 0;
}

/* ---- greedy + 2-opt ---------------------------------------------------- */

struct adjacency {
	int *start;	/* [n+1] */
	int *col;	/* sorted neighbours per row */
	double *w;
};

static int cmp_weight_desc(const void *a, const void *b)
{
	const struct iedge *x = a, *y = b;

	if (x->w != y->w)
		return x->w > y->w ? -1 : 1;
	return cmp_edge_key(a, b);
}

static int adjacency_build(int n, const struct iedge *q, int m,
			   struct adjacency *a)
{
	int *cur;

	a->start = calloc((size_t)n + 1, sizeof(int));
	a->col = malloc(sizeof(int) * (size_t)(2 * m + 1));
	a->w = malloc(sizeof(double) * (size_t)(2 * m + 1));
	cur = malloc(sizeof(int) * (size_t)n);
	if (!a->start || !a->col || !a->w || !cur) {
		free(cur);
		return -1;
	}
	for (int k = 0; k < m; k++) {
		a->start[q[k].u + 1]++;
		a->start[q[k].v + 1]++;
	}
	for (int v = 0; v < n; v++)
		a->start[v + 1] += a->start[v];
	memcpy(cur, a->start, sizeof(int) * (size_t)n);
	/* q is sorted by (u, v), so rows come out sorted by column. */
	for (int k = 0; k < m; k++) {
		a->col[cur[q[k].v]] = q[k].u;
		a->w[cur[q[k].v]++] = (double)q[k].w;
	}
	for (int k = 0; k < m; k++) {
		a->col[cur[q[k].u]] = q[k].v;
		a->w[cur[q[k].u]++] = (double)q[k].w;
	}
	free(cur);
	return 0;
}

static double adjacency_get(const struct adjacency *a, int i, int j)
{
	int lo = a->start[i], hi = a->start[i + 1] - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (a->col[mid] == j)
			return a->w[mid];
		if (a->col[mid] < j)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return 0;
}

/* Pair (v, mate[v]) weighs mw[v]: the passes below look the current
 * pairs up in this cache instead of searching the rows (the searches were
 * a third of a node of pairs on random graphs; the same weights, so the
 * same exchanges). */
static void set_pair(int *mate, double *mw, int a, int b, double w)
{
	mate[a] = b;
	mate[b] = a;
	mw[a] = w;
	mw[b] = w;
}

/* Try to improve pairs (a, mate[a]) and (c, mate[c]) for every listed
 * neighbour c of a; returns the number of exchanges made. */
static int two_opt_pass(int n, const struct adjacency *adj, int *mate,
			double *mw)
{
	int changes = 0;

	for (int a = 0; a < n; a++) {
		for (int x = adj->start[a]; x < adj->start[a + 1]; x++) {
			int b = mate[a], c = adj->col[x], d = mate[c];

			if (c == b)
				continue;
			double now = mw[a] + mw[c];
			double bd = adjacency_get(adj, b, d);
			double alt = adj->w[x] + bd;

			if (alt > now) {
				set_pair(mate, mw, a, c, adj->w[x]);
				set_pair(mate, mw, b, d, bd);
				changes++;
			}
		}
	}
	return changes;
}

/* Augment from a vertex a whose pair (a, b) has weight 0: through a
 * listed edge a-c, c's partner d, a listed edge d-e to a vertex e whose
 * pair (e, f) weighs 0 too, re-pair as (a, c), (d, e), (b, f).  This is an
 * augmenting path of length 3 between two vertices greedy left single,
 * which 2-opt cannot find (each single exchange gains nothing).  Returns
 * the number of exchanges made. */
static int augment_free_pass(int n, const struct adjacency *adj, int *mate,
			     double *mw)
{
	int changes = 0;

	for (int a = 0; a < n; a++) {
		if (mw[a] != 0)
			continue;
		for (int x = adj->start[a]; x < adj->start[a + 1]; x++) {
			int b = mate[a], c = adj->col[x], d = mate[c];
			int done = 0;

			if (c == b)
				continue;
			for (int y = adj->start[d]; y < adj->start[d + 1];
			     y++) {
				int e = adj->col[y], f = mate[e];

				if (e == c || e == a || e == b || mw[e] != 0)
					continue;
				double now = mw[c];
				double bf = adjacency_get(adj, b, f);
				double alt = adj->w[x] + adj->w[y] + bf;

				if (alt > now) {
					set_pair(mate, mw, a, c, adj->w[x]);
					set_pair(mate, mw, d, e, adj->w[y]);
					set_pair(mate, mw, b, f, bf);
					changes++;
					done = 1;
					break;
				}
			}
			if (done)
				break;
		}
	}
	return changes;
}

int cm_matching_perfect_greedy(int n, const struct cm_match_edge *edges,
			       size_t nedges, int *mate)
{
	struct adjacency adj = { 0 };
	struct iedge *q;
	double *mw = NULL;
	int m, rv = -1;

	if (check_input(n, edges, nedges, mate) < 0)
		return -1;
	if (n == 0)
		return 0;
	if (quantise(edges, nedges, &q, &m) < 0)
		return -1;
	for (int v = 0; v < n; v++)
		mate[v] = -1;
	if (m > 0 && adjacency_build(n, q, m, &adj) < 0)
		goto out;
	sort_edges(q, m, 1);
	for (int k = 0; k < m; k++) {
		if (mate[q[k].u] < 0 && mate[q[k].v] < 0) {
			mate[q[k].u] = q[k].v;
			mate[q[k].v] = q[k].u;
		}
	}
	complete_matching(n, mate);
	if (m > 0 && n > 0) {	/* n > 0 also tells the compiler the size */
		mw = malloc(sizeof(double) * (size_t)n);
		if (!mw)
			goto out;
		for (int v = 0; v < n; v++)
			mw[v] = adjacency_get(&adj, v, mate[v]);
	}
	/* Integer weights: every exchange gains >= 1, so this ends; the
	 * pass limit only bounds the time on adversarial inputs. */
	for (int pass = 0; m > 0 && pass < 32; pass++)
		if (augment_free_pass(n, &adj, mate, mw) +
		    two_opt_pass(n, &adj, mate, mw) == 0)
			break;
	rv = 0;
out:
	free(mw);
	free(adj.start);
	free(adj.col);
	free(adj.w);
	free(q);
	if (rv < 0)
		errno = ENOMEM;
	return rv;
}

/* ---- dense convenience ------------------------------------------------- */

int cm_matching_perfect_dense(int n, const double *w, int *mate)
{
	struct cm_match_edge *e;
	size_t m = 0;
	int rv;

	if (n < 0 || n % 2 != 0 || (n > 0 && (!w || !mate))) {
		errno = EINVAL;
		return -1;
	}
	e = malloc(sizeof(*e) * ((size_t)n * (size_t)n / 2 + 1));
	if (!e)
		return -1;
	for (int i = 0; i < n; i++) {
		for (int j = i + 1; j < n; j++) {
			double x = w[(size_t)i * n + j];

			if (x != w[(size_t)j * n + i]) {
				free(e);
				errno = EINVAL;
				return -1;
			}
			if (x != 0)
				e[m++] = (struct cm_match_edge){ i, j, x };
		}
	}
	rv = cm_matching_perfect(n, e, m, mate);
	free(e);
	return rv;
}

double cm_matching_weight_dense(int n, const double *w, const int *mate)
{
	double sum = 0;

	for (int i = 0; i < n; i++)
		if (mate[i] > i)
			sum += w[(size_t)i * n + mate[i]];
	return sum;
}
