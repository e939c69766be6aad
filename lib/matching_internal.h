/* matching_internal.h (internal): what matching.c shares with its exact
 * solver (matching_blossom.c). */
#ifndef COMMAP_MATCHING_INTERNAL_H
#define COMMAP_MATCHING_INTERNAL_H

#include <stdint.h>

/* An edge with its weight quantised to an integer, so that every slack
 * comparison of the blossom algorithm is exact. */
struct iedge {
	int u, v;
	int64_t w;
};

/* Maximum-weight (not necessarily perfect) matching of the integer-weight
 * graph of nv vertices and the ne edges e; mate_out[v] = partner or -1.
 * 0, or -1/ENOMEM (matching_blossom.c). */
int cm_match_blossom_run(int nv, const struct iedge *e, int ne, int *mate_out);

#endif
