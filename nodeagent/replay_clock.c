/* replay_clock.c: the agent's interval clock and remap decisions made
 * again from a version 3 recording (replay.h, record.h).
 *
 * At each "interval" line the events drained until then are folded into
 * the live (aged) matrix, and the decision of agent_interval.c's
 * ag_interval_end and agent_place.c's ag_remap for a dry run is taken
 * with the same policy functions (remap_policy.h, placement.h) and the
 * recorded options, times and thread exits: the partner filter, the
 * decision, the plan within the placement invariant, the hold against
 * undoing a remap, "nothing to gain"; then the live matrix is aged for
 * the time since it was last aged.  A "checkpoint" line ages and folds,
 * as the agent's checkpoint does.  Each mapping goes into the result's
 * timeline at the recorded time, so a dry run's timeline comes back
 * whole.  Under real pinning the events of pairs pinned near each other
 * are corrected as the agent corrects them (the recorded near_seen), and
 * the progress guard judges each mapping from the recorded snapshots of
 * the threads' schedstat ("snap" lines), undoing it as the agent did.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commap/cost.h"
#include "commap/placement_check.h"
#include "placement.h"
#include "progress_guard.h"
#include "remap_policy.h"
#include "replay_clock.h"

/* The progress guard's state (the agent's g_* fields, agent_internal.h):
 * snapshots per thread index, the one at the mapping being judged, the
 * placement before it. */
struct rguard {
	int on;			/* the recorded run pinned */
	double *cpu, *wait, *cpu_a, *wait_a;	/* CM_REPLAY_MAX_THREADS */
	int *prev_os, nprev;
	int *staged, nstaged;	/* the placement a mapping just left */
	uint64_t snap_ns, apply_ns, hold_until_ns;
	int pending, have_before, undos;
	struct cm_progress before;
};

struct rclock {
	const struct cm_topo *topo;
	struct cm_agent_result *res;
	struct cm_matrix *live;
	int cap;
	int *cur_os;		/* per thread: OS PU, -1 not placed */
	int *partner, npartner;
	int *undo_os, nundo, undos;
	int interval_ms, recheck;
	int diverged;		/* a recorded interval differed from ours */
	uint64_t t0_ns, last_aged_ns, last_full_ns;
	double alpha, gain, near_seen;
	struct rguard g;
};

static double at_s(const struct rclock *c, uint64_t t)
{
	return (double)(t - c->t0_ns) / 1e9;
}

static int grow(struct rclock *c, int n)
{
	int *p;

	if (n <= c->cap)
		return 0;
	p = realloc(c->cur_os, (size_t)n * sizeof(int));
	if (!p)
		return -1;
	for (int i = c->cap; i < n; i++)
		p[i] = -1;
	c->cur_os = p;
	c->cap = n;
	return 0;
}

/* Age the live matrix for the step's progress since it was last aged
 * (the agent's ag_age_live, whole milliseconds of the recorded progress
 * clock app; older recordings: the line's time). */
static void age_live(struct rclock *c, uint64_t app)
{
	int ms = app > c->last_aged_ns ?
		 (int)((app - c->last_aged_ns) / 1000000u) : 0;

	cm_matrix_age(c->live, cm_remap_aging(c->alpha, ms));
	if (app > c->last_aged_ns)
		c->last_aged_ns = app;
}

/* The partner filter over the live matrix, kept (an interval's end). */
static int partners_changed(struct rclock *c, int n)
{
	int *now = malloc((size_t)(n ? n : 1) * sizeof(int));
	int changed;

	if (!now)
		return 0;
	cm_remap_partners(c->live, n, now);
	changed = cm_remap_partners_changed(c->partner, c->npartner, now, n);
	free(c->partner);
	c->partner = now;
	c->npartner = n;
	return changed;
}

/* Per thread: PU index (-1 none) and whether it runs. */
static void current(const struct rclock *c, const struct cm_replay *rp,
		    int *alive, int *cur)
{
	for (int i = 0; i < rp->nthreads; i++) {
		alive[i] = !rp->threads[i].exited;
		cur[i] = alive[i] && c->cur_os[i] >= 0 ?
			 cm_topo_pu_by_os_index(c->topo, c->cur_os[i]) : -1;
	}
}

