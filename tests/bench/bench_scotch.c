/* bench_scotch.c: Scotch as the reference mapper of the benchmark.
 *
 * The communication matrix becomes a Scotch graph (SCOTCH_graphBuild,
 * integer edge loads scaled from the weights), the topology a tree-leaf
 * architecture (SCOTCH_archTleaf) with commap's distance weights as link
 * costs, and SCOTCH_graphMap places the vertices on the leaves.  The result
 * is scored with cm_cost by the caller, like every other column.
 * docs/PERFORMANCE.md states the correspondence.
 */
#include <config.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef HAVE_SCOTCH
#include <stdint.h>
#include <scotch.h>
#endif

#include "bench_map.h"

#include "commap/topology.h"

/* Largest integer edge load; the scale is lowered further when the summed
 * loads times the largest link cost could overflow Scotch's 32-bit
 * SCOTCH_Num (Debian's build) in its cost sums. */
#define SCOTCH_LOAD_SCALE 1000.0
#define SCOTCH_COST_LIMIT 1073741824.0	/* 2^30 */

/* One level of the tree: arity and kind of every node at a depth must be
 * the same, since tleaf has one size and one link cost per level. */
static int tleaf_level_check(struct bench_tleaf *t,
			     const struct cm_topo_node *nd,
			     char *msg, size_t msglen)
{
	int d = nd->depth;
	int link = cm_level_weight(nd->kind);

	if (d >= BENCH_TLEAF_MAX_LEVELS) {
		snprintf(msg, msglen, "tree deeper than %d levels",
			 BENCH_TLEAF_MAX_LEVELS);
		return -1;
	}
	if (t->size[d] == 0) {
		t->size[d] = nd->nchildren;
		t->link[d] = link;
	} else if (t->size[d] != nd->nchildren || t->link[d] != link) {
		snprintf(msg, msglen,
			 "level %d is not uniform (%d vs %d children)",
			 d, t->size[d], nd->nchildren);
		return -1;
	}
	if (t->nlevels < d + 1)
		t->nlevels = d + 1;
	return 0;
}

/* Drop levels whose nodes have one child: no two PUs have their lowest
 * common ancestor there, so they add no distance (and tleaf wants >= 2). */
static void tleaf_drop_unary(struct bench_tleaf *t)
{
	int k = 0;

	for (int d = 0; d < t->nlevels; d++) {
		if (t->size[d] < 2)
			continue;
		t->size[k] = t->size[d];
		t->link[k] = t->link[d];
		k++;
	}
	t->nlevels = k;
}

int bench_tleaf_from_topo(const struct cm_topo *topo, struct bench_tleaf *out,
			  char *msg, size_t msglen)
{
	struct bench_tleaf t = { 0 };
	int nnodes = cm_topo_nnodes(topo);
	int leaf_depth = -1;

	for (int i = 0; i < nnodes; i++) {
		const struct cm_topo_node *nd = cm_topo_node(topo, i);

		if (nd->nchildren == 0) {
			if (leaf_depth >= 0 && leaf_depth != nd->depth) {
				snprintf(msg, msglen,
					 "leaves at depths %d and %d",
					 leaf_depth, nd->depth);
				return -1;
			}
			leaf_depth = nd->depth;
			continue;
		}
		if (tleaf_level_check(&t, nd, msg, msglen) < 0)
			return -1;
	}
	tleaf_drop_unary(&t);
	*out = t;
	return 0;
}

void bench_tleaf_format(const struct bench_tleaf *t, char *buf, size_t len)
{
	int k = snprintf(buf, len, "tleaf %d", t->nlevels);

	for (int d = 0; d < t->nlevels && k > 0 && (size_t)k < len; d++)
		k += snprintf(buf + k, len - (size_t)k, " %d %d", t->size[d],
			      t->link[d]);
}

/* Free PU nearest to pu (smallest distance, then lowest index). */
static int nearest_free_pu(const struct cm_topo *topo, const int *load,
			   int pu)
{
	int npus = cm_topo_npus(topo);
	int best = -1, best_d = INT_MAX;

	for (int p = 0; p < npus; p++) {
		int d;

		if (load[p] != 0)
			continue;
		d = cm_topo_distance(topo, pu, p);
		if (d < best_d) {
			best_d = d;
			best = p;
		}
	}
	return best;
}

