/* map_matching.c: the SPCD mapping algorithm (SPCD §IV-B).
 *
 * SPCD §IV-B: threads are the vertices of a complete graph whose edge
 * weights are the communication matrix; a maximum-weight perfect matching
 * (Edmonds) pairs the threads that communicate most, for the two cores that
 * share a cache.  Where more cores share a cache, or more levels exist, the
 * pairs become the vertices of a new matrix, weighted by the heuristic of
 * eq. (1), H((x,y),(z,k)) = M(x,z) + M(x,k) + M(y,z) + M(y,k), and are
 * matched again: pairs of pairs, and so on.  Summing eq. (1) round after
 * round gives, for any two groups, the sum of their members' weights.
 *
 * Here the rounds continue until one group is left, which builds a binary
 * hierarchy of groups over all threads.  A group left alone in a round
 * with an odd number of groups is matched to a dummy vertex of weight 0
 * and goes up unchanged; so do, after a greedy round (below), groups that
 * could only be paired by weight 0 while most others paired by
 * communication (they meet their partners in the next round).  The
 * hierarchy, flattened depth first, is an order of the threads in which
 * every group is consecutive;
 * cm_map_place() (map_groups.c) then walks the sharing tree from the
 * root and cuts that order into consecutive pieces whose sizes are the
 * spread quota of each subtree.  So:
 *  - k-ary levels (8 cores per L3, 2 PUs per core) receive aligned blocks
 *    of 2, 4, 8, ... threads, i.e. groups made by repeated matching;
 *  - a level whose quota is not a power of two (3 or 6 cores per L3) gets
 *    the largest power-of-two groups that fit plus a piece of the next
 *    group in the order (the "greedy completion").  To make that piece a
 *    good one, every merge of groups A and B is oriented: of the halves
 *    A0, A1, B0, B1 made by the previous round, the pair Ax, By that
 *    communicates most is put next to each other in the order;
 *  - capacity (fewer threads than PUs, holes in the cpuset, n > npus with
 *    oversubscription) is entirely the placement's business: the spread
 *    quota fills whole cores and caches before SMT siblings, and with
 *    oversubscription a PU receives consecutive threads, i.e. matched ones.
 *    Moving threads that share onto SMT siblings while cores are free is
 *    left to cm_map_refine() (moves into free PUs that lower the cost).
 *
 * Cost: a round over g groups with e edges is one matching.  The exact
 * blossom algorithm is kept while g * (g + e) <= MATCH_EXACT_WORK (at most
 * about half a second on the development VM, reached near 4096 threads);
 * above it the round uses greedy matching with 2-opt (lib/matching.c), so
 * the mapper degrades in quality, not in time.  Rounds over many groups
 * with dense rows (e.g. a background of communication between all
 * threads) match on a candidate graph: each group's MATCH_CANDIDATES
 * heaviest edges.  The result does not depend on the seed: every tie is
 * broken by index.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/matrix.h"
#include "map_groups.h"
#include "map_internal.h"
#include "matching.h"

/* Exact matching while groups * (groups + edges) stays below this. */
#define MATCH_EXACT_WORK (1L << 26)
/* Rows are cut to their heaviest edges above this many groups... */
#define MATCH_SPARSIFY_MIN 256
/* ...when the round has more than this many edges per group... */
#define MATCH_DENSE_DEGREE 32
/* ...keeping this many per group (an edge stays if either end keeps it). */
#define MATCH_CANDIDATES 16

/* The communication between the groups of one round, rows in CSR form. */
struct grp_matrix {
	int n;
	int *start;		/* n + 1 */
	int *col;
	double *w;
};

/* A node of the merge hierarchy: threads are nodes 0..n-1, merged groups
 * n..; child[1] is -1 for a group that went up alone.  rev reverses the
 * node's depth-first order (lazily, see flatten()). */
struct merge_node {
	int child[2];
	unsigned char rev;
};

