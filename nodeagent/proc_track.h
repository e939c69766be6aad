/* proc_track.h: the processes and threads of one job step on this node.
 *
 * The agent is given root processes (task pids with their global ranks).
 * It follows every thread of them and every descendant process, including
 * ones created later (OpenMP teams, ranks forked by mpirun, helper
 * threads).  A process or thread is known by (pid, start time), so a
 * reused pid is never taken for ours; every process must belong to the
 * step's user.
 *
 * Thread identity across runs: (rank, index), stable from run to run of
 * the same program (docs/agent.md "Thread identities"):
 *
 *   index = ordinal * CM_IDENT_PROC_STRIDE + creation index
 *
 * creation index: order of (start time, tid) among the process's threads
 * as discovered, the main thread 0; ordinal: the process's place among
 * the processes of its rank on this node, in the order their rank became
 * final (0: the task itself, or the first process with that rank).  A
 * rank with one process keeps indices 0, 1, 2, ...; a forked child that
 * never execs (a helper, LeakSanitizer's tracer) gets 1000, 1001, ...
 * instead of repeating its parent's (rank, 0).  A thread whose creation
 * index reaches the stride, or a process past CM_IDENT_MAX_ORDINAL, gets
 * CM_IDENT_OVERFLOW_BASE + n (n counting such threads of its rank, in
 * discovery order), so identities do not repeat up to the result
 * format's limit of 65536 (docs/result-format.md).
 *
 * A process's rank is final when it comes from the task line or --pid
 * (roots), from an MPI variable of its environment (PMIX_RANK,
 * OMPI_COMM_WORLD_RANK), or once the process has exec'ed (its
 * environment is then its own: SLURM_PROCID, else its parent's rank).  A
 * child still running its parent's program (between fork and exec, or a
 * fork that never execs) has a provisional rank, its parent's, for at
 * most CM_RANK_PROVISIONAL_NS; its threads have no identity (index -1)
 * until then, so nothing is pinned by a rank that may still change.
 *
 * The proc root is configurable (tests), default "/proc".
 */
#ifndef COMMAP_PROC_TRACK_H
#define COMMAP_PROC_TRACK_H

#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"

#define CM_IDENT_PROC_STRIDE 1000
#define CM_IDENT_MAX_ORDINAL 64
#define CM_IDENT_OVERFLOW_BASE 65000
#define CM_IDENT_INDEX_MAX 65536	/* the result format's limit */
#define CM_RANK_PROVISIONAL_NS 1500000000ull

/* The identity index of creation index cidx in a process of ordinal ord,
 * or -1 when it overflows (see above). */
static inline int cm_ident_index(int ord, int cidx)
{
	if (ord < 0 || ord > CM_IDENT_MAX_ORDINAL || cidx < 0 ||
	    cidx >= CM_IDENT_PROC_STRIDE)
		return -1;
	return ord * CM_IDENT_PROC_STRIDE + cidx;
}

struct cm_tracked_proc {
	pid_t pid;
	uint64_t start;		/* /proc/PID/stat starttime, clock ticks */
	int rank;		/* global rank (MPI/Slurm), inherited */
	int parent;		/* index of the parent process, -1 for roots */
	int nthreads_seen;	/* next creation index */
	int alive;
	/* Process ordinal among its rank's processes (identity above), -1
	 * while the rank is provisional: a child found between fork and exec
	 * still has its launcher's environment and takes its parent's rank
	 * until its own shows up, it execs, or rank_deadline_ns passes. */
	int ordinal;
	uint64_t rank_deadline_ns;	/* CLOCK_MONOTONIC */
	dev_t fork_exe_dev;		/* the program it was forked running */
	ino_t fork_exe_ino;
};

struct cm_tracked_thread {
	pid_t tid;
	uint64_t start;
	int proc;		/* index into the process table */
	int index;		/* creation index within its process */
	int ident;		/* identity index (above), -1 provisional */
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
 * rank decided as above), provisional ranks made final, and what has
 * exited.  Returns the number of new threads, -1 on error. */
int cm_tracker_scan(struct cm_tracker *t);
/* Scans done in full and skipped as quiet (proc_track.c, "quiet scans":
 * nothing was created or exited since the last full scan). */
void cm_tracker_scan_counts(const struct cm_tracker *t, uint64_t *full,
			    uint64_t *quiet);

int cm_tracker_nprocs(const struct cm_tracker *t);
int cm_tracker_nthreads(const struct cm_tracker *t);
const struct cm_tracked_proc *cm_tracker_proc(const struct cm_tracker *t,
					      int i);
const struct cm_tracked_thread *cm_tracker_thread(const struct cm_tracker *t,
						  int i);
/* Index of a live thread by tid, -1 if not ours. */
int cm_tracker_find_thread(const struct cm_tracker *t, pid_t tid);
/* Identity of thread i across runs: *rank and *index (above).  1 final;
 * 0 provisional (*rank the current guess, *index -1: its process's rank
 * may still change); -1 no such thread. */
int cm_tracker_thread_ident(const struct cm_tracker *t, int i, int *rank,
			    int *index);

/* A thread known from a recording (replay.h), not from /proc: it gets
 * the next index (its process found by pid, or added with rank); nothing
 * is read.  The index, or -1 on ENOMEM.  mark_gone: thread i exited. */
int cm_tracker_add_recorded(struct cm_tracker *t, pid_t pid, pid_t tid,
			    int rank);
void cm_tracker_mark_gone(struct cm_tracker *t, int i);
/* Make every provisional rank final now (end of the run: the result
 * needs an identity for every thread). */
void cm_tracker_settle(struct cm_tracker *t);

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

/* The value of environment variable key in the environment pid started
 * its program with, into out (outlen bytes).  0, or -1 (no such process,
 * no such variable, or a longer value). */
int cm_proc_read_env(const char *proc_root, pid_t pid, const char *key,
		     char *out, size_t outlen);

#endif
