/* cma_trace.h: single-copy transfers between processes, seen in the
 * kernel.
 *
 * MPI libraries move messages above their eager limit between the ranks
 * of a node with Cross Memory Attach: one rank calls process_vm_readv (or
 * process_vm_writev) naming the peer's pid and buffers, and the kernel
 * copies.  No user instruction touches the peer's memory, so address
 * sampling cannot see that traffic (docs/detection.md, "Message
 * passing").  The syscall tracepoints can: syscalls:sys_enter_process_vm_
 * {readv,writev} give the caller and the peer pid, sys_exit_... the bytes
 * copied.  Each call is counted, not sampled.
 *
 * The tracer opens the four tracepoints on every online CPU (pid -1),
 * sample_type TID | TIME | RAW, every event (period 1), all four writing
 * into one ring per CPU.  A record tells its tracepoint by the raw entry's
 * common_type, which is the tracepoint's id.  Until the first
 * cm_cma_tracer_set_tids every process's calls are recorded; then a
 * kernel filter on common_pid lists the consumer's threads (as the fault
 * sampler's), so other jobs' calls on the node are not written to the
 * rings.  The consumer still checks each record's identity (a thread
 * created since the last filter update is not in it, a filter too long
 * for the kernel is replaced by none).
 *
 * The enter and the exit of one call may land in different CPUs' rings
 * (the thread migrated) and be read in either order, so a read takes every
 * ring's records into one bounded buffer, sorts them by time and pairs
 * them per thread (cm_cma_pairer: a fixed table, an exit with no enter
 * waits for its enter for a while).  A pair whose exit returned > 0 is a
 * transfer: (caller pid, tid, peer pid, bytes, direction, time).
 *
 * Every store is bounded: the record buffer (CM_CMA_BATCH records, a full
 * buffer is processed and refilled), the pairing table
 * (CM_CMA_PAIR_SLOTS threads; a call of a thread that finds no slot is
 * dropped and counted), the rings (lost records counted from the kernel's
 * PERF_RECORD_LOST).
 *
 * Tracepoints read CPU-wide need root or CAP_PERFMON (or
 * kernel.perf_event_paranoid <= -1); the tracer then fails with
 * EACCES/EPERM and the collector runs without it.  The record parser, the
 * format-file parser and the pairer are pure, unit-tested
 * (tests/unit/test_cma_trace.c) and fuzzed (tests/fuzz/fuzz_cma_record.c).
 * Functions return -1 with errno and a message in the optional struct
 * cm_error.
 */
#ifndef COMMAP_NODEAGENT_CMA_TRACE_H
#define COMMAP_NODEAGENT_CMA_TRACE_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"

/* PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW */
#define CM_CMA_SAMPLE_TYPE 0x406ull
#define CM_CMA_DEFAULT_RING_PAGES 64u
/* Records sorted and paired at once. */
#define CM_CMA_BATCH 4096
/* Threads with a call in flight (power of two). */
#define CM_CMA_PAIR_SLOTS 1024u
/* An exit read before its enter waits this long (ns of record time) for
 * it; an enter whose exit never comes (the thread died) is replaced. */
#define CM_CMA_ORPHAN_NS 1000000000ull

enum cm_cma_kind {
	CM_CMA_ENTER_READ = 0,	/* sys_enter_process_vm_readv */
	CM_CMA_ENTER_WRITE,	/* sys_enter_process_vm_writev */
	CM_CMA_EXIT_READ,	/* sys_exit_process_vm_readv */
	CM_CMA_EXIT_WRITE,	/* sys_exit_process_vm_writev */
	CM_CMA_NKINDS
};

/* The four tracepoints: ids (the raw entry's common_type) and where the
 * fields are (byte offsets in the raw entry). */
struct cm_cma_format {
	uint64_t id[CM_CMA_NKINDS];
	unsigned type_off;	/* common_type, 2 bytes */
	unsigned pid_off;	/* enter: pid, 8 bytes */
	unsigned ret_off;	/* exit: ret, 8 bytes */
	unsigned min_enter, min_exit;	/* raw bytes needed */
};

/* The x86-64 layout (common_type 0, pid 16, ret 16) with ids 0. */
void cm_cma_format_default(struct cm_cma_format *f);

/* Find field `name` of `size` bytes in the text of a tracepoint's format
 * file: 0 with *off; -1/EBADMSG naming it when it is missing, has another
 * size or an offset that is not a number. */
int cm_cma_format_field(const char *text, const char *name, unsigned size,
			unsigned *off, struct cm_error *err);

struct cm_cma_event {
	uint32_t pid, tid;	/* the caller */
	uint64_t time;		/* ns, CLOCK_MONOTONIC */
	enum cm_cma_kind kind;
	int64_t value;		/* enter: peer pid; exit: return value */
};

