/* proc_track.c: follow the processes and threads of a step (see
 * proc_track.h).  Everything is read from the configurable proc root. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proc_track.h"
#include "grow.h"

struct cm_tracker {
	char root[256];		/* proc root; paths built from it fit PATH_MAX */
	uid_t uid;
	struct cm_tracked_proc *procs;
	int nprocs, procs_cap;
	struct cm_tracked_thread *threads;
	int nthreads, threads_cap;
	int *tid_index;		/* open addressing: tid -> thread, -1 empty */
	int tid_index_cap;	/* power of two */
	/* The state the last full scan saw (quiet_since_scan): the pid
	 * namespace's last pid, -1 unknown; per process the link count of
	 * its task directory. */
	long last_pid;
	int last_pid_fd;	/* -1 not opened yet, -2 unavailable */
	nlink_t *task_nlink;
	int task_nlink_cap;
	uint64_t full_scans, quiet_scans;
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

/* The environment a process started its program with (NUL-separated,
 * at most 256 KiB), malloc'ed with *len, or NULL. */
static char *read_environ(const char *proc_root, pid_t pid, size_t *len)
{
	char path[PATH_MAX], *buf;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/environ", proc_root, (int)pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	buf = malloc(256 * 1024 + 1);
	if (buf) {
		*len = fread(buf, 1, 256 * 1024, f);
		buf[*len] = '\0';
	}
	fclose(f);
	return buf;
}

/* The value of "KEY=" in env (len bytes), or NULL. */
static const char *env_value(const char *env, size_t len, const char *key)
{
	size_t klen = strlen(key);

	for (size_t off = 0; off < len; off += strlen(env + off) + 1)
		if (strncmp(env + off, key, klen) == 0)
			return env + off + klen;
	return NULL;
}

int cm_proc_read_env(const char *proc_root, pid_t pid, const char *key,
		     char *out, size_t outlen)
{
	char name[256];
	size_t len;
	char *env = read_environ(proc_root, pid, &len);
	const char *v;
	int rc = -1;

	snprintf(name, sizeof(name), "%s=", key);
	if (env && (v = env_value(env, len, name)) && strlen(v) < outlen) {
		memcpy(out, v, strlen(v) + 1);
		rc = 0;
	}
	free(env);
	return rc;
}

/* Rank an MPI launcher gave the process, or -1.  *mpi is set when it
 * comes from an MPI variable (PMIX_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK:
 * MPICH's hydra) rather
 * than Slurm's SLURM_PROCID, which a process forked by mpirun inside a
 * batch step inherits from mpirun (0) until its exec replaces it.
 * *empty is set when the environment is empty or unreadable. */
static int read_env_rank_src(const char *proc_root, pid_t pid, int *mpi,
			     int *empty)
{
	static const char *const keys[] = {
		"PMIX_RANK=", "OMPI_COMM_WORLD_RANK=", "PMI_RANK=",
		"SLURM_PROCID=",
	};
	size_t len;
	char *buf = read_environ(proc_root, pid, &len);
	int rank = -1;

	*mpi = 0;
	*empty = !buf || len == 0;
	if (!buf)
		return -1;
	for (size_t k = 0; k < 4 && rank < 0; k++) {
		const char *v = env_value(buf, len, keys[k]);
		char *end;
		long r;

		if (!v)
			continue;
		r = strtol(v, &end, 10);
		if (*end == '\0' && end != v && r >= 0 && r <= INT_MAX) {
			rank = (int)r;
			*mpi = k < 3;
		}
	}
	free(buf);
	return rank;
}

static int read_env_rank(const char *proc_root, pid_t pid)
{
	int mpi, empty;

	return read_env_rank_src(proc_root, pid, &mpi, &empty);
}

/* The file behind /proc/PID/exe: 0, or -1 (gone, a kernel thread). */
static int read_exe_id(const char *proc_root, pid_t pid, dev_t *dev,
		       ino_t *ino)
{
	char path[PATH_MAX];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%d/exe", proc_root, (int)pid);
	if (stat(path, &sb) < 0)
		return -1;
	*dev = sb.st_dev;
	*ino = sb.st_ino;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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

static void set_ident(struct cm_tracker *t, int thread);

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
	th->ident = -1;
	th->alive = 1;
	tid_index_put(t, t->nthreads);
	t->nthreads++;
	if (t->procs[proc].ordinal >= 0)
		set_ident(t, t->nthreads - 1);
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
		    sizeof(*t->procs)) < 0 ||
	    cm_grow((void **)&t->task_nlink, &t->task_nlink_cap,
		    t->nprocs + 1, sizeof(*t->task_nlink)) < 0)
		return -1;
	t->task_nlink[t->nprocs] = 0;	/* never a real count: rescan */
	p = &t->procs[t->nprocs];
	p->pid = pid;
	p->start = start;
	p->rank = rank;
	p->parent = parent;
	p->nthreads_seen = 0;
	p->alive = 1;
	p->ordinal = -1;
	p->rank_deadline_ns = 0;
	p->fork_exe_dev = 0;
	p->fork_exe_ino = 0;
	return t->nprocs++;
}

