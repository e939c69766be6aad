/* collect.h: the node agent's collection pipeline, from "the tracker knows
 * threads" to "the communication matrix grows".
 *
 *   tracker (proc_track.h) --sync--> perf sampler (perf_sample.h)
 *   rings --drain--> identity check --> decoder (decode.h, sample backend)
 *         --> key (detect_table.h maps: private or (dev, inode, offset))
 *         --> sharer table (SPCD §III) --> struct cm_matrix
 *
 * The matrix is indexed by the tracker's thread index
 * (cm_tracker_thread(t, i)), so the agent maps thread i to its identity
 * (rank, creation index) with the tracker.
 *
 * Attaching (cm_collect_sync).  Events are inherited (perf_sample.h): a
 * thread or process created by a sampled task after the event was opened
 * is sampled through its creator's event, and attaching it as well would
 * sample it twice.  So:
 *   - every thread of a process seen for the first time is attached one by
 *     one when the process is a root (cm_tracker_add_root), or its parent
 *     process is not sampled, or at the first sync (they all existed
 *     before any event);
 *   - a later thread of a sampled process, and every thread of a new child
 *     process of a sampled process, is presumed covered by inheritance and
 *     not attached.  Its coverage is then checked from its own sample rate:
 *     once it has run enough user CPU time for ~20 samples (read from
 *     /proc/PID/task/TID/stat at later syncs), a thread with less than a
 *     tenth of the expected samples was created by a thread before that
 *     one was attached (a race between the tracker's scan and the attach)
 *     and is attached then ("late_attached").  This needs the rings to be
 *     drained between syncs (the agent's loop does drain, scan, sync).
 *
 * Draining (cm_collect_drain).  Per sample, without allocation or system
 * call in the common case: tid -> tracker index (hash), identity check
 * (the sample's pid must be the process the tracker has for that thread),
 * samples of threads that are not ours dropped there, before decoding;
 * then the decoder's per-IP cache (code bytes read from /proc/PID/mem only
 * on a miss, one open fd per process), the process's maps snapshot
 * (reloaded at most once per drain and process, on an address it does not
 * cover), the sharer table and the matrix.
 *
 * Reading another process's code needs ptrace access to it (root, or the
 * same user with kernel.yama.ptrace_scope 0, or a descendant with 1); a
 * refusal is counted (code_read_fail) and described by
 * cm_collect_last_problem().
 *
 * Page faults (fault backend, fault_sample.h): with backend FAULT, or
 * add_fault with any other backend, NUMA-balancing hinting faults of our
 * threads are read from the exceptions:page_fault_user tracepoint; the
 * kernel filter is refreshed at each sync when the set of live threads
 * changed; each hinting fault goes through the same identity check, keys
 * and sharer table as a decoded sample; first-touch faults are counted
 * only.  kernel.numa_balancing is turned on while the collector lives
 * (numa_manage, reference-counted with the other agents of the node:
 * numa_balancing.h) and restored by cm_collect_free.
 *
 * Message passing (opts.cma, on by default): every process_vm_readv/
 * writev call (Cross Memory Attach, how MPI libraries copy large messages
 * between the ranks of a node) is read from the syscall tracepoints
 * (cma_trace.h) and its bytes added between the calling thread and the
 * peer process's MPI thread (cma_attrib.h).  Without root the tracer
 * cannot open: a problem (cm_collect_last_problem), the rest runs.
 *
 * Not thread-safe: one collector per agent thread.  Functions return -1
 * with errno and a message in the optional struct cm_error.  Details and
 * measurements: docs/detection.md, "Pipeline".
 */
#ifndef COMMAP_NODEAGENT_COLLECT_H
#define COMMAP_NODEAGENT_COLLECT_H

#include <poll.h>
#include <stdint.h>

