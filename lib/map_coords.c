/* map_coords.c: straight cuts for meshes, from hop distances to pivots.
 *
 * A communication matrix has no coordinates, but on a mesh the hop
 * distance from a thread is its grid (L1) distance, and the difference of
 * the distances from two corners that share an edge of the grid is one
 * grid coordinate (d_(0,0) - d_(W,0) = 2x - W).  Pivots chosen farthest
 * first land on the corners (as in PivotMDS, Brandes & Pich, Graph
 * Drawing 2006), and among the differences of pivot pairs the one whose
 * median split cuts the least is a coordinate plane of the block at hand:
 * recursive coordinate bisection (Berger & Bokhari 1987) without
 * coordinates.  Its cuts are straight at every level, which a multilevel
 * bisection with one V-cycle is not, and a jagged block costs more at
 * every level below it (docs/PERFORMANCE.md, "Meshes at 4096
 * threads").  The placement uses these splits only where they cut no
 * more than multilevel bisection at the first split (map_groups.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "map_coords.h"
#include "map_groups.h"

/* Breadth-first hop distances from src (-1 unreached); returns the last
 * thread reached, a farthest one. */
static int bfs(const struct cm_row_ref *ref, int n, int src, int *dist,
	       int *queue)
{
	int head = 0, tail = 0, last = src;

	for (int v = 0; v < n; v++)
		dist[v] = -1;
	dist[src] = 0;
	queue[tail++] = src;
	while (head < tail) {
		int x = queue[head++];

		last = x;
		for (int e = 0; e < ref[x].len; e++) {	/* no branch: */
			int y = ref[x].e[e].col;	/* queue[tail] kept */
			int fresh = dist[y] < 0;	/* if fresh (room */
						/* for one past n) */
			dist[y] = fresh ? dist[x] + 1 : dist[y];
			queue[tail] = y;
			tail += fresh;
		}
	}
	return last;
}

/* The next sample: the thread farthest from every pivot so far (mind[],
 * updated with the last pivot's distances; another component is farther
 * than anything, so that it gets pivots too); the lowest index on ties. */
static int farthest(int n, const int *dist, int *mind)
{
	int best = 0;

	for (int v = 0; v < n; v++) {
		int d = dist[v] < 0 ? n : dist[v];

		mind[v] = d < mind[v] ? d : mind[v];
		best = mind[v] > mind[best] ? v : best;
	}
	return best;
}

int cm_coords_init(struct cm_coords *c, const struct cm_row_ref *ref, int n,
		   int k, uint64_t seed)
{
	int *mind = NULL, *tmp = NULL, sample;

	memset(c, 0, sizeof(*c));
	if (n < 1 || k < 2)
		return errno = EINVAL, -1;
	c->n = n;
	c->k = k;
	c->dist = malloc(sizeof(int) * (size_t)n * (size_t)k);
	c->queue = malloc(sizeof(int) * ((size_t)n + 1));	/* bfs() */
	c->pair_i = malloc(sizeof(int) * (size_t)(k * (k - 1) / 2));
	c->pair_j = malloc(sizeof(int) * (size_t)(k * (k - 1) / 2));
	c->pair_cut = malloc(sizeof(double) * (size_t)(k * (k - 1) / 2));
	mind = malloc(sizeof(int) * (size_t)n);
	tmp = malloc(sizeof(int) * (size_t)n);
	if (!c->dist || !c->queue || !c->pair_i || !c->pair_j ||
	    !c->pair_cut || !mind || !tmp)
		goto fail;
	for (int i = 0; i < k; i++) {
		for (int j = i + 1; j < k; j++) {
			c->pair_i[c->npairs] = i;
			c->pair_j[c->npairs++] = j;
		}
	}
	for (int v = 0; v < n; v++)
		mind[v] = n;
	sample = (int)(seed % (uint64_t)n);
	for (int i = 0; i < k; i++) {
		int *d = c->dist + (size_t)i * (size_t)n;
		int pivot = bfs(ref, n, sample, tmp, c->queue);

		/* the corner opposite the sample, unless it is a pivot
		 * already (then the sample itself, far from the others) */
		for (int q = 0; q < i; q++)
			if (c->dist[(size_t)q * (size_t)n + pivot] == 0)
				pivot = sample;
		bfs(ref, n, pivot, d, c->queue);
		sample = farthest(n, d, mind);
		for (int v = 0; v < n; v++)
			if (d[v] > c->maxd)
				c->maxd = d[v];
	}
	/* unreached (another component): one farther than anything */
	c->maxd++;
	for (size_t x = 0; x < (size_t)n * (size_t)k; x++)
		if (c->dist[x] < 0)
			c->dist[x] = c->maxd;
	c->hist = malloc(sizeof(int) * (size_t)(4 * c->maxd + 3));
	if (!c->hist)
		goto fail;
	free(mind);
	free(tmp);
	return 0;
fail:
	free(mind);
	free(tmp);
	cm_coords_free(c);
	return errno = ENOMEM, -1;
}

void cm_coords_free(struct cm_coords *c)
{
	free(c->dist);
	free(c->queue);
	free(c->hist);
	free(c->pair_i);
	free(c->pair_j);
	free(c->pair_cut);
	memset(c, 0, sizeof(*c));
}

/* The smallest value v of key[] (t entries, values in [lo, hi]) with at
 * least want entries <= v; *below gets the number < v.  hist: hi - lo + 1
 * entries of scratch. */