/* The set's placement before the last complete remap, or NULL. */
static int *undo_placement(const struct rclock *c,
			   const struct cm_place_set *s)
{
	int *u;

	if (!c->undo_os || !(u = malloc((size_t)(s->n ? s->n : 1) *
					sizeof(int))))
		return NULL;
	for (int k = 0; k < s->n; k++)
		u[k] = s->idx[k] < c->nundo ?
		       cm_topo_pu_by_os_index(c->topo, c->undo_os[s->idx[k]]) :
		       -1;
	return u;
}

/* Nothing placed yet and nothing to gain by placing (the agent's
 * nothing_to_gain): the result says why, nothing moves. */
static int nothing_to_gain(struct rclock *c, const struct cm_place_set *s,
			   const struct cm_matrix *sub, const int *target,
			   const int *cur, int n)
{
	int *spu = malloc((size_t)(s->n ? s->n : 1) * sizeof(int));
	char why[256];
	int worth;

	for (int i = 0; i < n; i++)
		if (cur[i] >= 0) {
			free(spu);
			return 0;
		}
	for (int k = 0; spu && k < s->n; k++)
		spu[k] = target[s->idx[k]];
	worth = cm_place_worth_pinning(c->topo, s->n, sub, spu, c->gain, why,
				       sizeof(why));
	free(spu);
	if (worth)
		return 0;
	snprintf(c->res->not_pinned, sizeof(c->res->not_pinned), "%s", why);
	return 1;
}

/* A complete remap: what it leaves, and whether it is itself an undo. */
static void note_full(struct rclock *c, const struct cm_place_set *s,
		      const int *undo, const int *target, int n, uint64_t t)
{
	int *spu = malloc((size_t)(s->n ? s->n : 1) * sizeof(int));
	int *os = malloc((size_t)(n ? n : 1) * sizeof(int));

	if (spu && os) {
		for (int k = 0; k < s->n; k++)
			spu[k] = target[s->idx[k]];
		memcpy(os, c->cur_os, (size_t)n * sizeof(int));
		free(c->undo_os);
		c->undo_os = os;
		os = NULL;
		c->nundo = n;
		c->undos = undo && cm_remap_equivalent(c->topo, s->n, undo,
						       spu) ? c->undos + 1 : 0;
		c->last_full_ns = t;
	}
	free(spu);
	free(os);
}

/* The timeline entry of the placement now (exited threads -1, the live
 * count); NULL on ENOMEM. */
static struct cm_result_mapping *record_mapping(struct rclock *c,
						const int *alive, int n,
						uint64_t t, double cost,
						const char *why)
{
	int *os = malloc((size_t)(n ? n : 1) * sizeof(int));
	int live = 0;

	if (!os)
		return NULL;
	for (int i = 0; i < n; i++) {
		os[i] = alive[i] ? c->cur_os[i] : -1;
		live += alive[i];
	}
	if (cm_agent_result_add_mapping(c->res, at_s(c, t), os, n, cost,
					why) < 0) {
		free(os);
		return NULL;
	}
	free(os);
	c->res->timeline[c->res->ntimeline - 1].live = live;
	return &c->res->timeline[c->res->ntimeline - 1];
}

static void move(struct rclock *c, int i, int to, uint64_t t)
{
	cm_agent_result_add_migration(c->res, at_s(c, t), i, c->cur_os[i],
				      to);
	c->cur_os[i] = to;
	c->res->stats.pins++;
}

/* The guard's "before apply" needs the placement the mapping leaves; its
 * snapshot follows in the recording ('a'). */
static int stage(struct rclock *c, int n)
{
	int *s = malloc((size_t)(n ? n : 1) * sizeof(int));

	if (!s)
		return -1;
	memcpy(s, c->cur_os, (size_t)n * sizeof(int));
	free(c->g.staged);
	c->g.staged = s;
	c->g.nstaged = n;
	return 0;
}

/* Move to the targets, each move a migration; then the timeline entry. */
static int apply(struct rclock *c, const int *target, const int *alive,
		 int n, uint64_t t, double cost, const char *why)
{
	int started = 0;

	for (int i = 0; i < n; i++) {
		int to = target[i] >= 0 ?
			 cm_topo_pu_os_index(c->topo, target[i]) : -1;

		if (to < 0 || to == c->cur_os[i])
			continue;
		if (!started++ && c->g.on && stage(c, n) < 0)
			return -1;
		if (alive[i])
			move(c, i, to, t);
	}
	return record_mapping(c, alive, n, t, cost, why) ? 0 : -1;
}

