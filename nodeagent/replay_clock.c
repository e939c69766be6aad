/* replay_clock.c: the agent's interval clock and remap decisions made
 * again from a version 3 recording (replay.h, record.h).
 *
 * At each "interval" line the events drained until then are folded into
 * the live (aged) matrix, and the agent's decision at an interval's end
 * is taken by the agent's own code (remap_decide.h) with the recorded
 * options, times and thread exits; what the agent would pin, this file
 * moves in a placement of its own (migrations, the timeline at the
 * recorded time).  A "checkpoint" line ages and folds, as the agent's
 * checkpoint does.  Under real pinning the events of pairs pinned near
 * each other are corrected as the agent corrects them (the recorded
 * near_seen), and the progress guard judges each mapping from the
 * recorded snapshots of the threads' schedstat ("snap" lines), undoing
 * it as the agent did.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remap_decide.h"
#include "replay_clock.h"

struct rclock {
	const struct cm_topo *topo;
	struct cm_agent_result *res;
	struct cm_matrix *live;
	int cap;
	int *cur_os;		/* per thread: OS PU, -1 not placed */
	int diverged;		/* a recorded interval differed from ours */
	uint64_t t0_ns;
	double near_seen;
	struct cm_decide dec;
	int pinning;		/* the recorded run pinned (not dry) */
	int guard_on;		/* ... and the progress guard watched */
	struct cm_decide_guard g;
	int *staged, nstaged;	/* the placement a mapping just left */
	const struct cm_replay *first;	/* the pins that failed (nopin) */
	int pin_ok;		/* no pin refused yet (the agent's pin_ok) */
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

/* Per thread of the recording: 1 while it runs; NULL on ENOMEM. */
static int *alive_flags(const struct cm_replay *rp)
{
	int *alive = malloc((size_t)(rp->nthreads ? rp->nthreads : 1) *
			    sizeof(int));

	for (int i = 0; alive && i < rp->nthreads; i++)
		alive[i] = !rp->threads[i].exited;
	return alive;
}

/* What the agent's pin of thread i to os at t met (record.h, "nopin"):
 * 0 it was made, else its errno. */
static int pin_failed(const struct rclock *c, int i, int os, uint64_t t)
{
	for (int k = 0; k < c->first->nnopin; k++) {
		const struct cm_replay_nopin *p = &c->first->nopin[k];

		if (p->t_ns == t && p->i == i && p->os == os)
			return p->err;
	}
	return 0;
}

/* A pin the kernel refused (not a thread gone): the agent warns and pins
 * nothing more; the events are no longer corrected, nothing is judged. */
static void pin_refused(struct rclock *c, int i, int os, int e)
{
	char w[160];

	snprintf(w, sizeof(w), "pinning thread %d to PU %d failed: %s; the "
		 "job runs unpinned from now on", i, os, strerror(e));
	cm_agent_result_warn(c->res, w);
	c->pin_ok = 0;
	c->guard_on = 0;
	c->near_seen = 1;
}

/* Move thread i to OS PU to at t, as the agent's pin did (made, or not
 * made: the recording says which). */
static void move(struct rclock *c, int i, int to, uint64_t t)
{
	int e = c->pinning ? pin_failed(c, i, to, t) : 0;

	if (!c->pin_ok)
		return;
	if (e) {
		if (e != ESRCH)
			pin_refused(c, i, to, e);
		return;
	}
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
	free(c->staged);
	c->staged = s;
	c->nstaged = n;
	return 0;
}

/* What the agent's pins do (agent_place.c, apply_target): move to the
 * targets, each move a migration; then the timeline entry. */
static int apply(struct rclock *c, const struct cm_decide_out *o,
		 const int *alive, int n, uint64_t t)
{
	int started = 0;

	for (int i = 0; i < n; i++) {
		int to = o->target[i] >= 0 ?
			 cm_topo_pu_os_index(c->topo, o->target[i]) : -1;

		if (to < 0 || to == c->cur_os[i])
			continue;
		if (!started++ && c->guard_on && stage(c, n) < 0)
			return -1;
		if (alive[i])
			move(c, i, to, t);
	}
	return cm_decide_timeline_add(c->res, at_s(c, t), n, alive, c->cur_os,
				      o->cost, o->why) ? 0 : -1;
}

/* The agent's interval end in dynamic mode (agent_interval.c), at time
 * t: decide, apply, age. */
static int interval_end(struct rclock *c, const struct cm_replay *rp,
			uint64_t t, uint64_t app)
{
	int n = rp->nthreads, *alive = alive_flags(rp), rc = -1;
	struct cm_decide_in in = { .n = n, .alive = alive, .t_ns = t,
				   .holding = cm_decide_guard_holding(&c->g,
								      t),
				   .have_mapping = c->res->ntimeline > 0,
				   .near_seen = c->near_seen };
	struct cm_decide_out out = { 0 };

	if (!alive || grow(c, n) < 0)
		goto out;
	in.cur_os = c->cur_os;
	if (cm_decide_interval(&c->dec, c->live, &in, &out) < 0)
		goto out;
	if (out.not_pinned[0])
		snprintf(c->res->not_pinned, sizeof(c->res->not_pinned), "%s",
			 out.not_pinned);
	if (out.apply) {
		c->res->not_pinned[0] = '\0';
		if (apply(c, &out, alive, n, t) < 0)
			goto out;
	}
	cm_decide_age(&c->dec, c->live, app);
	rc = 0;
out:
	cm_decide_out_free(&out);
	free(alive);
	return rc;
}

