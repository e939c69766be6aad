/* numa_balancing.h: turning kernel.numa_balancing on for the fault
 * backend, shared by all agents on a node.
 *
 * The fault backend needs NUMA-balancing hinting faults
 * (kernel.numa_balancing=1).  With numa_balancing=manage the agents turn it
 * on while at least one of them needs it and the last one restores the
 * value found before the first; with =leave they never touch it.
 *
 * State lives in one file (default /run/commap/numa_balancing), updated
 * under flock: its first line is the saved value, the others the pids of
 * the agents holding it.  Holders that died (even by SIGKILL) are pruned on
 * every acquire and release, so a crashed agent cannot leave the setting
 * on forever: the next agent to come or go restores it.
 */
#ifndef COMMAP_NUMA_BALANCING_H
#define COMMAP_NUMA_BALANCING_H

#include <sys/types.h>

#include "commap/error.h"

struct cm_numa_balancing_paths {
	const char *sysctl;	/* /proc/sys/kernel/numa_balancing */
	const char *state;	/* /run/commap/numa_balancing */
};

/* Register pid as a holder; the first holder saves the current value and
 * writes 1.  0 on success; -1 with errno/err (ENOENT: the kernel has no
 * NUMA balancing; EACCES/EPERM: not allowed). */
int cm_numa_balancing_acquire(const struct cm_numa_balancing_paths *paths,
			      pid_t pid, struct cm_error *err);

/* Remove pid (and dead holders); when none is left, restore the saved
 * value.  0 on success, -1 with errno/err. */
int cm_numa_balancing_release(const struct cm_numa_balancing_paths *paths,
			      pid_t pid, struct cm_error *err);

#endif