struct spcd {
	int n;			/* threads */
	struct grp_matrix cur;	/* matrix of the current round */
	struct grp_matrix prev;	/* matrix of the previous round */
	int *node_of;		/* current group -> merge node */
	int *part[2];		/* group -> its halves in prev, or -1 */
	struct merge_node *tree; /* 2n - 1 nodes at most */
	int nnodes;
	int *mate;		/* scratch (n + 1) */
	int *new_id;		/* scratch (n + 1): group -> next group */
	int *first;		/* scratch (2n): node ids, flatten stack */
	double *acc;		/* scratch (n), all 0 between uses */
	int *touched;		/* scratch (2n) */
};

static void grp_free(struct grp_matrix *g)
{
	free(g->start);
	free(g->col);
	free(g->w);
	memset(g, 0, sizeof(*g));
}

static int grp_alloc(struct grp_matrix *g, int n, size_t nnz)
{
	g->n = n;
	g->start = malloc(sizeof(int) * ((size_t)n + 1));
	g->col = malloc(sizeof(int) * (nnz ? nnz : 1));
	g->w = malloc(sizeof(double) * (nnz ? nnz : 1));
	if (!g->start || !g->col || !g->w) {
		grp_free(g);
		return -1;
	}
	return 0;
}

static int grp_from_matrix(struct grp_matrix *g, const struct cm_matrix *m)
{
	int n = cm_matrix_nthreads(m);
	size_t nnz = 0;

	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *row;

		nnz += (size_t)cm_matrix_row(m, i, &row);
	}
	if (grp_alloc(g, n, nnz))
		return -1;
	nnz = 0;
	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *row;
		int deg = cm_matrix_row(m, i, &row);

		g->start[i] = (int)nnz;
		for (int k = 0; k < deg; k++) {
			if (row[k].col == i || !(row[k].w > 0))
				continue;
			g->col[nnz] = row[k].col;
			g->w[nnz++] = row[k].w;
		}
	}
	g->start[n] = (int)nnz;
	return 0;
}

/* ---- matching one round ------------------------------------------------ */

/* Does edge a rank before edge b: heavier, or as heavy to a lower column. */
static int heavier(const struct cm_match_edge *a, const struct cm_match_edge *b)
{
	return a->w > b->w || (a->w == b->w && a->v < b->v);
}

/* Insert e into best[0..*len-1], kept in rank order and cut to k. */
static void keep_best(struct cm_match_edge *best, int *len, int k,
		      struct cm_match_edge e)
{
	int i = *len;

	if (i == k) {
		if (!heavier(&e, &best[k - 1]))
			return;
		i--;
	} else {
		(*len)++;
	}
	while (i > 0 && heavier(&e, &best[i - 1])) {
		best[i] = best[i - 1];
		i--;
	}
	best[i] = e;
}

static int cmp_pair(const void *a, const void *b)
{
	const struct cm_match_edge *x = a, *y = b;

	if (x->u != y->u)
		return x->u < y->u ? -1 : 1;
	return (x->v > y->v) - (x->v < y->v);
}

/* Every edge of g once (u < v). */
static size_t all_edges(const struct grp_matrix *g, struct cm_match_edge *e)
{
	size_t m = 0;

	for (int u = 0; u < g->n; u++)
		for (int k = g->start[u]; k < g->start[u + 1]; k++)
			if (g->col[k] > u)
				e[m++] = (struct cm_match_edge){ u, g->col[k],
								 g->w[k] };
	return m;
}

/* The candidate graph: each group's MATCH_CANDIDATES heaviest edges
 * (ties: lower column), each kept edge once. */
static size_t candidate_edges(const struct grp_matrix *g,
			      struct cm_match_edge *e)
{
	struct cm_match_edge best[MATCH_CANDIDATES];
	size_t m = 0, w = 0;

