/* remap_decide.c: the dynamic mode's decisions and the progress guard's
 * judgements, shared by the agent and the replay (remap_decide.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commap/placement_check.h"
#include "placement.h"
#include "remap_decide.h"

static int *ints(int n)
{
	return malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
}

void cm_decide_init(struct cm_decide *d, const struct cm_topo *topo,
		    double alpha, double gain, uint64_t t0_ns)
{
	memset(d, 0, sizeof(*d));
	d->topo = topo;
	d->alpha = alpha;
	d->gain = gain;
	d->interval_ms = CM_REMAP_INTERVAL_MS_START;
	d->last_aged_ns = t0_ns;
}

void cm_decide_free(struct cm_decide *d)
{
	free(d->partner);
	free(d->undo_os);
	d->partner = d->undo_os = NULL;
}

void cm_decide_out_free(struct cm_decide_out *o)
{
	free(o->target);
	o->target = NULL;
}

int cm_decide_partners(struct cm_decide *d, const struct cm_matrix *live,
		       int n, int keep)
{
	int *now = ints(n);
	int changed;

	if (!now)
		return 0;
	cm_remap_partners(live, n, now);
	changed = cm_remap_partners_changed(d->partner, d->npartner, now, n);
	if (!keep) {
		free(now);
		return changed;
	}
	free(d->partner);
	d->partner = now;
	d->npartner = n;
	return changed;
}

/* LHMapping §3.4.1, by the step's progress: a starved program keeps its
 * evidence as long as it would at full speed, in its own CPU time. */
void cm_decide_age(struct cm_decide *d, struct cm_matrix *live,
		   uint64_t app_ns)
{
	int ms = app_ns > d->last_aged_ns ?
		 (int)((app_ns - d->last_aged_ns) / 1000000u) : 0;

	cm_matrix_age(live, cm_remap_aging(d->alpha, ms));
	if (app_ns > d->last_aged_ns)
		d->last_aged_ns = app_ns;
}

int cm_decide_correct_colocation(const struct cm_topo *topo,
				 struct cm_matrix *fresh, const int *cur_os,
				 int ncur, double near_seen)
{
	int n = cm_matrix_nthreads(fresh);
	int *pu;

	if (near_seen >= 1 || n == 0)
		return 0;
	pu = ints(n);
	if (!pu)
		return -1;
	for (int i = 0; i < n; i++)
		pu[i] = i < ncur && cur_os[i] >= 0 ?
			cm_topo_pu_by_os_index(topo, cur_os[i]) : -1;
	cm_remap_correct_near(topo, fresh, n, pu, near_seen);
	free(pu);
	return 0;
}

/* PU index of every thread (-1: not placed, or exited). */
static int *current_pus(const struct cm_decide *d,
			const struct cm_decide_in *in)
{
	int *pu = ints(in->n);

	for (int i = 0; pu && i < in->n; i++)
		pu[i] = in->alive[i] && in->cur_os[i] >= 0 ?
			cm_topo_pu_by_os_index(d->topo, in->cur_os[i]) : -1;
	return pu;
}

/* The set's placement before the last complete remap, or NULL. */
static int *undo_placement(const struct cm_decide *d,
			   const struct cm_place_set *s)
{
	int *u;

	if (!d->undo_os || !(u = ints(s->n)))
		return NULL;
	for (int k = 0; k < s->n; k++)
		u[k] = s->idx[k] < d->nundo ?
		       cm_topo_pu_by_os_index(d->topo, d->undo_os[s->idx[k]]) :
		       -1;
	return u;
}

/* Nothing of the step placed yet, and nothing to gain by placing it
 * (cm_place_worth_pinning): 1 with out->not_pinned saying why. */
static int nothing_to_gain(const struct cm_decide *d,
			   const struct cm_place_set *s,
			   const struct cm_matrix *sub, const int *cur, int n,
			   struct cm_decide_out *out)
{
	int *spu;
	int worth;

	for (int i = 0; i < n; i++)
		if (cur[i] >= 0)
			return 0;
	if (!(spu = ints(s->n)))
		return 0;
	for (int k = 0; k < s->n; k++)
		spu[k] = out->target[s->idx[k]];
	/* The threads that compete for the PUs in a way a placement can
	 * change are the communicating ones (the set): an idle helper (an
	 * OpenMP runtime's monitor, MPI's progress threads) beside one
	 * busy thread per PU must not turn a flat machine into one where
	 * pinning two threads on one PU looks like a gain. */
	worth = cm_place_worth_pinning(d->topo, s->n, sub, spu, d->gain,
				       out->not_pinned,
				       sizeof(out->not_pinned));
	free(spu);
	if (!worth)
		return 1;
	out->not_pinned[0] = '\0';
	return 0;
}

