/* placement_check.c: the placement invariant (commap/placement_check.h). */
#include <errno.h>
#include <stdlib.h>

#include "commap/placement_check.h"

int cm_placement_cap(int nthreads, int npus)
{
	if (npus <= 0 || nthreads <= npus)
		return 1;
	return (nthreads + npus - 1) / npus;
}

/* Sort order for (PU, thread) pairs: by PU, then thread. */
static int pair_cmp(const void *a, const void *b)
{
	const int *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The pinned entries of pu as (PU, thread) pairs sorted by PU: PU
 * numbers may be sparse OS indices, so no table indexed by PU. */
static int *pinned_pairs(int n, const int *pu, int *npinned)
{
	int *pairs = malloc(sizeof(int) * 2 * (size_t)(n > 0 ? n : 1));
	int k = 0;

	if (!pairs)
		return NULL;
	for (int t = 0; t < n; t++)
		if (pu[t] >= 0) {
			pairs[2 * k] = pu[t];
			pairs[2 * k + 1] = t;
			k++;
		}
	qsort(pairs, (size_t)k, sizeof(int) * 2, pair_cmp);
	*npinned = k;
	return pairs;
}

int cm_placement_check(int npus, int nthreads, int n, const int *pu,
		       struct cm_error *err)
{
	int *pairs, npinned = 0, cap, rc = 0;

	if (n < 0 || npus < 1 || (n > 0 && !pu))
		return cm_errorf(err, EINVAL, "placement check: bad argument");
	for (int t = 0; t < n; t++)
		if (pu[t] < -1)
			return cm_errorf(err, EINVAL, "placement check: thread "
					 "%d on PU %d", t, pu[t]);
	pairs = pinned_pairs(n, pu, &npinned);
	if (!pairs)
		return cm_errorf(err, ENOMEM, "out of memory");
	cap = cm_placement_cap(nthreads > npinned ? nthreads : npinned, npus);
	for (int s = 0, e; s < npinned; s = e) {
		for (e = s; e < npinned && pairs[2 * e] == pairs[2 * s]; e++)
			;
		if (e - s > cap) {
			rc = cm_errorf(err, EDOM, "PU %d holds %d threads "
				       "(threads %d and %d among them), more "
				       "than %d with %d threads on %d PUs",
				       pairs[2 * s], e - s, pairs[2 * s + 1],
				       pairs[2 * s + 3], cap,
				       nthreads > npinned ? nthreads : npinned,
				       npus);
			break;
		}
	}
	free(pairs);
	return rc;
}
