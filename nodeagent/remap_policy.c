/* remap_policy.c: when to remap (see remap_policy.h). */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commap/cost.h"
#include "commap/mapping.h"
#include "remap_policy.h"

double cm_remap_aging(double alpha, int interval_ms)
{
	if (interval_ms <= 0)
		return 1.0;
	return pow(alpha, (double)interval_ms / CM_REMAP_INTERVAL_MS_START);
}

uint64_t cm_remap_progress(uint64_t wall_ns, uint64_t cpu_ns, int ran,
			   int cpus, uint64_t max_ns, uint64_t *credit_ns)
{
	int width = cpus > 0 && cpus < ran ? cpus : ran;
	double best = credit_ns ? (double)*credit_ns : 0;
	double share = width > 0 ? (double)cpu_ns / width : 0;

	if (ran < 0) {
		if (credit_ns)
			*credit_ns = 0;
		return wall_ns;
	}
	best += share > (double)max_ns ? share : (double)max_ns;
	if (best >= CM_REMAP_FULL_SPEED * (double)wall_ns) {
		if (credit_ns) {
			double over = best - (double)wall_ns;

			*credit_ns = over <= 0 ? 0 :
				     over >= CM_REMAP_PROGRESS_CREDIT_NS ?
				     CM_REMAP_PROGRESS_CREDIT_NS :
				     (uint64_t)over;
		}
		return wall_ns;
	}
	if (credit_ns)
		*credit_ns = 0;
	return (uint64_t)best;
}

int cm_remap_next_interval(int cur_ms, int pattern_changed)
{
	/* LHMapping §3.4.2: +-50 ms, always within 50 ms .. 1 s. */
	int next = cur_ms + (pattern_changed ? -CM_REMAP_INTERVAL_MS_STEP :
			     CM_REMAP_INTERVAL_MS_STEP);

	if (next < CM_REMAP_INTERVAL_MS_MIN)
		next = CM_REMAP_INTERVAL_MS_MIN;
	if (next > CM_REMAP_INTERVAL_MS_MAX)
		next = CM_REMAP_INTERVAL_MS_MAX;
	return next;
}

void cm_remap_partners(const struct cm_matrix *m, int n, int *partner)
{
	int nm = m ? cm_matrix_nthreads(m) : 0;

	for (int i = 0; i < n; i++) {
		struct cm_matrix_entry top;

		partner[i] = -1;
		if (i < nm && cm_matrix_top_partners(m, i, 1, &top) == 1 &&
		    top.w > 0)
			partner[i] = top.col;
	}
}

int cm_remap_partners_changed(const int *before, int nbefore,
			      const int *now, int n)
{
	int changed = 0;

	for (int i = 0; i < n; i++) {
		int old = i < nbefore ? before[i] : -1;

		if (now[i] != old && now[i] >= 0)
			changed++;
	}
	return changed;
}

int cm_remap_worth(double cost_cur, double cost_new, double gain)
{
	if (!(cost_cur > 0))
		return 0;
	return cost_new < cost_cur * (1.0 - gain);
}

void cm_remap_decide(const struct cm_remap_input *in,
		     struct cm_remap_decision *out)
{
	/* SPCD §IV-A: "if the amount of different partners exceeds a given
	 * threshold, the mapping algorithm is called" (threshold 2). */
	int thr = in->partner_threshold > 0 ? in->partner_threshold :
		  CM_REMAP_PARTNER_THRESHOLD;

	int evidence = in->comm_total >= CM_REMAP_MIN_EVIDENCE;