/* A complete remap is about to be applied: remember what it leaves, and
 * whether it is itself an undo. */
static void note_full(struct cm_decide *d, const struct cm_place_set *s,
		      const int *undo, const struct cm_decide_in *in,
		      const int *target)
{
	int *spu = ints(s->n), *os = ints(in->n);

	if (spu && os) {
		for (int k = 0; k < s->n; k++)
			spu[k] = target[s->idx[k]];
		memcpy(os, in->cur_os, (size_t)in->n * sizeof(int));
		free(d->undo_os);
		d->undo_os = os;
		os = NULL;
		d->nundo = in->n;
		d->undos = undo && cm_remap_equivalent(d->topo, s->n, undo,
						       spu) ? d->undos + 1 : 0;
		d->last_full_ns = in->t_ns;
	}
	free(spu);
	free(os);
}

/* Decide what to move (remap_policy.h, cm_remap_plan): threads not placed
 * yet are placed around the placed ones, which move only when a complete
 * remap gains more than the threshold and the sampling noise, and not
 * back to where the last one took them from while the hold is on; all
 * within the placement invariant (placement.h), counting every live
 * thread of the step.  0, -1 ENOMEM. */
static int plan(struct cm_decide *d, const struct cm_place_set *s,
		const struct cm_matrix *sub, const struct cm_decide_in *in,
		struct cm_decide_out *out)
{
	int *cur = current_pus(d, in), *undo = undo_placement(d, s);
	int hold = undo && !cm_remap_undo_allowed(
		(double)(in->t_ns - d->last_full_ns) / 1e6, d->undos);
	struct cm_error err;
	int rc = -1;

	out->plan.kind = CM_REMAP_KEEP;
	out->target = ints(in->n);
	if (!cur || !out->target)
		goto out;
	rc = 0;
	out->computed = 1;
	if (cm_place_plan(d->topo, sub, s, in->n, in->alive, cur,
			  hold ? undo : NULL, d->gain, in->near_seen,
			  out->target, &out->plan, &out->repaired, &err) < 0) {
		snprintf(out->error, sizeof(out->error), "%s", err.text);
		out->plan.kind = CM_REMAP_KEEP;
		goto out;
	}
	out->avoided_undo = out->plan.avoided;
	if ((out->plan.kind == CM_REMAP_KEEP && !out->repaired) ||
	    nothing_to_gain(d, s, sub, cur, in->n, out)) {
		out->plan.kind = CM_REMAP_KEEP;
		goto out;
	}
	if (out->plan.kind == CM_REMAP_FULL)
		note_full(d, s, undo, in, out->target);
	out->apply = 1;
	out->cost = out->plan.cost_new;
	out->why = out->repaired && out->plan.kind == CM_REMAP_KEEP ?
		   "invariant" : out->d.reason;
out:
	free(cur);
	free(undo);
	return rc;
}

