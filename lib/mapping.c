/* mapping.c: cm_map(), the dispatcher, and "auto".
 *
 * auto picks by size (docs/mapping.md, docs/PERFORMANCE.md "Mapping"):
 *  - n <= CM_MAP_EXACT_MAX: the exact optimum (map_exact.c);
 *  - n <= AUTO_ALL_MAX: several candidates, the one with the lowest
 *    cm_cost() wins (ties: the first):
 *     1. LHMapping §3.3 bottom-up greedy groups (good when threads form
 *        clusters), placed top-down with FM-refined splits;
 *     2. top-down recursive bisection following the tree: multilevel
 *        (map_bisect.c) with a few seeds, and flat greedy growing + FM
 *        (good on stencils and meshes, where bottom-up greedy grouping
 *        leaves ragged borders); pairs under each cache then re-matched
 *        exactly; the best of 1-2 is improved by cm_map_refine();
 *     3. the plain greedy and the SPCD matching mappers, as cm_map()
 *        gives them (refined);
 *     4. the baselines (they are O(n));
 *    so auto is never worse than any of them there;
 *  - larger n, the lean path: one multilevel recursive bisection with
 *    less effort per split (CM_PLACE_LEAN) and a bounded refinement.  On
 *    tests/bench/map the candidates above never won at these sizes and
 *    cost 4-8 times as much; this path is what meets the time targets
 *    (1024 threads in about 2 ms).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/cost.h"
#include "commap/mapping.h"
#include "map_groups.h"
#include "map_internal.h"
#include "map_refine.h"

/* Up to this many threads auto runs every candidate; above, the lean
 * path. */
#ifndef AUTO_ALL_MAX
#define AUTO_ALL_MAX 512
#endif
/* Refinement effort of the lean path: after its FM-refined splits and
 * pairing, the full refinement found < 0.1% on tests/bench/map, at 15-30%
 * of the time; so one partner, few PUs, and a stop when it stops paying
 * (cm_refine_effort.min_gain). */
#ifndef LEAN_REFINE_PARTNERS
#define LEAN_REFINE_PARTNERS 1
#endif
#ifndef LEAN_REFINE_PUS
#define LEAN_REFINE_PUS 8
#endif
#ifndef LEAN_REFINE_PASSES
#define LEAN_REFINE_PASSES 2
#endif
#ifndef LEAN_REFINE_MIN_GAIN
#define LEAN_REFINE_MIN_GAIN 1e-5	/* per n / 8 visits */
#endif

struct candidates {
	const struct cm_topo *topo;
	const struct cm_matrix *m;
	const struct cm_map_options *opts;
	int n;
	int *best;		/* the caller's pu_of_thread */
	int *trial;
	double best_cost;
	int have_best;
};

/* Keep trial if it is valid and cheaper than the best so far. */
static void offer(struct candidates *c, int refine)
{
	double cost;

	if (cm_map_validate(c->topo, c->n, c->trial, c->opts->oversubscribe,
			    NULL))
		return;
	if (refine && cm_map_refine(c->topo, c->m, c->trial,
				    c->opts->oversubscribe) < 0)
		return;
	cost = cm_cost(c->topo, c->m, c->trial);
	if (c->have_best && !(cost < c->best_cost))
		return;
	c->have_best = 1;
	c->best_cost = cost;
	memcpy(c->best, c->trial, sizeof(int) * (size_t)c->n);
}

static void offer_placement(struct candidates *c, const int *cap,
			    const int *order, unsigned flags, uint64_t seed,
			    int refine)
{
	if (cm_map_place_seeded(c->topo, c->m, cap, order, flags, seed,
				c->trial) == 0)
		offer(c, refine && !c->opts->no_refine);
}

/* Restarts of the multilevel bisection with other seeds (n <=
 * AUTO_ALL_MAX): cheap there, and the best of a few is markedly better on
 * meshes. */
#define AUTO_RESTARTS 3

