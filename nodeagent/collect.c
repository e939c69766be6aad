/* collect.c: sampler + decoder + sharer table, driven by the tracker:
 * options, the collector's life cycle, attaching threads (sync) and the
 * accessors.  The cost of a sample is measured in collect_calib.c, the
 * per-sample path is collect_drain.c, the period collect_rate.c.
 * See collect.h for the contract and docs/detection.md, "Pipeline".
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect_internal.h"
#include "record.h"
#include "cma_attrib.h"
#include "cma_trace.h"
#include "numa_balancing.h"
#include "grow.h"
#include "agent_result.h"

static const char *const backend_names[] = { "sample", "hw", "auto",
					     "fault" };

const char *cm_collect_backend_name(enum cm_collect_backend b)
{
	if ((unsigned)b >= sizeof(backend_names) / sizeof(backend_names[0]))
		return "?";
	return backend_names[b];
}

int cm_collect_backend_parse(const char *name, enum cm_collect_backend *b)
{
	for (unsigned i = 0; name && b &&
	     i < sizeof(backend_names) / sizeof(backend_names[0]); i++) {
		if (!strcmp(name, backend_names[i])) {
			*b = (enum cm_collect_backend)i;
			return 0;
		}
	}
	return cm_errorf(NULL, EINVAL, "unknown backend");
}

void cm_collect_opts_default(struct cm_collect_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = CM_COLLECT_SAMPLE;
	o->clock = CM_PERF_CPU_CLOCK;
	o->period_ns = CM_PERF_DEFAULT_PERIOD_NS;
	o->hw_period = 10007;
	o->ring_pages = CM_PERF_DEFAULT_RING_PAGES;
	o->block_shift = 12;
	o->window_ns = CM_DETECT_DEFAULT_WINDOW_NS;
	o->table_slots = CM_DETECT_DEFAULT_SLOTS;
	o->lookback = 4;
	o->decode_flags = 0;
	o->code_before = 64;
	o->numa_manage = 1;
	o->fault_ring_pages = CM_FAULT_DEFAULT_RING_PAGES;
	o->cma = 1;
}

void cm_collect_set_problem(struct cm_collector *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->problem, sizeof(c->problem), fmt, ap);
	va_end(ap);
}

/* Make room for tracker thread indexes < n and process indexes < np. */
int cm_collect_ensure(struct cm_collector *c, int n, int np)
{
	if (cm_grow((void **)&c->threads, &c->capthreads, n,
		    sizeof(*c->threads)))
		return -1;
	if (n > c->nthreads)
		c->nthreads = n;
	if (cm_grow((void **)&c->procs, &c->capprocs, np, sizeof(*c->procs)))
		return -1;
	for (int i = c->nprocs; i < np; i++)
		c->procs[i].mem_fd = -1;
	if (np > c->nprocs)
		c->nprocs = np;
	return 0;
}

static int check_opts(const struct cm_collect_opts *o, struct cm_error *err)
{
	if (o->block_shift < 6 || o->block_shift > 21)
		return cm_errorf(err, EINVAL, "collect: block_shift %u out of "
				 "6..21 (64 B .. 2 MiB)", o->block_shift);
	if (o->code_before < CODE_BEFORE_MIN ||
	    o->code_before > CODE_BEFORE_MAX)
		return cm_errorf(err, EINVAL, "collect: code_before %u out of "
				 "%u..%u", o->code_before, CODE_BEFORE_MIN,
				 CODE_BEFORE_MAX);
	if ((unsigned)o->backend > CM_COLLECT_FAULT)
		return cm_errorf(err, EINVAL, "collect: unknown backend %d",
				 (int)o->backend);
	return 0;
}

/* Resolve AUTO/HW with the probe and fill the sampler configuration. */
static int choose_backend(struct cm_collector *c, struct cm_error *err)
{
	struct cm_perf_config *p = &c->pcfg;

	cm_perf_config_default(p);
	p->clock = c->o.clock;
	p->period_ns = c->o.period_ns;
	p->hw_period = c->o.hw_period;
	p->ring_pages = c->o.ring_pages;
	c->backend = CM_COLLECT_SAMPLE;
	if (c->o.backend == CM_COLLECT_SAMPLE)
		return 0;
	if (c->o.backend == CM_COLLECT_FAULT) {
		c->backend = CM_COLLECT_FAULT;
		return 0;
	}
	if (cm_perf_hw_probe(c->o.sysfs_root, &p->hw) == 1) {
		p->backend = CM_PERF_BACKEND_HW;
		c->backend = CM_COLLECT_HW;
		return 0;
	}
	if (c->o.backend == CM_COLLECT_AUTO)
		return 0;
	return cm_errorf(err, ENOENT, "collect: hw backend unusable: %s",
			 p->hw.reason);
}