int bench_repair_overload(const struct cm_topo *topo, int n,
			  int *pu_of_thread)
{
	int npus = cm_topo_npus(topo);
	int *load = calloc((size_t)npus, sizeof(*load));
	int moved = 0;

	if (!load)
		return -1;
	for (int i = 0; i < n; i++)
		load[pu_of_thread[i]]++;
	for (int i = 0; i < n; i++) {
		int pu = pu_of_thread[i], to;

		if (load[pu] <= 1)
			continue;
		to = nearest_free_pu(topo, load, pu);
		if (to < 0)
			break;
		load[pu]--;
		load[to]++;
		pu_of_thread[i] = to;
		moved++;
	}
	free(load);
	return moved;
}

#ifdef HAVE_SCOTCH

int bench_scotch_available(void)
{
	return 1;
}

/* Scale so that the heaviest edge gets SCOTCH_LOAD_SCALE and the total
 * load times the largest link cost stays below SCOTCH_COST_LIMIT. */
static double load_scale(const struct cm_matrix *m,
			 const struct bench_tleaf *arch)
{
	double wmax = cm_matrix_max(m), total, scale = SCOTCH_LOAD_SCALE;
	int maxlink = 1;

	if (wmax <= 0)
		return 1;
	for (int d = 0; d < arch->nlevels; d++)
		if (arch->link[d] > maxlink)
			maxlink = arch->link[d];
	total = cm_matrix_total(m) / wmax;
	if (total * maxlink * scale > SCOTCH_COST_LIMIT)
		scale = SCOTCH_COST_LIMIT / (total * maxlink);
	return (scale < 1 ? 1 : scale) / wmax;
}

/* The matrix in Scotch's compressed adjacency form (both directions). */
struct scotch_csr {
	SCOTCH_Num *vert;	/* n + 1 */
	SCOTCH_Num *edge;	/* 2 * nedges */
	SCOTCH_Num *load;	/* 2 * nedges */
	SCOTCH_Num nedge;
};

static void csr_free(struct scotch_csr *c)
{
	free(c->vert);
	free(c->edge);
	free(c->load);
}

static int csr_from_matrix(struct scotch_csr *c, const struct cm_matrix *m,
			   const struct bench_tleaf *arch)
{
	int n = cm_matrix_nthreads(m);
	size_t arcs = 2 * cm_matrix_nedges(m);
	double scale = load_scale(m, arch);
	SCOTCH_Num k = 0;

	if (arcs > (size_t)INT_MAX)
		return -1;
	c->vert = malloc(((size_t)n + 1) * sizeof(*c->vert));
	c->edge = malloc((arcs ? arcs : 1) * sizeof(*c->edge));
	c->load = malloc((arcs ? arcs : 1) * sizeof(*c->load));
	if (!c->vert || !c->edge || !c->load) {
		csr_free(c);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *row;
		int len = cm_matrix_row(m, i, &row);

		c->vert[i] = k;
		for (int j = 0; j < len; j++) {
			long w = lround(row[j].w * scale);

			c->edge[k] = row[j].col;
			c->load[k] = (SCOTCH_Num)(w < 1 ? 1 : w);
			k++;
		}
	}
	c->vert[n] = k;
	c->nedge = k;
	return 0;
}

/* A context with nthreads workers and its own seeded random state, so that
 * repeated runs give the same mapping. */
static int context_open(SCOTCH_Context *ctx, uint64_t seed, int nthreads)
{
	if (SCOTCH_contextInit(ctx) != 0)
		return -1;
	if (SCOTCH_contextRandomClone(ctx) != 0 ||
	    SCOTCH_contextThreadSpawn(ctx, nthreads, NULL) != 0) {
		SCOTCH_contextExit(ctx);
		return -1;
	}
	SCOTCH_contextRandomSeed(ctx, (SCOTCH_Num)(seed & INT_MAX));
	return 0;
}

