/* remap_policy.c: when to remap (see remap_policy.h). */
#include <config.h>

#include "remap_policy.h"

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
	else
		out->reason = "stable";
	out->compute = evidence && (!in->have_mapping ||
					      in->unplaced > 0 ||
					      out->pattern_changed);
	out->next_interval_ms = cm_remap_next_interval(in->interval_ms,
						       out->pattern_changed);
}