	/* A bounded insertion list, not a sort: rows may hold every other
	 * group (a dense background of communication). */
	for (int u = 0; u < g->n; u++) {
		int len = 0;

		for (int k = g->start[u]; k < g->start[u + 1]; k++)
			keep_best(best, &len, MATCH_CANDIDATES,
				  (struct cm_match_edge){ u, g->col[k],
							  g->w[k] });
		for (int k = 0; k < len; k++) {
			int v = best[k].v;

			e[m++] = (struct cm_match_edge){ u < v ? u : v,
							 u < v ? v : u,
							 best[k].w };
		}
	}
	if (m > 0)
		qsort(e, m, sizeof(*e), cmp_pair);
	for (size_t r = 0; r < m; r++)
		if (w == 0 || e[w - 1].u != e[r].u || e[w - 1].v != e[r].v)
			e[w++] = e[r];
	return w;
}

/* Maximum-weight perfect matching of the current groups, plus a dummy
 * vertex when their number is odd: mate[] over g->n (+1).  *approx is set
 * when the round was too large for the exact algorithm. */
static int match_round(const struct grp_matrix *g, int *mate, int *approx)
{
	size_t nnz = (size_t)g->start[g->n], m;
	int nv = g->n + (g->n & 1);
	struct cm_match_edge *e = malloc(sizeof(*e) * (nnz / 2 + nnz % 2 +
						      (size_t)g->n + 1));
	int rv;

	if (!e)
		return -1;
	if (g->n > MATCH_SPARSIFY_MIN &&
	    nnz > (size_t)MATCH_DENSE_DEGREE * (size_t)g->n)
		m = candidate_edges(g, e);
	else
		m = all_edges(g, e);
	*approx = (long)nv * ((long)nv + (long)m) > MATCH_EXACT_WORK;
	if (*approx)
		rv = cm_matching_perfect_greedy(nv, e, m, mate);
	else
		rv = cm_matching_perfect(nv, e, m, mate);
	free(e);
	return rv;
}

/* Weight between groups a and b of matrix g (0 if none). */
static double edge_weight(const struct grp_matrix *g, int a, int b)
{
	for (int k = g->start[a]; k < g->start[a + 1]; k++)
		if (g->col[k] == b)
			return g->w[k];
	return 0;
}

/* After a greedy (approximate) round, a pair of weight 0 is mostly two
 * groups greedy left single although both had partners: while most groups
 * of the round did pair by communication, such groups go up alone
 * (mate = g->n) and meet their partners in the next round instead of
 * being glued together now.  Exact rounds keep their weight-0 pairs: they
 * are optimal, and groups of equal size keep the order aligned with
 * power-of-two levels of the tree.  When fewer than half the groups paired
 * by communication, all pairs are kept so that the rounds keep halving. */
static void defer_zero_pairs(const struct grp_matrix *g, int *mate)
{
	int paired = 0;

	for (int a = 0; a < g->n; a++)
		if (mate[a] < g->n && edge_weight(g, a, mate[a]) > 0)
			paired++;
	if (2 * paired < g->n)
		return;
	for (int a = 0; a < g->n; a++) {
		int b = mate[a];

		if (b < g->n && edge_weight(g, a, b) == 0)
			mate[a] = mate[b] = g->n;
	}
}

/* ---- the next round's groups -------------------------------------------- */

/* Orient the merge of current groups a and b (SPCD's greedy completion
 * needs the halves that communicate most to be adjacent in the order):
 * a's half x goes last, b's half y first. */
static void orient_merge(struct spcd *s, int a, int b)
{
	double best = -1;
	int bx = 0, by = 0;

	for (int x = 0; x < 2; x++) {
		for (int y = 0; y < 2; y++) {
			int pa = s->part[x][a], pb = s->part[y][b];
			double w;

			if (pa < 0 || pb < 0)
				continue;
			w = edge_weight(&s->prev, pa, pb);
			if (w > best) {
				best = w;
				bx = x;
				by = y;
			}
		}
	}
	/* A merge node lists half 0 first: a reversed group ends with
	 * half 0. */
	s->tree[s->node_of[a]].rev = s->part[1][a] >= 0 && bx == 0;
	s->tree[s->node_of[b]].rev = s->part[1][b] >= 0 && by == 1;
}