static int read_sysctl(const char *path, int *v)
{
	FILE *f = fopen(path ? path : "/proc/sys/kernel/numa_balancing",
			"re");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%d", v) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/* Hinting faults need kernel.numa_balancing=1: take it (numa_manage) or
 * say that only first-touch faults will come. */
static void numa_take(struct cm_collector *c)
{
	struct cm_numa_balancing_paths p = { c->o.numa_sysctl,
					     c->o.numa_state };
	struct cm_error e;
	int v = -1;

	if (c->o.numa_manage) {
		if (cm_numa_balancing_acquire(&p, getpid(), &e) == 0) {
			c->numa_held = true;
			return;
		}
		cm_collect_set_problem(c, "fault backend: %s", e.text);
	}
	if (read_sysctl(c->o.numa_sysctl, &v) == 0 && v == 1)
		return;
	if (!c->o.numa_manage)
		cm_collect_set_problem(c, "fault backend: kernel.numa_balancing is %d "
			    "and numa_balancing=leave: no hinting faults, "
			    "first-touch faults only", v);
}

/* Open the fault sampler: required with backend FAULT, optional with
 * add_fault (a failure is then a problem line). */
static int fault_start(struct cm_collector *c, struct cm_error *err)
{
	struct cm_fault_config fc;
	struct cm_error e;

	if (c->backend != CM_COLLECT_FAULT && !c->o.add_fault)
		return 0;
	cm_fault_config_default(&fc);
	fc.tracefs = c->o.tracefs;
	if (c->o.fault_ring_pages)
		fc.ring_pages = c->o.fault_ring_pages;
	c->fs = cm_fault_sampler_new(&fc, &e);
	if (!c->fs && c->backend == CM_COLLECT_FAULT)
		return cm_errorf(err, errno, "%s", e.text);
	if (!c->fs) {
		cm_collect_set_problem(c, "+fault ignored: %s", e.text);
		return 0;
	}
	numa_take(c);
	return 0;
}

/* CMA tracing (opts.cma): never fatal, a problem line when it cannot
 * open (not root, no syscall tracepoints). */
static int cma_start(struct cm_collector *c, struct cm_error *err)
{
	struct cm_error e;

	if (!c->o.cma)
		return 0;
	c->cma_at = cm_cma_attrib_new(c->tr, c->o.cma_bytes_per_unit);
	if (!c->cma_at)
		return cm_errorf(err, ENOMEM, "collect: out of memory");
	c->cma = cm_cma_tracer_new(NULL, &e);
	if (!c->cma)
		cm_collect_set_problem(c, "message passing (CMA) not seen: %s", e.text);
	return 0;
}

struct cm_collector *cm_collect_new(const struct cm_collect_opts *o,
				    struct cm_tracker *t,
				    struct cm_error *err)
{
	struct cm_collector *c;
	struct cm_detect_config dc;
	long hz = sysconf(_SC_CLK_TCK);

	if (!o || !t) {
		cm_errorf(err, EINVAL, "collect: NULL options or tracker");
		return NULL;
	}
	if (check_opts(o, err))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		cm_errorf(err, ENOMEM, "collect: out of memory");
		return NULL;
	}
	c->o = *o;
	c->tr = t;
	c->ns_per_tick = hz > 0 ? 1000000000ull / (uint64_t)hz : 10000000ull;
	if (choose_backend(c, err))
		goto fail;
	cm_collect_rate_setup(c);
	if (c->backend != CM_COLLECT_FAULT) {
		c->s = cm_perf_sampler_new(&c->pcfg, err);
		if (!c->s)
			goto fail;
		c->st.samplers = 1;
	}
	if (c->backend == CM_COLLECT_SAMPLE) {
		/* rsp/rbp operands kept: the mapping says what is stack
		 * (evidence.h), rbp is a general register at -O2. */
		c->dec = cm_decoder_new(o->lookback, o->decode_flags |
					CM_DECODE_KEEP_STACK, err);
		if (!c->dec)
			goto fail;
	}
	cm_detect_config_default(&dc);
	dc.block_size = 1u << o->block_shift;
	dc.slots = o->table_slots;
	dc.window_ns = c->backend == CM_COLLECT_FAULT ? o->fault_window_ns
		       : o->window_ns;
	c->table = cm_detect_table_new(&dc, err);
	if (!c->table || fault_start(c, err) || cma_start(c, err))
		goto fail;
	c->ov = cm_overlap_new(0, 0);
	c->shm = cm_shm_owners_new();
	if (!c->ov || !c->shm) {
		cm_errorf(err, ENOMEM, "collect: out of memory");
		goto fail;
	}
	cm_record_detect(o->record, &dc);
	c->t0_ns = cm_collect_clock_ns(CLOCK_MONOTONIC);
	c->st.overhead = -1;
	cm_collect_periods_push(c, c->backend == CM_COLLECT_HW ? c->pcfg.hw_period :
		     c->backend == CM_COLLECT_FAULT ? 0 : c->pcfg.period_ns);
	return c;
fail:
	cm_collect_free(c);
	return NULL;
}

