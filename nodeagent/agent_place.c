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
		if (!a->pin_ok || !cm_tracker_verify_thread(a->tr, i))
			return;
		if (cm_pin_thread(cm_topo_hwloc(a->topo), a->allowed, th->tid,
				  os, &err) < 0) {
			if (errno == ESRCH)
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

/* Record the step's placement: exited threads leave it at once (-1), and
 * the live count goes with it, so that the placement invariant
 * (commap/placement_check.h) can be checked from the result alone. */
struct cm_result_mapping *ag_record_mapping(struct agent *a, double cost,
						const char *why)
{
	int n = cm_tracker_nthreads(a->tr), live = 0;
	int *os = malloc((size_t)(n ? n : 1) * sizeof(int));

	if (!os)
		return NULL;
	for (int i = 0; i < n; i++) {
		int alive = cm_tracker_thread(a->tr, i)->alive;

		os[i] = alive ? a->cur_os[i] : -1;
		live += alive;
	}
	if (cm_agent_result_add_mapping(&a->res, ag_elapsed_s(a), os, n, cost,
					why) < 0) {
		free(os);
		return NULL;
	}
	free(os);
	a->res.timeline[a->res.ntimeline - 1].live = live;
	return &a->res.timeline[a->res.ntimeline - 1];
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

/* ---- the progress guard (progress_guard.h) ------------------------- */

static int guard_grow(struct agent *a, int n)
{
	double **arr[] = { &a->g_cpu, &a->g_wait, &a->g_cpu_a, &a->g_wait_a };

	if (n <= a->g_cap)
		return 0;
	for (size_t k = 0; k < sizeof(arr) / sizeof(arr[0]); k++) {
		double *p = realloc(*arr[k], (size_t)n * sizeof(double));

		if (!p)
			return -1;
		*arr[k] = p;
		for (int i = a->g_cap; i < n; i++)
			p[i] = -1;
	}
	a->g_cap = n;
	return 0;
}

/* Read every live thread's schedstat (bounded: one small read each),
 * recorded (record.h) as the snapshot of kind at time t. */
static void guard_snapshot(struct agent *a, double *cpu, double *wait,
			   char kind, uint64_t t)
{
	int n = cm_tracker_nthreads(a->tr);

	for (int i = 0; i < n && i < a->g_cap; i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(a->tr,
								       i);

		cpu[i] = wait[i] = -1;
		if (th->alive && cm_guard_read_schedstat(NULL,
				cm_tracker_proc(a->tr, th->proc)->pid,
				th->tid, &cpu[i], &wait[i]) < 0)
			cpu[i] = wait[i] = -1;
	}
	cm_record_snapshot(a->rec, kind, t, n < a->g_cap ? n : a->g_cap, cpu,
			   wait);
}

static int guard_on(const struct agent *a)
{
	return !a->dry_run && a->pin_ok && a->topo && a->tr;
}

/* The window before the next mapping starts here (interval ends). */
void ag_guard_mark(struct agent *a)
{
	if (!guard_on(a) || a->g_pending ||
	    guard_grow(a, cm_tracker_nthreads(a->tr)) < 0)
		return;
	a->g_snap_ns = ag_now(a);
	guard_snapshot(a, a->g_cpu, a->g_wait, 'm', a->g_snap_ns);
}

int ag_guard_holding(const struct agent *a)
{
	return a->g_hold_until_ns && ag_now(a) < a->g_hold_until_ns;
}

/* A mapping is about to be applied: remember the placement it leaves and
 * the step's progress until now; a mapping while one is being judged
 * restarts the window after it (the placement to return to stays). */
static void guard_before_apply(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr);
	uint64_t now = ag_now(a);

	if (!guard_on(a) || guard_grow(a, n) < 0)
		return;
	guard_snapshot(a, a->g_cpu_a, a->g_wait_a, 'a', now);
	a->g_apply_ns = now;
	if (a->g_pending)
		return;
	free(a->g_prev_os);
	a->g_prev_os = malloc((size_t)(n ? n : 1) * sizeof(int));
	if (!a->g_prev_os)
		return;
	memcpy(a->g_prev_os, a->cur_os, (size_t)n * sizeof(int));
	a->g_nprev = n;
	a->g_have_before = a->g_snap_ns && (now - a->g_snap_ns) / 1000000u >=
					    CM_GUARD_MIN_BEFORE_MS &&
			   cm_guard_progress(n, a->g_cpu, a->g_wait,
					     a->g_cpu_a, a->g_wait_a,
					     (double)(now - a->g_snap_ns) / 1e9,
					     &a->g_before) == 0 &&
			   a->g_before.busy > 0;
	a->g_pending = 1;
}

/* Return tracker thread i to the allowed set (placed by the mapping the
 * guard undoes, not placed before it). */
static void unpin_thread(struct agent *a, int i)
{
	const struct cm_tracked_thread *th = cm_tracker_thread(a->tr, i);
	struct cm_error err;

	if (!cm_tracker_verify_thread(a->tr, i) ||
	    cm_pin_thread_set(cm_topo_hwloc(a->topo), a->allowed, th->tid,
			      a->allowed, &err) < 0)
		return;
	a->cur_os[i] = -1;
}

/* Undo the mapping judged: every live thread back where it was before,
 * or unpinned; then no mapping for the backoff. */
static void guard_undo(struct agent *a, const char *why)
{
	int n = cm_tracker_nthreads(a->tr);
	struct cm_result_mapping *e;

	for (int i = 0; i < n; i++) {
		int prev = i < a->g_nprev ? a->g_prev_os[i] : -1;

		if (!cm_tracker_thread(a->tr, i)->alive || a->cur_os[i] == prev)
			continue;
		if (prev >= 0)
			move_thread(a, i, prev);
		else
			unpin_thread(a, i);
	}
	a->g_undos++;
	a->g_hold_until_ns = ag_now(a) + (uint64_t)(cm_guard_backoff_ms(
						a->g_undos) * 1e6);
	a->res.guard_undone++;
	agent_warn("progress guard: the last mapping made the step slower "
		   "(%s): undone, no mapping for %.0f s", why,
		   cm_guard_backoff_ms(a->g_undos) / 1e3);
	if ((e = ag_record_mapping(a, -1, "guard-undo")))
		snprintf(e->note, sizeof(e->note), "%s", why);
}

/* Does some PU hold more live threads than the placement invariant
 * allows (an explicit static mapping can)? */
static int stacked(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr), live = 0, rc;
	int *os = malloc((size_t)(n ? n : 1) * sizeof(int));

	if (!os)
		return 0;
	for (int i = 0; i < n; i++) {
		int alive = cm_tracker_thread(a->tr, i)->alive;

		os[i] = alive ? a->cur_os[i] : -1;
		live += alive;
	}
	rc = cm_placement_check(cm_topo_npus(a->topo), live, n, os, NULL) < 0;
	free(os);
	return rc;
}

