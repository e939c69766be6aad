/* collect.c: sampler + decoder + sharer table, driven by the tracker.
 * See collect.h for the contract and docs/detection.md, "Pipeline".
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <asm/perf_regs.h>

#include "collect.h"
#include "evidence.h"
#include "record.h"
#include "cma_attrib.h"
#include "cma_trace.h"
#include "fault_sample.h"
#include "numa_balancing.h"
#include "sample_rate.h"
#include "grow.h"

/* Code bytes read after IP: the longest x86 instruction. */
#define CODE_AFTER 16u
#define CODE_BEFORE_MIN 16u
#define CODE_BEFORE_MAX (CM_DECODE_MAX_WINDOW - CODE_AFTER)
/* Coverage check of presumed-inherited threads: decide once this many
 * samples are expected, attach when fewer than 1/COVER_RATIO came. */
#define COVER_MIN_EXPECTED 20u
#define COVER_RATIO 10u
/* Thread stacks remembered per process (mappings that held a sampled
 * stack pointer); past this, a thread's own stack is still known from
 * its sample's stack pointer. */
#define PROC_STACKS 128
/* Mappings this large are shadow memory (classify). */
#define SHADOW_MIN_BYTES (1ull << 40)

enum th_state {
	TH_NEW = 0,	/* not yet seen by sync */
	TH_ATTACHED,	/* attached one by one */
	TH_PENDING,	/* presumed inherited, coverage not yet checked */
	TH_COVERED,	/* inherited, confirmed by its samples */
	TH_GONE,	/* exited before it was attached or checked */
};

struct cthread {
	uint8_t state;
	uint64_t samples;	/* passed the identity check */
	uint64_t base_samples;	/* samples when it became pending */
	uint64_t utime0;	/* user ticks when it became pending */
	uint64_t utime_prev;	/* user ticks at the previous sync */
};

struct cproc {
	bool seen;		/* handled by sync */
	bool sampled;		/* its threads are attached or inherited */
	bool maps_loaded;
	bool mem_failed;	/* /proc/PID/mem could not be opened */
	int mem_fd;
	uint64_t maps_gen;	/* drain generation of the last load */
	struct cm_maps maps;
	uint64_t stacks[PROC_STACKS];	/* start of each stack mapping */
	int nstacks;
};

struct cm_collector {
	struct cm_collect_opts o;
	enum cm_collect_backend backend;	/* SAMPLE or HW */
	struct cm_perf_config pcfg;
	struct cm_perf_sampler *s;	/* NULL with backend FAULT */
	struct cm_fault_sampler *fs;	/* NULL without faults */
	struct cm_cma_tracer *cma;	/* NULL without CMA tracing */
	struct cm_cma_attrib *cma_at;
	bool numa_held;
	int filter_nthreads, filter_nalive;	/* tids in the filter */
	struct cm_decoder *dec;
	struct cm_detect_table *table;
	struct cm_overlap *ov;		/* overlap of access distributions */
	struct cm_tracker *tr;
	struct cproc *procs;
	int nprocs, capprocs;
	struct cthread *threads;
	int nthreads, capthreads;
	bool first_sync_done;
	uint64_t gen;			/* drain generation */
	uint64_t ns_per_tick;
	struct cm_perf_stats perf_base;	/* of freed samplers */
	struct cm_collect_stats st;	/* pipeline counters */
	/* adaptive period */
	struct cm_rate_config rcfg;
	struct cm_rate_state rate;
	/* the measurement of a sample's cost, on its own thread: it writes
	 * calib_cost and calib_cpu, then calib_state (1 done, 2 failed) */
	pthread_t calib_th;
	bool calib_running;
	atomic_int calib_state;
	uint64_t calib_cost, calib_cpu;
	bool rate_started;
	uint64_t t0_ns, rate_app_ns, rate_agent_ns, rate_samples;
	uint64_t drain_cpu_ns;	/* this thread's CPU time in drains */
	char problem[CM_ERROR_TEXT_MAX];
	uint8_t code[CM_DECODE_MAX_WINDOW];
};

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

