/* collect_drain.c: the per-sample path of the collector: identity check,
 * decoding, keys and classes, evidence (collect.h, "Draining").
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <asm/perf_regs.h>

#include "collect_internal.h"
#include "evidence.h"
#include "record.h"

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* (Re)load the maps of process p: the first time, and at most once per
 * drain after that.  Returns true if the maps were (re)loaded. */
static bool maps_refresh(struct cm_collector *c, int p, pid_t pid)
{
	struct cproc *cp = &c->procs[p];
	struct cm_error e;
	bool had = cp->maps_loaded;

	if (cp->maps_gen == c->gen)
		return false;	/* once per drain, even after a failure */
	cp->maps_gen = c->gen;
	c->st.maps_loads++;
	if (had)
		c->st.maps_refreshes++;
	if (cm_maps_load(&cp->maps, c->o.proc_root, pid, &e)) {
		cm_collect_set_problem(c, "%s", e.text);
		cp->maps_loaded = false;
		return false;
	}
	cp->maps_loaded = true;
	return true;
}

static const struct cm_map_region *find_region(struct cm_collector *c,
					       int p, pid_t pid,
					       uint64_t addr)
{
	struct cproc *cp = &c->procs[p];
	const struct cm_map_region *r = NULL;

	if (cp->maps_loaded)
		r = cm_maps_find(&cp->maps, addr);
	if (!r && maps_refresh(c, p, pid))
		r = cm_maps_find(&cp->maps, addr);
	return r;
}

/* Open /proc/PID/mem once per process image (see read_code). */
static int open_mem(struct cm_collector *c, struct cproc *cp, pid_t pid)
{
	char path[256];

	if (cp->mem_fd >= 0 || cp->mem_failed)
		return cp->mem_fd;
	snprintf(path, sizeof(path), "%s/%d/mem",
		 c->o.proc_root ? c->o.proc_root : "/proc", (int)pid);
	cp->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (cp->mem_fd < 0) {
		cp->mem_failed = true;
		cm_collect_set_problem(c, "cannot read code of process %d: %s: %s "
			    "(needs ptrace access)", (int)pid, path,
			    strerror(errno));
	}
	return cp->mem_fd;
}

/* Read the code window around ip from /proc/PID/mem (decoder miss). */
static ssize_t read_code(struct cm_collector *c, int p, pid_t pid,
			 const struct cm_map_region *r, uint64_t ip,
			 uint64_t *lo_out)
{
	struct cproc *cp = &c->procs[p];
	uint64_t lo, hi;
	ssize_t got;

	if (open_mem(c, cp, pid) < 0)
		return -1;
	lo = ip - r->start > c->o.code_before ? ip - c->o.code_before
	     : r->start;
	hi = r->end - ip > CODE_AFTER ? ip + CODE_AFTER : r->end;
	c->st.code_reads++;
	got = pread(cp->mem_fd, c->code, (size_t)(hi - lo), (off_t)lo);
	if (got < 0 && errno == EIO) {
		/* The descriptor belongs to the memory of the image the
		 * process had when we opened it; after an exec (mpirun's
		 * children, commap run's program) it reads nothing. */
		close(cp->mem_fd);
		cp->mem_fd = -1;
		if (open_mem(c, cp, pid) >= 0)
			got = pread(cp->mem_fd, c->code, (size_t)(hi - lo),
				    (off_t)lo);
	}
	if (got < 0)
		cm_collect_set_problem(c, "reading code of process %d at 0x%" PRIx64
			    ": %s", (int)pid, lo, strerror(errno));
	if (got <= (ssize_t)(ip - lo))
		return -1;
	*lo_out = lo;
	return got;
}

/* Decode one sample of process p into acc.  1 with an address, 0 not. */
static int decode_sample(struct cm_collector *c, int p,
			 const struct cm_perf_sample *smp,
			 struct cm_access *acc)
{
	const struct cm_map_region *r;
	uint64_t code_id, lo = 0;
	ssize_t len;
	int rv;

