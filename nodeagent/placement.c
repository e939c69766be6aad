/* placement.c: the set, the plan and the invariant (placement.h). */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commap/cost.h"
#include "commap/placement_check.h"
#include "placement.h"

void cm_place_set_free(struct cm_place_set *s)
{
	free(s->idx);
	free(s->pos);
	s->idx = s->pos = NULL;
	s->n = 0;
}

/* The largest row sum of the live threads of m. */
static double max_live_row(const struct cm_matrix *m, int n,
			   const int *alive)
{
	int nm = cm_matrix_nthreads(m);
	double mx = 0;

	for (int i = 0; i < n && i < nm; i++)
		if (alive[i] && cm_matrix_row_sum(m, i) > mx)
			mx = cm_matrix_row_sum(m, i);
	return mx;
}

int cm_place_set_build(const struct cm_matrix *m, int n, const int *alive,
		       struct cm_place_set *s)
{
	int nm = cm_matrix_nthreads(m);
	double mx = max_live_row(m, n, alive);

	s->n = 0;
	s->idx = malloc((size_t)(n ? n : 1) * sizeof(int));
	s->pos = malloc((size_t)(n ? n : 1) * sizeof(int));
	if (!s->idx || !s->pos) {
		cm_place_set_free(s);
		return errno = ENOMEM, -1;
	}
	for (int i = 0; i < n; i++) {
		s->pos[i] = -1;
		if (!alive[i] || i >= nm ||
		    !cm_remap_thread_has_evidence(cm_matrix_row_sum(m, i), mx))
			continue;
		s->pos[i] = s->n;
		s->idx[s->n++] = i;
	}
	return 0;
}

struct cm_matrix *cm_place_sub_matrix(const struct cm_matrix *m,
				      const struct cm_place_set *s)
{
	struct cm_matrix *sub = cm_matrix_new(s->n);

	for (int k = 0; sub && k < s->n; k++) {
		const struct cm_matrix_entry *row;
		int cnt = cm_matrix_row(m, s->idx[k], &row);

		for (int e = 0; e < cnt; e++) {
			int j = s->pos[row[e].col];

			if (j > k)
				cm_matrix_add(sub, k, j, row[e].w);
		}
	}
	return sub;
}

/* ---- the invariant ---------------------------------------------------- */

struct repair {
	const struct cm_topo *topo;
	int n, npus, cap;
	const int *alive, *cur;
	int *target, *load;
};

/* The PU below the cap with the least load, then nearest to p. */
static int refuge(const struct repair *r, int p)
{
	int best = -1, bd = 0;

	for (int q = 0; q < r->npus; q++) {
		int d;

		if (q == p || r->load[q] >= r->cap)
			continue;
		d = cm_topo_distance(r->topo, p, q);
		if (best < 0 || r->load[q] < r->load[best] ||
		    (r->load[q] == r->load[best] && d < bd)) {
			best = q;
			bd = d;
		}
	}
	return best;
}

/* The thread to take off PU p: one the target moves there (or places)
 * before one that already sits there; the highest thread number. */
static int victim(const struct repair *r, int p)
{
	int moved = -1, stays = -1;

	for (int t = r->n - 1; t >= 0 && moved < 0; t--) {
		if (!r->alive[t] || r->target[t] != p)
			continue;
		if (r->cur[t] != p)
			moved = t;
		else if (stays < 0)
			stays = t;
	}
	return moved >= 0 ? moved : stays;
}

static int unload(struct repair *r, int p)
{
	int moves = 0;

	while (r->load[p] > r->cap) {
		int t = victim(r, p), q = refuge(r, p);

		/* Both exist: p holds > cap live threads, and the live
		 * threads fit on npus x cap. */
		if (t < 0 || q < 0)
			return errno = EINVAL, -1;
		r->target[t] = q;
		r->load[p]--;
		r->load[q]++;
		moves++;
	}
	return moves;
}

static int repair_args(const struct cm_topo *topo, int n, const int *alive,
		       const int *cur, const int *target)
{
	int npus;

	if (!topo || n < 0 || (n > 0 && (!alive || !cur || !target)))
		return -1;
	npus = cm_topo_npus(topo);
	for (int t = 0; t < n; t++)
		if (target[t] < -1 || target[t] >= npus || cur[t] < -1 ||
		    cur[t] >= npus)
			return -1;
	return 0;
}