/* The agent's ag_remap for a dry run: the plan kind, or -1 (ENOMEM). */
static int remap(struct rclock *c, const struct cm_replay *rp,
		 const struct cm_place_set *s, const struct cm_matrix *sub,
		 const char *why, uint64_t t)
{
	int n = rp->nthreads, repaired = 0, rc = -1;
	int *alive = malloc((size_t)(n ? n : 1) * sizeof(int));
	int *cur = malloc((size_t)(n ? n : 1) * sizeof(int));
	int *target = malloc((size_t)(n ? n : 1) * sizeof(int));
	int *undo = undo_placement(c, s);
	struct cm_remap_plan plan = { .kind = CM_REMAP_KEEP };
	struct cm_error err;
	int hold = undo && !cm_remap_undo_allowed(
		(double)(t - c->last_full_ns) / 1e6, c->undos);

	if (!alive || !cur || !target)
		goto out;
	current(c, rp, alive, cur);
	rc = CM_REMAP_KEEP;
	if (cm_place_plan(c->topo, sub, s, n, alive, cur, hold ? undo : NULL,
			  c->gain, c->near_seen, target, &plan, &repaired,
			  &err) < 0 ||
	    (plan.kind == CM_REMAP_KEEP && !repaired) ||
	    nothing_to_gain(c, s, sub, target, cur, n))
		goto out;
	c->res->not_pinned[0] = '\0';
	if (plan.kind == CM_REMAP_FULL)
		note_full(c, s, undo, target, n, t);
	rc = apply(c, target, alive, n, t, plan.cost_new,
		   repaired && plan.kind == CM_REMAP_KEEP ? "invariant" :
		   why) < 0 ? -1 : (int)plan.kind;
out:
	free(alive);
	free(cur);
	free(target);
	free(undo);
	return rc;
}

/* The agent's ag_interval_end in dynamic mode, at time t. */
static int interval_end(struct rclock *c, const struct cm_replay *rp,
			uint64_t t, uint64_t app)
{
	struct cm_remap_input in = { .interval_ms = c->interval_ms,
				     .partner_threshold =
					CM_REMAP_PARTNER_THRESHOLD };
	struct cm_remap_decision d;
	struct cm_place_set s = { 0 };
	struct cm_matrix *sub = NULL;
	int n = rp->nthreads, *alive = malloc((size_t)(n ? n : 1) *
						  sizeof(int));
	int rc = -1;

	if (!alive || grow(c, n) < 0)
		goto out;
	for (int i = 0; i < n; i++)
		alive[i] = !rp->threads[i].exited;
	in.partners_changed = partners_changed(c, n);
	if (cm_place_set_build(c->live, n, alive, &s) < 0 ||
	    !(sub = cm_place_sub_matrix(c->live, &s)))
		goto out;
	in.comm_total = cm_matrix_total(sub);
	in.have_mapping = c->res->ntimeline > 0;
	for (int k = 0; k < s.n; k++)
		in.unplaced += c->cur_os[s.idx[k]] < 0;
	in.recheck = c->recheck;
	cm_remap_decide(&in, &d);
	if (d.pattern_changed)
		c->recheck = CM_REMAP_RECHECK_INTERVALS;
	else if (c->recheck > 0)
		c->recheck--;
	if (d.compute && !(c->g.hold_until_ns && t < c->g.hold_until_ns)) {
		int kind = remap(c, rp, &s, sub, d.reason, t);

		if (kind < 0)
			goto out;
		if (kind == CM_REMAP_FULL)
			c->recheck = 0;
	}
	c->interval_ms = d.next_interval_ms;
	age_live(c, app);
	rc = 0;
out:
	free(alive);
	cm_matrix_free(sub);
	cm_place_set_free(&s);
	return rc;
}

/* The agent's ag_correct_colocation: under real pinning, the events of
 * pairs pinned near each other while they were drained are corrected for
 * being seen less. */