	r = find_region(c, p, (pid_t)smp->pid, smp->ip);
	if (!r) {
		c->st.code_read_fail++;
		return 0;
	}
	/* Same binary at the same load address: same code, whatever the
	 * process (forked ranks share the decoder's cache entries). */
	if (r->inode)
		code_id = mix64(r->dev ^ mix64(r->inode ^
				mix64(r->start - r->offset)));
	else
		code_id = mix64(((uint64_t)p << 48) ^ r->start);
	rv = cm_decode_cached(c->dec, code_id, smp->ip, &smp->regs, acc,
			      NULL);
	if (rv < 0 && errno == ENOENT) {
		len = read_code(c, p, (pid_t)smp->pid, r, smp->ip, &lo);
		if (len < 0) {
			c->st.code_read_fail++;
			return 0;
		}
		rv = cm_decode_address(c->dec, code_id, c->code, (size_t)len,
				       lo, smp->ip, &smp->regs, acc, NULL);
	}
	if (rv < 0) {
		c->st.code_read_fail++;
		return 0;
	}
	if (rv == 0) {
		c->st.decode_fail[acc->reason < CM_DECODE_NREASONS ?
				  acc->reason : CM_DECODE_NO_MEM]++;
		return 0;
	}
	c->st.decoded++;
	return 1;
}

/* The access as the table is about to see it, for a replay (record.h):
 * the thread's identity (cm_collect_record_identity) before its first
 * access. */
static void record_ref(struct cm_collector *c, int i,
		       const struct cm_block_key *key, uint64_t region,
		       int cls, uint64_t time)
{
	cm_collect_record_identity(c, i);
	cm_record_access(c->o.record, i, key, region, cls, time);
}

static bool known_stack(const struct cproc *cp, uint64_t start)
{
	for (int k = 0; k < cp->nstacks; k++)
		if (cp->stacks[k] == start)
			return true;
	return false;
}

/* The mapping holding a sampled stack pointer is a thread's stack (and
 * its static TLS): remember it for the other threads' references. */
static uint64_t note_stack(struct cm_collector *c, int p, pid_t pid,
			   uint64_t sp)
{
	struct cproc *cp = &c->procs[p];
	const struct cm_map_region *r;

	if (!sp)
		return 0;
	r = find_region(c, p, pid, sp);
	if (!r)
		return 0;
	if (!known_stack(cp, r->start) && cp->nstacks < PROC_STACKS)
		cp->stacks[cp->nstacks++] = r->start;
	return r->start;
}

/* The class of a reference in region r (evidence.h); sp_region: the
 * mapping of the sample's own stack pointer (0: none). */
static int classify(const struct cproc *cp, const struct cm_map_region *r,
		    uint64_t sp_region)
{
	if (!r)
		return CM_REF_DATA;
	if (r->start == sp_region || strcmp(r->path, "[stack]") == 0 ||
	    known_stack(cp, r->start))
		return CM_REF_STACK;
	/* A terabyte-sized mapping is a sanitizer's shadow memory (ASan's
	 * covers 15 TiB), whose bytes stand for many threads' neighbouring
	 * data: not evidence of sharing for the overlap. */
	if (r->end - r->start >= SHADOW_MIN_BYTES)
		return CM_REF_READONLY;
	return r->perms[1] == 'w' ? CM_REF_DATA : CM_REF_READONLY;
}

/* The tracker's process index of pid, -1 if it is not ours. */
static int proc_of_pid(struct cm_collector *c, pid_t pid)
{
	int m = cm_tracker_find_thread(c->tr, pid);
	int p;

	if (m < 0)
		return -1;
	p = cm_tracker_thread(c->tr, m)->proc;
	return cm_tracker_proc(c->tr, p)->pid == pid ? p : -1;
}

/* Rule 2b of shm_owner.h: the one process of the step holding the POSIX
 * segment at path open; -1 none or several, -2 not now (over budget). */
static int owner_by_fd(struct cm_collector *c, const char *path,
		       uint64_t now_ns)
{
	int n = cm_tracker_nprocs(c->tr), k;
	pid_t *pid;

	if (!cm_shm_owners_may_scan(c->shm, now_ns,
				    cm_tracker_nalive(c->tr)))
		return -2;
	pid = calloc((size_t)(n > 0 ? n : 1), sizeof(*pid));
	if (!pid)
		return -1;
	for (k = 0; k < n; k++)
		pid[k] = cm_tracker_proc(c->tr, k)->alive ?
			 cm_tracker_proc(c->tr, k)->pid : 0;
	k = cm_shm_fd_holder(c->o.proc_root, pid, n, path);
	free(pid);
	return k >= 0 ? k : -1;
}