/* Number the next round's groups in order of their lowest member and
 * record their halves; returns their number. */
static int number_groups(struct spcd *s, const int *mate, int **next_part)
{
	int g = s->cur.n, ng = 0;

	for (int a = 0; a < g; a++)
		s->new_id[a] = -1;
	for (int a = 0; a < g; a++) {
		int b = mate[a] < g ? mate[a] : -1;

		if (s->new_id[a] >= 0)
			continue;
		s->new_id[a] = ng;
		if (b >= 0)
			s->new_id[b] = ng;
		next_part[0][ng] = a;
		next_part[1][ng] = b;
		ng++;
	}
	return ng;
}

/* The merge nodes of the next round's groups. */
static void make_nodes(struct spcd *s, int ng, int *const *next_part)
{
	for (int c = 0; c < ng; c++) {
		int a = next_part[0][c], b = next_part[1][c];

		if (b < 0) {
			s->first[c] = s->node_of[a];
			continue;
		}
		orient_merge(s, a, b);
		s->tree[s->nnodes].child[0] = s->node_of[a];
		s->tree[s->nnodes].child[1] = s->node_of[b];
		s->tree[s->nnodes].rev = 0;
		s->first[c] = s->nnodes++;
	}
	for (int c = 0; c < ng; c++)
		s->node_of[c] = s->first[c];
}

/* Add row a of the current matrix to the accumulator of new group c. */
static void accumulate_row(struct spcd *s, int a, int c, int *nt)
{
	const struct grp_matrix *g = &s->cur;

	for (int k = g->start[a]; k < g->start[a + 1]; k++) {
		int d = s->new_id[g->col[k]];

		if (d == c)
			continue;
		if (s->acc[d] == 0)
			s->touched[(*nt)++] = d;
		s->acc[d] += g->w[k];
	}
}

/* SPCD eq. (1): the next round's matrix, H(c, d) = sum of the weights
 * between the halves of c and of d. */
static int build_next_matrix(struct spcd *s, int ng, int *const *next_part,
			     struct grp_matrix *next)
{
	size_t nnz = (size_t)s->cur.start[s->cur.n], pos = 0;

	if (grp_alloc(next, ng, nnz))
		return -1;
	for (int c = 0; c < ng; c++) {
		int nt = 0;

		next->start[c] = (int)pos;
		for (int h = 0; h < 2; h++)
			if (next_part[h][c] >= 0)
				accumulate_row(s, next_part[h][c], c, &nt);
		for (int i = 0; i < nt; i++) {
			int d = s->touched[i];

			next->col[pos] = d;
			next->w[pos++] = s->acc[d];
			s->acc[d] = 0;
		}
	}
	next->start[ng] = (int)pos;
	return 0;
}

/* One round: match, merge, build the next matrix.  The halves of the new
 * groups refer to the groups of the round just matched, which becomes
 * prev. */
static int spcd_round(struct spcd *s)
{
	struct grp_matrix next = { 0 };
	int *parts[2], ng, approx = 0, rv = -1;

	parts[0] = malloc(sizeof(int) * (size_t)s->cur.n);
	parts[1] = malloc(sizeof(int) * (size_t)s->cur.n);
	if (!parts[0] || !parts[1] || match_round(&s->cur, s->mate, &approx))
		goto out;
	if (approx)
		defer_zero_pairs(&s->cur, s->mate);
	ng = number_groups(s, s->mate, parts);
	/* orient_merge() reads the halves of the groups being merged, i.e.
	 * s->part[] against s->prev: replace them only afterwards. */
	make_nodes(s, ng, parts);
	if (build_next_matrix(s, ng, parts, &next))
		goto out;
	grp_free(&s->prev);
	s->prev = s->cur;
	s->cur = next;
	memcpy(s->part[0], parts[0], sizeof(int) * (size_t)ng);
	memcpy(s->part[1], parts[1], sizeof(int) * (size_t)ng);
	rv = 0;
out:
	free(parts[0]);
	free(parts[1]);
	return rv;
}