int cm_decide_interval(struct cm_decide *d, const struct cm_matrix *live,
		       const struct cm_decide_in *in,
		       struct cm_decide_out *out)
{
	struct cm_place_set s = { 0 };
	struct cm_matrix *sub = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->in.interval_ms = d->interval_ms;
	out->in.partner_threshold = CM_REMAP_PARTNER_THRESHOLD;
	out->in.partners_changed = cm_decide_partners(d, live, in->n, 1);
	if (cm_place_set_build(live, in->n, in->alive, &s) < 0 ||
	    !(sub = cm_place_sub_matrix(live, &s)))
		goto out;
	out->nset = s.n;
	out->in.comm_total = cm_matrix_total(sub);
	out->in.have_mapping = in->have_mapping;
	for (int k = 0; k < s.n; k++)
		out->in.unplaced += in->cur_os[s.idx[k]] < 0;
	out->in.recheck = d->recheck;
	cm_remap_decide(&out->in, &out->d);
	if (out->d.pattern_changed)
		d->recheck = CM_REMAP_RECHECK_INTERVALS;
	else if (d->recheck > 0)
		d->recheck--;
	if (out->d.compute && !in->holding) {
		if (plan(d, &s, sub, in, out) < 0)
			goto out;
		if (out->apply && out->plan.kind == CM_REMAP_FULL)
			d->recheck = 0;
	}
	d->interval_ms = out->d.next_interval_ms;
	rc = 0;
out:
	cm_matrix_free(sub);
	cm_place_set_free(&s);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

struct cm_result_mapping *cm_decide_timeline_add(struct cm_agent_result *res,
						 double at_s, int n,
						 const int *alive,
						 const int *cur_os,
						 double cost, const char *why)
{
	int *os = ints(n);
	int live = 0, rc;

	if (!os)
		return NULL;
	for (int i = 0; i < n; i++) {
		os[i] = alive[i] ? cur_os[i] : -1;
		live += alive[i] != 0;
	}
	rc = cm_agent_result_add_mapping(res, at_s, os, n, cost, why);
	free(os);
	if (rc < 0)
		return NULL;
	res->timeline[res->ntimeline - 1].live = live;
	return &res->timeline[res->ntimeline - 1];
}

/* ---- the progress guard ------------------------------------------- */

int cm_decide_guard_grow(struct cm_decide_guard *g, int n)
{
	double **arr[] = { &g->cpu, &g->wait, &g->cpu_a, &g->wait_a };

	if (n <= g->cap)
		return 0;
	for (size_t k = 0; k < sizeof(arr) / sizeof(arr[0]); k++) {
		double *p = realloc(*arr[k], (size_t)n * sizeof(double));

		if (!p)
			return -1;
		*arr[k] = p;
		for (int i = g->cap; i < n; i++)
			p[i] = -1;
	}
	g->cap = n;
	return 0;
}

void cm_decide_guard_free(struct cm_decide_guard *g)
{
	free(g->cpu);
	free(g->wait);
	free(g->cpu_a);
	free(g->wait_a);
	free(g->prev_os);
	memset(g, 0, sizeof(*g));
}

int cm_decide_guard_holding(const struct cm_decide_guard *g, uint64_t t)
{
	return g->hold_until_ns && t < g->hold_until_ns;
}

void cm_decide_guard_applied(struct cm_decide_guard *g, uint64_t t, int n,
			     const int *leaving, int nleaving)
{
	g->apply_ns = t;
	if (g->pending)
		return;
	/* The placement to return to is the last one judged good (or the
	 * one before any mapping): a mapping that follows one never judged
	 * (a piece of a static mapping as threads appear, a first
	 * placement) must not make that unjudged piece the way back. */
	if (!g->unjudged) {
		free(g->prev_os);
		g->prev_os = leaving ? ints(nleaving) : NULL;
		g->nprev = g->prev_os ? nleaving : 0;
		if (g->prev_os)
			memcpy(g->prev_os, leaving,
			       (size_t)nleaving * sizeof(int));
	}
	g->unjudged = 1;
	g->have_before = g->snap_ns && (t - g->snap_ns) / 1000000u >=
				       CM_GUARD_MIN_BEFORE_MS &&
			 cm_guard_progress(n, g->cpu, g->wait, g->cpu_a,
					   g->wait_a,
					   (double)(t - g->snap_ns) / 1e9,
					   &g->before) == 0 &&
			 g->before.busy > 0;
	g->pending = 1;
}

int cm_decide_guard_judge(struct cm_decide_guard *g, uint64_t t, int n,
			  int stacked, int npus, char *why, size_t len)
{
	struct cm_progress after, ref;

	g->pending = 0;
	g->snap_ns = t;
	if (cm_guard_progress(n, g->cpu_a, g->wait_a, g->cpu, g->wait,
			      (double)(t - g->apply_ns) / 1e9, &after) < 0 ||
	    after.threads == 0)
		return -1;
	/* Without a window before the mapping, the reference is a model
	 * that ignores other jobs' load: it judges only a placement that
	 * stacks threads beyond their share. */
	if (!g->have_before && !stacked)
		return -1;
	if (g->have_before && cm_guard_worse(&g->before, &after, 0, why, len))
		return 1;
	/* A placement that stacks threads beyond the invariant is also
	 * held against the unpinned model: on a loaded machine the window
	 * before may already be all waiting, so the measured rise cannot
	 * show, while unpinned is never worse than stacked. */
	if (stacked) {
		cm_guard_baseline(after.busy, npus, &ref);
		if (cm_guard_worse(&ref, &after, 1, why, len))
			return 1;
	}
	g->unjudged = 0;	/* kept: the way back from the next one */
	return 0;
}

void cm_decide_guard_undone(struct cm_decide_guard *g, uint64_t t)
{
	g->undos++;
	g->unjudged = 0;
	g->hold_until_ns = t + (uint64_t)(cm_guard_backoff_ms(g->undos) * 1e6);
}

int cm_decide_stacked(const struct cm_topo *topo, int n, const int *alive,
		      const int *cur_os)
{
	int *os = ints(n), live = 0, rc;

	if (!os)
		return 0;
	for (int i = 0; i < n; i++) {
		os[i] = alive[i] ? cur_os[i] : -1;
		live += alive[i] != 0;
	}
	rc = cm_placement_check(cm_topo_npus(topo), live, n, os, NULL) < 0;
	free(os);
	return rc;
}
