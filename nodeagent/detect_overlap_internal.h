/* detect_overlap_internal.h: the estimator's tables, shared by its files
 * (detect_overlap.c: counting, levels, the test, the weights;
 * detect_overlap_phase.c: threads that moved to other memory). */
#ifndef COMMAP_NODEAGENT_DETECT_OVERLAP_INTERNAL_H
#define COMMAP_NODEAGENT_DETECT_OVERLAP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "detect_overlap.h"

#define NLEVELS 2


struct slot {
	uint64_t key;		/* 0: empty */
	float a, b;		/* aged counts of the two halves */
	float fa, fb;		/* ... of the samples since the last compute */
	uint32_t pages;		/* 4 KiB pages (fine level) or 64 KiB
				 * blocks (coarse) of the block seen */
	uint16_t n;		/* samples, not aged (saturating) */
};

struct othread {
	struct slot *lv[NLEVELS];
	double tot_a, tot_b;	/* aged mass of each half, evicted included */
	double ftot_a, ftot_b;	/* ... of the samples since the last compute */
	uint64_t seq;		/* samples: even ones to A, odd to B */
	uint64_t fresh;		/* samples since the last phase check */
	uint64_t news;		/* samples since the last compute */
};

struct cm_overlap {
	struct othread *th;
	int n, cap;
	uint64_t half_life, period;
	uint64_t t_ref;		/* time of weight 1 */
	uint64_t next;		/* next compute (sample time), 0: unset */
	int started;
	uint64_t seed;
	uint64_t probes;	/* slots scanned by the last compute */
	double thin;		/* w of the last blend */
	struct cm_overlap_stats st;
};

/* Slots of a level's table (0 fine, 1 coarse). */
#define OV_LEVEL_SLOTS(l) \
	((l) ? CM_OVERLAP_COARSE_SLOTS : CM_OVERLAP_FINE_SLOTS)

/* After a compute: threads that moved forget their past
 * (detect_overlap_phase.c). */
void cm_overlap_phase_check(struct cm_overlap *ov);

#endif
