/* record_read.c: parsing a recording and rebuilding its matrix (see
 * replay.h; the format: record.h, docs/formats.md "Recordings"). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cma_attrib.h"
#include "evidence.h"
#include "proc_track.h"
#include "record.h"
#include "replay.h"
#include "shm_owner.h"

#define MAX_WORDS 10

/* The state of a parse: where we are and what the file said so far. */
struct reader {
	struct cm_replay *rp;
	struct cm_detect_table *table;
	struct cm_overlap *overlap;	/* version 2: the overlap too */
	/* version 4: the recorded threads, for the transfers' attribution
	 * by the agent's own code (cma_attrib.h); nothing read from /proc */
	struct cm_tracker *tr;
	struct cm_cma_attrib *cma;
	struct cm_matrix *fresh;	/* events since the last clock line */
	cm_replay_clock_fn clock_fn;	/* NULL: none */
	void *clock_ctx;
	/* a progress guard's snapshot being read ("snap", then "s" lines) */
	struct cm_replay_clock snap;
	double *snap_cpu, *snap_wait;
	int snap_got;
	uint64_t last_app_ns;	/* the last clock line's progress clock */
	int version;
	int lineno;
	int header;		/* 0: want the format line, 1: want start,
				 * 2: want detect, 3: body */
	struct cm_error *err;
};

static int bad(struct reader *r, const char *what)
{
	return cm_errorf(r->err, EINVAL, "recording: line %d: %s", r->lineno,
			 what);
}

/* Unsigned number in base 10 or 16, the whole word. */
static int word_u64(const char *w, int base, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*w || *w == '-' || *w == '+')
		return -1;
	errno = 0;
	v = strtoull(w, &end, base);
	if (errno || *end)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

