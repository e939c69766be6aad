/* agent_place.c: where the agent's pins are applied (docs/agent.md, "Map
 * and pin", "Never slower"): pinning a verified thread, the placement
 * invariant over the whole step (placement.h), the progress guard
 * (progress_guard.h), static mode and the dynamic remap
 * (remap_policy.h).  The loop that calls these is agent_loop.c.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_internal.h"
#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/placement_check.h"
#include "pin.h"
#include "record.h"

/* ---- pinning -------------------------------------------------------- */

/* Creation-to-first-pin latency of a thread: its start time (clock ticks
 * since boot, /proc/TID/stat, so a 10 ms resolution at 100 Hz) against
 * CLOCK_BOOTTIME now. */
static void record_pin_latency(struct agent *a,
			       const struct cm_tracked_thread *th)
{
	long tck = sysconf(_SC_CLK_TCK);
	struct timespec ts;
	double now_ms, born_ms;

	if (tck <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return;
	now_ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
	born_ms = (double)th->start * 1e3 / (double)tck;
	cm_agent_result_add_pin_latency(&a->res, now_ms - born_ms);
}

/* Move tracker thread i to OS PU os, recording the migration.  The thread
 * is verified first (a reused tid is never touched). */
static void move_thread(struct agent *a, int i, int os)
{
	const struct cm_tracked_thread *th = cm_tracker_thread(a->tr, i);
	struct cm_error err;

	if (a->cur_os[i] == os || !th->alive)
		return;
	if (!a->dry_run) {
		if (!a->pin_ok)
			return;
		/* a failure is recorded: the replay's timeline has it too */
		if (!cm_tracker_verify_thread(a->tr, i)) {
			cm_record_nopin(a->rec, ag_now(a), i, os, ESRCH);
			return;
		}
		if (cm_pin_thread(cm_topo_hwloc(a->topo), a->allowed, th->tid,
				  os, &err) < 0) {
			int e = errno ? errno : EIO;

			cm_record_nopin(a->rec, ag_now(a), i, os, e);
			if (e == ESRCH)
				return;
			agent_warn("%s; the job runs unpinned from now on",
				   err.text);
			cm_agent_result_warn(&a->res, err.text);
			a->pin_ok = 0;
			return;
		}
	}
	if (a->cur_os[i] < 0)
		record_pin_latency(a, th);
	cm_agent_result_add_migration(&a->res, ag_elapsed_s(a), i,
				      a->cur_os[i], os);
	agent_debug("thread %d (tid %d) -> PU %d", i, (int)th->tid, os);
	a->cur_os[i] = os;
	a->res.stats.pins++;
}

/* Per thread: 1 while it runs (placement.h's alive). */
static int *alive_flags(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr);
	int *alive = malloc((size_t)(n ? n : 1) * sizeof(int));

	for (int i = 0; alive && i < n; i++)
		alive[i] = cm_tracker_thread(a->tr, i)->alive;
	return alive;
}

/* Record the step's placement in the timeline (remap_decide.h). */
struct cm_result_mapping *ag_record_mapping(struct agent *a, double cost,
					    const char *why)
{
	int *alive = alive_flags(a);
	struct cm_result_mapping *e = alive ?
		cm_decide_timeline_add(&a->res, ag_elapsed_s(a),
				       cm_tracker_nthreads(a->tr), alive,
				       a->cur_os, cost, why) : NULL;

	free(alive);
	return e;
}

/* PU index of every thread of the step (-1: not pinned, or exited). */
static int *thread_pus(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr);
	int *pu = malloc((size_t)(n ? n : 1) * sizeof(int));

	for (int i = 0; pu && i < n; i++)
		pu[i] = cm_tracker_thread(a->tr, i)->alive &&
			a->cur_os[i] >= 0 ?
			cm_topo_pu_by_os_index(a->topo, a->cur_os[i]) : -1;
	return pu;
}

/* ---- the progress guard (remap_decide.h) -------------------------- */

/* Read every live thread's schedstat (bounded: one small read each),
 * recorded (record.h) as the snapshot of kind at time t. */
static void guard_snapshot(struct agent *a, double *cpu, double *wait,
			   char kind, uint64_t t)
{
	int n = cm_tracker_nthreads(a->tr);

	for (int i = 0; i < n && i < a->g.cap; i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(a->tr,
								       i);

		cpu[i] = wait[i] = -1;
		if (th->alive && cm_guard_read_schedstat(NULL,
				cm_tracker_proc(a->tr, th->proc)->pid,
				th->tid, &cpu[i], &wait[i]) < 0)
			cpu[i] = wait[i] = -1;
	}
	cm_record_snapshot(a->rec, kind, t, n < a->g.cap ? n : a->g.cap, cpu,
			   wait);
}