/* ---- identities (proc_track.h) -------------------------------------- */

/* The next overflow index of rank's threads, in discovery order. */
static int overflow_ident(const struct cm_tracker *t, int rank)
{
	int n = 0;

	for (int i = 0; i < t->nthreads; i++)
		n += t->threads[i].ident >= CM_IDENT_OVERFLOW_BASE &&
		     t->procs[t->threads[i].proc].rank == rank;
	n += CM_IDENT_OVERFLOW_BASE;
	return n > CM_IDENT_INDEX_MAX ? CM_IDENT_INDEX_MAX : n;
}

static void set_ident(struct cm_tracker *t, int thread)
{
	struct cm_tracked_thread *th = &t->threads[thread];
	const struct cm_tracked_proc *p = &t->procs[th->proc];
	int id = cm_ident_index(p->ordinal, th->index);

	th->ident = id >= 0 ? id : overflow_ident(t, p->rank);
}

/* Process p's rank is final: it takes the next ordinal of that rank and
 * its threads get their identities. */
static void finalize_rank(struct cm_tracker *t, int p, int rank)
{
	int ord = 0;

	for (int i = 0; i < t->nprocs; i++)
		ord += i != p && t->procs[i].ordinal >= 0 &&
		       t->procs[i].rank == rank;
	t->procs[p].rank = rank;
	t->procs[p].ordinal = ord;
	for (int i = 0; i < t->nthreads; i++)
		if (t->threads[i].proc == p)
			set_ident(t, i);
}

/* A provisional rank (proc_track.h): final once an MPI variable gives
 * it, once the process has exec'ed (its environment is its own then),
 * or at the deadline; until then its parent's.  The program is read
 * before the environment: a process seen exec'ed has its new one, or
 * none yet.  The kernel switches /proc/PID/exe before the new program's
 * environment is in place, and a scan in between read an empty one: a
 * rank forked by mpirun was then made final with mpirun's rank (seen
 * once in CI under load); an exec'ed process with an empty environment
 * waits for the next scan (or the deadline). */
static void decide_rank(struct cm_tracker *t, int p, uint64_t now)
{
	struct cm_tracked_proc *pr = &t->procs[p];
	dev_t dev;
	ino_t ino;
	int execd = read_exe_id(t->root, pr->pid, &dev, &ino) == 0 &&
		    (dev != pr->fork_exe_dev || ino != pr->fork_exe_ino);
	int mpi, empty, rank = read_env_rank_src(t->root, pr->pid, &mpi,
						  &empty);

	execd = execd && !empty;

	if (rank < 0 || !(mpi || execd))
		rank = pr->parent >= 0 ? t->procs[pr->parent].rank : pr->rank;
	pr->rank = rank;
	if (mpi || execd || now >= pr->rank_deadline_ns)
		finalize_rank(t, p, rank);
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
	t->last_pid = -1;
	t->last_pid_fd = -1;
	return t;
}

void cm_tracker_free(struct cm_tracker *t)
{
	if (!t)
		return;
	free(t->procs);
	free(t->threads);
	free(t->tid_index);
	free(t->task_nlink);
	if (t->last_pid_fd >= 0)
		close(t->last_pid_fd);
	free(t);
}

int cm_tracker_add_recorded(struct cm_tracker *t, pid_t pid, pid_t tid,
			    int rank)
{
	int p = -1;

	for (int k = 0; k < t->nprocs && p < 0; k++)
		if (t->procs[k].pid == pid)
			p = k;
	if (p < 0 && (p = add_proc(t, pid, 0, rank, -1)) < 0)
		return -1;
	return add_thread(t, p, tid, 0) < 0 ? -1 : t->nthreads - 1;
}