/* ---- the progress guard (the agent's agent_place.c) ---------------- */

static void copy_snap(const struct cm_replay_clock *ev, double *cpu,
		      double *wait)
{
	memcpy(cpu, ev->cpu, (size_t)ev->n * sizeof(double));
	memcpy(wait, ev->wait, (size_t)ev->n * sizeof(double));
}

/* 'a': a mapping was applied at ev->t_ns, leaving the staged placement. */
static void guard_apply(struct rclock *c, const struct cm_replay_clock *ev)
{
	int judging = c->g.pending;

	copy_snap(ev, c->g.cpu_a, c->g.wait_a);
	cm_decide_guard_applied(&c->g, ev->t_ns, ev->n, c->staged,
				c->nstaged);
	if (!judging) {
		free(c->staged);
		c->staged = NULL;
		c->nstaged = 0;
	}
}

/* Undo the mapping judged (the agent's guard_undo): back where the
 * threads were, or unplaced; then no mapping for the backoff. */
static int guard_undo(struct rclock *c, const struct cm_replay *rp,
		      const int *alive, uint64_t t, const char *why)
{
	struct cm_result_mapping *e;

	for (int i = 0; i < rp->nthreads; i++) {
		int prev = i < c->g.nprev ? c->g.prev_os[i] : -1;

		if (!alive[i] || c->cur_os[i] == prev)
			continue;
		if (prev >= 0)
			move(c, i, prev, t);
		else if (!c->pinning || !pin_failed(c, i, -1, t))
			c->cur_os[i] = -1;
	}
	cm_decide_guard_undone(&c->g, t);
	c->res->guard_undone++;
	e = cm_decide_timeline_add(c->res, at_s(c, t), rp->nthreads, alive,
				   c->cur_os, -1, "guard-undo");
	if (e)
		snprintf(e->note, sizeof(e->note), "%s", why);
	return e ? 0 : -1;
}

/* 'p': the window after the mapping has passed; judge it. */
static int guard_judge(struct rclock *c, const struct cm_replay *rp,
		       const struct cm_replay_clock *ev)
{
	int n = rp->nthreads, *alive = alive_flags(rp), rc = -1;
	char why[160];

	if (!alive || grow(c, n) < 0)
		goto out;
	copy_snap(ev, c->g.cpu, c->g.wait);
	rc = cm_decide_guard_judge(&c->g, ev->t_ns, ev->n,
				   cm_decide_stacked(c->topo, n, alive,
						     c->cur_os),
				   cm_topo_npus(c->topo), why, sizeof(why));
	if (rc >= 0)
		c->res->guard_checked++;
	rc = rc > 0 ? guard_undo(c, rp, alive, ev->t_ns, why) : 0;
out:
	free(alive);
	return rc;
}

static int on_snapshot(struct rclock *c, const struct cm_replay *rp,
		       const struct cm_replay_clock *ev)
{
	if (!c->guard_on)
		return 0;
	if (cm_decide_guard_grow(&c->g, ev->n) < 0)
		return -1;
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
		cm_decide_age(&c->dec, c->live, ev->app_ns);
	if (cm_decide_correct_colocation(c->topo, ev->fresh, c->cur_os,
					 c->cap, c->near_seen) < 0 ||
	    cm_matrix_merge(c->live, ev->fresh, 1.0) < 0)
		return cm_errorf(err, ENOMEM, "replay: out of memory");
	if (ev->interval_ms == 0)
		return 0;
	c->res->stats.intervals++;
	if (!c->pin_ok)		/* the agent decides nothing more */
		return 0;
	if (ev->interval_ms != c->dec.interval_ms && !c->diverged) {
		char w[160];

		snprintf(w, sizeof(w), "the replay's decisions differ from "
			 "the recorded run's from t=%.3f s (interval %d ms "
			 "there, %d here)", at_s(c, ev->t_ns), ev->interval_ms,
			 c->dec.interval_ms);
		cm_agent_result_warn(c->res, w);
		c->diverged = 1;
	}
	if (interval_end(c, rp, ev->t_ns, ev->app_ns) < 0)
		return cm_errorf(err, ENOMEM, "replay: out of memory");
	return 0;
}

int cm_replay_clock_run(const char *text, size_t len,
			const struct cm_replay *first,
			const struct cm_topo *topo,
			struct cm_agent_result *res, struct cm_matrix **total,
			struct cm_error *err)
{
	struct rclock c = { .topo = topo, .res = res,
			    .t0_ns = first->t0_ns,
			    .near_seen = first->near_seen,
			    .pinning = !first->dry_run,
			    .guard_on = !first->dry_run, .first = first,
			    .pin_ok = 1 };
	struct cm_replay rp;
	int rc = -1;

	*total = NULL;
	cm_decide_init(&c.dec, topo, first->alpha, first->gain,
		       first->t0_ns);
	c.live = cm_matrix_new(0);
	if (!c.live)
		cm_errorf(err, ENOMEM, "replay: out of memory");
	else
		rc = cm_replay_parse_clocked(text, len, &rp, on_clock, &c,
					     err);
	if (rc == 0) {
		*total = rp.m;	/* corrected as the agent's total is */
		rp.m = NULL;
		cm_replay_free(&rp);
	}
	cm_matrix_free(c.live);
	cm_decide_guard_free(&c.g);
	cm_decide_free(&c.dec);
	free(c.cur_os);
	free(c.staged);
	return rc;
}