	out->pattern_changed = evidence && in->partners_changed >= thr;
	if (!(in->comm_total > 0))
		out->reason = "no-communication";
	else if (!evidence)
		out->reason = "little-evidence";
	else if (!in->have_mapping)
		out->reason = "initial";
	else if (in->unplaced > 0)
		out->reason = "new-threads";
	else if (out->pattern_changed)
		out->reason = "pattern";
	else if (in->recheck > 0)
		out->reason = "recheck";
	else
		out->reason = "stable";
	out->compute = evidence && (!in->have_mapping ||
					      in->unplaced > 0 ||
					      out->pattern_changed ||
					      in->recheck > 0);
	out->next_interval_ms = cm_remap_next_interval(in->interval_ms,
						       out->pattern_changed);
}

int cm_remap_thread_has_evidence(double row_sum, double max_row_sum)
{
	return row_sum >= CM_REMAP_MIN_THREAD_EVIDENCE &&
	       row_sum >= CM_REMAP_MIN_THREAD_SHARE * max_row_sum;
}

int cm_remap_near(const struct cm_topo *topo, int a, int b)
{
	return a >= 0 && b >= 0 &&
	       cm_topo_distance(topo, a, b) < cm_level_weight(CM_LEVEL_L3);
}

int cm_remap_correct_near(const struct cm_topo *topo, struct cm_matrix *m,
			  int n, const int *pu, double seen)
{
	int nm, done = 0;

	if (!topo || !m || n < 0 || (n > 0 && !pu) || !(seen > 0) ||
	    seen > 1)
		return errno = EINVAL, -1;
	nm = cm_matrix_nthreads(m);
	for (int i = 0; i < n && i < nm; i++) {
		const struct cm_matrix_entry *row;
		int cnt = cm_matrix_row(m, i, &row);

		/* Setting an existing edge changes its weight in place: the
		 * row stays as it is while we walk it. */
		for (int e = 0; e < cnt; e++) {
			int j = row[e].col;

			if (j <= i || j >= n || !cm_remap_near(topo, pu[i],
							       pu[j]))
				continue;
			if (cm_matrix_set(m, i, j, row[e].w / seen) < 0)
				return -1;
			done++;
		}
	}
	return done;
}

double cm_remap_cost_noise(const struct cm_topo *topo,
			   const struct cm_matrix *m, int n, const int *a,
			   const int *b, double near_seen)
{
	double var = 0;

	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *row;
		int cnt = cm_matrix_row(m, i, &row);

		for (int e = 0; e < cnt; e++) {
			int j = row[e].col;
			double d;

			if (j <= i || j >= n)
				continue;
			d = cm_topo_distance(topo, a[i], a[j]) -
			    cm_topo_distance(topo, b[i], b[j]);
			/* A corrected weight w is w * near_seen events: its
			 * Poisson variance, in weight units, w / near_seen. */
			var += row[e].w * d * d /
			       (near_seen < 1 && cm_remap_near(topo, a[i], a[j]) ?
				near_seen : 1.0);
		}
	}
	return sqrt(var);
}

int cm_remap_accept(double cost_cur, double cost_new, double noise,
		    double gain)
{
	return cm_remap_worth(cost_cur, cost_new, gain) &&
	       cost_cur - cost_new > CM_REMAP_NOISE_Z * noise;
}

/* The complete candidate: cm_map from scratch, auto algorithm. */
static int full_candidate(const struct cm_topo *topo,
			  const struct cm_matrix *m, int n, int *full,
			  struct cm_error *err)
{
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1 };

	mo.oversubscribe = n > cm_topo_npus(topo);
	return cm_map(topo, m, &mo, full, err);
}

int cm_remap_equivalent(const struct cm_topo *topo, int n, const int *a,
			const int *b)
{
	int *c = malloc(sizeof(int) * (size_t)(n ? n : 1));
	int same = c != NULL;

	for (int t = 0; same && t < n; t++) {
		same = a[t] >= 0 && b[t] >= 0;
		c[t] = b[t];
	}
	if (same && cm_map_align(topo, n, a, c) < 0)
		same = 0;
	for (int t = 0; same && t < n; t++)
		same = c[t] == a[t];
	free(c);
	return same;
}