void cm_tracker_mark_gone(struct cm_tracker *t, int i)
{
	if (i >= 0 && i < t->nthreads)
		t->threads[i].alive = 0;
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
	if (rank < 0)
		rank = 0;
	if (add_proc(t, pid, start, rank, -1) < 0)
		return cm_errorf(err, ENOMEM, "out of memory");
	/* A root's rank is final: given, or its own environment's. */
	finalize_rank(t, t->nprocs - 1, rank);
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
static void scan_children(struct cm_tracker *t, int proc, pid_t tid,
			  uint64_t now)
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
		struct cm_tracked_proc *c;
		uint64_t start;
		int np;

		if (cm_proc_read_stat(t->root, child, 0, &start, NULL) < 0 ||
		    find_proc(t, child, start) >= 0 || !owner_ok(t, child))
			continue;
		/* add_proc may move t->procs: no pointers kept across it. */
		np = add_proc(t, child, start, t->procs[proc].rank, proc);
		if (np < 0)
			continue;
		c = &t->procs[np];
		c->rank_deadline_ns = now + CM_RANK_PROVISIONAL_NS;
		/* The program it was forked with: its parent's (or, that
		 * gone, its own now), so that its exec is seen. */
		if (read_exe_id(t->root, t->procs[proc].pid, &c->fork_exe_dev,
				&c->fork_exe_ino) < 0)
			read_exe_id(t->root, child, &c->fork_exe_dev,
				    &c->fork_exe_ino);
		decide_rank(t, np, now);
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

/* ---- quiet scans ----------------------------------------------------
 *
 * The agent rescans every --scan-ms (25 ms), and a full scan reads a stat
 * file per process and per thread and a children file per thread: most
 * of the agent's own CPU time on a steady job.  Between two scans nothing
 * a scan looks for can happen without one of these changing:
 *
 * - a new thread or process (ours, or one reusing a pid of ours)
 *   allocates a pid, which moves the pid namespace's last allocated pid
 *   (/proc/sys/kernel/ns_last_pid, the cursor of its pid allocator);
 * - a thread that exits lowers its process's thread count, which is the
 *   link count of /proc/PID/task (2 + threads);
 * - a process that is reaped loses its /proc directory;
 * - a provisional rank (proc_track.h) is decided by time or exec: scans
 *   stay full while one is pending.
 *
 * So a scan that finds all of these as the last full scan left them is
 * skipped.  The state is read before the full scan reads anything, so a
 * change during it shows at the next scan.  Without ns_last_pid (another
 * proc root, an old kernel) every scan is full. */

/* The last pid, read through a descriptor kept open: opening a sysctl
 * file costs more than the rest of a quiet scan, and a read at offset 0
 * gives its value now. */
static long read_last_pid(struct cm_tracker *t)
{
	char path[PATH_MAX], buf[32];
	ssize_t n;
	long v;

	if (t->last_pid_fd == -1) {
		snprintf(path, sizeof(path), "%s/sys/kernel/ns_last_pid",
			 t->root);
		t->last_pid_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (t->last_pid_fd < 0) {
			t->last_pid_fd = -2;	/* do not try again */
			return -1;
		}
	}
	if (t->last_pid_fd < 0)
		return -1;
	n = pread(t->last_pid_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "%ld", &v) != 1 || v < 0)
		return -1;
	return v;
}

/* The link count of process p's task directory, 0 when it is gone. */
static nlink_t task_nlink(const struct cm_tracker *t, int p)
{
	char path[PATH_MAX];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%d/task", t->root,
		 (int)t->procs[p].pid);
	return stat(path, &sb) == 0 ? sb.st_nlink : 0;
}

static int quiet_since_scan(const struct cm_tracker *t, long last_pid)
{
	if (last_pid < 0 || last_pid != t->last_pid)
		return 0;
	for (int p = 0; p < t->nprocs; p++) {
		if (t->procs[p].ordinal < 0)
			return 0;	/* a rank to decide */
		if (t->procs[p].alive &&
		    (!t->task_nlink[p] || task_nlink(t, p) != t->task_nlink[p]))
			return 0;
	}
	return 1;
}

static void record_scan_state(struct cm_tracker *t, long last_pid)
{
	t->last_pid = last_pid;
	for (int p = 0; p < t->nprocs; p++)
		t->task_nlink[p] = t->procs[p].alive ? task_nlink(t, p) : 0;
}

int cm_tracker_scan(struct cm_tracker *t)
{
	uint64_t now = mono_ns();
	long last_pid = read_last_pid(t);
	int added = 0;

	if (quiet_since_scan(t, last_pid)) {
		t->quiet_scans++;
		return 0;
	}
	t->full_scans++;
	record_scan_state(t, last_pid);
	mark_exited(t);
	/* t->nprocs grows while we scan: new children are scanned in the
	 * same pass (their link count is 0: the next scan is full). */
	for (int p = 0; p < t->nprocs; p++) {
		if (t->procs[p].ordinal < 0 && !t->procs[p].alive &&
		    now >= t->procs[p].rank_deadline_ns)
			finalize_rank(t, p, t->procs[p].rank);
		if (!t->procs[p].alive)
			continue;
		if (t->procs[p].ordinal < 0)
			decide_rank(t, p, now);
		added += scan_proc_threads(t, p);
		for (int i = 0; i < t->nthreads; i++)
			if (t->threads[i].alive && t->threads[i].proc == p)
				scan_children(t, p, t->threads[i].tid, now);
	}
	return added;
}

void cm_tracker_scan_counts(const struct cm_tracker *t, uint64_t *full,
			    uint64_t *quiet)
{
	*full = t->full_scans;
	*quiet = t->quiet_scans;
}

void cm_tracker_settle(struct cm_tracker *t)
{
	for (int p = 0; p < t->nprocs; p++) {
		if (t->procs[p].ordinal >= 0)
			continue;
		if (t->procs[p].alive)
			decide_rank(t, p, UINT64_MAX);
		else
			finalize_rank(t, p, t->procs[p].rank);
	}
}

int cm_tracker_thread_ident(const struct cm_tracker *t, int i, int *rank,
			    int *index)
{
	const struct cm_tracked_thread *th = cm_tracker_thread(t, i);

	if (!th)
		return -1;
	*rank = t->procs[th->proc].rank;
	*index = th->ident;
	return th->ident >= 0;
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