/* The window after the mapping has passed: judge it, at one time
 * (decide_ns), recorded with the snapshot. */
static void guard_judge(struct agent *a)
{
	struct cm_progress after, ref;
	uint64_t now = ag_now(a);
	int n = cm_tracker_nthreads(a->tr);
	char why[160];

	a->g_pending = 0;
	if (!guard_on(a) || guard_grow(a, n) < 0)
		return;
	guard_snapshot(a, a->g_cpu, a->g_wait, 'p', now);
	a->g_snap_ns = now;
	if (cm_guard_progress(n < a->g_cap ? n : a->g_cap, a->g_cpu_a,
			      a->g_wait_a, a->g_cpu, a->g_wait,
			      (double)(now - a->g_apply_ns) / 1e9, &after) < 0 ||
	    after.threads == 0)
		return;
	if (a->g_have_before) {
		ref = a->g_before;
	} else if (!stacked(a)) {
		/* Without a window before the mapping, the reference is a
		 * model that ignores other jobs' load: it judges only a
		 * placement that stacks threads beyond their share. */
		agent_debug("progress guard: first placement within the "
			    "invariant: kept");
		return;
	} else {
		cm_guard_baseline(after.busy, cm_topo_npus(a->topo), &ref);
	}
	a->res.guard_checked++;
	if (cm_guard_worse(&ref, &after, !a->g_have_before, why, sizeof(why)))
		guard_undo(a, why);
	else
		agent_debug("progress guard: mapping kept (%s)", why);
}

