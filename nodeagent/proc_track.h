/* proc_track.h: the processes and threads of one job step on this node.
 *
 * The agent is given root processes (task pids with their global ranks).
 * It follows every thread of them and every descendant process, including
 * ones created later (OpenMP teams, ranks forked by mpirun, helper
 * threads).  A process or thread is known by (pid, start time), so a
 * reused pid is never taken for ours; every process must belong to the
 * step's user.
 *
 * Thread identity across runs: (rank, creation index of the thread within
 * its process).  Creation index = order of (start time, tid) among the
 * process's threads as discovered; the main thread is 0.
 *
 * The proc root is configurable (tests), default "/proc".
 */
#ifndef COMMAP_PROC_TRACK_H
#define COMMAP_PROC_TRACK_H

#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"

struct cm_tracked_proc {
	pid_t pid;
	uint64_t start;		/* /proc/PID/stat starttime, clock ticks */
	int rank;		/* global rank (MPI/Slurm), inherited */
	int parent;		/* index of the parent process, -1 for roots */
	int nthreads_seen;	/* next creation index */
	int alive;
	/* Scans left in which to look for a rank in the environment again:
	 * a child found between fork and exec still has its launcher's
	 * environment (mpirun's, without a rank) and takes its parent's
	 * rank until its own shows up.  0 once the rank is known. */
	int rank_rereads;
};

struct cm_tracked_thread {
	pid_t tid;
	uint64_t start;
	int proc;		/* index into the process table */
	int index;		/* creation index within its process */
	int alive;
};

struct cm_tracker;

/* uid: the step's user; processes owned by anyone else are ignored
 * (uid (uid_t)-1 accepts any owner: tests and `commap run`). */
struct cm_tracker *cm_tracker_new(const char *proc_root, uid_t uid);
void cm_tracker_free(struct cm_tracker *t);

/* Add a root process with its global rank (rank < 0: read it from the
 * process's environment, PMIX_RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID,
 * else 0).  -1 with errno/err: ESRCH gone, EPERM other owner. Adding the
 * same live process twice is a no-op returning 0. */
int cm_tracker_add_root(struct cm_tracker *t, pid_t pid, int rank,
			struct cm_error *err);

/* Rescan: new threads of live processes, new descendant processes (their
 * rank from their environment when an MPI launcher set one, else the
 * parent's, until the environment gives one: see rank_rereads), and what
 * has exited.  Returns the number of new threads, -1
 * on error. */
int cm_tracker_scan(struct cm_tracker *t);

int cm_tracker_nprocs(const struct cm_tracker *t);
int cm_tracker_nthreads(const struct cm_tracker *t);
const struct cm_tracked_proc *cm_tracker_proc(const struct cm_tracker *t,
					      int i);
const struct cm_tracked_thread *cm_tracker_thread(const struct cm_tracker *t,
						  int i);
/* Index of a live thread by tid, -1 if not ours. */
int cm_tracker_find_thread(const struct cm_tracker *t, pid_t tid);
/* Number of processes still alive. */
int cm_tracker_nalive(const struct cm_tracker *t);

/* Is thread i still the same thread of the same process of ours (tid and
 * process start times unchanged, owner unchanged)?  1 yes, 0 no. */
int cm_tracker_verify_thread(const struct cm_tracker *t, int i);

/* Read start time, parent pid and owner of a pid, or of a thread with
 * tgid/tid.  0 or -1/ESRCH.  Exposed for tests. */
int cm_proc_read_stat(const char *proc_root, pid_t tgid, pid_t tid,
		      uint64_t *start, pid_t *ppid);
int cm_proc_read_uid(const char *proc_root, pid_t pid, uid_t *uid);

#endif