/* Rule 2 of shm_owner.h: the process of Open MPI local rank `local`. */
static int owner_by_local_rank(struct cm_collector *c, int local)
{
	int n = cm_tracker_nprocs(c->tr), found = -1;
	int *rank, *alive;

	if (n <= 0)
		return -1;
	rank = calloc((size_t)n, sizeof(*rank));
	alive = calloc((size_t)n, sizeof(*alive));
	if (rank && alive) {
		for (int k = 0; k < n; k++) {
			rank[k] = cm_tracker_proc(c->tr, k)->rank;
			alive[k] = cm_tracker_proc(c->tr, k)->alive;
		}
		found = cm_shm_local_rank_proc(rank, alive, n, local);
	}
	free(rank);
	free(alive);
	return found;
}

/* Rules 1, 2 and 2b of shm_owner.h for the segment of region r: the
 * tracker's process index of its owner, -1 when none applies, -2 when
 * the rule must wait (its budget of scans is spent). */
static int owner_by_rules(struct cm_collector *c,
			  const struct cm_map_region *r, uint64_t now_ns,
			  int *how)
{
	int local;
	pid_t cpid;

	if (cm_shm_is_sysv(r->path)) {
		*how = CM_SHM_BY_CREATOR;
		/* the node's whole table: counted like a process's scan */
		if (!cm_shm_owners_may_scan(c->shm, now_ns, 1))
			return -2;
		if (cm_shm_sysv_creator(c->o.proc_root, r->inode, &cpid))
			return -1;
		return proc_of_pid(c, cpid);
	}
	local = cm_shm_name_local_rank(r->path);
	if (local >= 0) {
		*how = CM_SHM_BY_NAME;
		return owner_by_local_rank(c, local);
	}
	if (strncmp(r->path, "/dev/shm/", 9) != 0)
		return -1;
	*how = CM_SHM_BY_FD;
	return owner_by_fd(c, r->path, now_ns);
}

/* The thread standing for owner process p in an edge: the one that
 * touched the segment last (shm_owner.h), else its main thread. */
static int owner_thread(struct cm_collector *c, int p, int last)
{
	const struct cm_tracked_proc *pr = cm_tracker_proc(c->tr, p);
	const struct cm_tracked_thread *th = cm_tracker_thread(c->tr, last);
	int m;

	if (th && th->alive && th->proc == p)
		return last;
	if (!pr)
		return -1;
	m = cm_tracker_find_thread(c->tr, pr->pid);
	if (m < 0 || cm_tracker_thread(c->tr, m)->proc != p)
		return -1;
	return m;
}

/* Thread i of process p referenced the shared segment of region r: with
 * the segment's owner known and another process, one unit of evidence
 * between them, whenever it happened (shm_owner.h). */
static void shm_evidence(struct cm_drain_ctx *d, int i, int p,
			 const struct cm_map_region *r, uint64_t time)
{
	struct cm_collector *c = d->c;
	const struct cm_tracked_proc *pr;
	struct cm_shm_evidence ev;
	struct cm_shm_seg *s;
	int j, how = CM_SHM_UNKNOWN;

	s = cm_shm_owners_seg(c->shm, r->dev, r->inode, time);
	if (!s)
		return;
	pr = s->owner >= 0 ? cm_tracker_proc(c->tr, s->owner) : NULL;
	if (s->owner >= 0 && (!pr || !pr->alive))
		cm_shm_seg_forget(c->shm, s);
	if (!s->hinted) {
		int o = owner_by_rules(c, r, time, &how);

		if (o != -2)
			cm_shm_seg_set_owner(c->shm, s, o, how);
	}
	if (cm_shm_owners_ref(c->shm, s, p, i, time, &ev) <= 0)
		return;
	j = owner_thread(c, ev.owner, ev.owner_thread);
	if (j < 0 || j == i)
		return;
	if (c->o.record) {	/* the replay cannot find owners: record.h */
		cm_collect_record_identity(c, i);
		cm_collect_record_identity(c, j);
		cm_record_shm(c->o.record, time, i, j, ev.weight);
	}
	if (cm_shm_evidence_add(d->m, i, j, ev.weight))
		d->nomem = 1;
}

/* Enter one data reference of thread i (process p) as evidence
 * (evidence.h); sp_region: the mapping of the sample's stack pointer. */