#include "commap/error.h"
#include "commap/matrix.h"
#include "cma_attrib.h"
#include "cma_trace.h"
#include "shm_owner.h"
#include "decode.h"
#include "detect_overlap.h"
#include "detect_table.h"
#include "evidence.h"
#include "perf_sample.h"
#include "proc_track.h"
#include "sample_rate.h"

enum cm_collect_backend {
	CM_COLLECT_SAMPLE = 0,	/* software address sampling + decoder */
	CM_COLLECT_HW,		/* PEBS / IBS: the PMU gives the address */
	CM_COLLECT_AUTO,	/* hw where the probe says usable, else sample */
	CM_COLLECT_FAULT,	/* page faults only (fault_sample.h) */
};

/* Name of a backend ("sample", "hw", "auto", "fault"); "?" if out of
 * range. */
const char *cm_collect_backend_name(enum cm_collect_backend b);
/* Parse a name; 0 or -1/EINVAL. */
int cm_collect_backend_parse(const char *name, enum cm_collect_backend *b);

struct cm_recorder;

struct cm_collect_opts {
	enum cm_collect_backend backend;	/* default CM_COLLECT_SAMPLE */
	enum cm_perf_clock clock;	/* sample: default cpu-clock */
	uint64_t period_ns;	/* sample: ns of CPU time per sample, 1 ms */
	uint64_t hw_period;	/* hw: events per sample, 10007 */
	unsigned ring_pages;	/* data pages per CPU ring, 64 */
	unsigned block_shift;	/* block = 1 << shift bytes, 6..21, 12 */
	uint64_t window_ns;	/* SPCD time window, 100 ms; 0 unbounded */
	uint32_t table_slots;	/* sharer table slots, power of 2, 2^18 */
	int lookback;		/* decoder look-back, 0..16, 4 */
	unsigned decode_flags;	/* CM_DECODE_KEEP_*, 0 */
	unsigned code_before;	/* code bytes read before IP on a decoder
				 * miss, 16..496, 64 (docs/decoder.md) */
	const char *proc_root;	/* NULL: "/proc" (maps and code) */
	const char *sysfs_root;	/* hw probe; NULL: "/sys" */
	/* fault backend */
	int add_fault;		/* also page faults (SAMPLE/HW/AUTO) */
	int numa_manage;	/* 1 (default): set kernel.numa_balancing=1
				 * while collecting, 0: leave it as it is */
	const char *tracefs;	/* NULL: /sys/kernel/tracing (mounted if
				 * needed) */
	const char *numa_sysctl;	/* NULL: the /proc/sys one */
	const char *numa_state;	/* NULL: /run/commap/numa_balancing */
	const char *cost_cache;	/* the measured cost of a sample, kept
				 * per boot and clock for an hour so later
				 * agents on the node need not measure;
				 * NULL: none */
	unsigned fault_ring_pages;	/* per CPU, 16 */
	/* message passing: CMA calls (cma_trace.h, cma_attrib.h) */
	int cma;		/* 1 (default): trace process_vm_readv/writev;
				 * not permitted is a problem, not an error */
	double cma_bytes_per_unit;	/* 0: CM_CMA_BYTES_PER_UNIT */
	struct cm_recorder *record;	/* NULL, or every access entering
					 * the sharer table is recorded there
					 * (record.h; owned by the caller) */
	uint64_t fault_window_ns;	/* backend FAULT: the table's window,
					 * 0 (default) unbounded: a scan pass
					 * gives a page one fault, passes are
					 * seconds apart (platform notes) */
	/* adaptive period (sample backend, sample_rate.h) */
	double overhead_target;	/* fraction of the app's CPU time, e.g.
				 * 0.01; 0 (default): the period is fixed */
	int period_auto;	/* with overhead_target > 0: begin at the
				 * period that spends the target on samples
				 * of the cost measured at start
				 * (sample_rate.h; the cost is measured
				 * whenever overhead_target > 0); period_ns
				 * is then ignored.  0 (default): begin at
				 * period_ns */
};