static void proc_release(struct cproc *p)
{
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	p->mem_fd = -1;
	cm_maps_free(&p->maps);
	memset(&p->maps, 0, sizeof(p->maps));
	p->maps_loaded = false;
	p->nstacks = 0;
}

void cm_collect_free(struct cm_collector *c)
{
	if (!c)
		return;
	if (c->calib_running)
		pthread_join(c->calib_th, NULL);
	for (int i = 0; i < c->nprocs; i++)
		proc_release(&c->procs[i]);
	free(c->procs);
	free(c->threads);
	cm_perf_sampler_free(c->s);
	cm_fault_sampler_free(c->fs);
	cm_cma_tracer_free(c->cma);
	cm_cma_attrib_free(c->cma_at);
	cm_shm_owners_free(c->shm);
	if (c->numa_held) {
		struct cm_numa_balancing_paths p = { c->o.numa_sysctl,
						     c->o.numa_state };

		cm_numa_balancing_release(&p, getpid(), NULL);
	}
	cm_decoder_free(c->dec);
	cm_detect_table_free(c->table);
	cm_overlap_free(c->ov);
	free(c);
}

/* ---- sync: attaching ------------------------------------------------- */

/* User CPU time of a thread in clock ticks (/proc/PID/task/TID/stat field
 * 14).  -1 when the thread is gone. */
static int read_utime(const struct cm_collector *c, pid_t pid, pid_t tid,
		      uint64_t *utime)
{
	char path[256], buf[1024];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/task/%d/stat",
		 c->o.proc_root ? c->o.proc_root : "/proc", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* The space before field k, from ")": state is field 3, utime
	 * field 14. */
	for (int field = 3; field <= 14; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -1;
	}
	*utime = strtoull(p + 1, NULL, 10);
	return 0;
}

/* Attach thread i.  1 attached, 0 gone, -1 fatal (err filled). */
static int attach_thread(struct cm_collector *c, int i, struct cm_error *err)
{
	const struct cm_tracked_thread *th = cm_tracker_thread(c->tr, i);
	struct cm_error e;

	if (cm_perf_sampler_attach(c->s, th->tid, &e) == 0) {
		c->threads[i].state = TH_ATTACHED;
		c->st.attached++;
		return 1;
	}
	if (errno == ESRCH) {
		c->threads[i].state = TH_GONE;
		c->st.gone++;
		return 0;
	}
	return cm_errorf(err, errno, "%s", e.text);
}

/* Should the threads of process p be attached one by one?  Yes at the
 * first sync, for roots, and for children of processes not sampled. */
static bool attach_whole(const struct cm_collector *c, int p)
{
	const struct cm_tracked_proc *pr = cm_tracker_proc(c->tr, p);

	if (!c->first_sync_done || pr->parent < 0 ||
	    pr->parent >= c->nprocs)
		return true;
	return !c->procs[pr->parent].sampled;
}

static void make_pending(struct cm_collector *c, int i)
{
	const struct cm_tracked_thread *th = cm_tracker_thread(c->tr, i);
	const struct cm_tracked_proc *pr = cm_tracker_proc(c->tr, th->proc);
	struct cthread *ct = &c->threads[i];

	if (read_utime(c, pr->pid, th->tid, &ct->utime0)) {
		ct->state = TH_GONE;
		c->st.gone++;
		return;
	}
	ct->utime_prev = ct->utime0;
	ct->base_samples = ct->samples;
	ct->state = TH_PENDING;
	c->st.inherited++;
}

/* A presumed-inherited thread: compare its samples with the user time it
 * had at the previous sync (whose samples have been drained since).
 * Returns 1 if it was attached now, 0 otherwise, -1 fatal. */
