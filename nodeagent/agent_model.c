/* agent_model.c: learned mappings in the agent (docs/agent.md "Learned
 * mappings"): the model fetched from the service at step start, mapped
 * onto this step's PUs, threads pinned from it as they appear, pins held
 * against a program that rebinds them, and the hand-over to dynamic
 * mapping when detection clearly disagrees.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "agent_internal.h"
#include "commap/cost.h"
#include "commap/mapping.h"
#include "model_fetch.h"
#include "pin.h"
#include "upload.h"

/* The model is not (or no longer) used: one line, and the result says
 * why (its model's reason; a model abandoned after use is also a
 * warning, as the reason alone would not say it was used).  Learned runs
 * on as dynamic; threads already pinned stay. */
void ag_model_drop(struct agent *a, const char *why)
{
	char line[CM_ERROR_TEXT_MAX + 64];

	snprintf(line, sizeof(line), "%s: %s", a->model.n ? "learned model "
		 "abandoned" : "no learned model", why);
	agent_warn("%s; running dynamic", line);
	if (a->model.n)
		cm_agent_result_warn(&a->res, line);
	a->res.model.state = CM_RESULT_MODEL_UNUSED;
	snprintf(a->res.model.reason, sizeof(a->res.model.reason), "%s", why);
	a->model_active = 0;
	a->model_pending = 0;
	if (a->mode == CM_AGENT_MODE_LEARNED) {
		a->mode = CM_AGENT_MODE_DYNAMIC;
		a->res.mode = "dynamic";
	}
}

static int distinct_ranks(const struct agent *a)
{
	int n = 0;

	for (int i = 0; i < cm_tracker_nprocs(a->tr); i++) {
		int r = cm_tracker_proc(a->tr, i)->rank, seen = 0;

		for (int j = 0; j < i && !seen; j++)
			seen = cm_tracker_proc(a->tr, j)->rank == r;
		n += !seen;
	}
	return n;
}

static long long step_uid(const struct agent *a)
{
	const struct cm_tracked_proc *p = cm_tracker_proc(a->tr, 0);
	uid_t uid = a->o->uid;

	if (uid == (uid_t)-1 && (!p || cm_proc_read_uid("/proc", p->pid,
							&uid) < 0))
		return -1;
	return (long long)uid;
}

/* The model's communicating identities mapped onto this step's PUs (the
 * allocation may differ from the model's run): model_os[k] is identity
 * k's OS PU, -1 for identities without communication (left to the
 * scheduler, as in dynamic mode).  When the topology is the one of the
 * model's last run, equivalent placements are aligned to its last
 * mapping, so a rerun lands where the last one ended. */