static void account_ref(struct cm_drain_ctx *d, int i, int p, pid_t pid,
			uint64_t addr, uint64_t time, uint64_t sp_region)
{
	struct cm_collector *c = d->c;
	struct cproc *cp = &c->procs[p];
	const struct cm_map_region *reg;
	struct cm_block_key key;
	uint64_t runs;
	int r, ev, cls;

	r = cp->maps_loaded ? cm_maps_key(&cp->maps, (uint64_t)p, addr, &key)
	    : -1;
	if (r && maps_refresh(c, p, pid))
		r = cm_maps_key(&cp->maps, (uint64_t)p, addr, &key);
	if (r) {
		/* Still in no mapping (unmapped meanwhile, or the maps are
		 * unreadable): private memory is the safe guess. */
		c->st.unmapped++;
		cm_block_key_private(&key, (uint64_t)p, addr);
	}
	if (key.shared)
		c->st.shared_refs++;
	reg = r ? NULL : cm_maps_find(&cp->maps, addr);
	cls = classify(cp, reg, sp_region);
	if (c->o.record)
		record_ref(c, i, &key, reg && !key.shared ? reg->start : 0,
			   cls, time);
	runs = c->st.refs.run_refs;
	ev = cm_evidence_add(c->table, c->ov, d->m, i, &key,
			     reg && !key.shared ? reg->start : 0, cls, time,
			     &c->st.refs);
	if (ev < 0) {
		d->nomem = 1;
		return;
	}
	if (key.shared && reg && cls != CM_REF_STACK && c->shm)
		shm_evidence(d, i, p, reg, time);
	/* The stack and a run's continuation never reach the table. */
	if (cls == CM_REF_STACK || c->st.refs.run_refs != runs)
		return;
	c->st.accesses++;
	c->st.events += (uint64_t)ev;
}

/* A repeated sample (below) says nothing new to the sharer table, but a
 * thread waiting in another process's segment is talking to that process
 * all the while: its references still count as ownership evidence. */
static void shm_repeat(struct cm_drain_ctx *d, int i, int p, pid_t pid,
		       const struct cm_access *acc, uint64_t time)
{
	const struct cm_map_region *r;

	for (unsigned k = 0; k < acc->nref && !d->nomem; k++) {
		r = find_region(d->c, p, pid, acc->ref[k].addr);
		if (r && r->shared && r->inode && d->c->shm)
			shm_evidence(d, i, p, r, time);
	}
}

enum { ID_FOREIGN = -1, ID_UNKNOWN = -2, ID_NOMEM = -3 };

/* The tracker index of (pid, tid), after the identity check: >= 0 ours,
 * else ID_FOREIGN, ID_UNKNOWN (our process, thread not scanned yet) or
 * ID_NOMEM. */
static int identify(struct cm_collector *c, uint32_t pid, uint32_t tid,
		    int *proc)
{
	const struct cm_tracked_thread *th;
	const struct cm_tracked_proc *pr;
	int i = cm_tracker_find_thread(c->tr, (pid_t)tid);

	if (i < 0)	/* is its process's main thread ours? */
		return cm_tracker_find_thread(c->tr, (pid_t)pid) >= 0 ?
		       ID_UNKNOWN : ID_FOREIGN;
	th = cm_tracker_thread(c->tr, i);
	pr = cm_tracker_proc(c->tr, th->proc);
	if (pr->pid != (pid_t)pid)
		return ID_FOREIGN;	/* tid reused by another process */
	if ((i >= c->nthreads || th->proc >= c->nprocs) &&
	    cm_collect_ensure(c, i + 1, th->proc + 1))
		return ID_NOMEM;
	*proc = th->proc;
	return i;
}

/* The thread index of a sample, after the identity check; -1 dropped. */
static int sample_thread(struct cm_collector *c,
			 const struct cm_perf_sample *smp, int *proc)
{
	int i = identify(c, smp->pid, smp->tid, proc);

	if (i == ID_UNKNOWN)
		c->st.unknown_tid++;
	else if (i == ID_FOREIGN)
		c->st.foreign++;
	return i < 0 ? -1 : i;
}

/* One page fault: foreign ones dropped first, first-touch faults only
 * counted, hinting faults entered like a decoded sample's address. */
