/* shm_owner.c: owners of shared-memory segments and the evidence of
 * references into them (see shm_owner.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "commap/matrix.h"
#include "shm_owner.h"

struct cm_shm_owners {
	struct cm_shm_seg seg[CM_SHM_SEGS];
	struct cm_shm_stats st;
	int64_t scan_tokens;	/* process scans allowed (may be < 0) */
	uint64_t scan_ns;	/* sample time the tokens were counted to */
	int scan_started;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static void seg_reset(struct cm_shm_seg *s, uint64_t dev, uint64_t inode,
		      uint64_t now_ns)
{
	memset(s, 0, sizeof(*s));
	s->dev = dev;
	s->inode = inode;
	s->used = 1;
	s->owner = -1;
	s->last_decay = now_ns;
	s->last_use = now_ns;
	for (int k = 0; k < CM_SHM_CANDS; k++)
		s->cand[k].proc = -1;
}

struct cm_shm_owners *cm_shm_owners_new(void)
{
	struct cm_shm_owners *o = calloc(1, sizeof(*o));

	if (!o)
		errno = ENOMEM;
	return o;
}

void cm_shm_owners_free(struct cm_shm_owners *o)
{
	free(o);
}

struct cm_shm_seg *cm_shm_owners_seg(struct cm_shm_owners *o, uint64_t dev,
				     uint64_t inode, uint64_t now_ns)
{
	unsigned h;
	struct cm_shm_seg *victim = NULL;

	if (!o) {
		errno = EINVAL;
		return NULL;
	}
	h = (unsigned)(mix(dev ^ mix(inode)) % CM_SHM_SEGS);
	for (unsigned p = 0; p < CM_SHM_PROBES; p++) {
		struct cm_shm_seg *s = &o->seg[(h + p) % CM_SHM_SEGS];

		if (s->used && s->dev == dev && s->inode == inode) {
			s->last_use = now_ns;
			return s;
		}
		if (!victim || !s->used ||
		    (victim->used && s->last_use < victim->last_use))
			victim = s;
	}
	if (victim->used)
		o->st.evictions++;
	o->st.segments++;
	seg_reset(victim, dev, inode, now_ns);
	return victim;
}

void cm_shm_seg_set_owner(struct cm_shm_owners *o, struct cm_shm_seg *s,
			  int proc, int how)
{
	if (!o || !s)
		return;
	s->hinted = 1;
	if (proc < 0)
		return;
	s->owner = proc;
	s->how = how;
	if (how == CM_SHM_BY_CREATOR)
		o->st.by_creator++;
	else if (how == CM_SHM_BY_FD)
		o->st.by_fd++;
	else
		o->st.by_name++;
}

int cm_shm_owners_may_scan(struct cm_shm_owners *o, uint64_t now_ns,
			   int nprocs)
{
	uint64_t add;

	if (!o)
		return 0;
	if (!o->scan_started) {
		o->scan_started = 1;
		o->scan_ns = now_ns;
		o->scan_tokens = CM_SHM_SCAN_BURST;
	}
	if (now_ns < o->scan_ns)
		o->scan_ns = now_ns;	/* rings read slightly out of order */
	add = (now_ns - o->scan_ns) * CM_SHM_SCAN_PROCS_PER_S / 1000000000ull;
	if (add) {
		o->scan_tokens += (int64_t)add;
		if (o->scan_tokens > CM_SHM_SCAN_BURST)
			o->scan_tokens = CM_SHM_SCAN_BURST;
		o->scan_ns += add * 1000000000ull / CM_SHM_SCAN_PROCS_PER_S;
	}
	if (o->scan_tokens <= 0) {
		o->st.scans_deferred++;
		return 0;
	}
	o->scan_tokens -= nprocs > 0 ? nprocs : 1;
	o->st.scans++;
	return 1;
}

void cm_shm_seg_forget(struct cm_shm_owners *o, struct cm_shm_seg *s)
{
	if (!o || !s || s->owner < 0)
		return;
	o->st.forgotten++;
	s->owner = -1;
	s->how = CM_SHM_UNKNOWN;
	s->hinted = 0;
}

/* Halve the counts once per CM_SHM_DECAY_NS since the last time:
 * ownership and visitors follow the last seconds. */
static void decay(struct cm_shm_seg *s, uint64_t now_ns)
{
	uint64_t periods;

	if (now_ns < s->last_decay) {
		s->last_decay = now_ns;	/* rings read slightly out of order */
		return;
	}
	periods = (now_ns - s->last_decay) / CM_SHM_DECAY_NS;
	if (!periods)
		return;
	s->last_decay += periods * CM_SHM_DECAY_NS;
	for (int k = 0; k < CM_SHM_CANDS; k++)
		s->cand[k].count = periods >= 32 ? 0
				   : s->cand[k].count >> periods;
}

