/* shm_owner.h: message passing through shared-memory segments, seen
 * without a time window.
 *
 * MPI libraries send small messages between the ranks of a node through
 * shared-memory segments that belong to one rank each: Open MPI's vader
 * BTL gives every rank a segment (/dev/shm/vader_segment.HOST.JOB.LOCALRANK)
 * where its peers write into its fast boxes and from which they read the
 * fragments it sent them; UCX (MPICH's ch4:ucx) gives every rank a
 * receive FIFO (SysV or POSIX shared memory) that its peers write into.
 * The sharer table needs two ranks' samples in one block within its
 * window, which at a 1% sampling budget almost never happens.  Ownership
 * gives evidence from one sample: a reference of process A into a
 * segment owned by process B says that A and B talk.
 *
 * The owner of a segment, by the first rule that applies:
 *   1. creator: a SysV segment ("/SYSVkkkkkkkk" in the maps, the inode is
 *      the shmid) names the process that created it in
 *      PROC/sysvipc/shm (cpid);
 *   2. name: an Open MPI vader segment's file name ends with the creator's
 *      local rank on the node: the process of the step with the
 *      local_rank-th smallest global rank;
 *   2b. open file: UCX's POSIX segments are unlinked once created and the
 *      peers map them through /proc/CREATOR/fd/N, then close them: the
 *      one process of the step that still holds a descriptor of the file
 *      is its creator (several holders: no owner by this rule);
 *   3. samples: otherwise, the process with the most references into it
 *      lately, while it has at least CM_SHM_MIN_SAMPLES and
 *      CM_SHM_DOMINANCE times as many as all others together: a rank
 *      polls its own receive area all the time, a peer touches it only to
 *      deliver; a collective area every rank polls has no owner (checked
 *      again at every reference: an early lead is not kept).
 * Rules 1, 2 and 2b are tried once per segment by the caller
 * (collect_drain.c), who knows the processes.
 *
 * Weight: one reference is one unit, like a sharing event.  A segment
 * touched by more than CM_SHM_FLAT_VISITORS other processes lately (a
 * barrier or collective area every rank reads, a start-up key-value
 * store) would otherwise draw a star from its owner to everyone: each
 * reference then weighs CM_SHM_FLAT_VISITORS / visitors, so the segment
 * as a whole counts as much as a segment between a few peers.  A pattern
 * where everyone talks to everyone (all-to-all) is scaled evenly and
 * keeps its shape.
 *
 * Memory: CM_SHM_SEGS segments (an unused one is evicted: the least
 * recently used of its probe group), CM_SHM_CANDS processes counted per
 * segment (space-saving: a newcomer replaces the smallest count);
 * counts halved every CM_SHM_DECAY_NS of sample time.  The caller forgets
 * a segment whose owner is gone (cm_shm_seg_forget) and every trace of a
 * process that exited (cm_shm_owners_drop_proc).  Not thread-safe.
 */
#ifndef COMMAP_NODEAGENT_SHM_OWNER_H
#define COMMAP_NODEAGENT_SHM_OWNER_H

#include <stdint.h>
#include <sys/types.h>

#define CM_SHM_SEGS 256
#define CM_SHM_PROBES 4
#define CM_SHM_CANDS 8
#define CM_SHM_DECAY_NS 1000000000ull
#define CM_SHM_MIN_SAMPLES 4
#define CM_SHM_DOMINANCE 2
#define CM_SHM_FLAT_VISITORS 2

enum cm_shm_how {
	CM_SHM_UNKNOWN = 0,	/* no owner (yet) */
	CM_SHM_BY_CREATOR,	/* SysV creator pid */
	CM_SHM_BY_NAME,		/* rank in the file name */
	CM_SHM_BY_FD,		/* the one process holding it open */
	CM_SHM_BY_SAMPLES,	/* the process dominating its references */
};

/* A process's references into a segment lately. */
struct cm_shm_cand {
	int proc;		/* caller's process index; -1 empty */
	int thread;		/* its thread that touched it last */
	uint32_t count;		/* decayed */
};

struct cm_shm_seg {
	uint64_t dev, inode;
	int used;
	int hinted;		/* rules 1, 2, 2b tried */
	int how;		/* enum cm_shm_how */
	int owner;		/* process index; -1 none */
	uint64_t last_decay, last_use;	/* sample time */
	struct cm_shm_cand cand[CM_SHM_CANDS];
};

/* Evidence from one reference: weight between the reference's thread and
 * owner_thread (-1: the caller picks the owner process's main thread). */
struct cm_shm_evidence {
	int owner;
	int owner_thread;
	double weight;
};

struct cm_shm_stats {
	uint64_t refs;		/* references into shared segments */
	uint64_t own;		/* ... by the segment's owner */
	uint64_t undecided;	/* ... into a segment without an owner yet */
	uint64_t evidence;	/* ... by another process: evidence */
	uint64_t flattened;	/* ... of those, weighed down (visitors) */
	double weight;		/* their weight, all added */
	uint64_t segments;	/* segments entered */
	uint64_t evictions;	/* ... replacing another */
	uint64_t by_creator, by_name, by_fd, by_samples;	/* owners found */
	uint64_t forgotten;	/* owners gone */
	uint64_t lost_dominance;	/* owners by samples that lost it */
	uint64_t scans, scans_deferred;	/* rule 2b: done, over budget */
};