/* An empty strategy is Scotch's default (1% load imbalance allowed). */
static int strategy_build(SCOTCH_Strat *s, enum bench_scotch_strategy st,
			  SCOTCH_Num nparts)
{
	switch (st) {
	case BENCH_SCOTCH_QUALITY:
		return SCOTCH_stratGraphMapBuild(s, SCOTCH_STRATQUALITY,
						 nparts, 0.01);
	case BENCH_SCOTCH_BALANCED:
		return SCOTCH_stratGraphMapBuild(s, SCOTCH_STRATDEFAULT,
						 nparts, 0.0);
	default:
		return 0;
	}
}

static int map_graph(SCOTCH_Graph *g, const struct bench_tleaf *arch,
		     enum bench_scotch_strategy strategy, int n,
		     int *pu_of_thread, char *msg, size_t msglen)
{
	SCOTCH_Num size[BENCH_TLEAF_MAX_LEVELS], link[BENCH_TLEAF_MAX_LEVELS];
	SCOTCH_Num *part = malloc(((size_t)n + 1) * sizeof(*part));
	SCOTCH_Arch a;
	SCOTCH_Strat s;
	int rv = -1;

	if (!part) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	for (int d = 0; d < arch->nlevels; d++) {
		size[d] = arch->size[d];
		link[d] = arch->link[d];
	}
	SCOTCH_archInit(&a);
	SCOTCH_stratInit(&s);
	if (SCOTCH_archTleaf(&a, arch->nlevels, size, link) != 0)
		snprintf(msg, msglen, "SCOTCH_archTleaf failed");
	else if (strategy_build(&s, strategy, SCOTCH_archSize(&a)) != 0)
		snprintf(msg, msglen, "SCOTCH_stratGraphMapBuild failed");
	else if (SCOTCH_graphMap(g, &a, &s, part) != 0)
		snprintf(msg, msglen, "SCOTCH_graphMap failed");
	else
		rv = 0;
	for (int i = 0; rv == 0 && i < n; i++)
		pu_of_thread[i] = (int)part[i];
	SCOTCH_stratExit(&s);
	SCOTCH_archExit(&a);
	free(part);
	return rv;
}

int bench_scotch_map(const struct bench_tleaf *arch, const struct cm_matrix *m,
		     const struct bench_scotch_options *opt, int *pu_of_thread,
		     char *msg, size_t msglen)
{
	int n = cm_matrix_nthreads(m);
	struct scotch_csr c = { 0 };
	SCOTCH_Context ctx;
	SCOTCH_Graph g, cg;
	int rv = -1;

	if (csr_from_matrix(&c, m, arch) < 0) {
		snprintf(msg, msglen, "cannot build the graph arrays");
		return -1;
	}
	if (context_open(&ctx, opt->seed, opt->nthreads) < 0) {
		snprintf(msg, msglen, "cannot set up a Scotch context");
		csr_free(&c);
		return -1;
	}
	SCOTCH_graphInit(&g);
	SCOTCH_graphInit(&cg);
	if (SCOTCH_graphBuild(&g, 0, n, c.vert, NULL, NULL, NULL, c.nedge,
			      c.edge, c.load) != 0)
		snprintf(msg, msglen, "SCOTCH_graphBuild failed");
	else if (SCOTCH_contextBindGraph(&ctx, &g, &cg) != 0)
		snprintf(msg, msglen, "SCOTCH_contextBindGraph failed");
	else
		rv = map_graph(&cg, arch, opt->strategy, n, pu_of_thread,
			       msg, msglen);
	/* the bound graph goes before its context */
	SCOTCH_graphExit(&cg);
	SCOTCH_graphExit(&g);
	SCOTCH_contextExit(&ctx);
	csr_free(&c);
	return rv;
}

#else /* !HAVE_SCOTCH */

int bench_scotch_available(void)
{
	return 0;
}

int bench_scotch_map(const struct bench_tleaf *arch, const struct cm_matrix *m,
		     const struct bench_scotch_options *opt, int *pu_of_thread,
		     char *msg, size_t msglen)
{
	snprintf(msg, msglen, "built without Scotch (libscotch-dev)");
	return -1;
}

#endif