/* Integer in [lo, hi], base 10 (a leading '-' allowed when lo < 0). */
static int word_int(const char *w, long lo, long hi, int *out)
{
	char *end;
	long v;

	if (!*w)
		return -1;
	errno = 0;
	v = strtol(w, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* Split line (modified) on single spaces; the words' count, or -1 when
 * there are more than max. */
static int split(char *line, char **w, int max)
{
	int n = 0;

	for (char *p = line; *p;) {
		if (n == max)
			return -1;
		w[n++] = p;
		p = strchr(p, ' ');
		if (!p)
			break;
		*p++ = '\0';
	}
	return n;
}

static int grow_threads(struct reader *r, int i)
{
	struct cm_replay *rp = r->rp;
	struct cm_replay_thread *t;

	if (i < rp->nthreads)
		return 0;
	t = realloc(rp->threads, (size_t)(i + 1) * sizeof(*t));
	if (!t)
		return cm_errorf(r->err, ENOMEM, "recording: out of memory");
	memset(t + rp->nthreads, 0,
	       (size_t)(i + 1 - rp->nthreads) * sizeof(*t));
	for (int k = rp->nthreads; k <= i; k++)
		t[k].rank = t[k].index = -1;
	rp->threads = t;
	rp->nthreads = i + 1;
	return 0;
}

/* The tracker's threads up to index i (version 4): thread i as recorded;
 * an index written later than a higher one (a thread gone before the
 * collector saw it) is a thread gone, as it was to the agent's tracker
 * when the transfers after it were attributed. */
static int track_thread(struct reader *r, int i)
{
	const struct cm_replay_thread *th = &r->rp->threads[i];

	if (!r->tr || i < cm_tracker_nthreads(r->tr))
		return 0;
	while (cm_tracker_nthreads(r->tr) < i) {
		int k = cm_tracker_add_recorded(r->tr, 0, 0, -1);

		if (k < 0)
			return cm_errorf(r->err, ENOMEM, "recording: out of "
					 "memory");
		cm_tracker_mark_gone(r->tr, k);
	}
	if (cm_tracker_add_recorded(r->tr, th->pid, th->tid, th->rank) < 0)
		return cm_errorf(r->err, ENOMEM, "recording: out of memory");
	if (th->exited)
		cm_tracker_mark_gone(r->tr, i);
	return 0;
}

/* "thread I PID TID RANK INDEX" */
static int on_thread(struct reader *r, char **w, int n)
{
	int i, pid, tid, rank, index;

	if (n != 6 || word_int(w[1], 0, CM_REPLAY_MAX_THREADS - 1, &i) ||
	    word_int(w[2], 0, 0x7fffffff, &pid) ||
	    word_int(w[3], 0, 0x7fffffff, &tid) ||
	    word_int(w[4], -1, 0x7fffffff, &rank) ||
	    word_int(w[5], -1, 0x7fffffff, &index))
		return bad(r, "want 'thread I PID TID RANK INDEX' (I < 4096)");
	if (grow_threads(r, i) < 0)
		return -1;
	if (r->rp->threads[i].known)
		return bad(r, "a second 'thread' line for this index");
	r->rp->threads[i] = (struct cm_replay_thread){
		.pid = pid, .tid = tid, .rank = rank, .index = index,
		.known = 1, .exited = r->rp->threads[i].exited };
	return track_thread(r, i);
}

/* "a TIME I SPACE INODE ADDR SHARED" (hex space, inode, addr), and in
 * version 2 " REGION CLASS" (hex mapping start, class 0..2). */
static int on_access(struct reader *r, char **w, int n)
{
	struct cm_block_key key;
	uint64_t t, space, inode, addr, region = 0;
	int i, shared, ev, cls = CM_REF_DATA;
	int want = r->version >= 2 ? 9 : 7;

	if (n != want || word_u64(w[1], 10, &t) ||
	    word_int(w[2], 0, CM_REPLAY_MAX_THREADS - 1, &i) ||
	    word_u64(w[3], 16, &space) || word_u64(w[4], 16, &inode) ||
	    word_u64(w[5], 16, &addr) || word_int(w[6], 0, 1, &shared) ||
	    (want == 9 && (word_u64(w[7], 16, &region) ||
			   word_int(w[8], 0, CM_REF_NCLASSES - 1, &cls))))
		return bad(r, want == 9 ? "want 'a TIME I SPACE INODE ADDR "
			   "SHARED REGION CLASS' (I < 4096, SHARED 0 or 1, "
			   "CLASS 0..2)" : "want 'a TIME I SPACE INODE ADDR "
			   "SHARED' (I < 4096, SHARED 0 or 1)");
	if (grow_threads(r, i) < 0)
		return -1;
	if (shared)
		cm_block_key_shared(&key, space, inode, addr);
	else
		cm_block_key_private(&key, space, addr);
	ev = cm_evidence_add(r->table, r->overlap, r->fresh, i, &key, region,
			     cls, t, &r->rp->refs);
	if (ev < 0)
		return cm_errorf(r->err, ENOMEM, "recording: out of memory");
	r->rp->accesses++;
	r->rp->events += (uint64_t)ev;
	if (t > r->rp->last_ns)
		r->rp->last_ns = t;
	return 0;
}

/* The decisions' replay sees the events since the last clock line (and
 * may correct them, as the agent does under real pinning); then they
 * join the run's matrix (the agent's total) and a new interval's events
 * start. */
static int fold(struct reader *r, uint64_t t, int ms, uint64_t app)
{
	struct cm_replay_clock ev = { .t_ns = t, .interval_ms = ms,
				      .app_ns = app, .fresh = r->fresh };

	if (r->clock_fn && r->clock_fn(r->clock_ctx, r->rp, &ev, r->err) < 0)
		return -1;
	if (cm_matrix_merge(r->rp->m, r->fresh, 1.0) < 0)
		return cm_errorf(r->err, ENOMEM, "recording: out of memory");
	cm_matrix_free(r->fresh);
	r->fresh = cm_matrix_new(0);
	return r->fresh ? 0 : cm_errorf(r->err, ENOMEM, "recording: out of "
					"memory");
}

/* "interval TIME MS [APP]" and "checkpoint TIME [APP]" (version 3; APP,
 * the step's progress clock, since it ages by it: without it, TIME):
 * neither clock goes back, the progress clock runs from the start no
 * faster than TIME (the replay ages by their differences). */
static int on_clock(struct reader *r, char **w, int n)
{
	int interval = strcmp(w[0], "interval") == 0, ms = 0;
	int base = interval ? 3 : 2;
	uint64_t t, app;

	if (r->version < 3)
		return bad(r, "a clock line needs version 3");
	if ((n != base && n != base + 1) || word_u64(w[1], 10, &t) ||
	    (interval && word_int(w[2], 1, 60000, &ms)) ||
	    (n > base && word_u64(w[base], 10, &app)))
		return bad(r, interval ? "want 'interval TIME MS [APP]' (MS "
			   "1..60000)" : "want 'checkpoint TIME [APP]'");
	if (t < r->rp->last_clock_ns)
		return bad(r, "time goes back");
	if (!r->rp->has_options)
		return bad(r, "a clock line before 'options'");
	if (n == base)
		app = t;
	else if (app > t || app < r->rp->t0_ns)
		return bad(r, "the progress clock is outside the agent's start "
			   "and the line's time");
	if (app < r->last_app_ns)
		return bad(r, "the progress clock goes back");
	r->rp->last_clock_ns = t;
	r->last_app_ns = app;
	r->rp->nintervals += interval;
	return fold(r, t, ms, app);
}

static void snap_free(struct reader *r)
{
	free(r->snap_cpu);
	free(r->snap_wait);
	r->snap_cpu = r->snap_wait = NULL;
	r->snap.snap = 0;
}

/* All of a snapshot's lines are read: to the decisions' replay. */
static int snap_done(struct reader *r)
{
	int rc = 0;

	r->snap.cpu = r->snap_cpu;
	r->snap.wait = r->snap_wait;
	if (r->clock_fn)
		rc = r->clock_fn(r->clock_ctx, r->rp, &r->snap, r->err);
	snap_free(r);
	return rc;
}

/* "snap KIND TIME N" (version 3): N "s CPU WAIT" lines follow. */
static int on_snap(struct reader *r, char **w, int n)
{
	uint64_t t;
	int k;

	if (r->version < 3 || n != 4 || strlen(w[1]) != 1 ||
	    !strchr("map", w[1][0]) || word_u64(w[2], 10, &t) ||
	    word_int(w[3], 0, CM_REPLAY_MAX_THREADS, &k))
		return bad(r, "want 'snap m|a|p TIME N' (N <= 4096, version "
			   "3)");
	if (t < r->rp->last_clock_ns)
		return bad(r, "time goes back");
	r->rp->last_clock_ns = t;
	r->snap = (struct cm_replay_clock){ .t_ns = t, .snap = w[1][0],
					    .n = k };
	r->snap_got = 0;
	r->snap_cpu = malloc((size_t)(k ? k : 1) * sizeof(double));
	r->snap_wait = malloc((size_t)(k ? k : 1) * sizeof(double));
	if (!r->snap_cpu || !r->snap_wait) {
		snap_free(r);
		return cm_errorf(r->err, ENOMEM, "recording: out of memory");
	}
	return k ? 0 : snap_done(r);
}

static int word_seconds(const char *w, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(w, &end);
	return errno || *end || !(*out >= -1 && *out <= 1e9) ? -1 : 0;
}

/* "s CPU WAIT": the next thread of the snapshot being read. */
static int on_snap_line(struct reader *r, char **w, int n)
{
	int i = r->snap_got;

	if (n != 3 || word_seconds(w[1], &r->snap_cpu[i]) ||
	    word_seconds(w[2], &r->snap_wait[i]))
		return bad(r, "want 's CPU WAIT' (seconds, -1 unread)");
	return ++r->snap_got == r->snap.n ? snap_done(r) : 0;
}

/* "options T0 ALPHA GAIN MODE [NEAR_SEEN]" (version 3), once before any
 * clock line; NEAR_SEEN is 1 when absent. */
static int on_options(struct reader *r, char **w, int n)
{
	struct cm_replay *rp = r->rp;
	char *end;

	if (r->version < 3 || rp->has_options)
		return bad(r, r->version < 3 ? "'options' needs version 3" :
			   "'options' given twice");
	if ((n != 5 && n != 6) || word_u64(w[1], 10, &rp->t0_ns) ||
	    strlen(w[4]) >= sizeof(rp->opt_mode))
		return bad(r, "want 'options T0 ALPHA GAIN MODE [NEAR_SEEN]'");
	errno = 0;
	rp->alpha = strtod(w[2], &end);
	if (errno || *end || !(rp->alpha >= 0 && rp->alpha <= 1))
		return bad(r, "options: ALPHA must be within 0..1");
	rp->gain = strtod(w[3], &end);
	if (errno || *end || !(rp->gain >= 0 && rp->gain <= 10))
		return bad(r, "options: GAIN must be within 0..10");
	rp->near_seen = 1;
	if (n == 6) {
		rp->near_seen = strtod(w[5], &end);
		if (errno || *end || !(rp->near_seen > 0 &&
				       rp->near_seen <= 1))
			return bad(r, "options: NEAR_SEEN must be within "
				   "(0, 1]");
	}
	strcpy(rp->opt_mode, w[4]);
	rp->has_options = 1;
	return 0;
}

/* "exit I" (version 3): thread I has exited. */
static int on_exit_line(struct reader *r, char **w, int n)
{
	int i;

	if (r->version < 3 || n != 2 ||
	    word_int(w[1], 0, CM_REPLAY_MAX_THREADS - 1, &i))
		return bad(r, "want 'exit I' (I < 4096, version 3)");
	if (grow_threads(r, i) < 0)
		return -1;
	r->rp->threads[i].exited = 1;
	if (r->tr)
		cm_tracker_mark_gone(r->tr, i);
	return 0;
}

/* "cma_unit BYTES" (version 4): bytes per matrix unit, once, before the
 * first transfer. */
static int on_cma_unit(struct reader *r, char **w, int n)
{
	struct cm_replay *rp = r->rp;
	char *end;

	if (r->version < 4 || n != 2 || rp->cma_unit > 0)
		return bad(r, rp->cma_unit > 0 ? "'cma_unit' given twice" :
			   "want 'cma_unit BYTES' (version 4)");
	errno = 0;
	rp->cma_unit = strtod(w[1], &end);
	if (errno || *end || !(rp->cma_unit >= 1 && rp->cma_unit <= 1e12))
		return bad(r, "cma_unit: BYTES must be within 1..1e12");
	r->cma = cm_cma_attrib_new(r->tr, rp->cma_unit);
	return r->cma ? 0 : cm_errorf(r->err, ENOMEM, "recording: out of "
				      "memory");
}

/* "cma TIME PID TID PEER BYTES" (version 4): a transfer, attributed to
 * the threads recorded so far by the agent's attribution. */
static int on_cma(struct reader *r, char **w, int n)
{
	struct cm_cma_transfer x = { 0 };
	uint64_t pid, tid, peer;
	int added;

	if (r->version < 4 || n != 6 || word_u64(w[1], 10, &x.time) ||
	    word_u64(w[2], 10, &pid) || word_u64(w[3], 10, &tid) ||
	    word_u64(w[4], 10, &peer) || word_u64(w[5], 10, &x.bytes) ||
	    pid > 0x7fffffff || tid > 0x7fffffff || peer > 0x7fffffff ||
	    x.bytes > (1ull << 40))
		return bad(r, "want 'cma TIME PID TID PEER BYTES' (ids < 2^31, "
			   "BYTES <= 2^40, version 4)");
	if (!r->cma)
		return bad(r, "a 'cma' line before 'cma_unit'");
	x.pid = (uint32_t)pid;
	x.tid = (uint32_t)tid;
	x.peer = (uint32_t)peer;
	added = cm_cma_attrib_add(r->cma, &x, r->fresh);
	if (added < 0)
		return cm_errorf(r->err, ENOMEM, "recording: out of memory");
	r->rp->cma_lines++;
	r->rp->cma_added += (uint64_t)added;
	r->rp->cma_bytes += added ? x.bytes : 0;
	return 0;
}

/* "shm TIME I J WEIGHT" (version 5): evidence of segment ownership,
 * added as the agent added it (cm_shm_evidence_add). */
static int on_shm(struct reader *r, char **w, int n)
{
	uint64_t t;
	int i, j;
	double wt;
	char *end;

	if (r->version < 5 || n != 5 || word_u64(w[1], 10, &t) ||
	    word_int(w[2], 0, CM_REPLAY_MAX_THREADS - 1, &i) ||
	    word_int(w[3], 0, CM_REPLAY_MAX_THREADS - 1, &j))
		return bad(r, "want 'shm TIME I J WEIGHT' (I, J < 4096, "
			   "version 5)");
	errno = 0;
	wt = strtod(w[4], &end);
	if (errno || *end || !(wt > 0 && wt <= 1))
		return bad(r, "shm: WEIGHT must be within (0, 1]");
	if (i == j)
		return bad(r, "shm: a thread with itself");
	if (grow_threads(r, i > j ? i : j) < 0)
		return -1;
	if (cm_shm_evidence_add(r->fresh, i, j, wt) < 0)
		return cm_errorf(r->err, ENOMEM, "recording: out of memory");
	r->rp->shm_lines++;
	r->rp->shm_weight += wt;
	if (t > r->rp->last_ns)
		r->rp->last_ns = t;
	return 0;
}

/* "nopin TIME I OS ERRNO" (version 4): a pin that failed. */
static int on_nopin(struct reader *r, char **w, int n)
{
	struct cm_replay *rp = r->rp;
	struct cm_replay_nopin p, *q;

	if (r->version < 4 || n != 5 || word_u64(w[1], 10, &p.t_ns) ||
	    word_int(w[2], 0, CM_REPLAY_MAX_THREADS - 1, &p.i) ||
	    word_int(w[3], -1, 0x7fffffff, &p.os) ||
	    word_int(w[4], 1, 4095, &p.err))
		return bad(r, "want 'nopin TIME I OS ERRNO' (I < 4096, OS >= "
			   "-1, ERRNO 1..4095, version 4)");
	if (rp->nnopin >= CM_REPLAY_MAX_NOPIN)
		return bad(r, "more than 65536 'nopin' lines");
	q = realloc(rp->nopin, (size_t)(rp->nnopin + 1) * sizeof(*q));
	if (!q)
		return cm_errorf(r->err, ENOMEM, "recording: out of memory");
	q[rp->nnopin++] = p;
	rp->nopin = q;
	return 0;
}

static int keep_text(struct reader *r, char **dst, const char *s)
{
	if (*dst)
		return bad(r, "given twice");
	*dst = strdup(s);
	return *dst ? 0 : cm_errorf(r->err, ENOMEM, "recording: out of "
				    "memory");
}

/* The trailer's lines: cpuset, dry_run, mode, end (topology: on_line). */
static int on_trailer(struct reader *r, char **w, int n)
{
	struct cm_replay *rp = r->rp;

	if (strcmp(w[0], "cpuset") == 0 && n == 2)
		return keep_text(r, &rp->cpuset, w[1]);
	if (strcmp(w[0], "dry_run") == 0 && n == 2)
		return word_int(w[1], 0, 1, &rp->dry_run) ?
		       bad(r, "dry_run: want 0 or 1") : 0;
	if (strcmp(w[0], "mode") == 0 && n == 2) {
		if (strlen(w[1]) >= sizeof(rp->mode))
			return bad(r, "mode: too long");
		strcpy(rp->mode, w[1]);
		return 0;
	}
	if (strcmp(w[0], "dropped") == 0 && n == 2)
		return word_u64(w[1], 10, &rp->dropped) ?
		       bad(r, "dropped: want a count") : 0;
	if (strcmp(w[0], "end") == 0 && n == 1) {
		rp->complete = 1;
		return 0;
	}
	return bad(r, "unknown line (want a, thread, exit, interval, "
		   "checkpoint, snap, nopin, cma, cma_unit, shm, options, "
		   "topology, cpuset, dry_run, mode, dropped or end)");
}

/* The three header lines, in order. */
static int on_header(struct reader *r, char **w, int n)
{
	struct cm_replay *rp = r->rp;
	uint64_t b, s;
	int v;

	if (r->header == 0) {
		if (n != 2 || strcmp(w[0], CM_RECORD_FORMAT) ||
		    word_int(w[1], 0, 1000, &v))
			return bad(r, "not a commap recording (want "
				   "'" CM_RECORD_FORMAT " N')");
		if (v < 1 || v > CM_RECORD_VERSION) {
			char m[96];

			snprintf(m, sizeof(m), "unsupported version %d (this "
				 "commap reads versions 1 to %d)", v,
				 CM_RECORD_VERSION);
			return bad(r, m);
		}
		r->version = v;
	} else if (r->header == 1) {
		if (n != 3 || strcmp(w[0], "start") ||
		    word_u64(w[1], 10, &rp->start_real_ns) ||
		    word_u64(w[2], 10, &rp->start_mono_ns))
			return bad(r, "want 'start REALTIME_NS MONOTONIC_NS'");
	} else {
		if (n != 4 || strcmp(w[0], "detect") ||
		    word_u64(w[1], 10, &b) || word_u64(w[2], 10, &s) ||
		    word_u64(w[3], 10, &rp->detect.window_ns) ||
		    b > UINT32_MAX || s > CM_REPLAY_MAX_SLOTS)
			return bad(r, "want 'detect BLOCK SLOTS WINDOW_NS' "
				   "(SLOTS <= 2^20)");
		rp->detect.block_size = (uint32_t)b;
		rp->detect.slots = (uint32_t)s;
		r->table = cm_detect_table_new(&rp->detect, r->err);
		if (!r->table)
			return bad(r, "detect: the table's configuration is "
				   "out of range");
		/* Version 1 has no mapping or class: the sharer table alone,
		 * as it was recorded. */
		if (r->version >= 2 && !(r->overlap = cm_overlap_new(0, 0)))
			return cm_errorf(r->err, ENOMEM, "recording: out of "
					 "memory");
		if (r->version >= 4 && !(r->tr = cm_tracker_new(NULL, 0)))
			return cm_errorf(r->err, ENOMEM, "recording: out of "
					 "memory");
	}
	r->header++;
	return 0;
}

static int on_line(struct reader *r, char *line)
{
	char copy[CM_REPLAY_MAX_LINE], *w[MAX_WORDS];
	int n;

	/* hwloc's synthetic description: words of its own, kept whole */
	if (r->header == 3 && strncmp(line, "topology ", 9) == 0 &&
	    line[9] && !r->rp->complete)
		return keep_text(r, &r->rp->synthetic, line + 9);
	strcpy(copy, line);
	n = split(copy, w, MAX_WORDS);
	if (n <= 0 || !*w[0])
		return bad(r, n < 0 ? "too many words" : "empty line");
	if (r->header < 3)
		return on_header(r, w, n);
	if (r->rp->complete)
		return bad(r, "text after 'end'");
	if (r->snap.snap)
		return strcmp(w[0], "s") == 0 ? on_snap_line(r, w, n) :
		       bad(r, "a snapshot cut short (want its 's' lines)");
	if (strcmp(w[0], "snap") == 0)
		return on_snap(r, w, n);
	if (strcmp(w[0], "a") == 0)
		return on_access(r, w, n);
	if (strcmp(w[0], "thread") == 0)
		return on_thread(r, w, n);
	if (!strcmp(w[0], "interval") || !strcmp(w[0], "checkpoint"))
		return on_clock(r, w, n);
	if (strcmp(w[0], "options") == 0)
		return on_options(r, w, n);
	if (strcmp(w[0], "exit") == 0)
		return on_exit_line(r, w, n);
	if (strcmp(w[0], "nopin") == 0)
		return on_nopin(r, w, n);
	if (strcmp(w[0], "cma") == 0)
		return on_cma(r, w, n);
	if (strcmp(w[0], "cma_unit") == 0)
		return on_cma_unit(r, w, n);
	if (strcmp(w[0], "shm") == 0)
		return on_shm(r, w, n);
	return on_trailer(r, w, n);
}

void cm_replay_free(struct cm_replay *rp)
{
	if (!rp)
		return;
	free(rp->threads);
	free(rp->nopin);
	free(rp->synthetic);
	free(rp->cpuset);
	cm_matrix_free(rp->m);
	memset(rp, 0, sizeof(*rp));
}

/* Each line in turn; a line longer than the limit or holding a NUL is an
 * error, the last line may lack its newline. */
static int each_line(struct reader *r, const char *text, size_t len)
{
	char line[CM_REPLAY_MAX_LINE];
	size_t pos = 0;

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;

		r->lineno++;
		if (n >= sizeof(line))
			return bad(r, "line too long");
		memcpy(line, text + pos, n);
		line[n] = '\0';
		if (strlen(line) != n)
			return bad(r, "NUL byte");
		if (on_line(r, line) < 0)
			return -1;
		pos += n + 1;
	}
	if (r->header < 3)
		return cm_errorf(r->err, EINVAL, "recording: ends inside its "
				 "header (%d of 3 lines)", r->header);
	return 0;
}

int cm_replay_parse_clocked(const char *text, size_t len,
			    struct cm_replay *rp, cm_replay_clock_fn fn,
			    void *ctx, struct cm_error *err)
{
	struct reader r = { .rp = rp, .clock_fn = fn, .clock_ctx = ctx,
			    .err = err };
	int rc;

	memset(rp, 0, sizeof(*rp));
	strcpy(rp->mode, "dynamic");
	rp->m = cm_matrix_new(0);
	r.fresh = cm_matrix_new(0);
	if (!rp->m || !r.fresh) {
		cm_matrix_free(r.fresh);
		cm_replay_free(rp);
		return cm_errorf(err, ENOMEM, "recording: out of memory");
	}
	rc = each_line(&r, text, len);
	/* what was drained after the last clock line (the agent's end) */
	if (rc == 0 && cm_matrix_merge(rp->m, r.fresh, 1.0) < 0)
		rc = cm_errorf(err, ENOMEM, "recording: out of memory");
	cm_overlap_stats(r.overlap, &rp->overlap);
	cm_detect_table_free(r.table);
	cm_overlap_free(r.overlap);
	cm_cma_attrib_free(r.cma);
	cm_tracker_free(r.tr);
	cm_matrix_free(r.fresh);
	snap_free(&r);		/* one cut short by the end (agent killed) */
	if (rc < 0)
		cm_replay_free(rp);
	return rc;
}

int cm_replay_parse(const char *text, size_t len, struct cm_replay *rp,
		    struct cm_error *err)
{
	return cm_replay_parse_clocked(text, len, rp, NULL, NULL, err);
}