static int correct_colocation(struct rclock *c, struct cm_matrix *fresh)
{
	int n = cm_matrix_nthreads(fresh);
	int *pu;

	if (c->near_seen >= 1 || n == 0)
		return 0;
	pu = malloc((size_t)n * sizeof(int));
	if (!pu)
		return -1;
	for (int i = 0; i < n; i++)
		pu[i] = i < c->cap && c->cur_os[i] >= 0 ?
			cm_topo_pu_by_os_index(c->topo, c->cur_os[i]) : -1;
	cm_remap_correct_near(c->topo, fresh, n, pu, c->near_seen);
	free(pu);
	return 0;
}

/* ---- the progress guard (the agent's agent_place.c) ---------------- */

static void copy_snap(const struct cm_replay_clock *ev, double *cpu,
		      double *wait)
{
	memcpy(cpu, ev->cpu, (size_t)ev->n * sizeof(double));
	memcpy(wait, ev->wait, (size_t)ev->n * sizeof(double));
}

/* 'a': a mapping was applied at ev->t_ns (guard_before_apply). */
static void guard_apply(struct rclock *c, const struct cm_replay_clock *ev)
{
	struct rguard *g = &c->g;
	uint64_t t = ev->t_ns;

	copy_snap(ev, g->cpu_a, g->wait_a);
	g->apply_ns = t;
	if (g->pending)
		return;
	free(g->prev_os);
	g->prev_os = g->staged;
	g->nprev = g->staged ? g->nstaged : 0;
	g->staged = NULL;
	g->have_before = g->snap_ns && (t - g->snap_ns) / 1000000u >=
					CM_GUARD_MIN_BEFORE_MS &&
			 cm_guard_progress(ev->n, g->cpu, g->wait, g->cpu_a,
					   g->wait_a,
					   (double)(t - g->snap_ns) / 1e9,
					   &g->before) == 0 &&
			 g->before.busy > 0;
	g->pending = 1;
}

/* Does some PU hold more live threads than the invariant allows? */
static int stacked(struct rclock *c, const struct cm_replay *rp)
{
	int n = rp->nthreads, live = 0, rc;
	int *os = malloc((size_t)(n ? n : 1) * sizeof(int));

	if (!os)
		return 0;
	for (int i = 0; i < n; i++) {
		int alive = !rp->threads[i].exited;

		os[i] = alive && i < c->cap ? c->cur_os[i] : -1;
		live += alive;
	}
	rc = cm_placement_check(cm_topo_npus(c->topo), live, n, os, NULL) < 0;
	free(os);
	return rc;
}

/* Undo the mapping judged (guard_undo): back where the threads were, or
 * unplaced; then no mapping for the backoff. */
static int guard_undo(struct rclock *c, const struct cm_replay *rp,
		      uint64_t t, const char *why)
{
	int n = rp->nthreads, *alive = malloc((size_t)(n ? n : 1) *
					      sizeof(int));
	struct cm_result_mapping *e;

	if (!alive || grow(c, n) < 0) {
		free(alive);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int prev = i < c->g.nprev ? c->g.prev_os[i] : -1;

		alive[i] = !rp->threads[i].exited;
		if (!alive[i] || c->cur_os[i] == prev)
			continue;
		if (prev >= 0)
			move(c, i, prev, t);
		else
			c->cur_os[i] = -1;
	}
	c->g.undos++;
	c->g.hold_until_ns = t + (uint64_t)(cm_guard_backoff_ms(c->g.undos) *
					    1e6);
	c->res->guard_undone++;
	e = record_mapping(c, alive, n, t, -1, "guard-undo");
	if (e)
		snprintf(e->note, sizeof(e->note), "%s", why);
	free(alive);
	return e ? 0 : -1;
}

/* 'p': the window after the mapping has passed; judge it (guard_judge). */
static int guard_judge(struct rclock *c, const struct cm_replay *rp,
		       const struct cm_replay_clock *ev)
{
	struct rguard *g = &c->g;
	struct cm_progress after, ref;
	uint64_t t = ev->t_ns;
	char why[160];

	g->pending = 0;
	copy_snap(ev, g->cpu, g->wait);
	g->snap_ns = t;
	if (cm_guard_progress(ev->n, g->cpu_a, g->wait_a, g->cpu, g->wait,
			      (double)(t - g->apply_ns) / 1e9, &after) < 0 ||
	    after.threads == 0)
		return 0;
	if (g->have_before)
		ref = g->before;
	else if (!stacked(c, rp))
		return 0;
	else
		cm_guard_baseline(after.busy, cm_topo_npus(c->topo), &ref);
	c->res->guard_checked++;
	if (cm_guard_worse(&ref, &after, !g->have_before, why, sizeof(why)))
		return guard_undo(c, rp, t, why);
	return 0;
}