static void set_problem(struct cm_collector *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_problem(struct cm_collector *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->problem, sizeof(c->problem), fmt, ap);
	va_end(ap);
}

/* Make room for tracker thread indexes < n and process indexes < np. */
static int ensure(struct cm_collector *c, int n, int np)
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
		set_problem(c, "fault backend: %s", e.text);
	}
	if (read_sysctl(c->o.numa_sysctl, &v) == 0 && v == 1)
		return;
	if (!c->o.numa_manage)
		set_problem(c, "fault backend: kernel.numa_balancing is %d "
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
		set_problem(c, "+fault ignored: %s", e.text);
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
		set_problem(c, "message passing (CMA) not seen: %s", e.text);
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Record a period in use from now (the latest CM_COLLECT_PERIODS_MAX). */
static void periods_push(struct cm_collector *c, uint64_t period)
{
	struct cm_collect_stats *st = &c->st;

	if (st->nperiods == CM_COLLECT_PERIODS_MAX) {
		memmove(st->periods, st->periods + 1,
			(CM_COLLECT_PERIODS_MAX - 1) * sizeof(st->periods[0]));
		st->nperiods--;
	}
	st->periods[st->nperiods].t =
		(double)(clock_ns(CLOCK_MONOTONIC) - c->t0_ns) / 1e9;
	st->periods[st->nperiods].period = period;
	st->nperiods++;
}

/* ---- measuring the cost of a sample (sample_rate.h) ----------------- */

#define CALIB_PERIOD_NS 100000ull	/* 100 µs: ~10 samples per chunk */
#define CALIB_CHUNK_NS 1000000ull	/* ~1 ms of CPU per chunk */
#define CALIB_RING_PAGES 8u		/* ~40 samples per round fit */

/* Fixed work: register arithmetic, no memory traffic to be disturbed by
 * other jobs' caches; the asm keeps the compiler from folding the loop. */
static uint64_t spin(uint64_t n)
{
	uint64_t x = 1;

	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

/* Thread CPU time of n iterations. */
static uint64_t timed_spin(uint64_t n)
{
	uint64_t t = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	spin(n);
	return clock_ns(CLOCK_THREAD_CPUTIME_ID) - t;
}

/* Iterations for about CALIB_CHUNK_NS of CPU (the first run warms up). */
static uint64_t chunk_work(void)
{
	const uint64_t probe = 100000;
	uint64_t t;

	timed_spin(probe);
	t = timed_spin(probe);
	return probe * CALIB_CHUNK_NS / (t ? t : 1) + 1;
}

static uint64_t sampler_samples(const struct cm_perf_sampler *s)
{
	struct cm_perf_stats ps;

	cm_perf_sampler_stats(s, &ps);
	return ps.samples;
}

/* Round r: the chunks without sampling, then with a sampler attached to
 * this thread, counting the samples of the sampled chunks only. */
static int calib_round(const struct cm_perf_config *cfg, uint64_t work,
		       struct cm_rate_calib *cal, int r, struct cm_error *err)
{
	struct cm_perf_sampler *s;
	uint64_t before;

	for (int k = 0; k < cal->chunks; k++)
		cal->without_ns[r][k] = timed_spin(work);
	s = cm_perf_sampler_new(cfg, err);
	if (!s)
		return -1;
	if (cm_perf_sampler_attach(s, (pid_t)syscall(SYS_gettid), err)) {
		cm_perf_sampler_free(s);
		return -1;
	}
	cm_perf_sampler_read(s, NULL, NULL);
	before = sampler_samples(s);
	for (int k = 0; k < cal->chunks; k++)
		cal->with_ns[r][k] = timed_spin(work);
	cm_perf_sampler_read(s, NULL, NULL);
	cal->samples[r] = sampler_samples(s) - before;
	cm_perf_sampler_free(s);
	return 0;
}

int cm_collect_measure_sample_cost(const struct cm_collect_opts *o,
				   uint64_t *cost_ns,
				   struct cm_rate_calib *cal,
				   struct cm_error *err)
{
	struct cm_rate_calib local;
	struct cm_perf_config cfg;
	uint64_t work;

	if (!o || !cost_ns)
		return cm_errorf(err, EINVAL, "collect: NULL argument");
	if (!cal)
		cal = &local;
	memset(cal, 0, sizeof(*cal));
	cal->rounds = CM_RATE_CALIB_ROUNDS;
	cal->chunks = CM_RATE_CALIB_CHUNKS;
	cm_perf_config_default(&cfg);
	cfg.clock = o->clock;
	cfg.period_ns = CALIB_PERIOD_NS;
	cfg.ring_pages = CALIB_RING_PAGES;
	work = chunk_work();
	for (int r = 0; r < cal->rounds; r++)
		if (calib_round(&cfg, work, cal, r, err))
			return -1;
	*cost_ns = cm_rate_cost_estimate(cal);
	if (!*cost_ns)
		return cm_errorf(err, EAGAIN, "collect: no sample in %d ms of "
				 "CPU time: the sampling timer does not fire",
				 CM_RATE_CALIB_ROUNDS * CM_RATE_CALIB_CHUNKS);
	return 0;
}

/* ---- the measured cost kept per node (o->cost_cache) --------------- */

#define COST_CACHE_MAX_AGE_S 3600

/* This boot's id: a cost measured before a reboot (another kernel,
 * perhaps other hardware under the VM) is not reused. */
static int boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ok && buf[0] ? 0 : -1;
}

/* The cached cost for this boot and clock, measured less than an hour
 * ago; 0 when there is none (missing, stale, malformed). */
static uint64_t cost_cache_read(const struct cm_collect_opts *o)
{
	char boot[64], line[256], want[64];
	unsigned long long cost = 0, at = 0;
	unsigned clk = 0;
	time_t now = time(NULL);
	FILE *f;

	if (!o->cost_cache || boot_id(want, sizeof(want)) < 0)
		return 0;
	f = fopen(o->cost_cache, "r");
	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "commap-sample-cost 1 %63s %u %llu %llu", boot, &clk,
		   &cost, &at) != 4)
		cost = 0;
	fclose(f);
	if (cost < CM_RATE_COST_MIN_NS || cost > CM_RATE_COST_MAX_NS ||
	    strcmp(boot, want) != 0 || clk != (unsigned)o->clock ||
	    (time_t)at > now || now - (time_t)at > COST_CACHE_MAX_AGE_S)
		return 0;
	return cost;
}

