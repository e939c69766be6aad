/* collect_internal.h: the collector's state, shared by its files (not
 * part of the interface: collect.h is).
 *
 *   collect.c        options, life cycle, attaching (sync), accessors
 *   collect_calib.c  the cost of a sample: measured, cached per boot
 *   collect_drain.c  the per-sample path: identity, decoding, evidence
 *   collect_rate.c   the sampling period: changes and the adaptive policy
 */
#ifndef COMMAP_NODEAGENT_COLLECT_INTERNAL_H
#define COMMAP_NODEAGENT_COLLECT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "collect.h"
#include "fault_sample.h"

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
	uint64_t last_ip, last_line;	/* of its previous decoded sample */
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
	struct cm_shm_owners *shm;	/* segments' owners (shm_owner.h) */
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
	struct cm_rate_budget budget;	/* phases (sample_rate.h, point 3) */
	bool budget_on, budget_base;	/* on; rate_* hold a baseline */
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

/* What a drain passes to the per-sample callbacks. */
struct cm_drain_ctx {
	struct cm_collector *c;
	struct cm_matrix *m;
	int nomem;
};

static inline uint64_t cm_collect_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* collect.c */
void cm_collect_set_problem(struct cm_collector *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Make room for tracker thread indexes < n and process indexes < np. */
int cm_collect_ensure(struct cm_collector *c, int n, int np);
/* Thread i's identity into the recording, once. */
void cm_collect_record_identity(struct cm_collector *c, int i);

/* collect_calib.c */
/* Set up the adaptive period's configuration and start measuring the
 * cost of a sample (or take the cached one). */
void cm_collect_rate_setup(struct cm_collector *c);
/* Take the measured cost once it is there (wait: block for it); 1 when
 * applied now, 0 not, -1 the new period could not be set. */
int cm_collect_calib_apply(struct cm_collector *c, bool wait,
			   struct cm_matrix *m, struct cm_error *err);

/* collect_drain.c */
/* One sample of the sample or hw backend (arg: struct cm_drain_ctx). */
void cm_collect_on_sample(const struct cm_perf_sample *smp, void *arg);

/* collect_rate.c */
/* The period the current phase's target gives with the cost known now. */
uint64_t cm_collect_phase_period(const struct cm_collector *c);
/* Record a period in use from now (the latest CM_COLLECT_PERIODS_MAX). */
void cm_collect_periods_push(struct cm_collector *c, uint64_t period);
void cm_collect_perf_add(struct cm_perf_stats *a,
			 const struct cm_perf_stats *b);

#endif