/* Fill the defaults above. */
void cm_collect_opts_default(struct cm_collect_opts *o);

/* Sampling periods kept in the stats (the latest ones). */
#define CM_COLLECT_PERIODS_MAX 8

struct cm_collect_period {
	double t;		/* seconds since cm_collect_new */
	uint64_t period;	/* ns */
};

struct cm_collect_stats {
	enum cm_collect_backend backend;	/* SAMPLE, HW or FAULT */
	uint64_t period;	/* current period (ns, or events for hw) */
	/* perf, summed over every sampler this collector had */
	uint64_t samples;	/* sample records read */
	uint64_t lost;		/* dropped by the kernel (ring full) */
	uint64_t throttle;
	uint64_t malformed;	/* corrupt ring data (resynced) */
	uint64_t kernel;	/* hw samples in kernel mode, dropped */
	/* identity: samples + ... dropped before decoding */
	uint64_t foreign;	/* not a process of ours (or a reused tid) */
	uint64_t unknown_tid;	/* our process, thread not yet scanned */
	uint64_t ours;		/* samples of our threads (passed on) */
	/* decoding (sample backend) */
	uint64_t decoded;	/* samples that gave at least one address */
	uint64_t decode_fail[CM_DECODE_NREASONS];	/* per reason (spin
						 * waits and system calls
						 * among them) */
	uint64_t repeats;	/* decoded, but at the IP and cache line of
				 * the thread's previous sample: dropped */
	uint64_t code_reads;	/* /proc/PID/mem reads (decoder misses) */
	uint64_t code_read_fail;	/* IP not mapped or code unreadable */
	/* keys */
	uint64_t maps_loads;	/* /proc/PID/maps reads (first + refresh) */
	uint64_t maps_refreshes;	/* reloads on an address not covered */
	uint64_t unmapped;	/* address in no mapping: keyed private */
	uint64_t shared_refs;	/* references keyed by (dev, inode, off) */
	/* evidence (evidence.h): refs = accesses + stack references */
	struct cm_evidence_counts refs;	/* references per class */
	struct cm_overlap_stats overlap;	/* the overlap estimator */
	/* table */
	uint64_t accesses;	/* references entered in the table (stack
				 * references are dropped before it) */
	uint64_t events;	/* communication events added to matrices */
	struct cm_detect_stats table;
	/* attaching */
	uint64_t attached;	/* threads attached one by one */
	uint64_t inherited;	/* presumed covered by inheritance */
	uint64_t confirmed;	/* ... and confirmed by their sample rate */
	uint64_t late_attached;	/* ... but not covered: attached */
	uint64_t gone;		/* threads gone before they were attached */
	uint64_t samplers;	/* samplers created (1 + period changes) */
	int tasks, events_open;	/* of the current sampler */
	/* page faults (fault backend or add_fault) */
	int fault_on;		/* the fault sampler is open */
	int numa_held;		/* kernel.numa_balancing acquired */
	uint64_t fault_records;	/* = fault_foreign + fault_unknown_tid
				 * + fault_ours */
	uint64_t fault_lost, fault_malformed;
	uint64_t fault_foreign, fault_unknown_tid;
	uint64_t fault_ours;	/* = fault_hinting + fault_first_touch */
	uint64_t fault_hinting;	/* present bit set: entered in the table */
	uint64_t fault_first_touch;	/* page not present: counted only */
	uint64_t fault_filters;	/* kernel tid filters installed */
	uint64_t fault_filter_fail;	/* ... refused: no filter */
	/* CMA calls (opts.cma) */
	int cma_on;		/* the tracer is open */
	struct cm_cma_stats cma;	/* records, lost, pairing */
	struct cm_cma_attrib_stats cma_attrib;	/* into the matrix */
	/* references into shared segments and their owners (shm_owner.h) */
	struct cm_shm_stats shm;
	/* adaptive period: the initial one then each change, oldest first
	 * (only the last CM_COLLECT_PERIODS_MAX) */
	uint64_t period_changes;
	double overhead;	/* estimate at the last decision, -1 none */
	uint64_t sample_cost_ns;	/* per sample, used by the adaptive
					 * period (0 when it is off) */
	int sample_cost_measured;	/* 1: measured at start, 0: the
					 * default */
	int sample_cost_pending;	/* 1: still being measured (the
					 * default cost and period meanwhile) */
	int sample_cost_cached;	/* 1: taken from o->cost_cache */
	uint64_t calib_cpu_ns;	/* CPU time the measurement took */
	int nperiods;
	struct cm_collect_period periods[CM_COLLECT_PERIODS_MAX];
	/* the budget over the run (sample_rate.h, point 3): what each
	 * phase spent, when; budget_on 0 when the period is not adapted */
	int budget_on;
	struct cm_rate_budget budget;
};

