/* progress_guard.h: undo a mapping that makes the step progress worse.
 *
 * Pinning can hurt: two busy threads on one PU while others idle, a
 * mapping that fights the scheduler.  The guard reads each thread's CPU
 * time and run-queue wait (/proc/PID/task/TID/schedstat: ns on a CPU, ns
 * runnable but waiting) before a mapping and a window after it, and
 * compares the step's progress in the two windows:
 *   cpu rate  = CPU seconds per wall second, summed over the threads;
 *   wait share = wait / (CPU + wait): how much of the time the threads
 *                wanted a CPU they spent waiting for one.
 * A mapping is worse beyond noise when the CPU rate fell by more than
 * CM_GUARD_CPU_DROP of what it was AND the wait share rose by more than
 * CM_GUARD_WAIT_RISE: both, so that a phase of the program (less work,
 * more I/O) or another job's burst, which moves one but not the other in
 * that way, is not taken for the mapping's fault.  Threads first placed
 * by the mapping (static and learned modes pin threads as they appear)
 * have no window before it: then the reference is what the step's busy
 * threads would get unpinned on its PUs (cm_guard_baseline), a model
 * that does not see other jobs' load, so the agent judges that way only
 * a placement that stacks threads beyond the placement invariant (an
 * explicit static mapping can), and holds such a placement against it
 * even with a window before (on a loaded machine the threads may wait
 * most of that window already, hiding the rise; unpinned is never worse
 * than stacked).  An undo returns to the last placement judged good
 * (remap_decide.h: cm_decide_guard_applied).
 *
 * Pure except cm_guard_read_schedstat; unit-tested in
 * tests/agent/test_progress_guard.c.
 */
#ifndef COMMAP_PROGRESS_GUARD_H
#define COMMAP_PROGRESS_GUARD_H

#include <stddef.h>
#include <sys/types.h>

/* The CPU-rate fall and wait-share rise the guard puts down to noise
 * (set, not fitted: a harmful mapping such as 4 busy threads on one of
 * 2 PUs halves the CPU rate and raises the wait share by 0.25 or more). */
#define CM_GUARD_CPU_DROP 0.15
#define CM_GUARD_WAIT_RISE 0.10
/* Against the unpinned baseline (no window before: a model of the
 * machine, not a measure of it, and other jobs take CPU from the step
 * that it assumes free) the fall and rise must be larger. */
#define CM_GUARD_BASE_CPU_DROP 0.40
#define CM_GUARD_BASE_WAIT_RISE 0.20
/* The window after a mapping before the guard judges it (ms), and the
 * shortest window before it that counts. */
#define CM_GUARD_WINDOW_MS 300
#define CM_GUARD_MIN_BEFORE_MS 100
/* After an undo, no mapping for this long, doubled for each undo. */
#define CM_GUARD_BACKOFF_MS 4000.0
/* A thread is busy when it wanted a CPU (ran or waited) for at least
 * this share of the window. */
#define CM_GUARD_BUSY 0.5

struct cm_progress {
	double cpu_rate;	/* CPU s per wall s, all threads */
	double wait_share;	/* wait / (cpu + wait), 0 when idle */
	int threads;		/* threads counted */
	int busy;		/* of them, busy (CM_GUARD_BUSY) */
};

/* One thread's schedstat: CPU and wait seconds.  0, or -1 with errno
 * (ENOENT gone, EINVAL unreadable: a kernel without schedstats). */
int cm_guard_read_schedstat(const char *proc_root, pid_t pid, pid_t tid,
			    double *cpu_s, double *wait_s);

/* Progress between two snapshots dt_s apart of n threads (cpu/wait per
 * thread, < 0: not read); only threads read in both count.  0, or -1
 * with errno EINVAL (dt_s <= 0, bad arguments). */
int cm_guard_progress(int n, const double *cpu0, const double *wait0,
		      const double *cpu1, const double *wait1, double dt_s,
		      struct cm_progress *out);

/* What busy threads would get unpinned on npus PUs with nothing else
 * running: a CPU rate of min(busy, npus), a wait share of 1 - npus/busy
 * when busy > npus, else 0. */
void cm_guard_baseline(int busy, int npus, struct cm_progress *out);

/* Is after worse than before beyond noise (above; baseline: before is
 * cm_guard_baseline's, the larger margins apply)?  1 yes, 0 no; why
 * (>= 160 bytes) says the measures either way. */
int cm_guard_worse(const struct cm_progress *before,
		   const struct cm_progress *after, int baseline, char *why,
		   size_t len);

/* The hold after `undos` undos in a row (1, 2, ...): CM_GUARD_BACKOFF_MS
 * x 2^(undos - 1), at most 2^8 times that. */
double cm_guard_backoff_ms(int undos);

#endif