static int threshold(const int *key, int t, int lo, int hi, int want,
		     int *hist, int *below)
{
	int v = lo, sum = 0;

	memset(hist, 0, sizeof(int) * (size_t)(hi - lo + 1));
	for (int x = 0; x < t; x++)
		hist[key[x] - lo]++;
	while (v < hi && sum + hist[v - lo] < want) {
		sum += hist[v - lo];
		v++;
	}
	*below = sum;
	return v;
}

/* key[x] = dist[i] - dist[j] of T[x]; returns the level of the ta-th
 * smallest, *below the number of threads under it. */
static int pair_level(const struct cm_coords *c, const int *T, int t,
		      int ta, int i, int j, int *key, int *below)
{
	const int *di = c->dist + (size_t)i * (size_t)c->n;
	const int *dj = c->dist + (size_t)j * (size_t)c->n;
	int lo = c->maxd, hi = -c->maxd;

	for (int x = 0; x < t; x++) {
		key[x] = di[T[x]] - dj[T[x]];
		lo = key[x] < lo ? key[x] : lo;
		hi = key[x] > hi ? key[x] : hi;
	}
	return threshold(key, t, lo, hi, ta, c->hist, below);
}

/* Sides of T for the pivot pair (i, j): the ta threads with the smallest
 * dist[i] - dist[j], on the threshold level those nearest pivot i, then
 * first in T.  key is scratch of t entries.  Returns the level. */
static int split_pair(const struct cm_coords *c, const int *T, int t,
		      int ta, int i, int j, signed char *side, int *key)
{
	const int *di = c->dist + (size_t)i * (size_t)c->n;
	const int *dj = c->dist + (size_t)j * (size_t)c->n;
	int below, near, left;
	int level = pair_level(c, T, t, ta, i, j, key, &below);

	/* on the level: by distance from pivot i (others get maxd + 1) */
	for (int x = 0; x < t; x++)
		key[x] = key[x] == level ? di[T[x]] : c->maxd + 1;
	near = threshold(key, t, 0, c->maxd + 1, ta - below, c->hist, &left);
	left = ta - below - left;	/* taken at distance near, in T order */
	for (int x = 0; x < t; x++) {
		int a = di[T[x]] - dj[T[x]] < level ||
			key[x] < near || (key[x] == near && left-- > 0);

		side[T[x]] = (signed char)!a;
	}
	return level;
}

/* Weight between the sides of T (each link once).  A link's ends differ
 * by at most 2 in dist[i] - dist[j], so only threads within 2 of the
 * level can have a link across: their rows are the only ones read. */
static double band_cut(const struct cm_coords *c,
		       const struct cm_row_ref *ref, const int *T, int t,
		       int i, int j, int level, const signed char *side)
{
	const int *di = c->dist + (size_t)i * (size_t)c->n;
	const int *dj = c->dist + (size_t)j * (size_t)c->n;
	double cut = 0;

	for (int x = 0; x < t; x++) {
		const struct cm_matrix_entry *row = ref[T[x]].e;
		int s = side[T[x]], off = di[T[x]] - dj[T[x]] - level;

		if (off < -2 || off > 2)
			continue;
		for (int e = 0; e < ref[T[x]].len; e++) {
			int o = side[row[e].col];

			cut += cm_keep(row[e].w, (o >= 0) & (o != s));
		}
	}
	return cut / 2;
}

/* The weight a split of T by dist[i] - dist[j] cuts, the threshold level
 * shared in T's order (the final split takes those nearer pivot i
 * first: this is only the ranking of the pairs, and cheaper).  key:
 * scratch of t. */
static double pair_cut(const struct cm_coords *c,
		       const struct cm_row_ref *ref, const int *T, int t,
		       int ta, int i, int j, signed char *side, int *key)
{
	int below, level = pair_level(c, T, t, ta, i, j, key, &below);
	int left = ta - below;

	for (int x = 0; x < t; x++) {	/* no branch: a coin toss */
		int on = key[x] == level, take = on & (left > 0);

		left -= take;
		side[T[x]] = (signed char)((key[x] > level) | (on & !take));
	}
	return band_cut(c, ref, T, t, i, j, level, side);
}

double cm_coords_split(struct cm_coords *c, const struct cm_row_ref *ref,
		       const int *T, int t, int ta, int prune,
		       signed char *side, int *tie)
{
	int best = 0, kept = 0;

	for (int p = 0; p < c->npairs; p++) {
		c->pair_cut[p] = pair_cut(c, ref, T, t, ta, c->pair_i[p],
					  c->pair_j[p], side, tie);
		if (c->pair_cut[p] < c->pair_cut[best])
			best = p;
	}
	if (prune) {
		double limit = 2 * c->pair_cut[best];
		int was = best;

		for (int p = 0; p < c->npairs; p++) {
			if (c->pair_cut[p] > limit && p != was)
				continue;
			if (p == was)
				best = kept;
			c->pair_i[kept] = c->pair_i[p];
			c->pair_j[kept++] = c->pair_j[p];
		}
		c->npairs = kept;
	}
	return band_cut(c, ref, T, t, c->pair_i[best], c->pair_j[best],
			split_pair(c, T, t, ta, c->pair_i[best],
				   c->pair_j[best], side, tie), side);
}