struct cm_collector;

/* New collector for the threads of tracker t (t must outlive it).
 * Creates the decoder, the sharer table and a sampler with nothing
 * attached yet.  backend HW without a usable PMU fails with ENOENT and the
 * probe's reason; AUTO falls back to SAMPLE.  backend FAULT fails when the
 * fault sampler cannot open (ENOENT no tracepoint/tracefs, EACCES/EPERM);
 * with add_fault that failure is only a problem (cm_collect_last_problem)
 * and the other backend runs alone.  A kernel.numa_balancing that cannot
 * be turned on is a problem too (only first-touch faults then).  NULL
 * with errno/err (EINVAL bad option, ENOMEM, ENOENT). */
struct cm_collector *cm_collect_new(const struct cm_collect_opts *o,
				    struct cm_tracker *t,
				    struct cm_error *err);
void cm_collect_free(struct cm_collector *c);

/* Bring sampling up to date with the tracker (call after each
 * cm_tracker_scan): attach the threads it found since the last call that
 * inheritance does not cover (see the top of this file), check the
 * coverage of presumed-inherited ones, forget exited processes' fds.
 * Returns the number of threads attached now (>= 0); a thread gone
 * meanwhile is skipped (counted in gone).  -1 with errno/err when perf
 * refuses: EACCES/EPERM (the message names kernel.perf_event_paranoid),
 * ENOENT/EOPNOTSUPP (event unsupported), EMFILE, ENOMEM — the agent logs
 * the message and runs the job unpinned. */
int cm_collect_sync(struct cm_collector *c, struct cm_error *err);

/* Read every ring without blocking and add the communication events of
 * every sample to m (indexed by the tracker's thread index; m grows when
 * an index is beyond its size).  Returns the number of samples read
 * (ours or not), -1/ENOMEM when m could not grow (the rest of the
 * samples read are still counted), -1/EINVAL on NULL arguments. */
long cm_collect_drain(struct cm_collector *c, struct cm_matrix *m,
		      struct cm_error *err);

/* Change the sampling period (ns for sample, events for hw).  The kernel
 * does not pass a new period on to inherited events, so this drains the
 * current rings into m (NULL: their samples are discarded), creates a new
 * sampler and attaches every live thread of the tracker one by one, then
 * closes the old one.  Cost: one perf_event_open + ioctl per (thread,
 * CPU) and one ring mmap per CPU, ~0.1 ms per thread on 2 CPUs (measured
 * in docs/detection.md); call it rarely (the agent's adaptive loop, not
 * per interval).  On failure the old sampler stays in use.  -1/EINVAL
 * with backend FAULT (faults have no period). */
int cm_collect_set_period(struct cm_collector *c, uint64_t period,
			  struct cm_matrix *m, struct cm_error *err);

