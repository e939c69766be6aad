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

#include <stddef.h>

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

/* Check every timeline entry of an agent result (docs/result-format.md)
 * given as JSON text of len bytes: each entry's pu_of_thread against
 * topology.pus PUs and the entry's threads_live (or, in results that
 * lack it, the pinned threads); entries marked "forced" (an explicit
 * static mapping, the user's own) are not checked.  0 when all hold or
 * the document has no timeline to check; -1 with errno EDOM and err
 * "timeline[K].pu_of_thread: PU ..." for the first that breaks it;
 * EINVAL when the text is not a JSON object.  Other malformations are
 * the validator's business: such entries are skipped. */
int cm_placement_check_result(const char *text, size_t len,
			      struct cm_error *err);

#endif