struct cm_shm_owners;
struct cm_matrix;

/* NULL/ENOMEM. */
struct cm_shm_owners *cm_shm_owners_new(void);
void cm_shm_owners_free(struct cm_shm_owners *o);

/* The segment (dev, inode), entered if new (evicting the least recently
 * used of its probe group); NULL/EINVAL for a NULL o. */
struct cm_shm_seg *cm_shm_owners_seg(struct cm_shm_owners *o, uint64_t dev,
				     uint64_t inode, uint64_t now_ns);

/* Rule 1, 2 or 2b found owner proc (how: CM_SHM_BY_CREATOR, _BY_NAME or
 * _BY_FD); proc < 0: none applies.  Marks the segment as hinted either way. */
void cm_shm_seg_set_owner(struct cm_shm_owners *o, struct cm_shm_seg *s,
			  int proc, int how);

/* May the caller scan nprocs processes' descriptors for rule 2b (or read
 * the SysV table for rule 1: nprocs 1) now?  A
 * token bucket of CM_SHM_SCAN_PROCS_PER_S process scans per second of
 * sample time (at most CM_SHM_SCAN_BURST saved up; a scan of more
 * processes runs when the bucket is not empty and leaves it in debt), so
 * a program that makes thousands of segments cannot keep the agent
 * reading /proc: one process's scan took 0.27 ms on a loaded 2-vCPU
 * machine, the bound is about 0.4% of a CPU. */
#define CM_SHM_SCAN_PROCS_PER_S 16
#define CM_SHM_SCAN_BURST 64
int cm_shm_owners_may_scan(struct cm_shm_owners *o, uint64_t now_ns,
			   int nprocs);

/* Its owner is gone: the segment starts over (rules tried again). */
void cm_shm_seg_forget(struct cm_shm_owners *o, struct cm_shm_seg *s);

/* Thread `thread` of process proc referenced segment s at now_ns: counts
 * it, applies rule 3 when the segment has no owner, and fills *ev when the
 * reference is evidence.  1 evidence, 0 none, -1/EINVAL. */
int cm_shm_owners_ref(struct cm_shm_owners *o, struct cm_shm_seg *s,
		      int proc, int thread, uint64_t now_ns,
		      struct cm_shm_evidence *ev);

/* Add one reference's evidence, weight between threads i and j, to m
 * (grown to hold both): the live collector and a replay of its
 * recording ("shm" lines, record.h) both add it so.  0, -1/ENOMEM,
 * -1/EINVAL (NULL m, a negative index). */
int cm_shm_evidence_add(struct cm_matrix *m, int i, int j, double weight);

/* Process proc exited: segments it owned start over, its counts go. */
void cm_shm_owners_drop_proc(struct cm_shm_owners *o, int proc);

void cm_shm_owners_stats(const struct cm_shm_owners *o,
			 struct cm_shm_stats *st);

/* Rule 2: the local rank at the end of an Open MPI vader segment's path
 * (".../vader_segment.HOST.JOB.N"), -1 if path is not one. */
int cm_shm_name_local_rank(const char *path);

/* Rule 2b: which of the n processes pid[] holds a descriptor of the file
 * at path open (PROC/PID/fd/N read as links, " (deleted)" ignored, the
 * first CM_SHM_FD_MAX descriptors of each; the links are only read,
 * never followed: a user's file system cannot make this wait): its
 * index, -1 none, -2 several (proc_root NULL: "/proc"). */
#define CM_SHM_FD_MAX 256
int cm_shm_fd_holder(const char *proc_root, const pid_t *pid, int n,
		     const char *path);

/* Rule 1: is path a SysV segment's ("/SYSV" and 8 hex digits)? */
int cm_shm_is_sysv(const char *path);

/* Rule 1: the creator pid of SysV segment shmid from PROC/sysvipc/shm
 * (proc_root NULL: "/proc"); reads at most CM_SHM_SYSV_LINES lines.
 * 0, or -1 with errno ENOENT (not listed), EIO (unreadable, malformed). */
#define CM_SHM_SYSV_LINES 65536
int cm_shm_sysv_creator(const char *proc_root, uint64_t shmid, pid_t *cpid);
/* One line of that table ("key shmid perms size cpid ..."): 1 and *cpid
 * when it is shmid's, 0 another segment's, -1 malformed (fewer than five
 * numbers, a creator pid not in 1..INT32_MAX). */
int cm_shm_sysv_parse_line(const char *line, uint64_t shmid, pid_t *cpid);

/* Rule 2: among n processes with global ranks rank[k] (< 0: no rank)
 * and alive[k], the one whose rank is the local_rank-th smallest distinct
 * rank (local ranks number a node's ranks in the order of their global
 * ranks); when several processes have that rank (a wrapper and the
 * program it forked), the last one.  -1 if none. */
int cm_shm_local_rank_proc(const int *rank, const int *alive, int n,
			   int local_rank);

#endif
