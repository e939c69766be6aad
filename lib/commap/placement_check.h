/* placement_check.h: the placement invariant of a step.
 *
 * A placement must never slow a step down by stacking threads: while the
 * step has no more threads than allowed PUs, no two pinned threads share
 * a PU; otherwise no PU holds more than ceil(threads / PUs).  Every live
 * thread of the step counts (pinned or not, in the communication matrix
 * or not); exited threads do not.  The node agent enforces it where pins
 * are applied (nodeagent/placement.h); the result validator checks it on
 * every timeline entry (docs/result-format.md).
 */
#ifndef COMMAP_PLACEMENT_CHECK_H
#define COMMAP_PLACEMENT_CHECK_H

#include "commap/error.h"

/* The most threads one PU may hold: 1 while nthreads <= npus, else
 * ceil(nthreads / npus).  1 when npus <= 0 or nthreads <= 0. */
int cm_placement_cap(int nthreads, int npus);

/* Check a placement: pu[t] is thread t's PU (any non-negative PU number,
 * OS index or logical; -1: not pinned or exited), n entries; nthreads is
 * the number of live threads of the step (pinned or not; raised to the
 * number of pinned entries when lower), npus the number of allowed PUs.
 * 0 when no PU holds more than cm_placement_cap(nthreads, npus) threads;
 * -1 with errno EDOM and err naming the PU and two of its threads when
 * one does; -1 with EINVAL on bad arguments (n < 0, npus < 1, a PU below
 * -1), ENOMEM. */
int cm_placement_check(int npus, int nthreads, int n, const int *pu,
		       struct cm_error *err);

#endif