/* The guard watches real pins only; room for every thread's readings. */
static int guard_ready(struct agent *a)
{
	return !a->dry_run && a->pin_ok && a->topo && a->tr &&
	       cm_decide_guard_grow(&a->g, cm_tracker_nthreads(a->tr)) == 0;
}

/* The window before the next mapping starts here (interval ends). */
void ag_guard_mark(struct agent *a)
{
	if (a->g.pending || !guard_ready(a))
		return;
	a->g.snap_ns = ag_now(a);
	guard_snapshot(a, a->g.cpu, a->g.wait, 'm', a->g.snap_ns);
}

int ag_guard_holding(const struct agent *a)
{
	return cm_decide_guard_holding(&a->g, ag_now(a));
}

/* A mapping is about to be applied: the placement it leaves and the
 * step's progress until now. */
static void guard_before_apply(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr);
	uint64_t now = ag_now(a);

	if (!guard_ready(a))
		return;
	guard_snapshot(a, a->g.cpu_a, a->g.wait_a, 'a', now);
	cm_decide_guard_applied(&a->g, now, n, a->cur_os, n);
}

/* Return tracker thread i to the allowed set (placed by the mapping the
 * guard undoes, not placed before it). */
static void unpin_thread(struct agent *a, int i)
{
	const struct cm_tracked_thread *th = cm_tracker_thread(a->tr, i);
	struct cm_error err;

	if (!cm_tracker_verify_thread(a->tr, i)) {
		cm_record_nopin(a->rec, ag_now(a), i, -1, ESRCH);
		return;
	}
	if (cm_pin_thread_set(cm_topo_hwloc(a->topo), a->allowed, th->tid,
			      a->allowed, &err) < 0) {
		cm_record_nopin(a->rec, ag_now(a), i, -1, errno ? errno : EIO);
		return;
	}
	a->cur_os[i] = -1;
}

/* Undo the mapping judged: every live thread back where it was before,
 * or unpinned; then no mapping for the backoff. */
static void guard_undo(struct agent *a, const char *why)
{
	int n = cm_tracker_nthreads(a->tr);
	struct cm_result_mapping *e;

	for (int i = 0; i < n; i++) {
		int prev = i < a->g.nprev ? a->g.prev_os[i] : -1;

		if (!cm_tracker_thread(a->tr, i)->alive || a->cur_os[i] == prev)
			continue;
		if (prev >= 0)
			move_thread(a, i, prev);
		else
			unpin_thread(a, i);
	}
	cm_decide_guard_undone(&a->g, ag_now(a));
	a->res.guard_undone++;
	agent_warn("progress guard: the last mapping made the step slower "
		   "(%s): undone, no mapping for %.0f s", why,
		   cm_guard_backoff_ms(a->g.undos) / 1e3);
	if ((e = ag_record_mapping(a, -1, "guard-undo")))
		snprintf(e->note, sizeof(e->note), "%s", why);
}

/* The window after the mapping has passed: judge it, at one time
 * (decide_ns), recorded with the snapshot. */
static void guard_judge(struct agent *a)
{
	uint64_t now = ag_now(a);
	int n = cm_tracker_nthreads(a->tr), *alive, rc;
	char why[160];

	a->g.pending = 0;
	if (!guard_ready(a))
		return;
	guard_snapshot(a, a->g.cpu, a->g.wait, 'p', now);
	alive = alive_flags(a);
	rc = cm_decide_guard_judge(&a->g, now, n, alive &&
				   cm_decide_stacked(a->topo, n, alive,
						     a->cur_os),
				   cm_topo_npus(a->topo), why, sizeof(why));
	free(alive);
	if (rc < 0) {
		agent_debug("progress guard: mapping not judged (no reading, "
			    "or a first placement within the invariant)");
		return;
	}
	a->res.guard_checked++;
	if (rc)
		guard_undo(a, why);
	else
		agent_debug("progress guard: mapping kept (%s)", why);
}

/* Every loop turn: judge the last mapping once its window has passed. */
void ag_guard_poll(struct agent *a)
{
	if (!a->g.pending || (now_ns() - a->g.apply_ns) / 1000000u <
			     CM_GUARD_WINDOW_MS)
		return;
	a->decide_ns = now_ns();
	guard_judge(a);
	a->decide_ns = 0;
}

