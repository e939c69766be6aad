/* pin.c: thread binding inside the step's CPUs (see pin.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pin.h"

int cm_pin_allowed_union(const pid_t *pids, int n, hwloc_bitmap_t *out,
			 struct cm_error *err)
{
	hwloc_bitmap_t u = hwloc_bitmap_alloc();
	int found = 0;

	if (!u)
		return cm_errorf(err, ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		cpu_set_t set;

		CPU_ZERO(&set);
		if (sched_getaffinity(pids[i], sizeof(set), &set) < 0)
			continue;
		for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set))
				hwloc_bitmap_set(u, (unsigned)cpu);
		found++;
	}
	if (!found) {
		hwloc_bitmap_free(u);
		return cm_errorf(err, ESRCH, "none of the %d processes exists",
				 n);
	}
	*out = u;
	return 0;
}

int cm_pin_thread_set(hwloc_topology_t topo, hwloc_const_bitmap_t allowed,
		      pid_t tid, hwloc_const_bitmap_t set,
		      struct cm_error *err)
{
	if (hwloc_bitmap_iszero(set) || !hwloc_bitmap_isincluded(set, allowed)) {
		char *s = NULL, *a = NULL;

		hwloc_bitmap_list_asprintf(&s, set);
		hwloc_bitmap_list_asprintf(&a, allowed);
		cm_errorf(err, EXDEV, "CPUs %s are not within the step's "
			  "CPUs %s", s ? s : "?", a ? a : "?");
		free(s);
		free(a);
		return -1;
	}
	if (hwloc_set_proc_cpubind(topo, tid, set, HWLOC_CPUBIND_THREAD) < 0)
		return cm_errorf(err, errno, "cannot bind thread %d: %s",
				 (int)tid, strerror(errno));
	return 0;
}

int cm_pin_thread(hwloc_topology_t topo, hwloc_const_bitmap_t allowed,
		  pid_t tid, int os_pu, struct cm_error *err)
{
	hwloc_bitmap_t set;
	int rv;

	if (os_pu < 0)
		return cm_errorf(err, EXDEV, "invalid CPU %d", os_pu);
	set = hwloc_bitmap_alloc();
	if (!set)
		return cm_errorf(err, ENOMEM, "out of memory");
	hwloc_bitmap_only(set, (unsigned)os_pu);
	rv = cm_pin_thread_set(topo, allowed, tid, set, err);
	hwloc_bitmap_free(set);
	return rv;
}

int cm_pin_thread_last_cpu(pid_t tgid, pid_t tid)
{
	char path[96], buf[1024], *p;
	FILE *f;
	int cpu = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)tgid,
		 (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return -1;
	/* field 39 (processor), counted from field 3 after ") " */
	p += 2;
	for (int field = 3; field < 39 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (p)
		cpu = atoi(p);
	return cpu;
}
