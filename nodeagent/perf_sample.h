/* perf_sample.h: (thread, instruction, registers | data address) samples
 * from perf events, for the "sample" and "hw" detection backends.
 *
 * sample: a CPU-time clock (cpu-clock or task-clock, user mode only) fires
 * every period_ns of a thread's CPU time and records TID, TIME, IP and the
 * user registers; decode.h turns IP + registers into the data address.
 * hw: a hardware memory-sampling PMU (Intel PEBS load latency, AMD IBS op)
 * records TID, TIME, IP and the data address itself (PERF_SAMPLE_ADDR).
 *
 * Events are inherited: one event per (attached task, CPU) with inherit=1
 * follows every thread and process that task creates later, and samples carry
 * the TID of the thread that ran.  The kernel refuses to mmap an inherited
 * event opened for "any CPU" (cpu = -1: EINVAL), so there is one ring buffer
 * per CPU; every further event on that CPU writes into it
 * (PERF_EVENT_IOC_SET_OUTPUT, same CPU only).  Rings are read without
 * blocking; poll() on cm_perf_sampler_pollfds() wakes when one is a quarter
 * full.  Details and measurements: docs/detection.md.
 *
 * The record parser is a pure function over bytes (cm_perf_ring_next,
 * cm_perf_parse_record) so that it is tested on hand-built buffers.
 *
 * Functions return -1 with errno and a message in the optional struct
 * cm_error: EINVAL bad argument, EBADMSG malformed record, EACCES/EPERM not
 * allowed (the message names kernel.perf_event_paranoid), ENOENT/EOPNOTSUPP
 * event not supported here, ESRCH no such thread, ENOMEM, EMFILE.
 */
#ifndef COMMAP_NODEAGENT_PERF_SAMPLE_H
#define COMMAP_NODEAGENT_PERF_SAMPLE_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"
#include "decode.h"

/* User registers sampled by default: the 16 general registers and IP
 * (PERF_REG_X86_AX..DI, BP, SP, IP, R8..R15); flags and segments are not
 * needed to evaluate a memory operand. */
#define CM_PERF_REGS_MASK 0xff01ffull

/* Default and smallest sampling periods of the sample backend. */
#define CM_PERF_DEFAULT_PERIOD_NS 1000000ull	/* 1 ms of CPU time */
#define CM_PERF_MIN_PERIOD_NS 10000ull		/* 10 us */
/* Default ring size per CPU, in data pages (power of two). */
#define CM_PERF_DEFAULT_RING_PAGES 64u

/* ---- Records: pure parsing ------------------------------------------- */

/* What a PERF_RECORD_SAMPLE contains: the event's sample_type and
 * sample_regs_user.  Supported sample_type bits: IDENTIFIER, IP, TID, TIME,
 * ADDR, ID, STREAM_ID, CPU, PERIOD, REGS_USER, WEIGHT, DATA_SRC. */
struct cm_perf_layout {
	uint64_t sample_type;
	uint64_t regs_mask;
};

/* Layouts of the two backends. */
#define CM_PERF_SAMPLE_TYPE_SW 0x1007ull	/* TID|TIME|IP|REGS_USER */
#define CM_PERF_SAMPLE_TYPE_HW 0x000full	/* TID|TIME|IP|ADDR */

/* -1/EINVAL when the layout has a sample_type bit the parser does not
 * know (their order in the record would be guessed). */
int cm_perf_layout_check(const struct cm_perf_layout *lay,
			 struct cm_error *err);

enum cm_perf_kind {
	CM_PERF_REC_SAMPLE = 1,
	CM_PERF_REC_LOST,	/* PERF_RECORD_LOST or LOST_SAMPLES */
	CM_PERF_REC_THROTTLE,
	CM_PERF_REC_UNTHROTTLE,
	CM_PERF_REC_OTHER,	/* any other type: skipped by its size */
};