/* ---- flattening ---------------------------------------------------------- */

/* Depth-first order of the leaves below root, honouring rev flags: a
 * reversed node lists its children last-first, each reversed too. */
static void flatten(const struct spcd *s, int root, int *order)
{
	int *stack = s->touched, *flip = s->first, top = 0, len = 0;

	stack[top] = root;
	flip[top++] = 0;
	while (top > 0) {
		int x = stack[--top], f = flip[top];

		if (x < s->n) {
			order[len++] = x;
			continue;
		}
		f ^= s->tree[x].rev;
		int c0 = s->tree[x].child[f ? 1 : 0];
		int c1 = s->tree[x].child[f ? 0 : 1];

		/* Push the second child first so the first comes out first. */
		stack[top] = c1;
		flip[top++] = f;
		stack[top] = c0;
		flip[top++] = f;
	}
}

static void spcd_free(struct spcd *s)
{
	grp_free(&s->cur);
	grp_free(&s->prev);
	free(s->node_of);
	free(s->part[0]);
	free(s->part[1]);
	free(s->tree);
	free(s->mate);
	free(s->new_id);
	free(s->first);
	free(s->acc);
	free(s->touched);
}

static int spcd_alloc(struct spcd *s, const struct cm_matrix *m)
{
	size_t n = (size_t)s->n;

	s->node_of = malloc(sizeof(int) * n);
	s->part[0] = malloc(sizeof(int) * n);
	s->part[1] = malloc(sizeof(int) * n);
	s->tree = malloc(sizeof(*s->tree) * 2 * n);
	s->mate = malloc(sizeof(int) * (n + 1));
	s->new_id = malloc(sizeof(int) * (n + 1));
	s->first = malloc(sizeof(int) * 2 * n);
	s->acc = calloc(n, sizeof(double));
	s->touched = malloc(sizeof(int) * 2 * n);
	if (!s->node_of || !s->part[0] || !s->part[1] || !s->tree ||
	    !s->mate || !s->new_id || !s->first || !s->acc || !s->touched)
		return -1;
	return grp_from_matrix(&s->cur, m);
}

int cm_map_matching_order(const struct cm_matrix *m, int *order)
{
	struct spcd s = { .n = cm_matrix_nthreads(m) };
	int rv = -1;

	if (s.n == 0)
		return 0;
	if (spcd_alloc(&s, m))
		goto out;
	for (int i = 0; i < s.n; i++) {
		s.node_of[i] = i;
		s.part[0][i] = s.part[1][i] = -1;
	}
	s.nnodes = s.n;
	while (s.cur.n > 1)
		if (spcd_round(&s))
			goto out;
	flatten(&s, s.node_of[0], order);
	rv = 0;
out:
	spcd_free(&s);
	if (rv < 0)
		errno = ENOMEM;
	return rv;
}

/* The SPCD order needs neither the tree nor the capacities: the
 * placement cuts it along the tree. */
static int matching_order(const struct cm_topo *topo,
			  const struct cm_matrix *m, const int *cap,
			  int *order)
{
	(void)topo;
	(void)cap;
	return cm_map_matching_order(m, order);
}

int cm_map_matching(const struct cm_topo *topo, const struct cm_matrix *m,
		    const struct cm_map_options *opts, int *pu_of_thread,
		    struct cm_error *err)
{
	return cm_map_by_order(topo, m, opts, "matching mapping",
			       matching_order, pu_of_thread, err);
}
