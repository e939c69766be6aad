/* test_pin.c: real pinning of real threads on this machine's cores, and
 * refusal outside the step's CPUs. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pin.h"
#include "tap.h"

static volatile int stop;
static volatile pid_t worker_tid;

static void *spin(void *arg)
{
	worker_tid = (pid_t)syscall(SYS_gettid);
	while (!stop)
		sched_yield();
	return NULL;
}

static int only_cpu(pid_t tid)
{
	cpu_set_t set;
	int cpu = -1;

	if (sched_getaffinity(tid, sizeof(set), &set) < 0 ||
	    CPU_COUNT(&set) != 1)
		return -1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			cpu = i;
	return cpu;
}

static int thread_exists(pid_t tgid, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)tgid, (int)tid);
	return access(path, F_OK) == 0;
}

int main(void)
{
	hwloc_topology_t topo;
	hwloc_bitmap_t allowed = NULL, one;
	pid_t self = getpid();
	struct cm_error err = { "" };
	pthread_t th;
	int first = -1, last = -1, ncpus;
	unsigned cpu;

	hwloc_topology_init(&topo);
	hwloc_topology_load(topo);
	ok(cm_pin_allowed_union(&self, 1, &allowed, &err) == 0,
	   "allowed set of this process (%s)", err.text);
	ncpus = hwloc_bitmap_weight(allowed);
	ok(ncpus >= 1, "%d allowed CPUs", ncpus);
	first = hwloc_bitmap_first(allowed);
	last = hwloc_bitmap_last(allowed);

	pthread_create(&th, NULL, spin, NULL);
	while (!worker_tid)
		sched_yield();
	hwloc_bitmap_foreach_begin(cpu, allowed) {
		ok(cm_pin_thread(topo, allowed, worker_tid, (int)cpu, &err) == 0
		   && only_cpu(worker_tid) == (int)cpu,
		   "thread %d pinned to CPU %u (%s)", (int)worker_tid, cpu,
		   err.text);
	} hwloc_bitmap_foreach_end();
	usleep(20000);
	ok(cm_pin_thread_last_cpu(self, worker_tid) == last,
	   "the pinned thread runs on CPU %d (%d)", last,
	   cm_pin_thread_last_cpu(self, worker_tid));

	/* A step given only its first CPU may not pin anywhere else. */
	one = hwloc_bitmap_alloc();
	hwloc_bitmap_only(one, (unsigned)first);
	ok(cm_pin_thread(topo, one, worker_tid, first + 1, &err) == -1 &&
	   errno == EXDEV && strstr(err.text, "not within"),
	   "pin outside the step's CPUs refused: %s", err.text);
	ok(only_cpu(worker_tid) == last, "and the binding is unchanged");
	ok(cm_pin_thread(topo, allowed, worker_tid, -1, &err) == -1 &&
	   errno == EXDEV, "negative CPU refused");
	ok(cm_pin_thread_set(topo, allowed, worker_tid, allowed, &err) == 0,
	   "unpinned back to the allowed set");

	stop = 1;
	pthread_join(th, NULL);
	/* pthread_join returns when the kernel clears the thread's tid
	 * word, which happens before the task is released: for a moment the
	 * tid still accepts sched_setaffinity.  Wait until it is gone. */
	for (int i = 0; i < 5000 && thread_exists(self, worker_tid); i++)
		usleep(1000);
	err.text[0] = '\0';
	ok(cm_pin_thread(topo, allowed, worker_tid, first, &err) == -1,
	   "pinning an exited thread fails: %s", err.text);
	{
		pid_t gone = 0x3ffffff0;

		ok(cm_pin_allowed_union(&gone, 1, &one, &err) == -1 &&
		   errno == ESRCH, "union of missing processes: %s", err.text);
	}
	hwloc_bitmap_free(one);
	hwloc_bitmap_free(allowed);
	hwloc_topology_destroy(topo);
	return done_testing();
}