static int on_snapshot(struct rclock *c, const struct cm_replay *rp,
		       const struct cm_replay_clock *ev)
{
	if (!c->g.on)
		return 0;
	if (ev->snap == 'm') {
		copy_snap(ev, c->g.cpu, c->g.wait);
		c->g.snap_ns = ev->t_ns;
		return 0;
	}
	if (ev->snap == 'a') {
		guard_apply(c, ev);
		return 0;
	}
	return guard_judge(c, rp, ev);
}

static int on_clock(void *ctx, const struct cm_replay *rp,
		    const struct cm_replay_clock *ev, struct cm_error *err)
{
	struct rclock *c = ctx;

	if (ev->snap)
		return on_snapshot(c, rp, ev) < 0 ?
		       cm_errorf(err, ENOMEM, "replay: out of memory") : 0;
	if (ev->interval_ms == 0)	/* a checkpoint: age, then fold */
		age_live(c, ev->app_ns);
	if (correct_colocation(c, ev->fresh) < 0 ||
	    cm_matrix_merge(c->live, ev->fresh, 1.0) < 0)
		return cm_errorf(err, ENOMEM, "replay: out of memory");
	if (ev->interval_ms == 0)
		return 0;
	c->res->stats.intervals++;
	if (ev->interval_ms != c->interval_ms && !c->diverged) {
		char w[160];

		snprintf(w, sizeof(w), "the replay's decisions differ from "
			 "the recorded run's from t=%.3f s (interval %d ms "
			 "there, %d here)", at_s(c, ev->t_ns), ev->interval_ms,
			 c->interval_ms);
		cm_agent_result_warn(c->res, w);
		c->diverged = 1;
	}
	if (interval_end(c, rp, ev->t_ns, ev->app_ns) < 0)
		return cm_errorf(err, ENOMEM, "replay: out of memory");
	return 0;
}

static int guard_alloc(struct rguard *g, int on)
{
	double **arr[] = { &g->cpu, &g->wait, &g->cpu_a, &g->wait_a };

	g->on = on;
	for (size_t k = 0; on && k < sizeof(arr) / sizeof(arr[0]); k++) {
		*arr[k] = malloc(CM_REPLAY_MAX_THREADS * sizeof(double));
		if (!*arr[k])
			return -1;
		for (int i = 0; i < CM_REPLAY_MAX_THREADS; i++)
			(*arr[k])[i] = -1;
	}
	return 0;
}

static void guard_free(struct rguard *g)
{
	free(g->cpu);
	free(g->wait);
	free(g->cpu_a);
	free(g->wait_a);
	free(g->prev_os);
	free(g->staged);
}

int cm_replay_clock_run(const char *text, size_t len,
			const struct cm_replay *first,
			const struct cm_topo *topo,
			struct cm_agent_result *res, struct cm_matrix **total,
			struct cm_error *err)
{
	struct rclock c = { .topo = topo, .res = res,
			    .interval_ms = CM_REMAP_INTERVAL_MS_START,
			    .t0_ns = first->t0_ns,
			    .last_aged_ns = first->t0_ns,
			    .alpha = first->alpha, .gain = first->gain,
			    .near_seen = first->near_seen };
	struct cm_replay rp;
	int rc;

	*total = NULL;
	if (guard_alloc(&c.g, !first->dry_run) < 0)
		return cm_errorf(err, ENOMEM, "replay: out of memory");
	c.live = cm_matrix_new(0);
	if (!c.live) {
		guard_free(&c.g);
		return cm_errorf(err, ENOMEM, "replay: out of memory");
	}
	rc = cm_replay_parse_clocked(text, len, &rp, on_clock, &c, err);
	if (rc == 0) {
		*total = rp.m;	/* corrected as the agent's total is */
		rp.m = NULL;
		cm_replay_free(&rp);
	}
	cm_matrix_free(c.live);
	guard_free(&c.g);
	free(c.cur_os);
	free(c.partner);
	free(c.undo_os);
	return rc;
}