/* Keep a measured cost for the next agents (best effort: written to a
 * temporary file and renamed, so readers never see half a line). */
static void cost_cache_write(const struct cm_collect_opts *o, uint64_t cost)
{
	char boot[64], tmp[4096];
	FILE *f;

	if (!o->cost_cache || boot_id(boot, sizeof(boot)) < 0 ||
	    snprintf(tmp, sizeof(tmp), "%s.%d", o->cost_cache,
		     (int)getpid()) >= (int)sizeof(tmp))
		return;
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "commap-sample-cost 1 %s %u %llu %llu\n", boot,
		(unsigned)o->clock, (unsigned long long)cost,
		(unsigned long long)time(NULL));
	if (fclose(f) != 0 || rename(tmp, o->cost_cache) != 0)
		unlink(tmp);
}

static void *calib_main(void *arg)
{
	struct cm_collector *c = arg;
	uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), cost = 0;
	struct cm_error e;
	int rc = cm_collect_measure_sample_cost(&c->o, &cost, NULL, &e);

	c->calib_cost = rc == 0 ? cost : 0;
	c->calib_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	atomic_store(&c->calib_state, rc == 0 ? 1 : 2);
	return NULL;
}

/* Take the measured cost once it is there (wait: block for it); with
 * period_auto, switch to the period it gives and restart the adaptive
 * window from there.  1 when applied now. */
