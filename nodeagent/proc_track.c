/* proc_track.c: follow the processes and threads of a step (see
 * proc_track.h).  Everything is read from the configurable proc root. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proc_track.h"
#include "grow.h"

/* Scans (every 20-50 ms in the agent) during which a child that took its
 * parent's rank looks for its own: about a second and a half. */
#define RANK_REREADS 64

struct cm_tracker {
	char root[256];		/* proc root; paths built from it fit PATH_MAX */
	uid_t uid;
	struct cm_tracked_proc *procs;
	int nprocs, procs_cap;
	struct cm_tracked_thread *threads;
	int nthreads, threads_cap;
	int *tid_index;		/* open addressing: tid -> thread, -1 empty */
	int tid_index_cap;	/* power of two */
};

/* ---- /proc readers ------------------------------------------------- */

int cm_proc_read_stat(const char *proc_root, pid_t tgid, pid_t tid,
		      uint64_t *start, pid_t *ppid)
{
	char path[PATH_MAX], buf[1024], *p;
	unsigned long long st = 0;
	int pp = 0;
	FILE *f;
	int n;

	if (tid > 0)
		snprintf(path, sizeof(path), "%s/%d/task/%d/stat", proc_root,
			 (int)tgid, (int)tid);
	else
		snprintf(path, sizeof(path), "%s/%d/stat", proc_root,
			 (int)tgid);
	f = fopen(path, "re");
	if (!f) {
		errno = ESRCH;
		return -1;
	}
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* comm may hold spaces and parentheses: parse after the last ')'. */
	if (!p || !(p = strrchr(buf, ')'))) {
		errno = ESRCH;
		return -1;
	}
	/* fields 3.. : state ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime stime cutime cstime priority nice
	 * num_threads itrealvalue starttime */
	n = sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
		   "%*d %*d %*d %*d %*d %*d %llu", &pp, &st);
	if (n != 2) {
		errno = ESRCH;
		return -1;
	}
	if (start)
		*start = st;
	if (ppid)
		*ppid = pp;
	return 0;
}

int cm_proc_read_uid(const char *proc_root, pid_t pid, uid_t *uid)
{
	char path[PATH_MAX];
	struct stat sb;

	/* The owner of /proc/PID is the process's effective uid (or root
	 * for non-dumpable processes: those are not ours to touch). */
	snprintf(path, sizeof(path), "%s/%d", proc_root, (int)pid);
	if (stat(path, &sb) < 0) {
		errno = ESRCH;
		return -1;
	}
	*uid = sb.st_uid;
	return 0;
}

/* Rank an MPI launcher gave the process, or -1.  *mpi is set when it
 * comes from an MPI variable (PMIX_RANK, OMPI_COMM_WORLD_RANK) rather
 * than Slurm's SLURM_PROCID, which a process forked by mpirun inside a
 * batch step inherits from mpirun (0) until its exec replaces it. */