/* Count a reference of proc (space-saving: a newcomer takes an empty
 * place or the smallest count's, starting one above it). */
static void count_ref(struct cm_shm_seg *s, int proc, int thread)
{
	struct cm_shm_cand *low = &s->cand[0];

	for (int k = 0; k < CM_SHM_CANDS; k++) {
		struct cm_shm_cand *c = &s->cand[k];

		if (c->proc == proc) {
			if (c->count < UINT32_MAX)
				c->count++;
			c->thread = thread;
			return;
		}
		if (c->proc < 0 ? low->proc >= 0 || c < low
		    : low->proc >= 0 && c->count < low->count)
			low = c;
	}
	low->count = low->proc < 0 ? 1 : low->count + 1;
	low->proc = proc;
	low->thread = thread;
}

/* Rule 3: the process with the most references lately, if it has
 * CM_SHM_DOMINANCE times as many as all the others together; re-checked
 * at every reference, so a segment that only looked owned while few had
 * touched it (a collective area every rank polls) loses its owner. */
static void owner_by_samples(struct cm_shm_owners *o, struct cm_shm_seg *s)
{
	const struct cm_shm_cand *best = NULL;
	uint64_t others = 0;

	for (int k = 0; k < CM_SHM_CANDS; k++) {
		const struct cm_shm_cand *c = &s->cand[k];

		if (c->proc < 0)
			continue;
		if (!best || c->count > best->count) {
			if (best)
				others += best->count;
			best = c;
		} else {
			others += c->count;
		}
	}
	if (!best || best->count < CM_SHM_MIN_SAMPLES ||
	    best->count < (uint64_t)CM_SHM_DOMINANCE * others) {
		if (s->how == CM_SHM_BY_SAMPLES) {
			s->owner = -1;
			s->how = CM_SHM_UNKNOWN;
			o->st.lost_dominance++;
		}
		return;
	}
	if (s->how != CM_SHM_BY_SAMPLES || s->owner != best->proc)
		o->st.by_samples++;
	s->owner = best->proc;
	s->how = CM_SHM_BY_SAMPLES;
}

/* Other processes that referenced s lately. */
static int visitors(const struct cm_shm_seg *s)
{
	int v = 0;

	for (int k = 0; k < CM_SHM_CANDS; k++)
		if (s->cand[k].proc >= 0 && s->cand[k].proc != s->owner &&
		    s->cand[k].count > 0)
			v++;
	return v;
}

static const struct cm_shm_cand *cand_of(const struct cm_shm_seg *s,
					 int proc)
{
	for (int k = 0; k < CM_SHM_CANDS; k++)
		if (s->cand[k].proc == proc)
			return &s->cand[k];
	return NULL;
}

int cm_shm_owners_ref(struct cm_shm_owners *o, struct cm_shm_seg *s,
		      int proc, int thread, uint64_t now_ns,
		      struct cm_shm_evidence *ev)
{
	const struct cm_shm_cand *oc;
	int v;

	if (!o || !s || !ev || proc < 0 || thread < 0) {
		errno = EINVAL;
		return -1;
	}
	o->st.refs++;
	decay(s, now_ns);
	count_ref(s, proc, thread);
	if (s->hinted && (s->owner < 0 || s->how == CM_SHM_BY_SAMPLES))
		owner_by_samples(o, s);
	if (s->owner < 0) {
		o->st.undecided++;
		return 0;
	}
	if (s->owner == proc) {
		o->st.own++;
		return 0;
	}
	oc = cand_of(s, s->owner);
	v = visitors(s);
	ev->owner = s->owner;
	ev->owner_thread = oc ? oc->thread : -1;
	ev->weight = v > CM_SHM_FLAT_VISITORS ?
		     (double)CM_SHM_FLAT_VISITORS / v : 1.0;
	if (v > CM_SHM_FLAT_VISITORS)
		o->st.flattened++;
	o->st.evidence++;
	o->st.weight += ev->weight;
	return 1;
}

int cm_shm_evidence_add(struct cm_matrix *m, int i, int j, double weight)
{
	int need = (i > j ? i : j) + 1;

	if (!m || i < 0 || j < 0) {
		errno = EINVAL;
		return -1;
	}
	if (need > cm_matrix_nthreads(m) && cm_matrix_resize(m, need) < 0)
		return -1;
	return cm_matrix_add(m, i, j, weight) < 0 ? -1 : 0;
}

void cm_shm_owners_drop_proc(struct cm_shm_owners *o, int proc)
{
	if (!o || proc < 0)
		return;
	for (int k = 0; k < CM_SHM_SEGS; k++) {
		struct cm_shm_seg *s = &o->seg[k];

		if (!s->used)
			continue;
		if (s->owner == proc)
			cm_shm_seg_forget(o, s);
		for (int c = 0; c < CM_SHM_CANDS; c++)
			if (s->cand[c].proc == proc) {
				s->cand[c].proc = -1;
				s->cand[c].count = 0;
			}
	}
}