static int calib_apply(struct cm_collector *c, bool wait, struct cm_matrix *m,
		       struct cm_error *err)
{
	uint64_t next;

	if (!c->calib_running ||
	    (!wait && atomic_load(&c->calib_state) == 0))
		return 0;
	pthread_join(c->calib_th, NULL);
	c->calib_running = false;
	c->st.sample_cost_pending = 0;
	c->st.calib_cpu_ns = c->calib_cpu;
	if (atomic_load(&c->calib_state) != 1)
		return 0;	/* the default cost stays */
	c->rcfg.sample_cost_ns = c->calib_cost;
	c->st.sample_cost_ns = c->calib_cost;
	c->st.sample_cost_measured = 1;
	c->rate_started = false;
	cost_cache_write(&c->o, c->calib_cost);
	if (!c->o.period_auto || !c->s)
		return 1;
	next = cm_rate_initial_period(&c->rcfg);
	if (next == c->pcfg.period_ns)
		return 1;
	if (cm_collect_set_period(c, next, m, err) < 0)
		return -1;
	periods_push(c, next);
	return 1;
}

int cm_collect_calibration_wait(struct cm_collector *c, struct cm_matrix *m,
				struct cm_error *err)
{
	if (!c)
		return cm_errorf(err, EINVAL, "collect: NULL collector");
	return calib_apply(c, true, m, err) < 0 ? -1 : 0;
}

/* The adaptive period's configuration: the cost of a sample (the online
 * model needs it too, also from a given period) and, with period_auto,
 * the first period from it.  The cost is measured on a thread of its own
 * (~35 ms of CPU, more under load) so that nothing waits for it; until
 * it is known the default cost and its period are used.  A cost another
 * agent measured on this node within the hour (o->cost_cache) is taken
 * at once instead.  When it cannot
 * be measured the default cost stays; the sampler's own attach says why
 * perf refuses, if it does. */
