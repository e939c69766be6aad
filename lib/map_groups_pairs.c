/* map_groups_pairs.c: the last step of cm_map_place() under caches whose
 * cores hold two threads each: the threads are re-paired by a matching. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "map_groups.h"
#include "map_groups_internal.h"
#include "matching.h"

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
	int deg = cm_place_row(c->pl, a, &row);

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

		cap += (size_t)cm_place_row(c->pl, set[i], &row);
	}
	edges = malloc(sizeof(*edges) * (cap ? cap : 1));
	if (!edges)
		return -1;
	for (int i = 0; i < k; i++) {
		const struct cm_matrix_entry *row;
		int deg = cm_place_row(c->pl, set[i], &row);
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
		int deg = cm_place_row(c->pl, set[i], &row), in = 0;

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
		int deg = cm_place_row(c->pl, set[i], &row), mutual = best[i] == 0;

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
	int deg = cm_place_row(c->pl, set[i], &row);

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
	int deg = cm_place_row(c->pl, set[i], &row), best = -1;

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
int cm_place_improve_pairs(const struct place *p, int exact_max)
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