void cm_shm_owners_stats(const struct cm_shm_owners *o,
			 struct cm_shm_stats *st)
{
	if (o)
		*st = o->st;
	else
		memset(st, 0, sizeof(*st));
}

int cm_shm_name_local_rank(const char *path)
{
	const char *base, *dot;
	char *end;
	long n;

	if (!path)
		return -1;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strncmp(base, "vader_segment.", 14) != 0)
		return -1;
	dot = strrchr(base, '.');
	/* HOST.JOB.N: at least two more dots after the prefix's */
	if (dot == base + 13 || !isdigit((unsigned char)dot[1]))
		return -1;
	errno = 0;
	n = strtol(dot + 1, &end, 10);
	if (*end || errno || n > 1000000)
		return -1;
	for (const char *p = base + 14; p < dot; p++)
		if (*p == '.')
			return (int)n;
	return -1;	/* only one field before the rank */
}

int cm_shm_is_sysv(const char *path)
{
	if (!path || strncmp(path, "/SYSV", 5) != 0 || strlen(path) != 13)
		return 0;
	for (int k = 5; k < 13; k++)
		if (!isxdigit((unsigned char)path[k]))
			return 0;
	return 1;
}

int cm_shm_sysv_parse_line(const char *line, uint64_t shmid, pid_t *cpid)
{
	long long key, perms;
	unsigned long long id, size;
	long pid;

	if (!line || !cpid ||
	    sscanf(line, "%lld %llu %llo %llu %ld", &key, &id, &perms,
		   &size, &pid) != 5)
		return -1;
	if (id != shmid)
		return 0;
	if (pid <= 0 || pid > INT32_MAX)
		return -1;
	*cpid = (pid_t)pid;
	return 1;
}

int cm_shm_sysv_creator(const char *proc_root, uint64_t shmid, pid_t *cpid)
{
	char path[256], line[512];
	FILE *f;
	int err = ENOENT, n = 0;

	snprintf(path, sizeof(path), "%s/sysvipc/shm",
		 proc_root ? proc_root : "/proc");
	f = fopen(path, "re");
	if (!f) {
		errno = EIO;
		return -1;
	}
	/* the first line is the header */
	if (!fgets(line, sizeof(line), f))
		err = EIO;
	while (err == ENOENT && n++ < CM_SHM_SYSV_LINES &&
	       fgets(line, sizeof(line), f)) {
		int r = cm_shm_sysv_parse_line(line, shmid, cpid);

		if (r < 0)
			err = EIO;
		else if (r > 0)
			err = 0;
	}
	fclose(f);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/* Is link (a /proc/PID/fd entry's text) file path, deleted or not? */
static int same_file(const char *link, const char *path)
{
	size_t n = strlen(path);

	return strncmp(link, path, n) == 0 &&
	       (!link[n] || strcmp(link + n, " (deleted)") == 0);
}

/* Does process pid hold path open?  Its first CM_SHM_FD_MAX descriptors
 * are looked at. */
static int holds(const char *proc_root, pid_t pid, const char *file)
{
	char path[320], link[4096];
	struct dirent *e;
	DIR *d;
	ssize_t len;
	int n = 0, found = 0;

	snprintf(path, sizeof(path), "%s/%d/fd",
		 proc_root ? proc_root : "/proc", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && n < CM_SHM_FD_MAX && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		snprintf(path, sizeof(path), "%s/%d/fd/%s",
			 proc_root ? proc_root : "/proc", (int)pid, e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		found = same_file(link, file);
	}
	closedir(d);
	return found;
}

int cm_shm_fd_holder(const char *proc_root, const pid_t *pid, int n,
		     const char *path)
{
	int found = -1;

	if (!path || path[0] != '/')
		return -1;
	for (int k = 0; pid && k < n; k++) {
		if (pid[k] <= 0 || !holds(proc_root, pid[k], path))
			continue;
		if (found >= 0)
			return -2;
		found = k;
	}
	return found;
}

int cm_shm_local_rank_proc(const int *rank, const int *alive, int n,
			   int local_rank)
{
	int found = -1;

	if (!rank || !alive || local_rank < 0)
		return -1;
	for (int k = 0; k < n; k++) {
		int below = 0;

		if (rank[k] < 0 || !alive[k])
			continue;
		/* distinct live ranks below rank[k] */
		for (int j = 0; j < n; j++) {
			if (rank[j] < 0 || !alive[j] || rank[j] >= rank[k])
				continue;
			int dup = 0;

			for (int i = 0; i < j && !dup; i++)
				dup = alive[i] && rank[i] == rank[j];
			below += !dup;
		}
		if (below == local_rank)
			found = k;
	}
	return found;
}