int cm_place_repair(const struct cm_topo *topo, int n, const int *alive,
		    const int *cur, int *target)
{
	struct repair r = { .topo = topo, .n = n, .alive = alive, .cur = cur,
			    .target = target };
	int live = 0, moves = 0;

	if (repair_args(topo, n, alive, cur, target) < 0)
		return errno = EINVAL, -1;
	r.npus = cm_topo_npus(topo);
	r.load = calloc((size_t)(r.npus > 0 ? r.npus : 1), sizeof(int));
	if (!r.load)
		return errno = ENOMEM, -1;
	for (int t = 0; t < n; t++) {
		if (!alive[t])
			target[t] = -1;
		live += alive[t] != 0;
		if (target[t] >= 0)
			r.load[target[t]]++;
	}
	r.cap = cm_placement_cap(live, r.npus);
	for (int p = 0; p < r.npus && moves >= 0; p++) {
		int m = unload(&r, p);

		moves = m < 0 ? -1 : moves + m;
	}
	free(r.load);
	return moves;
}

int cm_place_plan(const struct cm_topo *topo, const struct cm_matrix *sub,
		  const struct cm_place_set *s, int n, const int *alive,
		  const int *cur, const int *avoid, double gain,
		  double near_seen, int *target, struct cm_remap_plan *plan,
		  int *repaired, struct cm_error *err)
{
	int *scur = malloc((size_t)(s->n ? s->n : 1) * sizeof(int));
	int *spu = malloc((size_t)(s->n ? s->n : 1) * sizeof(int));
	int rc = -1;

	*repaired = 0;
	if (!scur || !spu) {
		cm_errorf(err, ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < s->n; k++)
		scur[k] = cur[s->idx[k]];
	if (cm_remap_plan(topo, sub, s->n, scur, avoid, gain, near_seen, spu,
			  plan, err) < 0)
		goto out;
	memcpy(target, cur, sizeof(int) * (size_t)n);
	if (plan->kind != CM_REMAP_KEEP)
		for (int k = 0; k < s->n; k++)
			target[s->idx[k]] = spu[k];
	*repaired = cm_place_repair(topo, n, alive, cur, target);
	if (*repaired < 0) {
		cm_errorf(err, errno, "placement repair failed");
		goto out;
	}
	rc = 0;
out:
	free(scur);
	free(spu);
	return rc;
}

/* ---- nothing to gain -------------------------------------------------- */

/* The mean distance between distinct PUs; *flat: all the same. */
static double mean_distance(const struct cm_topo *topo, int *flat)
{
	int npus = cm_topo_npus(topo), d0 = -1;
	double sum = 0, pairs = 0;

	*flat = 1;
	for (int p = 0; p < npus; p++)
		for (int q = p + 1; q < npus; q++) {
			int d = cm_topo_distance(topo, p, q);

			if (d0 < 0)
				d0 = d;
			*flat &= d == d0;
			sum += d;
			pairs++;
		}
	return pairs > 0 ? sum / pairs : 0;
}

int cm_place_worth_pinning(const struct cm_topo *topo, int nlive,
			   const struct cm_matrix *sub, const int *pu,
			   double gain, char *why, size_t whylen)
{
	int flat, npus = cm_topo_npus(topo);
	double mean = mean_distance(topo, &flat), w, random_cost, cost;

	if (flat && nlive <= npus) {
		snprintf(why, whylen, "equidistant: the step's %d PUs are all "
			 "at one distance from each other and its threads fit "
			 "one per PU; every placement costs the same", npus);
		return 0;
	}
	if (!sub || !pu || nlive > npus)
		return 1;
	w = cm_matrix_total(sub);
	random_cost = w * mean;
	cost = cm_cost(topo, sub, pu);
	if (random_cost > 0 && cost < random_cost * (1 - gain))
		return 1;
	snprintf(why, whylen, "little-gain: the mapping's cost %.4g is not "
		 "below %.0f%% of an unpinned placement's expected %.4g",
		 cost, (1 - gain) * 100, random_cost);
	return 0;
}