static int model_prepare(struct agent *a, struct cm_error *err)
{
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	const struct cm_model *m = &a->model;
	int *idx = malloc((size_t)(m->n ? m->n : 1) * sizeof(int));
	int *pu = malloc((size_t)(m->n ? m->n : 1) * sizeof(int));
	int *cur = malloc((size_t)(m->n ? m->n : 1) * sizeof(int));
	struct cm_matrix *sub = NULL;
	int nc = 0, rc = -1;
	char *cpus = a->topo ? cm_topo_cpulist(a->topo) : NULL;

	a->model_os = malloc((size_t)(m->n ? m->n : 1) * sizeof(int));
	if (!idx || !pu || !cur || !a->model_os) {
		cm_errorf(err, ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < m->n; k++) {
		a->model_os[k] = -1;
		if (cm_matrix_row_sum(m->m, k) > 0)
			idx[nc++] = k;
	}
	sub = cm_matrix_new(nc);
	for (int x = 0; sub && x < nc; x++)
		for (int y = x + 1; y < nc; y++)
			cm_matrix_add(sub, x, y, cm_matrix_get(m->m, idx[x],
							       idx[y]));
	if (!sub) {
		cm_errorf(err, ENOMEM, "out of memory");
		goto out;
	}
	mo.oversubscribe = nc > cm_topo_npus(a->topo);
	if (nc && cm_map(a->topo, sub, &mo, pu, err) < 0)
		goto out;
	if (m->last_os && m->cpuset && cpus && !strcmp(m->cpuset, cpus)) {
		for (int x = 0; x < nc; x++)
			cur[x] = m->last_os[idx[x]] < 0 ? -1 :
				 cm_topo_pu_by_os_index(a->topo,
							m->last_os[idx[x]]);
		cm_map_align(a->topo, nc, cur, pu);
	}
	for (int x = 0; x < nc; x++)
		a->model_os[idx[x]] = cm_topo_pu_os_index(a->topo, pu[x]);
	a->model_cost = nc ? cm_cost(a->topo, sub, pu) : 0;
	a->model_pending = nc;
	rc = 0;
out:
	free(cpus);
	cm_matrix_free(sub);
	free(idx);
	free(pu);
	free(cur);
	return rc;
}

/* Before the program runs: libcurl initialised and a credential made,
 * so that neither delays the fetch (each costs tens of ms on a loaded
 * node, measured). */
void ag_prepare_model_fetch(struct agent *a)
{
	struct cm_deliver_opts d = { .service_url = a->o->service };
	struct cm_error err;

	cm_service_prepare();
	a->cred = cm_service_credential(&d, &err);
	a->cred_ns = now_ns();
	if (!a->cred)
		agent_debug("no credential yet: %s", err.text);
}

/* A credential made at start is used once, if still fresh (munge's
 * default lifetime is 300 s). */
static char *take_credential(struct agent *a)
{
	char *c = a->cred;

	a->cred = NULL;
	if (c && now_ns() - a->cred_ns > CRED_FRESH_NS) {
		free(c);
		c = NULL;
	}
	return c;
}

/* At step start, once the application is known: ask the service. */
void ag_model_fetch_now(struct agent *a)
{
	struct cm_deliver_opts d = { .service_url = a->o->service,
				     .timeout_ms = CM_MODEL_FETCH_TIMEOUT_MS };
	struct cm_model_key k = { .exe_hash = a->res.exe_hash,
				  .ranks = distinct_ranks(a),
				  .argv_shape = a->res.argv_shape,
				  .uid = step_uid(a) };
	struct cm_error err;
	uint64_t t = now_ns();
	char *cred;
	int rc;

	a->model_wanted = 0;
	if (!a->res.exe_hash[0]) {
		ag_model_drop(a, "the executable could not be identified");
		return;
	}
	if (!a->topo) {
		ag_model_drop(a, "no topology to map onto");
		return;
	}
	cred = take_credential(a);
	rc = cm_model_fetch(&d, &k, cred, &a->model, &err);
	free(cred);
	if (rc <= 0) {
		/* 0: no model for this identity; -1: service down, slow, ... */
		ag_model_drop(a, err.text);
		return;
	}
	if (model_prepare(a, &err) < 0) {
		ag_model_drop(a, err.text);
		return;
	}
	a->model_active = 1;
	a->res.model.state = CM_RESULT_MODEL_USED;
	a->res.model.id = a->model.id;
	a->res.model.runs = a->model.runs;
	a->res.model.distance = -1;
	agent_info("learned model %lld (%d runs, %d threads, %d placed) in "
		   "%.1f ms (t=%.3f s): pinning threads as they appear",
		   a->model.id, a->model.runs, a->model.n, a->model_pending,
		   ms_since(t), elapsed_s(a));
}

static int model_done_grow(struct agent *a, int n)
{
	char *d;

	if (n <= a->model_done_cap)
		return 0;
	d = realloc(a->model_done, (size_t)n * 2);
	if (!d)
		return -1;
	memset(d + a->model_done_cap, 0, (size_t)(n * 2 - a->model_done_cap));
	a->model_done = d;
	a->model_done_cap = n * 2;
	return 0;
}

/* Threads whose identity is final go to their learned PU; one whose
 * process's rank is still provisional waits for it (proc_track.h).  A
 * thread the model does not know in a rank's first process (index below
 * CM_IDENT_PROC_STRIDE) means another shape: the model is dropped; in a
 * further process of the rank (a helper, a tool's fork) it is left to
 * the scheduler. */
void ag_model_apply_new(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr), moved = 0, wait = -1;
	int *want = malloc((size_t)(n ? n : 1) * sizeof(int));

	if (!want || model_done_grow(a, n) < 0) {
		free(want);
		return;
	}
	for (int i = 0; i < n; i++)
		want[i] = -1;
	for (int i = a->model_applied; a->model_active && i < n; i++) {
		const struct cm_tracked_thread *th =
			cm_tracker_thread(a->tr, i);
		int rank, index, k;
		char why[160];

		if (a->model_done[i])
			continue;
		if (cm_tracker_thread_ident(a->tr, i, &rank, &index) != 1) {
			wait = wait < 0 ? i : wait;
			continue;
		}
		a->model_done[i] = 1;
		k = cm_model_find(&a->model, rank, index);
		if (k < 0 && index < CM_IDENT_PROC_STRIDE) {
			snprintf(why, sizeof(why), "thread (rank %d, index "
				 "%d) is not in the model (%d threads per "
				 "rank): another shape", rank, index,
				 a->model.threads_per_rank);
			ag_model_drop(a, why);
			break;
		}
		if (k < 0 || a->model_os[k] < 0)
			continue;
		a->model_pending--;
		if (!th->alive || a->cur_os[i] >= 0)
			continue;
		want[i] = cm_topo_pu_by_os_index(a->topo, a->model_os[k]);
		moved += want[i] >= 0;
	}
	a->model_applied = wait >= 0 ? wait : n;
	/* The learned PUs, within the placement invariant (threads the
	 * model does not know may hold some of them). */
	if (moved)
		moved = ag_apply_within_invariant(a, want) > 0;
	free(want);
	if (moved) {
		ag_record_mapping(a, a->model_cost, "learned");
		a->model_pin_ns = now_ns();
	}
}

/* Is tid bound to exactly PU os?  1 yes, 0 no, -1 unknown (gone). */
static int bound_to(struct agent *a, pid_t tid, int os)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	int rc = -1;

	if (set && hwloc_get_proc_cpubind(cm_topo_hwloc(a->topo), tid, set,
					  HWLOC_CPUBIND_THREAD) == 0)
		rc = hwloc_bitmap_weight(set) == 1 &&
		     hwloc_bitmap_isset(set, (unsigned)os);
	hwloc_bitmap_free(set);
	return rc;
}