/* Parse a PERF_RECORD_SAMPLE of layout CM_CMA_SAMPLE_TYPE (rec[0..len),
 * header included).  0 with ev filled; 1 when the record is a sample of
 * none of the four tracepoints (skipped); -1/EBADMSG when it is shorter
 * than its header size or fields, its raw size runs past the record or is
 * too short for the entry; -1/EINVAL on NULL or a non-sample record. */
int cm_cma_parse_sample(const struct cm_cma_format *f, const void *rec,
			size_t len, struct cm_cma_event *ev,
			struct cm_error *err);

/* ---- pairing (pure) --------------------------------------------------- */

struct cm_cma_transfer {
	uint32_t pid, tid;	/* caller */
	uint32_t peer;		/* the other process (as the caller named it) */
	int write;		/* 1 process_vm_writev, 0 readv */
	uint64_t bytes;		/* copied (the exit's return value) */
	uint64_t time;		/* of the exit */
};

struct cm_cma_pair_stats {
	uint64_t calls;		/* pairs made (any return value) */
	uint64_t failed;	/* ... returned <= 0: no bytes */
	uint64_t bytes;		/* copied, over all transfers */
	uint64_t no_slot;	/* events dropped: the table was full */
	uint64_t unpaired;	/* enters replaced, exits that found no enter
				 * in time, mismatched directions */
};

struct cm_cma_pairer;

/* NULL/ENOMEM.  The table holds CM_CMA_PAIR_SLOTS threads. */
struct cm_cma_pairer *cm_cma_pairer_new(void);
void cm_cma_pairer_free(struct cm_cma_pairer *p);

/* Feed one event, in time order per thread.  1 with *out a finished call
 * (out->bytes 0 when the call failed), 0 when none finished. */
int cm_cma_pairer_feed(struct cm_cma_pairer *p, const struct cm_cma_event *ev,
		       struct cm_cma_transfer *out);

void cm_cma_pairer_stats(const struct cm_cma_pairer *p,
			 struct cm_cma_pair_stats *st);

/* Sort events by time (stable for equal times).  Pure. */
void cm_cma_sort(struct cm_cma_event *ev, size_t n);

/* ---- the tracer ------------------------------------------------------- */

struct cm_cma_config {
	const char *tracefs;	/* NULL: /sys/kernel/tracing (mounted if
				 * needed, then the debugfs path tried) */
	unsigned ring_pages;	/* data pages per CPU ring, power of 2 */
};

void cm_cma_config_default(struct cm_cma_config *cfg);

struct cm_cma_stats {
	uint64_t records;	/* tracepoint records read */
	uint64_t lost;		/* dropped by the kernel (ring full) */
	uint64_t malformed;	/* corrupt records (the ring was resynced) */
	uint64_t other;		/* other records skipped */
	uint64_t filters;	/* filters installed */
	uint64_t filter_fail;	/* filters refused (too long, ...): none */
	struct cm_cma_pair_stats pair;
};

struct cm_cma_tracer;

/* Find the four tracepoints, open them on every online CPU, map the rings
 * and enable them.  NULL with errno/err: ENOENT no tracefs or tracepoint
 * (the message says which), EACCES/EPERM not allowed (the message names
 * kernel.perf_event_paranoid), EMFILE, ENOMEM. */
struct cm_cma_tracer *cm_cma_tracer_new(const struct cm_cma_config *c,
					struct cm_error *err);
void cm_cma_tracer_free(struct cm_cma_tracer *t);

/* Record only these threads' calls (tids sorted in place; n == 0: none).
 * Opens four new events per CPU with the filter, writing into the same
 * rings, and closes the previous ones (call it when the thread set
 * changed, not per interval).  A filter the kernel refuses (too long) is
 * replaced by none.  0 with the filter installed, 1 with no filter, -1
 * with errno (EINVAL, or the events could not be opened: the previous
 * ones stay). */
int cm_cma_tracer_set_tids(struct cm_cma_tracer *t, pid_t *tids, int n);

typedef void (*cm_cma_fn)(const struct cm_cma_transfer *x, void *arg);

/* Drain every ring without blocking; fn (may be NULL) is called per
 * finished call with bytes > 0.  Returns the number of records read. */
long cm_cma_tracer_read(struct cm_cma_tracer *t, cm_cma_fn fn, void *arg);

/* One pollfd (POLLIN) per ring; returns how many were written. */
int cm_cma_tracer_pollfds(const struct cm_cma_tracer *t, struct pollfd *pfd,
			  int max);

void cm_cma_tracer_stats(const struct cm_cma_tracer *t,
			 struct cm_cma_stats *st);

#endif