int cm_remap_undo_allowed(double since_ms, int undos)
{
	int k = undos < CM_REMAP_UNDO_DOUBLINGS_MAX ? undos :
		CM_REMAP_UNDO_DOUBLINGS_MAX;

	return since_ms >= CM_REMAP_UNDO_HOLD_MS * (double)(1 << (k > 0 ?
								  k : 0));
}

/* Keep the base (cur completed) unless the complete candidate is worth
 * moving placed threads for, and is not the placement to avoid. */
static void choose(const struct cm_topo *topo, const struct cm_matrix *m,
		   int n, const int *avoid, double gain, double near_seen,
		   const int *full, int *pu, struct cm_remap_plan *plan)
{
	plan->cost_full = cm_cost(topo, m, full);
	plan->noise = cm_remap_cost_noise(topo, m, n, pu, full, near_seen);
	if (!cm_remap_accept(plan->cost_base, plan->cost_full, plan->noise,
			     gain))
		return;
	if (avoid && cm_remap_equivalent(topo, n, avoid, full)) {
		plan->avoided = 1;
		return;
	}
	memcpy(pu, full, sizeof(int) * (size_t)n);
	plan->kind = CM_REMAP_FULL;
}

static void plan_finish(const struct cm_topo *topo, const struct cm_matrix *m,
			int n, const int *cur, const int *pu,
			struct cm_remap_plan *plan)
{
	plan->cost_new = cm_cost(topo, m, pu);
	plan->moved = 0;
	for (int t = 0; t < n; t++)
		plan->moved += cur[t] >= 0 && pu[t] != cur[t];
	if (plan->placed_new == 0)
		plan->cost_cur = plan->cost_base;
}

int cm_remap_plan(const struct cm_topo *topo, const struct cm_matrix *m,
		  int n, const int *cur, const int *avoid, double gain,
		  double near_seen, int *pu, struct cm_remap_plan *plan,
		  struct cm_error *err)
{
	int *full;
	int rc;

	if (!topo || !m || !plan || n < 0 || n != cm_matrix_nthreads(m) ||
	    (n > 0 && (!cur || !pu)) || !(near_seen > 0) || near_seen > 1)
		return cm_errorf(err, EINVAL, "remap plan: bad argument");
	memset(plan, 0, sizeof(*plan));
	plan->cost_cur = plan->cost_base = plan->cost_full = -1;
	for (int t = 0; t < n; t++) {
		pu[t] = cur[t];
		plan->placed_new += cur[t] < 0;
	}
	if (n == 0)
		return 0;
	full = malloc(sizeof(int) * (size_t)n);
	if (!full)
		return cm_errorf(err, ENOMEM, "out of memory");
	rc = full_candidate(topo, m, n, full, err);
	if (plan->placed_new == n) {
		/* Nothing placed yet: nothing to keep. */
		if (rc == 0) {
			memcpy(pu, full, sizeof(int) * (size_t)n);
			plan->kind = CM_REMAP_FULL;
			plan->cost_full = cm_cost(topo, m, full);
		}
		goto out;
	}
	if (plan->placed_new) {
		if (cm_map_incremental(topo, m, n, pu, n > cm_topo_npus(topo),
				       err) < 0) {
			rc = -1;
			goto out;
		}
		plan->kind = CM_REMAP_INCREMENTAL;
	}
	plan->cost_base = cm_cost(topo, m, pu);
	if (rc == 0) {
		/* Of the candidate's equivalent relabellings, the one that
		 * leaves most threads where the base has them. */
		if (cm_map_align(topo, n, pu, full) == 0)
			choose(topo, m, n, avoid, gain, near_seen, full, pu,
			       plan);
	} else {
		/* No candidate: the base alone is still a valid answer. */
		rc = 0;
	}
out:
	if (rc == 0)
		plan_finish(topo, m, n, cur, pu, plan);
	free(full);
	return rc;
}