/* A learned pin made early can be undone by the program itself: hwloc's
 * x86 discovery (Open MPI's MPI_Init calls it) binds the calling thread
 * to each PU in turn, then restores the binding it found first: Slurm's,
 * when our pin came in between.  For LEARNED_HOLD_NS after the last
 * learned pin, every scan reads the placed threads' bindings back and
 * sets again one that changed (not a migration: its place is the same).
 * Later a program binding its own threads is left alone. */
void ag_model_hold_pins(struct agent *a)
{
	struct cm_error err;

	if (a->dry_run || !a->pin_ok || !a->model_pin_ns ||
	    now_ns() - a->model_pin_ns > LEARNED_HOLD_NS)
		return;
	for (int i = 0; i < cm_tracker_nthreads(a->tr) && i < a->cap; i++) {
		const struct cm_tracked_thread *th =
			cm_tracker_thread(a->tr, i);

		if (!th->alive || a->cur_os[i] < 0 ||
		    bound_to(a, th->tid, a->cur_os[i]) != 0 ||
		    !cm_tracker_verify_thread(a->tr, i))
			continue;
		if (cm_pin_thread(cm_topo_hwloc(a->topo), a->allowed, th->tid,
				  a->cur_os[i], &err) == 0)
			agent_info("thread %d (tid %d) was rebound by the "
				   "program: pinned again to PU %d", i,
				   (int)th->tid, a->cur_os[i]);
	}
}

/* Learned mode moves threads again only when detection clearly
 * disagrees: the run's detected matrix's own best mapping of the placed
 * communicating threads beats the current placement by more than 20%
 * in two consecutive intervals.  Then the run goes on as dynamic. */
static int learned_disagrees(struct agent *a, const struct cm_place_set *s,
			     const struct cm_matrix *sub)
{
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	int *cur = malloc((size_t)(s->n ? s->n : 1) * sizeof(int));
	int *pu = malloc((size_t)(s->n ? s->n : 1) * sizeof(int));
	double cost_cur = -1, cost_new = -1;
	struct cm_error err;
	int worse = 0;

	if (cur && pu && s->n >= 2 && !ag_current_pus(a, s, cur)) {
		mo.oversubscribe = s->n > cm_topo_npus(a->topo);
		if (cm_map(a->topo, sub, &mo, pu, &err) == 0) {
			cost_cur = cm_cost(a->topo, sub, cur);
			cost_new = cm_cost(a->topo, sub, pu);
			worse = cm_remap_worth(cost_cur, cost_new,
					       LEARNED_DISAGREE_GAIN);
		}
	}
	free(cur);
	free(pu);
	a->disagree = worse ? a->disagree + 1 : 0;
	if (worse)
		agent_debug("learned: detection's mapping costs %.4g vs %.4g "
			    "(%d intervals)", cost_new, cost_cur, a->disagree);
	if (a->disagree < LEARNED_DISAGREE_INTERVALS)
		return 0;
	agent_warn("learned: detection disagrees with the model (cost %.4g "
		   "vs %.4g for %d intervals): remapping dynamically",
		   cost_new, cost_cur, a->disagree);
	a->mode = CM_AGENT_MODE_DYNAMIC;
	a->model_active = 0;
	return 1;
}

/* The live threads the learned mapping placed that communicate in the
 * whole run's matrix so far (learned mode judges on everything seen, not
 * on the aged recent matrix: a few noisy intervals must not overturn a
 * model learned over whole runs). */
static int placed_set_build(struct agent *a, struct cm_place_set *s)
{
	int n = cm_tracker_nthreads(a->tr);
	int nm = cm_matrix_nthreads(a->total);

	s->n = 0;
	s->idx = malloc((size_t)(n ? n : 1) * sizeof(int));
	s->pos = malloc((size_t)(n ? n : 1) * sizeof(int));
	if (!s->idx || !s->pos)
		return -1;
	for (int i = 0; i < n; i++) {
		s->pos[i] = -1;
		if (!cm_tracker_thread(a->tr, i)->alive || i >= nm ||
		    a->cur_os[i] < 0 || !(cm_matrix_row_sum(a->total, i) > 0))
			continue;
		s->pos[i] = s->n;
		s->idx[s->n++] = i;
	}
	return 0;
}

/* Learned mode at the end of an interval: 1 when it hands over to the
 * dynamic decision below (detection disagreed), else 0. */
int ag_learned_interval(struct agent *a)
{
	struct cm_place_set s = { 0 };
	struct cm_matrix *sub = NULL;
	int rc = 0;

	if (placed_set_build(a, &s) == 0) {
		sub = cm_place_sub_matrix(a->total, &s);
		if (sub)
			rc = learned_disagrees(a, &s, sub);
	}
	cm_matrix_free(sub);
	cm_place_set_free(&s);
	if (!rc)
		ag_age_live(a);
	return rc;
}