/* Every loop turn: judge the last mapping once its window has passed. */
void ag_guard_poll(struct agent *a)
{
	if (!a->g_pending || (now_ns() - a->g_apply_ns) / 1000000u <
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

/* Live threads that communicate enough to be worth mapping
 * (cm_remap_thread_has_evidence): only they are mapped; the others are
 * left where they are, pinned or where the scheduler puts them. */
int ag_live_set_build(struct agent *a, struct cm_place_set *s)
{
	int *alive = alive_flags(a);
	int rc = alive ? cm_place_set_build(a->live, cm_tracker_nthreads(a->tr),
					    alive, s) : -1;

	free(alive);
	return rc;
}

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

/* The set's placement before the last complete remap (PU indices), or
 * NULL when there is none. */
static int *undo_placement(struct agent *a, const struct cm_place_set *s)
{
	int *u;

	if (!a->undo_os || !(u = malloc((size_t)(s->n ? s->n : 1) *
					sizeof(int))))
		return NULL;
	for (int k = 0; k < s->n; k++)
		u[k] = s->idx[k] < a->nundo ?
		       cm_topo_pu_by_os_index(a->topo, a->undo_os[s->idx[k]]) :
		       -1;
	return u;
}

/* A complete remap is about to be applied: remember what it leaves, and
 * whether it is itself an undo. */
static void note_full_remap(struct agent *a, const struct cm_place_set *s,
			    const int *undo, const int *pu)
{
	int n = cm_tracker_nthreads(a->tr);
	int *os = malloc((size_t)(n ? n : 1) * sizeof(int));

	if (!os)
		return;
	memcpy(os, a->cur_os, (size_t)n * sizeof(int));
	free(a->undo_os);
	a->undo_os = os;
	a->nundo = n;
	a->undos = undo && cm_remap_equivalent(a->topo, s->n, undo, pu) ?
		   a->undos + 1 : 0;
	a->last_full_ns = ag_now(a);
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
	int n = cm_matrix_nthreads(a->fresh);
	int *pu;

	if (ag_near_seen(a) >= 1 || n == 0)
		return;
	pu = malloc((size_t)n * sizeof(int));
	if (!pu)
		return;
	for (int i = 0; i < n; i++)
		pu[i] = i < a->cap && a->cur_os[i] >= 0 ?
			cm_topo_pu_by_os_index(a->topo, a->cur_os[i]) : -1;
	cm_remap_correct_near(a->topo, a->fresh, n, pu, ag_near_seen(a));
	free(pu);
}

/* Nothing of the step pinned yet, and nothing to gain by pinning it
 * (cm_place_worth_pinning): say why once, pin nothing. */
static int nothing_to_gain(struct agent *a, const struct cm_place_set *s,
			   const struct cm_matrix *sub, const int *target,
			   const int *cur)
{
	int n = cm_tracker_nthreads(a->tr);
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
	/* The threads that compete for the PUs in a way a placement can
	 * change are the communicating ones (the set): an idle helper (an
	 * OpenMP runtime's monitor, MPI's progress threads) beside one
	 * busy thread per PU must not turn a flat machine into one where
	 * pinning two threads on one PU looks like a gain. */
	worth = cm_place_worth_pinning(a->topo, s->n, sub, spu, a->o->gain,
				       why, sizeof(why));
	free(spu);
	if (worth)
		return 0;
	if (strcmp(a->res.not_pinned, why) != 0) {
		agent_info("not pinning: %s", why);
		snprintf(a->res.not_pinned, sizeof(a->res.not_pinned), "%s",
			 why);
	}
	return 1;
}

/* Decide what to move (remap_policy.h, cm_remap_plan): threads not placed
 * yet are placed around the placed ones, which move only when a complete
 * remap gains more than the threshold and the sampling noise, and not
 * back to where the last one took them from while the hold is on; all
 * within the placement invariant (placement.h), counting every live
 * thread of the step. */
enum cm_remap_plan_kind ag_remap(struct agent *a,
				     const struct cm_place_set *s,
				     const struct cm_matrix *sub,
				     const char *why)
{
	int n = cm_tracker_nthreads(a->tr), repaired = 0;
	int *alive = alive_flags(a), *cur = thread_pus(a);
	int *target = malloc((size_t)(n ? n : 1) * sizeof(int));
	int *spu = malloc((size_t)(s->n ? s->n : 1) * sizeof(int));
	struct cm_remap_plan plan = { .kind = CM_REMAP_KEEP };
	struct cm_error err;
	uint64_t t = now_ns();
	int *undo = undo_placement(a, s);
	int hold = undo && !cm_remap_undo_allowed(
		(double)(ag_now(a) - a->last_full_ns) / 1e6, a->undos);

	if (!alive || !cur || !target || !spu)
		goto out;
	if (cm_place_plan(a->topo, sub, s, n, alive, cur, hold ? undo : NULL,
			  a->o->gain, ag_near_seen(a), target, &plan, &repaired,
			  &err) < 0) {
		agent_warn("mapping failed: %s", err.text);
		plan.kind = CM_REMAP_KEEP;
		goto out;
	}
	a->mapping_ms += ms_since(t);
	if (plan.avoided)
		agent_debug("candidate cost %.4g vs %.4g would undo the remap "
			    "of %.1f s ago: held", plan.cost_full,
			    plan.cost_base, ms_since(a->last_full_ns) / 1e3);
	if (plan.kind == CM_REMAP_KEEP && !repaired) {
		agent_debug("candidate cost %.4g vs %.4g (noise %.3g): not "
			    "worth a remap", plan.cost_full, plan.cost_base,
			    plan.noise);
		goto out;
	}
	if (nothing_to_gain(a, s, sub, target, cur)) {
		plan.kind = CM_REMAP_KEEP;
		goto out;
	}
	/* pinning after all (more threads came): no longer "not pinned" */
	a->res.not_pinned[0] = '\0';
	for (int k = 0; k < s->n; k++)
		spu[k] = target[s->idx[k]];
	if (plan.kind == CM_REMAP_FULL)
		note_full_remap(a, s, undo, spu);
	apply_target(a, target);
	ag_record_mapping(a, plan.cost_new, repaired && plan.kind ==
		       CM_REMAP_KEEP ? "invariant" : why);
	agent_info("mapping applied (%s, %s): %d threads, %d new, %d moved, "
		   "%d moved by the invariant, cost %.4g (was %.4g, complete "
		   "candidate %.4g, noise %.3g)", why, plan_name(plan.kind),
		   s->n, plan.placed_new, plan.moved, repaired, plan.cost_new,
		   plan.cost_cur, plan.cost_full, plan.noise);
out:
	free(undo);
	free(alive);
	free(cur);
	free(target);
	free(spu);
	return plan.kind;
}

/* The partner filter (SPCD §IV-A) over the live matrix: how many threads'
 * heaviest partner differs from the last kept ones; keep: these become the
 * kept ones (an interval's end), else only look (a checkpoint). */
int ag_partners_compare(struct agent *a, int keep)
{
	int n = cm_tracker_nthreads(a->tr);
	int *now = malloc((size_t)(n ? n : 1) * sizeof(int));
	int changed;

	if (!now)
		return 0;
	cm_remap_partners(a->live, n, now);
	changed = cm_remap_partners_changed(a->partner, a->npartner, now, n);
	if (!keep) {
		free(now);
		return changed;
	}
	free(a->partner);
	a->partner = now;
	a->npartner = n;
	return changed;
}
