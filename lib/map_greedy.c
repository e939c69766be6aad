/* map_greedy.c: LHMapping §3.3 hierarchical greedy grouping.
 *
 * Bottom-up, one tree level at a time (Algorithm 1, Top-Level):
 *  GenerateOneLevel (Algorithms 2-3) cuts the current elements (threads,
 *    then groups of threads) into as many groups as the level has objects
 *    that receive threads, each grown greedily by adding the element that
 *    communicates most with the group so far;
 *  UpdateMatrix (Algorithm 4) sums the communication between the members
 *    of two groups into the matrix of the next level;
 *  GroupsToTopology (Algorithm 5) walks the tree from the root and hands
 *    each object one group: cm_map_place() with the groups flattened in
 *    depth-first order, which also copes with trees that are not regular
 *    (cpuset holes) and with fewer threads than PUs.
 *
 * Unlike the paper's dense O(n^3) formulation, everything is sparse: a
 * group grows from a heap of the elements adjacent to it keyed by their
 * communication with the group, and the next level's matrix is built row
 * by row, so one level costs O(edges log n).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/matrix.h"
#include "map_groups.h"
#include "map_internal.h"

/* Communication between the elements of one level, rows in CSR form. */
struct csr {
	int n;
	int *start;		/* n + 1 */
	int *col;
	double *w;
};

struct greedy {
	struct csr a;		/* current level */
	struct csr b;		/* next level, built by update_matrix() */
	int nel;		/* elements at the current level */
	int *order;		/* threads, each element's consecutive */
	int *el_start;		/* element e: order[el_start[e]] onwards, */
	int *el_len;		/* el_len[e] threads */
	int *group_of;		/* element -> group, -1 not chosen yet */
	int *seq;		/* elements in group order */
	int *tmp;		/* scratch (n) */
	int *mark;		/* scratch (n), -1 */
	double *w_to;		/* scratch (n): communication with the group */
	struct cm_heap heap;
};

static void csr_free(struct csr *c)
{
	free(c->start);
	free(c->col);
	free(c->w);
	memset(c, 0, sizeof(*c));
}