static int read_env_rank_src(const char *proc_root, pid_t pid, int *mpi)
{
	static const char *const keys[] = {
		"PMIX_RANK=", "OMPI_COMM_WORLD_RANK=", "SLURM_PROCID=",
	};
	char path[PATH_MAX], *buf;
	size_t len;
	FILE *f;
	int rank = -1;

	*mpi = 0;
	snprintf(path, sizeof(path), "%s/%d/environ", proc_root, (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	buf = malloc(256 * 1024 + 1);
	if (!buf) {
		fclose(f);
		return -1;
	}
	len = fread(buf, 1, 256 * 1024, f);
	fclose(f);
	buf[len] = '\0';
	for (size_t k = 0; k < 3 && rank < 0; k++) {
		size_t klen = strlen(keys[k]);

		for (size_t off = 0; off < len; off += strlen(buf + off) + 1) {
			if (strncmp(buf + off, keys[k], klen) == 0) {
				char *end;
				long v = strtol(buf + off + klen, &end, 10);

				if (*end == '\0' && v >= 0 && v <= INT_MAX) {
					rank = (int)v;
					*mpi = k < 2;
				}
				break;
			}
		}
	}
	free(buf);
	return rank;
}

static int read_env_rank(const char *proc_root, pid_t pid)
{
	int mpi;

	return read_env_rank_src(proc_root, pid, &mpi);
}

/* ---- tables ------------------------------------------------------- */

static unsigned tid_slot(const struct cm_tracker *t, pid_t tid)
{
	return ((unsigned)tid * 2654435761u) & (unsigned)(t->tid_index_cap - 1);
}

static void tid_index_put(struct cm_tracker *t, int thread)
{
	unsigned s = tid_slot(t, t->threads[thread].tid);

	/* A reused tid of a dead thread is replaced by the live one. */
	while (t->tid_index[s] >= 0 &&
	       t->threads[t->tid_index[s]].tid != t->threads[thread].tid)
		s = (s + 1) & (unsigned)(t->tid_index_cap - 1);
	t->tid_index[s] = thread;
}

static int tid_index_rebuild(struct cm_tracker *t, int cap)
{
	int *idx = malloc((size_t)cap * sizeof(*idx));

	if (!idx)
		return -1;
	free(t->tid_index);
	t->tid_index = idx;
	t->tid_index_cap = cap;
	for (int i = 0; i < cap; i++)
		idx[i] = -1;
	for (int i = 0; i < t->nthreads; i++)
		if (t->threads[i].alive)
			tid_index_put(t, i);
	return 0;
}

int cm_tracker_find_thread(const struct cm_tracker *t, pid_t tid)
{
	unsigned s;

	if (!t->tid_index_cap)
		return -1;
	s = tid_slot(t, tid);
	while (t->tid_index[s] >= 0) {
		const struct cm_tracked_thread *th = &t->threads[t->tid_index[s]];

		if (th->tid == tid)
			return th->alive ? t->tid_index[s] : -1;
		s = (s + 1) & (unsigned)(t->tid_index_cap - 1);
	}
	return -1;
}

static int add_thread(struct cm_tracker *t, int proc, pid_t tid,
		      uint64_t start)
{
	struct cm_tracked_thread *th;

	if (cm_grow((void **)&t->threads, &t->threads_cap, t->nthreads + 1,
		    sizeof(*t->threads)) < 0)
		return -1;
	if ((t->nthreads + 1) * 2 > t->tid_index_cap &&
	    tid_index_rebuild(t, t->tid_index_cap ? t->tid_index_cap * 2 : 64))
		return -1;
	th = &t->threads[t->nthreads];
	th->tid = tid;
	th->start = start;
	th->proc = proc;
	th->index = t->procs[proc].nthreads_seen++;
	th->alive = 1;
	tid_index_put(t, t->nthreads);
	t->nthreads++;
	return 0;
}

static int find_proc(const struct cm_tracker *t, pid_t pid, uint64_t start)
{
	for (int i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid && t->procs[i].start == start)
			return i;
	return -1;
}

static int add_proc(struct cm_tracker *t, pid_t pid, uint64_t start,
		    int rank, int parent)
{
	struct cm_tracked_proc *p;

	if (cm_grow((void **)&t->procs, &t->procs_cap, t->nprocs + 1,
		    sizeof(*t->procs)) < 0)
		return -1;
	p = &t->procs[t->nprocs];
	p->pid = pid;
	p->start = start;
	p->rank = rank;
	p->parent = parent;
	p->nthreads_seen = 0;
	p->alive = 1;
	p->rank_rereads = 0;
	return t->nprocs++;
}

/* ---- public API ---------------------------------------------------- */

struct cm_tracker *cm_tracker_new(const char *proc_root, uid_t uid)
{
	struct cm_tracker *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	snprintf(t->root, sizeof(t->root), "%s", proc_root ? proc_root :
		 "/proc");
	t->uid = uid;
	return t;
}

void cm_tracker_free(struct cm_tracker *t)
{
	if (!t)
		return;
	free(t->procs);
	free(t->threads);
	free(t->tid_index);
	free(t);
}

static int owner_ok(const struct cm_tracker *t, pid_t pid)
{
	uid_t uid;

	if (cm_proc_read_uid(t->root, pid, &uid) < 0)
		return 0;
	return t->uid == (uid_t)-1 || uid == t->uid;
}

int cm_tracker_add_root(struct cm_tracker *t, pid_t pid, int rank,
			struct cm_error *err)
{
	uint64_t start;

	if (pid <= 0 || cm_proc_read_stat(t->root, pid, 0, &start, NULL) < 0)
		return cm_errorf(err, ESRCH, "process %d does not exist",
				 (int)pid);
	if (!owner_ok(t, pid))
		return cm_errorf(err, EPERM, "process %d is not owned by uid "
				 "%u", (int)pid, (unsigned)t->uid);
	if (find_proc(t, pid, start) >= 0)
		return 0;
	if (rank < 0)
		rank = read_env_rank(t->root, pid);
	if (add_proc(t, pid, start, rank < 0 ? 0 : rank, -1) < 0)
		return cm_errorf(err, ENOMEM, "out of memory");
	return 0;
}

struct new_tid {
	pid_t tid;
	uint64_t start;
};

static int cmp_new_tid(const void *a, const void *b)
{
	const struct new_tid *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Children of one thread (/proc/PID/task/TID/children) become tracked
 * processes of ours when they have the step's owner. */
static void scan_children(struct cm_tracker *t, int proc, pid_t tid)
{
	char path[PATH_MAX];
	FILE *f;
	int child;

	snprintf(path, sizeof(path), "%s/%d/task/%d/children", t->root,
		 (int)t->procs[proc].pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fscanf(f, "%d", &child) == 1) {
		uint64_t start;
		int rank, mpi;

		if (cm_proc_read_stat(t->root, child, 0, &start, NULL) < 0 ||
		    find_proc(t, child, start) >= 0 || !owner_ok(t, child))
			continue;
		rank = read_env_rank_src(t->root, child, &mpi);
		/* add_proc may move t->procs: no pointers kept across it.
		 * Without an MPI rank yet, look again on later scans. */
		if (add_proc(t, child, start, rank >= 0 ? rank :
			     t->procs[proc].rank, proc) >= 0 && !mpi)
			t->procs[t->nprocs - 1].rank_rereads = RANK_REREADS;
	}
	fclose(f);
}

/* Threads of one live process: new ones get creation indices in (start,
 * tid) order; ones that left are marked dead.  Returns new threads. */
static int scan_proc_threads(struct cm_tracker *t, int proc)
{
	char path[PATH_MAX];
	struct new_tid *fresh = NULL;
	int nfresh = 0, cap = 0, added = 0;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/%d/task", t->root,
		 (int)t->procs[proc].pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		uint64_t start;
		int known;

		if (tid <= 0)
			continue;
		known = cm_tracker_find_thread(t, tid);
		if (known >= 0 && t->threads[known].proc == proc)
			continue;
		if (cm_proc_read_stat(t->root, t->procs[proc].pid, tid, &start,
				      NULL) < 0)
			continue;
		if (cm_grow((void **)&fresh, &cap, nfresh + 1, sizeof(*fresh)) < 0)
			break;
		fresh[nfresh].tid = tid;
		fresh[nfresh].start = start;
		nfresh++;
	}
	closedir(d);
	if (nfresh > 1)
		qsort(fresh, (size_t)nfresh, sizeof(*fresh), cmp_new_tid);
	for (int i = 0; i < nfresh; i++)
		if (add_thread(t, proc, fresh[i].tid, fresh[i].start) == 0)
			added++;
	free(fresh);
	return added;
}

/* A thread or process is alive while its stat exists with the same start
 * time: a reused pid or tid has another start time. */
static void mark_exited(struct cm_tracker *t)
{
	for (int i = 0; i < t->nprocs; i++) {
		uint64_t start;

		if (t->procs[i].alive &&
		    (cm_proc_read_stat(t->root, t->procs[i].pid, 0, &start,
				       NULL) < 0 || start != t->procs[i].start))
			t->procs[i].alive = 0;
	}
	for (int i = 0; i < t->nthreads; i++) {
		struct cm_tracked_thread *th = &t->threads[i];
		uint64_t start;

		if (!th->alive)
			continue;
		if (!t->procs[th->proc].alive ||
		    cm_proc_read_stat(t->root, t->procs[th->proc].pid, th->tid,
				      &start, NULL) < 0 || start != th->start)
			th->alive = 0;
	}
}

/* A child seen before its exec may get its MPI rank later. */
static void reread_rank(struct cm_tracker *t, int p)
{
	int mpi, rank = read_env_rank_src(t->root, t->procs[p].pid, &mpi);

	if (rank >= 0)
		t->procs[p].rank = rank;
	if (mpi)
		t->procs[p].rank_rereads = 0;
	else
		t->procs[p].rank_rereads--;
}

int cm_tracker_scan(struct cm_tracker *t)
{
	int added = 0;

	mark_exited(t);
	/* t->nprocs grows while we scan: new children are scanned in the
	 * same pass. */
	for (int p = 0; p < t->nprocs; p++) {
		if (!t->procs[p].alive)
			continue;
		if (t->procs[p].rank_rereads > 0)
			reread_rank(t, p);
		added += scan_proc_threads(t, p);
		for (int i = 0; i < t->nthreads; i++)
			if (t->threads[i].alive && t->threads[i].proc == p)
				scan_children(t, p, t->threads[i].tid);
	}
	return added;
}

int cm_tracker_nprocs(const struct cm_tracker *t)
{
	return t->nprocs;
}

int cm_tracker_nthreads(const struct cm_tracker *t)
{
	return t->nthreads;
}

const struct cm_tracked_proc *cm_tracker_proc(const struct cm_tracker *t,
					      int i)
{
	return i >= 0 && i < t->nprocs ? &t->procs[i] : NULL;
}

const struct cm_tracked_thread *cm_tracker_thread(const struct cm_tracker *t,
						  int i)
{
	return i >= 0 && i < t->nthreads ? &t->threads[i] : NULL;
}

int cm_tracker_nalive(const struct cm_tracker *t)
{
	int n = 0;

	for (int i = 0; i < t->nprocs; i++)
		n += t->procs[i].alive;
	return n;
}

int cm_tracker_verify_thread(const struct cm_tracker *t, int i)
{
	const struct cm_tracked_thread *th = cm_tracker_thread(t, i);
	const struct cm_tracked_proc *p;
	uint64_t pstart, tstart;

	if (!th || !th->alive)
		return 0;
	p = &t->procs[th->proc];
	if (cm_proc_read_stat(t->root, p->pid, 0, &pstart, NULL) < 0 ||
	    pstart != p->start)
		return 0;
	if (cm_proc_read_stat(t->root, p->pid, th->tid, &tstart, NULL) < 0 ||
	    tstart != th->start)
		return 0;
	return owner_ok(t, p->pid);
}