static void rate_setup(struct cm_collector *c)
{
	uint64_t cached;

	cm_rate_config_default(&c->rcfg);
	if (!(c->o.overhead_target > 0) || c->backend != CM_COLLECT_SAMPLE)
		return;
	/* Aim below the budget by the model's measured error
	 * (sample_rate.h, CM_RATE_AIM). */
	c->rcfg.target = c->o.overhead_target * CM_RATE_AIM;
	cached = cost_cache_read(&c->o);
	if (cached) {
		c->rcfg.sample_cost_ns = cached;
		c->st.sample_cost_measured = 1;
		c->st.sample_cost_cached = 1;
	}
	c->st.sample_cost_ns = c->rcfg.sample_cost_ns;
	if (c->o.period_auto)
		c->pcfg.period_ns = cm_rate_initial_period(&c->rcfg);
	if (cached)
		return;
	atomic_init(&c->calib_state, 0);
	if (pthread_create(&c->calib_th, NULL, calib_main, c) == 0) {
		c->calib_running = true;
		c->st.sample_cost_pending = 1;
	}
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
	rate_setup(c);
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
	if (!c->ov) {
		cm_errorf(err, ENOMEM, "collect: out of memory");
		goto fail;
	}
	cm_record_detect(o->record, &dc);
	c->t0_ns = clock_ns(CLOCK_MONOTONIC);
	c->st.overhead = -1;
	periods_push(c, c->backend == CM_COLLECT_HW ? c->pcfg.hw_period :
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
static void record_identity(struct cm_collector *c, int i)
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
	if (ensure(c, n, np))
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
		record_identity(c, i);
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

/* ---- drain: the per-sample path -------------------------------------- */

struct drain_ctx {
	struct cm_collector *c;
	struct cm_matrix *m;
	int nomem;
};

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
		set_problem(c, "%s", e.text);
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
		set_problem(c, "cannot read code of process %d: %s: %s "
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
		set_problem(c, "reading code of process %d at 0x%" PRIx64
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
 * the thread's identity (record_identity) before its first access. */
static void record_ref(struct cm_collector *c, int i,
		       const struct cm_block_key *key, uint64_t region,
		       int cls, uint64_t time)
{
	record_identity(c, i);
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

/* Enter one data reference of thread i (process p) as evidence
 * (evidence.h); sp_region: the mapping of the sample's stack pointer. */
static void account_ref(struct drain_ctx *d, int i, int p, pid_t pid,
			uint64_t addr, uint64_t time, uint64_t sp_region)
{
	struct cm_collector *c = d->c;
	struct cproc *cp = &c->procs[p];
	const struct cm_map_region *reg;
	struct cm_block_key key;
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
	ev = cm_evidence_add(c->table, c->ov, d->m, i, &key,
			     reg && !key.shared ? reg->start : 0, cls, time,
			     &c->st.refs);
	if (ev < 0) {
		d->nomem = 1;
		return;
	}
	if (cls == CM_REF_STACK)
		return;
	c->st.accesses++;
	c->st.events += (uint64_t)ev;
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
	    ensure(c, i + 1, th->proc + 1))
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
	struct drain_ctx *d = arg;
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
	struct drain_ctx *d = arg;

	if (!d->nomem && cm_cma_attrib_add(d->c->cma_at, x, d->m) < 0)
		d->nomem = 1;
}

static void on_sample(const struct cm_perf_sample *smp, void *arg)
{
	struct drain_ctx *d = arg;
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
	struct drain_ctx d = { c, m, 0 };
	uint64_t t;
	long n;

	if (!c || !m)
		return cm_errorf(err, EINVAL, "collect: NULL argument");
	c->gen++;
	t = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	n = c->s ? cm_perf_sampler_read(c->s, on_sample, &d) : 0;
	if (c->fs)
		n += cm_fault_sampler_read(c->fs, on_fault, &d);
	if (c->cma)
		n += cm_cma_tracer_read(c->cma, on_cma, &d);
	c->drain_cpu_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - t;
	if (d.nomem)
		return cm_errorf(err, ENOMEM, "collect: the matrix cannot "
				 "grow (out of memory)");
	return n;
}

/* ---- period, accessors ----------------------------------------------- */

static void perf_add(struct cm_perf_stats *a, const struct cm_perf_stats *b)
{
	a->samples += b->samples;
	a->no_regs += b->no_regs;
	a->lost += b->lost;
	a->throttle += b->throttle;
	a->unthrottle += b->unthrottle;
	a->other += b->other;
	a->kernel += b->kernel;
	a->malformed += b->malformed;
	a->bytes += b->bytes;
}

/* Attach every live thread to sampler s one by one. */
static int attach_all_live(struct cm_collector *c, struct cm_perf_sampler *s,
			   struct cm_error *err)
{
	int n = cm_tracker_nthreads(c->tr);

	for (int i = 0; i < n; i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(c->tr, i);
		struct cm_error e;

		if (!th->alive || cm_perf_sampler_attach(s, th->tid, &e) == 0)
			continue;
		if (errno != ESRCH)
			return cm_errorf(err, errno, "%s", e.text);
	}
	return 0;
}

int cm_collect_set_period(struct cm_collector *c, uint64_t period,
			  struct cm_matrix *m, struct cm_error *err)
{
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_perf_stats old;
	struct drain_ctx d = { c, m, 0 };
	int n;

	if (!c || !period)
		return cm_errorf(err, EINVAL, "collect: bad period");
	if (!c->s)
		return cm_errorf(err, EINVAL, "collect: the fault backend has "
				 "no sampling period");
	cfg = c->pcfg;
	if (c->backend == CM_COLLECT_HW)
		cfg.hw_period = period;
	else
		cfg.period_ns = period;
	s = cm_perf_sampler_new(&cfg, err);
	if (!s)
		return -1;
	if (attach_all_live(c, s, err)) {
		cm_perf_sampler_free(s);
		return -1;
	}
	c->gen++;
	cm_perf_sampler_read(c->s, m ? on_sample : NULL, &d);
	cm_perf_sampler_stats(c->s, &old);
	perf_add(&c->perf_base, &old);
	cm_perf_sampler_free(c->s);
	c->s = s;
	c->pcfg = cfg;
	c->st.samplers++;
	n = cm_tracker_nthreads(c->tr);
	if (ensure(c, n, cm_tracker_nprocs(c->tr)))
		return cm_errorf(err, ENOMEM, "collect: out of memory");
	for (int i = 0; i < n; i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(c->tr, i);

		c->threads[i].state = th->alive ? TH_ATTACHED : TH_GONE;
	}
	if (d.nomem)
		return cm_errorf(err, ENOMEM, "collect: the matrix cannot "
				 "grow (out of memory)");
	return 0;
}

static uint64_t samples_so_far(const struct cm_collector *c)
{
	struct cm_perf_stats ps;

	cm_perf_sampler_stats(c->s, &ps);
	return ps.samples + c->perf_base.samples;
}

int cm_collect_adapt_period(struct cm_collector *c, const double *cpu_s,
			    int n, struct cm_matrix *m, struct cm_error *err)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	uint64_t agent = c ? c->drain_cpu_ns : 0;
	uint64_t samples, app = 0, next;
	double app_s = 0;
	int changed = 0;

	if (!c || !c->s || c->backend != CM_COLLECT_SAMPLE ||
	    !(c->o.overhead_target > 0))
		return 0;
	switch (calib_apply(c, false, m, err)) {
	case -1:
		return -1;
	case 1:
		changed = 1;
		samples = samples_so_far(c);
		agent = c->drain_cpu_ns;
		break;
	}
	for (int i = 0; cpu_s && i < n; i++)
		if (cpu_s[i] > 0)
			app_s += cpu_s[i];
	app = (uint64_t)(app_s * 1e9);
	samples = samples_so_far(c);
	if (!c->rate_started) {
		cm_rate_init(&c->rate, &c->rcfg, c->pcfg.period_ns, now);
		c->rate_started = true;
	} else {
		/* Counters only grow; a thread that vanished from cpu_s
		 * could make app shrink: count nothing then. */
		next = cm_rate_update(&c->rate, &c->rcfg,
				      app > c->rate_app_ns ?
				      app - c->rate_app_ns : 0,
				      agent - c->rate_agent_ns,
				      samples - c->rate_samples, now);
		c->st.overhead = c->rate.last_overhead;
		if (next) {
			int rv = cm_collect_set_period(c, next, m, err);

			cm_rate_applied(&c->rate, c->pcfg.period_ns,
					clock_ns(CLOCK_MONOTONIC));
			if (rv < 0)
				return -1;
			c->st.period_changes++;
			periods_push(c, next);
			changed = 1;
			samples = samples_so_far(c);
			agent = c->drain_cpu_ns;
		}
	}
	c->rate_app_ns = app;
	c->rate_agent_ns = agent;
	c->rate_samples = samples;
	return changed;
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
	perf_add(&ps, &c->perf_base);
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
	st->tasks = c->s ? cm_perf_sampler_ntasks(c->s) : 0;
	st->events_open = c->s ? cm_perf_sampler_nevents(c->s) : 0;
	st->fault_on = c->fs != NULL;
	st->numa_held = c->numa_held;
	st->cma_on = c->cma != NULL;
	cm_cma_tracer_stats(c->cma, &st->cma);
	cm_cma_attrib_stats(c->cma_at, &st->cma_attrib);
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