static void offer_algorithm(struct candidates *c, enum cm_map_algorithm alg,
			    int refine)
{
	struct cm_map_options o = *c->opts;
	int rv;

	o.algorithm = alg;
	switch (alg) {
	case CM_MAP_GREEDY:
		rv = cm_map_greedy(c->topo, c->m, &o, c->trial, NULL);
		break;
	case CM_MAP_MATCHING:
		rv = cm_map_matching(c->topo, c->m, &o, c->trial, NULL);
		break;
	default:
		rv = cm_map_baseline(c->topo, c->m, &o, c->trial, NULL);
		break;
	}
	if (rv == 0)
		offer(c, refine && !c->opts->no_refine);
}

static void offer_baselines(struct candidates *c)
{
	for (int a = CM_MAP_COMPACT; a <= CM_MAP_RANDOM; a++)
		offer_algorithm(c, (enum cm_map_algorithm)a, 0);
}

/* Does every PU have to be filled to its capacity (n == the sum of cap)?
 * Then a thread can only change places by a swap. */
static int every_pu_full(const struct candidates *c, const int *cap)
{
	long long sum = 0;

	for (int p = 0; p < cm_topo_npus(c->topo); p++)
		sum += cap[p];
	return sum == c->n;
}

/* Large n: one lean multilevel bisection, refined with a bounded effort.
 * The other candidates cost several times as much and never won at these
 * sizes on tests/bench/map, nor did a baseline; compact is the fallback
 * if the placement fails (out of memory).  When every PU is full, the
 * bounded refinement is skipped: it can only swap threads there, and
 * after the FM-refined splits and the pairing its swaps found nothing on
 * tests/bench/map at 1024 (and 0.016% on random at 4096) for 7-12% of
 * the instructions (docs/PERFORMANCE.md, "Mapping"); with free room (or
 * more threads than PUs) it moves threads beside their partners. */
static int map_auto_lean(struct candidates *c, const int *cap)
{
	static const struct cm_refine_effort lean_refine = {
		LEAN_REFINE_PARTNERS, LEAN_REFINE_PUS, LEAN_REFINE_PASSES,
		LEAN_REFINE_MIN_GAIN
	};

	if (cm_map_place_seeded(c->topo, c->m, cap, NULL,
				CM_PLACE_FM | CM_PLACE_LEAN,
				c->opts->seed,
				c->best) == 0 &&
	    cm_map_validate(c->topo, c->n, c->best, c->opts->oversubscribe,
			    NULL) == 0) {
		if (!c->opts->no_refine && !every_pu_full(c, cap))
			cm_map_refine_effort(c->topo, c->m, c->best,
					     c->opts->oversubscribe,
					     &lean_refine);
		return 0;
	}
	offer_algorithm(c, CM_MAP_COMPACT, 0);
	return c->have_best ? 0 : -1;
}

/* n <= AUTO_ALL_MAX.  The placements (bottom-up greedy groups,
 * multilevel bisection with a few seeds, flat bisection) compete
 * unrefined and only the best is refined: refinement is the costly part
 * and rarely changes the order.  Greedy and matching also run as cm_map()
 * runs them (refined), so that auto is never worse than either; baselines
 * compete as they are (refinement would only lower them further). */
static int map_auto_heuristics(struct candidates *c, const int *cap)
{
	int *order = malloc(sizeof(int) * (size_t)c->n);

	if (order && cm_map_greedy_order(c->topo, c->m, cap, order) == 0)
		offer_placement(c, cap, order, CM_PLACE_FM, 0, 0);
	free(order);
	for (int k = 0; k < AUTO_RESTARTS; k++)
		offer_placement(c, cap, NULL, CM_PLACE_FM,
				c->opts->seed + (uint64_t)k, 0);
	offer_placement(c, cap, NULL, CM_PLACE_FM | CM_PLACE_FLAT,
			c->opts->seed, 0);
	if (c->have_best && !c->opts->no_refine &&
	    cm_map_refine(c->topo, c->m, c->best, c->opts->oversubscribe) >= 0)
		c->best_cost = cm_cost(c->topo, c->m, c->best);
	offer_algorithm(c, CM_MAP_GREEDY, 1);
	offer_algorithm(c, CM_MAP_MATCHING, 1);
	offer_baselines(c);
	return c->have_best ? 0 : -1;
}