/* The adaptive period (opts.overhead_target > 0, sample backend only;
 * else a no-op returning 0): call once per interval with the
 * application's CPU time so far, cpu_s[0..n) seconds per tracker thread
 * (< 0 unknown: skipped).  Takes the samples read and the CPU time the
 * agent spent in cm_collect_drain since the last call (the per-sample
 * costs the period controls; the agent's fixed costs, scans and mapping,
 * are not the period's business), feeds the policy of sample_rate.h
 * (target, bounds 250 µs - 10 ms, the first decision after 1 s, then at
 * most every 4 s, a change only when the overhead is above 1.1 × or below
 * 0.7 × the target; with period_auto a learning phase at 3 × the budget
 * first, for 2 s of application CPU time) and applies a change with
 * cm_collect_set_period(c, new, m, err).  1 changed, 0 not, -1 when the
 * change failed (the old period stays). */
int cm_collect_adapt_period(struct cm_collector *c, const double *cpu_s,
			    int n, struct cm_matrix *m, struct cm_error *err);

/* A phase change (the agent saw the threads' partners change): learn
 * again at the learning phase's rate, for half the first learning
 * phase's application CPU time (sample_rate.h, point 3).  1 when a
 * learning phase began now, 0 when none (no adaptive period, a period
 * the user chose, already learning), -1 when the period could not be
 * set (the phase is accounted all the same). */
int cm_collect_relearn(struct cm_collector *c, struct cm_matrix *m,
		       struct cm_error *err);
/* Measure what one sample of the sample backend costs the thread it
 * interrupts (sample_rate.h, "Measuring the cost of a sample"): the
 * calling thread spins through CM_RATE_CALIB_ROUNDS rounds of
 * CM_RATE_CALIB_CHUNKS chunks of ~1 ms of CPU without sampling, then as
 * many sampled every 100 µs (o->clock, the agent's registers and sample
 * type: the real per-sample work of the kernel), timed in thread CPU time.
 * Takes ~35 ms of this thread's CPU.  Fills *cost_ns
 * (cm_rate_cost_estimate) and, when cal is not NULL, the raw
 * measurements.  0, or -1 with errno/err when perf cannot sample this
 * thread (EACCES/EPERM ...) or no sample came (EAGAIN). */
int cm_collect_measure_sample_cost(const struct cm_collect_opts *o,
				   uint64_t *cost_ns,
				   struct cm_rate_calib *cal,
				   struct cm_error *err);

/* cm_collect_new measures the cost on a thread of its own, so that the
 * agent's start (and learned pins) never wait for it: the collector
 * samples at the default cost's period meanwhile, and the first
 * cm_collect_adapt_period after the measurement applies it (the period
 * from the budget with period_auto).  This waits for the measurement and
 * applies it at once (tests; m as for cm_collect_set_period).  0, or -1
 * when the new period cannot be set. */
int cm_collect_calibration_wait(struct cm_collector *c, struct cm_matrix *m,
				struct cm_error *err);

/* Poll descriptors of the rings (POLLIN when a ring is a quarter full);
 * returns how many were written.  They change after set_period. */
int cm_collect_pollfds(const struct cm_collector *c, struct pollfd *pfd,
		       int max);

/* Samples of tracker thread i passed on so far (0 if unknown). */
uint64_t cm_collect_thread_samples(const struct cm_collector *c, int i);

/* The last non-fatal problem met (code or maps unreadable, ...), "" if
 * none: lets the agent log one line about degraded detection. */
const char *cm_collect_last_problem(const struct cm_collector *c);

/* Forget every block of the sharer table (e.g. after a phase change);
 * counters stay. */
void cm_collect_forget(struct cm_collector *c);

void cm_collect_stats(const struct cm_collector *c,
		      struct cm_collect_stats *st);

/* The result document's budget and drop fields (agent_result.h:
 * "sample_budget", "dropped") from st; the other fields are left. */
struct cm_result_stats;
void cm_collect_result_stats(const struct cm_collect_stats *st,
			     struct cm_result_stats *out);

#endif