static void on_fault(const struct cm_fault *f, void *arg)
{
	struct cm_drain_ctx *d = arg;
	struct cm_collector *c = d->c;
	int p = 0, i = identify(c, f->pid, f->tid, &p);

	if (i < 0) {
		if (i == ID_UNKNOWN)
			c->st.fault_unknown_tid++;
		else if (i == ID_FOREIGN)
			c->st.fault_foreign++;
		return;
	}
	c->st.fault_ours++;
	if (!f->hinting) {
		c->st.fault_first_touch++;
		return;
	}
	c->st.fault_hinting++;
	if (!d->nomem)
		account_ref(d, i, p, (pid_t)f->pid, f->addr, f->time, 0);
}

/* One CMA call that copied bytes. */
static void on_cma(const struct cm_cma_transfer *x, void *arg)
{
	struct cm_drain_ctx *d = arg;

	cm_record_cma(d->c->o.record, x, d->c->o.cma_bytes_per_unit);
	if (!d->nomem && cm_cma_attrib_add(d->c->cma_at, x, d->m) < 0)
		d->nomem = 1;
}

/* A sample at the same IP and cache line as the thread's previous one:
 * a loop reading one line over and over (a wait on a flag without
 * `pause`, decode.h CM_DECODE_SPIN catches those with it), which says
 * nothing more about sharing than its first sample did: dropped and
 * counted (repeats).  Work moving through memory never repeats a line
 * a period of CPU time later.  Dropped here, before the recording; the
 * same line at another IP (an unrolled wait) is left to the evidence
 * seam's runs (evidence.h), which the replay sees too.  The runs do not
 * subsume this filter: without it the repeats mark their lines as waited
 * on, which cleans a matrix of barrier waits but leaves short runs too
 * little evidence to map (docs/PERFORMANCE.md, "Repeated samples"). */
static bool repeated(struct cm_collector *c, int i,
		     const struct cm_perf_sample *smp,
		     const struct cm_access *acc)
{
	struct cthread *ct = &c->threads[i];
	uint64_t line = acc->ref[0].addr >> 6;
	bool same = ct->last_ip == smp->ip && ct->last_line == line;

	ct->last_ip = smp->ip;
	ct->last_line = line;
	if (same)
		c->st.repeats++;
	return same;
}

void cm_collect_on_sample(const struct cm_perf_sample *smp, void *arg)
{
	struct cm_drain_ctx *d = arg;
	struct cm_collector *c = d->c;
	struct cm_access acc;
	uint64_t sp_region;
	int i, p = 0;

	i = sample_thread(c, smp, &p);
	if (i < 0)
		return;
	c->threads[i].samples++;
	c->st.ours++;
	if (c->backend == CM_COLLECT_HW) {
		c->st.decoded++;
		account_ref(d, i, p, (pid_t)smp->pid, smp->addr, smp->time,
			    0);
		return;
	}
	if (!decode_sample(c, p, smp, &acc))
		return;
	if (repeated(c, i, smp, &acc)) {
		shm_repeat(d, i, p, (pid_t)smp->pid, &acc, smp->time);
		return;
	}
	sp_region = note_stack(c, p, (pid_t)smp->pid,
			       smp->regs.valid & (1u << PERF_REG_X86_SP) ?
			       smp->regs.v[PERF_REG_X86_SP] : 0);
	for (unsigned k = 0; k < acc.nref && !d->nomem; k++)
		account_ref(d, i, p, (pid_t)smp->pid, acc.ref[k].addr,
			    smp->time, sp_region);
}

long cm_collect_drain(struct cm_collector *c, struct cm_matrix *m,
		      struct cm_error *err)
{
	struct cm_drain_ctx d = { c, m, 0 };
	uint64_t t;
	long n;

	if (!c || !m)
		return cm_errorf(err, EINVAL, "collect: NULL argument");
	c->gen++;
	t = cm_collect_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	n = c->s ? cm_perf_sampler_read(c->s, cm_collect_on_sample, &d) : 0;
	if (c->fs)
		n += cm_fault_sampler_read(c->fs, on_fault, &d);
	if (c->cma)
		n += cm_cma_tracer_read(c->cma, on_cma, &d);
	c->drain_cpu_ns += cm_collect_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t;
	if (d.nomem)
		return cm_errorf(err, ENOMEM, "collect: the matrix cannot "
				 "grow (out of memory)");
	return n;
}
