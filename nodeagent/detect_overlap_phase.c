/* detect_overlap_phase.c: a thread of the overlap estimator that changed
 * what it works on forgets its older samples (detect_overlap.h,
 * "Phases"). */
#include "config.h"

#include <stdbool.h>

#include "detect_overlap_internal.h"

/* Whether thread t's samples since the last compute left the memory it
 * worked on before: their overlap with its older samples is below half
 * the overlap of their own two halves (what samples of one distribution
 * give at this sample size, so a thread spread thin over a large array
 * is not taken for a moving one). */
static bool moved(const struct othread *t)
{
	const struct slot *e = t->lv[0];
	double old = t->tot_a + t->tot_b - t->ftot_a - t->ftot_b;
	double fresh = t->ftot_a + t->ftot_b, change = 0, halves = 0;

	/* old: a difference of sums, not exactly 0 when there is none */
	if (old <= 1e-6 * fresh ||
	    !(t->ftot_a > 0) || !(t->ftot_b > 0))
		return false;
	for (unsigned s = 0; s < CM_OVERLAP_FINE_SLOTS; s++) {
		double pf, po, pa, pb;

		if (!e[s].key)
			continue;
		pf = ((double)e[s].fa + e[s].fb) / fresh;
		po = ((double)e[s].a + e[s].b - e[s].fa - e[s].fb) / old;
		pa = e[s].fa / t->ftot_a;
		pb = e[s].fb / t->ftot_b;
		change += pf < po ? pf : po;
		halves += pa < pb ? pa : pb;
	}
	return change < 0.5 * halves;
}

/* Keep only the samples since the last check (moved: the older ones
 * describe a phase that is over), or just start a new "since". */
static void end_round(struct othread *t, bool forget_old)
{
	for (int l = 0; l < NLEVELS; l++)
		for (unsigned s = 0; s < OV_LEVEL_SLOTS(l); s++) {
			struct slot *e = &t->lv[l][s];

			if (forget_old) {
				e->a = e->fa;
				e->b = e->fb;
				if (!(e->a + e->b > 0))
					e->n = 0;
			}
			e->fa = e->fb = 0;
		}
	if (forget_old) {
		t->tot_a = t->ftot_a;
		t->tot_b = t->ftot_b;
	}
	t->ftot_a = t->ftot_b = 0;
	t->fresh = 0;
}

/* After a compute: threads that moved forget their past.  A thread with
 * too few samples since its last check keeps gathering them. */
void cm_overlap_phase_check(struct cm_overlap *ov)
{
	for (int i = 0; i < ov->n; i++) {
		struct othread *t = &ov->th[i];
		bool m;

		t->news = 0;
		if (!t->lv[0] || t->fresh < CM_OVERLAP_MIN_FRESH)
			continue;
		m = moved(t);
		ov->st.moves += m;
		end_round(t, m);
	}
}