struct cm_perf_sample {
	uint32_t pid, tid;	/* process and thread (PERF_SAMPLE_TID) */
	uint32_t cpu;
	uint64_t time;		/* ns, the event's clock */
	uint64_t ip;
	uint64_t addr;		/* data address (hw backend) */
	uint64_t period, weight, data_src, id;
	int has_regs_block;	/* the layout samples user registers */
	uint64_t regs_abi;	/* PERF_SAMPLE_REGS_ABI_*; NONE: no regs */
	struct cm_regs regs;	/* regs.valid == 0 when there are none */
};

struct cm_perf_record {
	enum cm_perf_kind kind;
	uint32_t type;		/* PERF_RECORD_* */
	uint16_t misc;
	uint16_t size;		/* bytes, header included */
	uint64_t lost;		/* CM_PERF_REC_LOST: samples dropped */
	struct cm_perf_sample sample;	/* CM_PERF_REC_SAMPLE */
};

/* Parse one record rec[0..len) (len: bytes available, at least the
 * header's size).  0 with out filled, -1/EBADMSG when the header size is
 * below 8 or beyond len, a known record is shorter than its fields, or the
 * user registers are not 64-bit; -1/EINVAL on a bad layout. */
int cm_perf_parse_record(const struct cm_perf_layout *lay, const void *rec,
			 size_t len, struct cm_perf_record *out,
			 struct cm_error *err);

/* Next record of a ring: data[0..size) is the ring's data area (size a
 * power of two), head the kernel's data_head, *tail the reader's position
 * (both free-running byte counters).  A record that wraps at the end of
 * the data area is copied into buf (bufsize >= 65535 always suffices).
 * 1: *rec and *len give the record and *tail moved past it; 0: ring empty;
 * -1/EBADMSG: zero or short header size, record beyond head, or more bytes
 * pending than the ring holds (the reader should skip to head). */
int cm_perf_ring_next(const uint8_t *data, uint64_t size, uint64_t head,
		      uint64_t *tail, uint8_t *buf, size_t bufsize,
		      const uint8_t **rec, size_t *len, struct cm_error *err);

/* Counters (reset only when the sampler is created). */
struct cm_perf_stats {
	uint64_t samples;	/* sample records */
	uint64_t no_regs;	/* samples without user registers */
	uint64_t lost;		/* samples the kernel dropped (ring full) */
	uint64_t throttle, unthrottle;
	uint64_t other;		/* other records skipped */
	uint64_t kernel;	/* hw samples in kernel mode, dropped */
	uint64_t malformed;	/* corrupt records; the ring was resynced */
	uint64_t bytes;		/* ring bytes consumed */
};

/* Add a parsed record to the counters. */
void cm_perf_stats_account(struct cm_perf_stats *st,
			   const struct cm_perf_record *rec);

/* ---- Hardware memory sampling probe (hw backend) --------------------- */

enum cm_perf_hw_kind {
	CM_PERF_HW_NONE = 0,
	CM_PERF_HW_PEBS,	/* Intel cpu/mem-loads (load latency) */
	CM_PERF_HW_IBS,		/* AMD ibs_op */
	CM_PERF_HW_SPE,		/* Arm arm_spe_N */
};

struct cm_perf_hw {
	enum cm_perf_hw_kind kind;
	char pmu[64];		/* e.g. "cpu", "ibs_op" */
	uint32_t type;		/* the PMU's perf type (sysfs .../type) */
	uint64_t config, config1;
	int precise_ip;
	char reason[CM_ERROR_TEXT_MAX];	/* why not usable, or what was found */
};

/* Name of a kind ("none", "pebs", "ibs", "spe"). */
const char *cm_perf_hw_kind_name(enum cm_perf_hw_kind k);

/* Look for a memory-sampling PMU under SYSFS/bus/event_source/devices
 * (sysfs_root NULL: "/sys") and fill hw with its event.  1 found, 0 none
 * (hw->reason says what was looked for and what exists), -1/EINVAL bad
 * argument.  Reads files only. */