static int map_auto(const struct cm_topo *topo, const struct cm_matrix *m,
		    const struct cm_map_options *opts, int *pu_of_thread,
		    struct cm_error *err)
{
	struct candidates c = { .topo = topo, .m = m, .opts = opts,
				.best = pu_of_thread };
	int *cap = NULL, rv = -1;

	c.n = cm_matrix_nthreads(m);
	if (c.n <= CM_MAP_EXACT_MAX &&
	    cm_map_exact(topo, m, opts, pu_of_thread, NULL) == 0)
		return 0;
	cap = malloc(sizeof(int) * (size_t)cm_topo_npus(topo));
	c.trial = malloc(sizeof(int) * (size_t)c.n);
	if (!cap || !c.trial) {
		cm_errorf(err, ENOMEM, "auto mapping: out of memory");
		goto out;
	}
	if (cm_map_capacity(topo, c.n, opts->oversubscribe, cap, err))
		goto out;
	if (c.n > AUTO_ALL_MAX ? map_auto_lean(&c, cap)
			       : map_auto_heuristics(&c, cap)) {
		cm_errorf(err, errno ? errno : ENOMEM,
			  "auto mapping: no algorithm produced a mapping of "
			  "%d threads", c.n);
		goto out;
	}
	rv = 0;
out:
	free(cap);
	free(c.trial);
	return rv;
}

static int run_algorithm(const struct cm_topo *topo, const struct cm_matrix *m,
			 const struct cm_map_options *opts, int *pu_of_thread,
			 struct cm_error *err)
{
	switch (opts->algorithm) {
	case CM_MAP_AUTO:
		return map_auto(topo, m, opts, pu_of_thread, err);
	case CM_MAP_GREEDY:
		return cm_map_greedy(topo, m, opts, pu_of_thread, err);
	case CM_MAP_MATCHING:
		return cm_map_matching(topo, m, opts, pu_of_thread, err);
	case CM_MAP_EXACT:
		return cm_map_exact(topo, m, opts, pu_of_thread, err);
	default:
		return cm_map_baseline(topo, m, opts, pu_of_thread, err);
	}
}

int cm_map(const struct cm_topo *topo, const struct cm_matrix *m,
	   const struct cm_map_options *opts, int *pu_of_thread,
	   struct cm_error *err)
{
	int n, npus;

	if (!topo || !m || !opts)
		return cm_errorf(err, EINVAL, "mapping: missing topology, "
				 "matrix or options");
	if ((int)opts->algorithm < 0 ||
	    opts->algorithm >= CM_MAP_ALGORITHM_COUNT)
		return cm_errorf(err, EINVAL, "mapping: unknown algorithm "
				 "number %d", (int)opts->algorithm);
	n = cm_matrix_nthreads(m);
	npus = cm_topo_npus(topo);
	if (n > npus && !opts->oversubscribe)
		return cm_errorf(err, ENOSPC, "%d threads but only %d PUs; "
				 "oversubscription is disabled", n, npus);
	if (n == 0)
		return 0;
	if (!pu_of_thread)
		return cm_errorf(err, EINVAL, "mapping: no output array");
	if (run_algorithm(topo, m, opts, pu_of_thread, err))
		return -1;
	if (!opts->no_refine && (opts->algorithm == CM_MAP_GREEDY ||
				 opts->algorithm == CM_MAP_MATCHING) &&
	    cm_map_refine(topo, m, pu_of_thread, opts->oversubscribe) < 0)
		return cm_errorf(err, errno ? errno : ENOMEM,
				 "mapping: refinement failed");
	return 0;
}