/* Move every thread to its target (PU indices; -1: leave it). */
static int apply_target(struct agent *a, const int *target)
{
	int n = cm_tracker_nthreads(a->tr), moved = 0, started = 0;

	if (ag_guard_holding(a))
		return 0;
	for (int i = 0; i < n; i++) {
		int os = target[i] >= 0 ?
			 cm_topo_pu_os_index(a->topo, target[i]) : -1;

		if (os >= 0 && os != a->cur_os[i]) {
			if (!started++)
				guard_before_apply(a);
			move_thread(a, i, os);
			moved++;
		}
	}
	return moved;
}

/* Pin the threads of `want` (PU indices, -1: no wish) within the
 * placement invariant: those already placed stay unless the invariant
 * needs them to move (cm_place_repair).  Returns the threads moved. */
/* Before the step's first pin by learned or static mode: nothing to gain
 * where the PUs are equidistant and the step's threads fit one per PU
 * (cm_place_worth_pinning without a matrix); then say why, pin nothing.
 * Threads appear one at a time: the count is the larger of the live ones
 * and those the model or the static mapping expects. */
static int first_pin_worthless(struct agent *a, const int *cur,
			       const int *alive, int n)
{
	int live = 0, expected = a->model_active ? a->model.n :
				 a->static_os ? a->nstatic : 0;
	char why[256];

	for (int i = 0; i < n; i++) {
		if (cur[i] >= 0)
			return 0;
		live += alive[i] != 0;
	}
	if (expected > live)
		live = expected;
	if (cm_place_worth_pinning(a->topo, live, NULL, NULL, 0, why,
				   sizeof(why)))
		return 0;
	if (strcmp(a->res.not_pinned, why) != 0) {
		agent_info("not pinning: %s", why);
		snprintf(a->res.not_pinned, sizeof(a->res.not_pinned), "%s",
			 why);
	}
	return 1;
}

int ag_apply_within_invariant(struct agent *a, int *want)
{
	int *alive = alive_flags(a), *cur = thread_pus(a);
	int n = cm_tracker_nthreads(a->tr), moved = -1;

	if (alive && cur && first_pin_worthless(a, cur, alive, n)) {
		moved = 0;
	} else if (alive && cur) {
		for (int i = 0; i < n; i++)
			if (want[i] < 0)
				want[i] = cur[i];
		if (cm_place_repair(a->topo, n, alive, cur, want) >= 0)
			moved = apply_target(a, want);
	}
	free(alive);
	free(cur);
	return moved;
}

/* ---- static mode ---------------------------------------------------- */

/* A matrix file is mapped once onto the allowed PUs. */
int ag_static_prepare(struct agent *a, struct cm_error *err)
{
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	int n, *pu;

	if (a->st.os_pu) {
		a->static_os = a->st.os_pu;
		a->nstatic = a->st.n;
		return 0;
	}
	n = cm_matrix_nthreads(a->st.matrix);
	if (!a->topo)
		return cm_errorf(err, EINVAL, "no topology to map onto");
	mo.oversubscribe = n > cm_topo_npus(a->topo);
	pu = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	if (!pu)
		return cm_errorf(err, ENOMEM, "out of memory");
	if (cm_map(a->topo, a->st.matrix, &mo, pu, err) < 0) {
		free(pu);
		return -1;
	}
	for (int k = 0; k < n; k++)
		pu[k] = cm_topo_pu_os_index(a->topo, pu[k]);
	a->static_os = pu;
	a->nstatic = n;
	return 0;
}

/* Threads seen since the last call get their static PU.  A placement
 * the agent computed from a matrix keeps to the placement invariant; an
 * explicit one (a mapping file: PU per thread) is the user's and is
 * applied as given (recorded as forced), the progress guard watching it
 * as any other. */
void ag_static_apply_new(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr), moved = 0, want_any = 0;
	int forced = a->st.os_pu != NULL;
	int *want = malloc((size_t)(n ? n : 1) * sizeof(int));
	struct cm_result_mapping *e;

	if (!want)
		return;
	for (int i = 0; i < n; i++)
		want[i] = -1;
	for (int i = a->static_applied; i < n && i < a->nstatic; i++) {
		want[i] = cm_topo_pu_by_os_index(a->topo, a->static_os[i]);
		if (want[i] < 0)
			agent_warn("static mapping: PU %d of thread %d is not "
				   "in the step's CPUs; not pinned",
				   a->static_os[i], i);
		want_any |= want[i] >= 0;
	}
	a->static_applied = n;
	if (!want_any)
		goto out;
	if (forced)
		moved = apply_target(a, want);
	else
		moved = ag_apply_within_invariant(a, want);
	if (moved > 0 && (e = ag_record_mapping(a, -1, "static")))
		e->forced = forced;
out:
	free(want);
}

/* ---- dynamic mapping ------------------------------------------------ */