static int csr_alloc(struct csr *c, int n, size_t nnz)
{
	c->n = n;
	c->start = malloc(sizeof(int) * (size_t)(n + 1));
	c->col = malloc(sizeof(int) * (nnz ? nnz : 1));
	c->w = malloc(sizeof(double) * (nnz ? nnz : 1));
	if (!c->start || !c->col || !c->w) {
		csr_free(c);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

static int csr_from_matrix(struct csr *c, const struct cm_matrix *m)
{
	int n = cm_matrix_nthreads(m);
	size_t nnz = 0;

	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *row;

		nnz += (size_t)cm_matrix_row(m, i, &row);
	}
	if (csr_alloc(c, n, nnz))
		return -1;
	c->start[0] = 0;
	for (int i = 0, k = 0; i < n; i++) {
		const struct cm_matrix_entry *row;
		int deg = cm_matrix_row(m, i, &row);

		for (int j = 0; j < deg; j++, k++) {
			c->col[k] = row[j].col;
			c->w[k] = row[j].w;
		}
		c->start[i + 1] = k;
	}
	return 0;
}

/* Add element e to the group being grown: its unchosen neighbours' links
 * to the group grow by their weights to e (GenerateGroup's W_j, kept up to
 * date incrementally instead of recomputed). */
static void take_element(struct greedy *g, int e, int group, int *nseq)
{
	g->group_of[e] = group;
	g->seq[(*nseq)++] = e;
	for (int k = g->a.start[e]; k < g->a.start[e + 1]; k++) {
		int u = g->a.col[k];

		if (g->group_of[u] >= 0)
			continue;
		g->w_to[u] += g->a.w[k];
		if (cm_heap_contains(&g->heap, u))
			cm_heap_update(&g->heap, u);
		else
			cm_heap_push(&g->heap, u);
	}
}

/* Algorithm 3, GenerateGroup: nel elements; each round takes the unchosen
 * element with the most communication with the group (ties: lowest
 * index); with none linked to the group, the first unchosen one (the
 * paper's W_max = -1 start picks the first element of weight 0). */
static void generate_group(struct greedy *g, int group, int nel, int *next,
			   int *nseq)
{
	for (int i = 0; i < nel; i++) {
		int e;

		if (g->heap.len > 0) {
			e = cm_heap_pop(&g->heap);
		} else {
			while (g->group_of[*next] >= 0)
				(*next)++;
			e = *next;
		}
		take_element(g, e, group, nseq);
	}
	for (int i = 0; i < g->heap.len; i++)
		g->w_to[g->heap.item[i]] = 0;
	cm_heap_clear(&g->heap);
}

/* Algorithm 2, GenerateOneLevel: ngroups groups of nel/ngroups elements,
 * the first nel % ngroups of them one larger. */
static void generate_one_level(struct greedy *g, int ngroups)
{
	int per = g->nel / ngroups, leftover = g->nel % ngroups;
	int next = 0, nseq = 0;

	for (int e = 0; e < g->nel; e++)
		g->group_of[e] = -1;
	for (int j = 0; j < ngroups; j++)
		generate_group(g, j, per + (j < leftover), &next, &nseq);
	for (int i = 0; i < nseq; i++)
		g->w_to[g->seq[i]] = 0;
}

/* Add element e's links to other groups to group grp's row at *k. */
static void add_row_to_group(struct greedy *g, int e, int grp, size_t *k)
{
	for (int q = g->a.start[e]; q < g->a.start[e + 1]; q++) {
		int h = g->group_of[g->a.col[q]];

		if (h == grp)
			continue;
		if (g->mark[h] < 0) {
			g->mark[h] = (int)*k;
			g->b.col[*k] = h;
			g->b.w[(*k)++] = 0;
		}
		g->b.w[g->mark[h]] += g->a.w[q];
	}
}

/* Algorithm 4, UpdateMatrix: w(G, H) = sum of w(e, u) over e in G, u in H,
 * one row at a time with a marker array (sparse, O(edges)). */
static int update_matrix(struct greedy *g, int ngroups)
{
	size_t k = 0;
	int s = 0;

	if (csr_alloc(&g->b, ngroups, (size_t)g->a.start[g->a.n]))
		return -1;
	for (int grp = 0; grp < ngroups; grp++) {
		size_t row_start = k;

		g->b.start[grp] = (int)k;
		for (; s < g->nel && g->group_of[g->seq[s]] == grp; s++)
			add_row_to_group(g, g->seq[s], grp, &k);
		for (size_t q = row_start; q < k; q++)
			g->mark[g->b.col[q]] = -1;
	}
	g->b.start[ngroups] = (int)k;
	csr_free(&g->a);
	g->a = g->b;
	memset(&g->b, 0, sizeof(g->b));
	return 0;
}

/* The groups become the elements of the next level: their threads are
 * concatenated in group order, so each group's threads are consecutive. */
static void regroup_order(struct greedy *g, int ngroups)
{
	int pos = 0, s = 0;

	for (int grp = 0; grp < ngroups; grp++) {
		int start = pos;

		for (; s < g->nel && g->group_of[g->seq[s]] == grp; s++) {
			int e = g->seq[s];

			memcpy(g->tmp + pos, g->order + g->el_start[e],
			       sizeof(int) * (size_t)g->el_len[e]);
			pos += g->el_len[e];
		}
		g->el_start[grp] = start;
		g->el_len[grp] = pos - start;
	}
	memcpy(g->order, g->tmp, sizeof(int) * (size_t)pos);
	g->nel = ngroups;
}

static void greedy_free(struct greedy *g)
{
	csr_free(&g->a);
	csr_free(&g->b);
	free(g->el_start);
	free(g->el_len);
	free(g->group_of);
	free(g->seq);
	free(g->tmp);
	free(g->mark);
	free(g->w_to);
	cm_heap_free(&g->heap);
}

static int greedy_alloc(struct greedy *g, const struct cm_matrix *m,
			int *order)
{
	int n = cm_matrix_nthreads(m);
	size_t nn = (size_t)(n > 0 ? n : 1);

	memset(g, 0, sizeof(*g));
	g->order = order;
	g->nel = n;
	g->el_start = malloc(nn * sizeof(int));
	g->el_len = malloc(nn * sizeof(int));
	g->group_of = malloc(nn * sizeof(int));
	g->seq = malloc(nn * sizeof(int));
	g->tmp = malloc(nn * sizeof(int));
	g->mark = malloc(nn * sizeof(int));
	g->w_to = calloc(nn, sizeof(double));
	if (cm_heap_init(&g->heap, n, g->w_to) || !g->el_start ||
	    !g->el_len || !g->group_of || !g->seq || !g->tmp || !g->mark ||
	    !g->w_to || csr_from_matrix(&g->a, m)) {
		greedy_free(g);
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < n; i++) {
		order[i] = i;
		g->el_start[i] = i;
		g->el_len[i] = 1;
		g->mark[i] = -1;
	}
	return 0;
}

/* nObjects of a level: the tree nodes at that depth that receive threads
 * under the spread quota. */
static int count_objects(const struct cm_topo *topo, const int *quota,
			 int depth)
{
	int nnodes = cm_topo_nnodes(topo), count = 0;

	for (int i = 0; i < nnodes; i++)
		if (cm_topo_node(topo, i)->depth == depth && quota[i] > 0)
			count++;
	return count;
}

static int tree_height(const struct cm_topo *topo)
{
	int nnodes = cm_topo_nnodes(topo), h = 0;

	for (int i = 0; i < nnodes; i++)
		if (cm_topo_node(topo, i)->depth > h)
			h = cm_topo_node(topo, i)->depth;
	return h;
}

/* Algorithm 1, Top-Level, bottom-up from the parents of the PUs. */
static int group_levels(struct greedy *g, const struct cm_topo *topo,
			const int *quota)
{
	for (int depth = tree_height(topo) - 1; depth >= 1; depth--) {
		int ngroups = count_objects(topo, quota, depth);

		if (ngroups <= 0 || ngroups >= g->nel)
			continue;
		generate_one_level(g, ngroups);
		if (update_matrix(g, ngroups))
			return -1;
		regroup_order(g, ngroups);
	}
	return 0;
}

int cm_map_greedy_order(const struct cm_topo *topo, const struct cm_matrix *m,
			const int *cap, int *order)
{
	int n = cm_matrix_nthreads(m), nnodes = cm_topo_nnodes(topo);
	int *node_cap = malloc(sizeof(int) * (size_t)nnodes);
	int *quota = malloc(sizeof(int) * (size_t)nnodes);
	struct greedy g;
	int rv = -1;

	if (!node_cap || !quota) {
		errno = ENOMEM;
		goto out;
	}
	if (greedy_alloc(&g, m, order))
		goto out;
	cm_map_node_capacity(topo, cap, node_cap);
	cm_map_spread_quota(topo, node_cap, n, quota);
	rv = group_levels(&g, topo, quota);
	greedy_free(&g);
out:
	free(node_cap);
	free(quota);
	return rv;
}

int cm_map_greedy(const struct cm_topo *topo, const struct cm_matrix *m,
		  const struct cm_map_options *opts, int *pu_of_thread,
		  struct cm_error *err)
{
	return cm_map_by_order(topo, m, opts, "greedy mapping",
			       cm_map_greedy_order, pu_of_thread, err);
}