static int check_pending(struct cm_collector *c, int i, struct cm_error *err)
{
	const struct cm_tracked_thread *th = cm_tracker_thread(c->tr, i);
	const struct cm_tracked_proc *pr = cm_tracker_proc(c->tr, th->proc);
	struct cthread *ct = &c->threads[i];
	uint64_t now, expected, got;

	if (c->backend != CM_COLLECT_SAMPLE) {
		/* A period in events gives no expected rate: trust
		 * inheritance. */
		ct->state = TH_COVERED;
		c->st.confirmed++;
		return 0;
	}
	if (read_utime(c, pr->pid, th->tid, &now)) {
		ct->state = TH_GONE;
		return 0;
	}
	expected = (ct->utime_prev - ct->utime0) * c->ns_per_tick /
		   c->pcfg.period_ns;
	ct->utime_prev = now;
	if (expected < COVER_MIN_EXPECTED)
		return 0;
	got = ct->samples - ct->base_samples;
	if (got * COVER_RATIO >= expected) {
		ct->state = TH_COVERED;
		c->st.confirmed++;
		return 0;
	}
	if (attach_thread(c, i, err) != 1)
		return c->threads[i].state == TH_GONE ? 0 : -1;
	c->st.attached--;	/* counted as late instead */
	c->st.late_attached++;
	return 1;
}

/* Processes seen for the first time: decide how their threads are
 * sampled; exited ones release their fd and maps. */
static void sync_procs(struct cm_collector *c, int np, bool *whole)
{
	for (int p = 0; p < np; p++) {
		const struct cm_tracked_proc *pr = cm_tracker_proc(c->tr, p);
		struct cproc *cp = &c->procs[p];

		if (!cp->seen) {
			cp->seen = true;
			whole[p] = attach_whole(c, p);
			cp->sampled = true;
		}
		if (!pr->alive && (cp->mem_fd >= 0 || cp->maps_loaded))
			proc_release(cp);
	}
}

/* The kernel filters of the fault sampler and the CMA tracer list our
 * live threads; rebuild them when the set changed (threads only get new
 * indexes, so the number of indexes and of live ones tell). */
static void fault_filter_sync(struct cm_collector *c)
{
	int n = cm_tracker_nthreads(c->tr), alive = 0, k = 0;
	pid_t *tids;

	for (int i = 0; i < n; i++)
		alive += cm_tracker_thread(c->tr, i)->alive != 0;
	if (n == c->filter_nthreads && alive == c->filter_nalive)
		return;
	tids = malloc((size_t)(alive ? alive : 1) * sizeof(*tids));
	if (!tids)
		return;	/* the old filter stays: retried next sync */
	for (int i = 0; i < n; i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(c->tr, i);

		if (th->alive)
			tids[k++] = th->tid;
	}
	if (c->fs)
		cm_fault_sampler_set_tids(c->fs, tids, k);
	if (c->cma)
		cm_cma_tracer_set_tids(c->cma, tids, k);
	free(tids);
	c->filter_nthreads = n;
	c->filter_nalive = alive;
}

/* Thread i's identity into the recording, once: when a sync first sees
 * it (its arrival), or at its first access. */
void cm_collect_record_identity(struct cm_collector *c, int i)
{
	const struct cm_tracked_thread *th;
	const struct cm_tracked_proc *pr;

	if (!c->o.record || cm_record_has_thread(c->o.record, i))
		return;
	th = cm_tracker_thread(c->tr, i);
	pr = th ? cm_tracker_proc(c->tr, th->proc) : NULL;
	cm_record_thread(c->o.record, i, pr ? pr->pid : 0, th ? th->tid : 0,
			 pr ? pr->rank : -1, th ? th->index : -1);
}

int cm_collect_sync(struct cm_collector *c, struct cm_error *err)
{
	int n, np, attached = 0;
	bool *whole;

	if (!c)
		return cm_errorf(err, EINVAL, "collect: NULL collector");
	n = cm_tracker_nthreads(c->tr);
	np = cm_tracker_nprocs(c->tr);
	if (cm_collect_ensure(c, n, np))
		return cm_errorf(err, ENOMEM, "collect: out of memory");
	whole = calloc((size_t)np + 1, sizeof(*whole));
	if (!whole)
		return cm_errorf(err, ENOMEM, "collect: out of memory");
	sync_procs(c, np, whole);
	for (int i = 0; i < n; i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(c->tr, i);
		struct cthread *ct = &c->threads[i];
		int r = 0;

		if (!th->alive) {
			if (ct->state == TH_NEW || ct->state == TH_PENDING)
				ct->state = TH_GONE;
			continue;
		}
		cm_collect_record_identity(c, i);
		if (!c->s)
			continue;	/* faults only: nothing to attach */
		if (ct->state == TH_NEW && whole[th->proc])
			r = attach_thread(c, i, err);
		else if (ct->state == TH_NEW)
			make_pending(c, i);
		else if (ct->state == TH_PENDING)
			r = check_pending(c, i, err);
		if (r < 0) {
			free(whole);
			return -1;
		}
		attached += r;
	}
	free(whole);
	c->first_sync_done = true;
	if (c->fs || c->cma)
		fault_filter_sync(c);
	return attached;
}