/* Current PU indices of the set; 0 if every thread is placed. */
int ag_current_pus(struct agent *a, const struct cm_place_set *s, int *pu)
{
	int unplaced = 0;

	for (int k = 0; k < s->n; k++) {
		pu[k] = cm_topo_pu_by_os_index(a->topo, a->cur_os[s->idx[k]]);
		if (pu[k] < 0)
			unplaced++;
	}
	return unplaced;
}

static const char *plan_name(enum cm_remap_plan_kind k)
{
	return k == CM_REMAP_FULL ? "full" :
	       k == CM_REMAP_INCREMENTAL ? "incremental" : "keep";
}

/* Are the weights observed under the threads' placement?  Only when the
 * agent really pins (not a dry run, pinning not given up) and samples in
 * CPU time (the sample backend): then pairs pinned near each other are
 * seen less (remap_policy.h, CM_REMAP_NEAR_SEEN) and their events are
 * corrected.  Hinting faults (fault) and hardware samples counted in
 * events (hw) do not weigh accesses by their CPU time: not corrected. */
double ag_near_seen(const struct agent *a)
{
	return a->time_sampled && !a->dry_run && a->pin_ok && a->topo ?
	       CM_REMAP_NEAR_SEEN : 1.0;
}

/* This interval's events were observed with the threads where they are
 * now (pins happen at interval ends and as threads appear): correct them
 * for the co-location bias before they reach the live and total
 * matrices, so that the gain of a remap, the partner filter and the
 * result (and the learned models made from it) compare pairs as if all
 * were seen across cores. */
void ag_correct_colocation(struct agent *a)
{
	if (a->topo)
		cm_decide_correct_colocation(a->topo, a->fresh, a->cur_os,
					     a->cap, ag_near_seen(a));
}

/* What the decision says, for the agent's log. */
static void log_decision(struct agent *a, const struct cm_decide_out *o)
{
	const struct cm_remap_plan *p = &o->plan;

	agent_debug("interval %d ms: %d partners changed, %d unplaced: %s",
		    o->in.interval_ms, o->in.partners_changed, o->in.unplaced,
		    o->d.reason);
	if (o->error[0])
		agent_warn("mapping failed: %s", o->error);
	if (o->avoided_undo)
		agent_debug("candidate cost %.4g vs %.4g would undo the remap "
			    "of %.1f s ago: held", p->cost_full, p->cost_base,
			    ms_since(a->dec.last_full_ns) / 1e3);
	if (o->computed && !o->apply && !o->not_pinned[0] && !o->error[0])
		agent_debug("candidate cost %.4g vs %.4g (noise %.3g): not "
			    "worth a remap", p->cost_full, p->cost_base,
			    p->noise);
	if (o->not_pinned[0] && strcmp(a->res.not_pinned, o->not_pinned)) {
		agent_info("not pinning: %s", o->not_pinned);
		snprintf(a->res.not_pinned, sizeof(a->res.not_pinned), "%s",
			 o->not_pinned);
	}
}

/* An interval's end in dynamic mode: the decision (remap_decide.h, the
 * code the replay of a recording runs too), then its side effects here:
 * the pins, the timeline, the log. */
void ag_remap(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr);
	int *alive = alive_flags(a);
	struct cm_decide_in in = { .n = n, .alive = alive,
				   .cur_os = a->cur_os, .t_ns = ag_now(a),
				   .holding = ag_guard_holding(a),
				   .have_mapping = a->res.ntimeline > 0,
				   .near_seen = ag_near_seen(a) };
	struct cm_decide_out out;
	uint64_t t = now_ns();

	/* the machine as now (reloaded as tasks join the step) */
	a->dec.topo = a->topo;
	if (!alive || cm_decide_interval(&a->dec, a->live, &in, &out) < 0) {
		free(alive);
		return;
	}
	if (out.computed)
		a->mapping_ms += ms_since(t);
	if (out.d.pattern_changed)	/* sample fast again (sample_rate.h) */
		cm_collect_relearn(a->col, a->fresh, NULL);
	log_decision(a, &out);
	if (out.apply) {
		/* pinning after all (more threads came) */
		a->res.not_pinned[0] = '\0';
		apply_target(a, out.target);
		ag_record_mapping(a, out.cost, out.why);
		agent_info("mapping applied (%s, %s): %d threads, %d new, %d "
			   "moved, %d moved by the invariant, cost %.4g (was "
			   "%.4g, complete candidate %.4g, noise %.3g)",
			   out.d.reason, plan_name(out.plan.kind), out.nset,
			   out.plan.placed_new, out.plan.moved, out.repaired,
			   out.cost, out.plan.cost_cur, out.plan.cost_full,
			   out.plan.noise);
	}
	cm_decide_out_free(&out);
	free(alive);
}
