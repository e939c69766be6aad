/* map_bisect.h (internal): multilevel bisection of a set of threads, used
 * by cm_map_place() for the large splits near the root of the tree. */
#ifndef COMMAP_MAP_BISECT_H
#define COMMAP_MAP_BISECT_H

#include <stdint.h>

#include "commap/matrix.h"

/* Split the threads T[0..t-1] (the subgraph of m they induce) into side 0
 * of about ta threads (within one) and side 1, cutting as little
 * communication as possible: heavy-edge coarsening, several greedy-grown
 * starts on the coarsest graph, Fiduccia-Mattheyses at every level on the
 * way back; the best of `tries` such V-cycles (different coarsenings) is
 * kept, and with tries > 1 improved by refinement V-cycles.  side[i]
 * gets 0 or 1 for T[i].  loc is scratch of cm_matrix_nthreads(m)
 * entries, all -1 on entry; they are -1 again on return.  Gains up to
 * eps count as none (rounding noise; e.g. 1e-12 times the largest
 * weight).  Deterministic for a seed.  0, or -1/ENOMEM. */
int cm_bisect_multilevel(const struct cm_matrix *m, const int *T, int t,
			 int ta, int tries, uint64_t seed, double eps,
			 int *loc, signed char *side);

/* How hard the bisection works: FM passes per level, moves without a
 * better cut before a pass gives up, refinement V-cycles, starts of the
 * initial split. */
struct cm_bisect_effort {
	int fm_passes;
	int fm_patience;
	int refine_cycles;	/* refinement V-cycles after the tries */
	int starts;		/* grown starts on the coarsest graph */
};

/* cm_bisect_multilevel() with the given effort (NULL: the default).  If
 * gain is not NULL, gain[T[i]] and tot[T[i]] receive the FM gain of T[i]
 * for the returned split (weight to the other side minus weight to its
 * own, within T) and its weight to the rest of T, so that the caller
 * need not scan the rows again. */
int cm_bisect_multilevel_effort(const struct cm_matrix *m, const int *T,
				int t, int ta, int tries, uint64_t seed,
				double eps, const struct cm_bisect_effort *e,
				int *loc, signed char *side, double *gain,
				double *tot);

/* Row x of a matrix, looked up once: ref[x].e, ref[x].len entries (the
 * matrix's own storage; no copy). */
struct cm_row_ref {
	const struct cm_matrix_entry *e;
	int len;
};

/* cm_bisect_multilevel_effort() reading the rows of m from ref (not
 * NULL; one per thread of m) instead of a call per row.  The same
 * result. */
int cm_bisect_multilevel_rows(const struct cm_matrix *m,
			      const struct cm_row_ref *ref, const int *T,
			      int t, int ta, int tries, uint64_t seed,
			      double eps, const struct cm_bisect_effort *e,
			      int *loc, signed char *side, double *gain,
			      double *tot);

#endif