int cm_perf_hw_find(const char *sysfs_root, struct cm_perf_hw *hw);

/* cm_perf_hw_find, then open the event on the calling thread to see that
 * the kernel accepts it.  1 usable, 0 not (hw->reason says why), -1/EINVAL. */
int cm_perf_hw_probe(const char *sysfs_root, struct cm_perf_hw *hw);

/* ---- Sampler --------------------------------------------------------- */

enum cm_perf_backend { CM_PERF_BACKEND_SAMPLE = 0, CM_PERF_BACKEND_HW };
enum cm_perf_clock { CM_PERF_CPU_CLOCK = 0, CM_PERF_TASK_CLOCK };

struct cm_perf_config {
	enum cm_perf_backend backend;
	enum cm_perf_clock clock;	/* sample backend */
	uint64_t period_ns;		/* sample: ns of CPU time per sample */
	uint64_t regs_mask;		/* sample: user registers */
	struct cm_perf_hw hw;		/* hw: from cm_perf_hw_probe */
	uint64_t hw_period;		/* hw: events per sample */
	unsigned ring_pages;		/* data pages per CPU ring */
};

/* Defaults: sample backend, cpu-clock, 1 ms, CM_PERF_REGS_MASK, 64 pages,
 * hw_period 10007. */
void cm_perf_config_default(struct cm_perf_config *cfg);

struct cm_perf_sampler;

/* Validate cfg and prepare one (not yet mapped) ring per possible CPU.
 * Nothing is opened until the first attach.  NULL with errno/err. */
struct cm_perf_sampler *cm_perf_sampler_new(const struct cm_perf_config *cfg,
					    struct cm_error *err);
/* Close every event and unmap the rings. */
void cm_perf_sampler_free(struct cm_perf_sampler *s);

/* Sample task tid (a thread id; a process's pid is its main thread) and,
 * by inheritance, every thread and process it creates from now on: one
 * event per online CPU.  Attaching a tid again is a no-op returning 0;
 * threads that already exist must be attached one by one (inheritance only
 * covers tasks created after the event).  On failure nothing stays open. */
int cm_perf_sampler_attach(struct cm_perf_sampler *s, pid_t tid,
			   struct cm_error *err);

/* Called for every sample read; the sample is valid during the call. */
typedef void (*cm_perf_sample_fn)(const struct cm_perf_sample *smp,
				  void *arg);

/* Drain every ring without blocking, calling fn (may be NULL) for each
 * sample, the samples of all CPUs merged in time order; lost/throttle/other
 * records and corrupt data go to the counters.
 * Returns the number of samples delivered. */
long cm_perf_sampler_read(struct cm_perf_sampler *s, cm_perf_sample_fn fn,
			  void *arg);

/* Change the period of every event this sampler opened (sample: ns; hw:
 * events), i.e. of the attached tasks themselves.  The kernel does not
 * pass PERF_EVENT_IOC_PERIOD on to inherited copies (measured on 6.18:
 * threads created after attach keep the old period) nor to tasks created
 * later by an inherited thread.  To change the rate of every thread, make
 * a new sampler and attach every live thread (docs/detection.md). */
int cm_perf_sampler_set_period(struct cm_perf_sampler *s, uint64_t period,
			       struct cm_error *err);

/* One pollfd (POLLIN) per mapped ring; returns how many were written. */
int cm_perf_sampler_pollfds(const struct cm_perf_sampler *s,
			    struct pollfd *pfd, int max);

/* Tasks attached, events open. */
int cm_perf_sampler_ntasks(const struct cm_perf_sampler *s);
int cm_perf_sampler_nevents(const struct cm_perf_sampler *s);

void cm_perf_sampler_stats(const struct cm_perf_sampler *s,
			   struct cm_perf_stats *st);

/* The layout of this sampler's sample records. */
void cm_perf_sampler_layout(const struct cm_perf_sampler *s,
			    struct cm_perf_layout *lay);

#endif
