/* pin.h: binding the threads of a step to PUs, never outside the CPUs the
 * step was given.
 *
 * The allowed set is fixed once, at agent start: the union of the affinity
 * masks of the step's root processes (what Slurm's task plugin gave them).
 * A later pin to any PU outside it is refused with EXDEV.
 */
#ifndef COMMAP_PIN_H
#define COMMAP_PIN_H

#include <sys/types.h>

#include <hwloc.h>

#include "commap/error.h"

/* Union of the affinity masks of pids[0..n-1], allocated into *out (free
 * with hwloc_bitmap_free).  Pids that have exited are skipped; if none is
 * left: -1/ESRCH. */
int cm_pin_allowed_union(const pid_t *pids, int n, hwloc_bitmap_t *out,
			 struct cm_error *err);

/* Bind thread tid to the PU with OS index os_pu.  -1 with errno and err:
 * EXDEV os_pu not in allowed; ESRCH the thread is gone; EPERM/EINVAL from
 * the kernel. */
int cm_pin_thread(hwloc_topology_t topo, hwloc_const_bitmap_t allowed,
		  pid_t tid, int os_pu, struct cm_error *err);

/* Bind thread tid to a whole set (e.g. back to the allowed set). */
int cm_pin_thread_set(hwloc_topology_t topo, hwloc_const_bitmap_t allowed,
		      pid_t tid, hwloc_const_bitmap_t set,
		      struct cm_error *err);

/* The PU a thread last ran on (from its stat), -1 if unknown. */
int cm_pin_thread_last_cpu(pid_t tgid, pid_t tid);

#endif