int cm_collect_pollfds(const struct cm_collector *c, struct pollfd *pfd,
		       int max)
{
	int n = 0;

	if (c && c->s)
		n = cm_perf_sampler_pollfds(c->s, pfd, max);
	if (c && c->fs)
		n += cm_fault_sampler_pollfds(c->fs, pfd + n, max - n);
	if (c && c->cma)
		n += cm_cma_tracer_pollfds(c->cma, pfd + n, max - n);
	return n;
}

uint64_t cm_collect_thread_samples(const struct cm_collector *c, int i)
{
	if (!c || i < 0 || i >= c->nthreads)
		return 0;
	return c->threads[i].samples;
}

const char *cm_collect_last_problem(const struct cm_collector *c)
{
	return c ? c->problem : "";
}

void cm_collect_forget(struct cm_collector *c)
{
	if (c) {
		cm_detect_table_clear(c->table);
		cm_overlap_clear(c->ov);
	}
}

void cm_collect_stats(const struct cm_collector *c,
		      struct cm_collect_stats *st)
{
	struct cm_perf_stats ps;

	memset(st, 0, sizeof(*st));
	if (!c)
		return;
	*st = c->st;
	memset(&ps, 0, sizeof(ps));
	if (c->s)
		cm_perf_sampler_stats(c->s, &ps);
	cm_collect_perf_add(&ps, &c->perf_base);
	st->backend = c->backend;
	st->period = c->backend == CM_COLLECT_HW ? c->pcfg.hw_period
		     : c->backend == CM_COLLECT_FAULT ? 0 : c->pcfg.period_ns;
	st->samples = ps.samples;
	st->lost = ps.lost;
	st->throttle = ps.throttle;
	st->malformed = ps.malformed;
	st->kernel = ps.kernel;
	cm_detect_stats(c->table, &st->table);
	cm_overlap_stats(c->ov, &st->overlap);
	st->budget_on = c->budget_on;
	st->budget = c->budget;
	st->tasks = c->s ? cm_perf_sampler_ntasks(c->s) : 0;
	st->events_open = c->s ? cm_perf_sampler_nevents(c->s) : 0;
	st->fault_on = c->fs != NULL;
	st->numa_held = c->numa_held;
	st->cma_on = c->cma != NULL;
	cm_cma_tracer_stats(c->cma, &st->cma);
	cm_cma_attrib_stats(c->cma_at, &st->cma_attrib);
	cm_shm_owners_stats(c->shm, &st->shm);
	if (c->fs) {
		struct cm_fault_stats fs;

		cm_fault_sampler_stats(c->fs, &fs);
		st->fault_records = fs.records;
		st->fault_lost = fs.lost;
		st->fault_malformed = fs.malformed;
		st->fault_filters = fs.filters;
		st->fault_filter_fail = fs.filter_fail;
	}
}

static void spend_row(const struct cm_collect_stats *st,
		      const struct cm_rate_spend *sp,
		      struct cm_result_spend *row)
{
	struct cm_rate_config cfg;

	cm_rate_config_default(&cfg);
	cfg.sample_cost_ns = st->sample_cost_ns;
	row->t = (double)sp->start_ns / 1e9;
	snprintf(row->phase, sizeof(row->phase), "%s",
		 cm_rate_phase_name(sp->phase));
	row->period_us = (unsigned)(sp->period_ns / 1000u);
	row->app_cpu_s = (double)sp->app_cpu_ns / 1e9;
	row->agent_cpu_s = (double)sp->agent_cpu_ns / 1e9;
	row->samples = sp->samples;
	row->overhead = cm_rate_spend_overhead(&cfg, sp);
}

void cm_collect_result_stats(const struct cm_collect_stats *st,
			     struct cm_result_stats *out)
{
	int n = st->budget_on ? st->budget.nspend : 0;

	if (n > CM_RESULT_SPEND_MAX)
		n = CM_RESULT_SPEND_MAX;
	out->nbudget = n;
	for (int k = 0; k < n; k++)
		spend_row(st, &st->budget.spend[k], &out->budget[k]);
	out->drops_on = st->backend == CM_COLLECT_SAMPLE;
	out->drop_spin = st->decode_fail[CM_DECODE_SPIN];
	out->drop_syscall = st->decode_fail[CM_DECODE_SYSCALL];
	out->drop_repeat = st->repeats;
	out->drop_stack = st->refs.refs[CM_REF_STACK];
}
