/* fault_sample.h: page-fault samples for the "fault" detection backend,
 * SPCD/CDSM style without a kernel module.
 *
 * With kernel.numa_balancing=1 the kernel periodically makes the pages of
 * multi-threaded processes inaccessible (PROT_NONE) and takes a "hinting
 * fault" on the next access, whoever makes it: a (thread, page, time)
 * sample of a real access, reads and writes alike (SPCD §III-A: a fault
 * tells which thread touched which page).  The faults are read through the
 * exceptions:page_fault_user tracepoint (tracefs) with perf_event_open,
 * one event per online CPU (pid -1), sample_type TID | TIME | RAW; the raw
 * record is the trace entry (common_pid at 4, address at 8, ip at 16,
 * error_code at 24 on x86-64; the offsets are read from the tracepoint's
 * format file).
 *
 * A CPU-wide event sees every process's faults, so the sampler installs a
 * kernel filter on common_pid (PERF_EVENT_IOC_SET_FILTER) listing our
 * threads (ranges of consecutive tids); the kernel then drops foreign
 * faults before they reach the ring.  The consumer must still check each
 * record's identity (a thread created since the last filter update is not
 * in it, a filter too long for the kernel is replaced by none).
 *
 * Hinting faults have the present bit (bit 0) set in the error code: the
 * page was mapped, only its protection was removed.  First-touch faults
 * (present bit clear) only say who initialised a page: not communication,
 * counted apart.  Other present faults (copy-on-write after fork or after
 * a read of the zero page) cannot be told from hinting faults by the error
 * code; they are rare after initialisation.
 *
 * The record parser, the format-file parser and the filter builder are
 * pure functions over bytes/text, unit-tested (tests/unit/test_fault_sample.c).
 * Functions return -1 with errno and a message in the optional struct
 * cm_error.  Details and measurements: docs/detection.md, "fault".
 */
#ifndef COMMAP_NODEAGENT_FAULT_SAMPLE_H
#define COMMAP_NODEAGENT_FAULT_SAMPLE_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"

/* PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW */
#define CM_FAULT_SAMPLE_TYPE 0x406ull

/* x86 page-fault error code bits (arch/x86/include/asm/trap_pf.h). */
#define CM_FAULT_ERR_PRESENT 0x1ull
#define CM_FAULT_ERR_WRITE 0x2ull
#define CM_FAULT_ERR_USER 0x4ull

#define CM_FAULT_DEFAULT_RING_PAGES 16u

/* Where the fields are in the raw trace entry (byte offsets; size 8 for
 * address, ip and error_code, 4 for common_pid). */
struct cm_fault_format {
	unsigned pid_off, addr_off, ip_off, err_off;
	unsigned min_size;	/* raw bytes needed: max(off + size) */
};

/* The x86-64 layout (pid 4, address 8, ip 16, error_code 24, 32 bytes). */
void cm_fault_format_default(struct cm_fault_format *f);

/* Parse the text of events/exceptions/page_fault_user/format.  0 with f
 * filled; -1/EBADMSG naming the field when common_pid, address, ip or
 * error_code is missing or has an unexpected size. */
int cm_fault_format_parse(const char *text, struct cm_fault_format *f,
			  struct cm_error *err);

struct cm_fault {
	uint32_t pid, tid;	/* process and thread (PERF_SAMPLE_TID) */
	uint64_t time;		/* ns, CLOCK_MONOTONIC */
	uint64_t addr;		/* faulting data address */
	uint64_t ip;
	uint64_t error_code;
	int hinting;		/* present bit set: a hinting fault */
};

/* 1 when error_code says the page was present (a hinting fault). */
int cm_fault_is_hinting(uint64_t error_code);

/* Parse the body of a PERF_RECORD_SAMPLE of layout CM_FAULT_SAMPLE_TYPE:
 * rec[0..len) is the whole record, header included.  0 with out filled;
 * -1/EBADMSG when the record is shorter than its header size or its
 * fields, the raw size runs past the record, or the raw data are shorter
 * than f->min_size; -1/EINVAL on NULL arguments. */
int cm_fault_parse_sample(const struct cm_fault_format *f, const void *rec,
			  size_t len, struct cm_fault *out,
			  struct cm_error *err);

/* A tracepoint filter accepting exactly the tids in tids[0..n) (any
 * order, duplicates allowed; sorted in place), consecutive tids merged
 * into ranges: "common_pid==7||(common_pid>=10&&common_pid<=12)".
 * n == 0 gives "common_pid<0", which matches nothing.  Returns the length
 * written
 * (NUL excluded); -1/ENOSPC when it does not fit in len bytes, -1/EINVAL
 * on bad arguments. */
int cm_fault_filter_build(pid_t *tids, int n, char *buf, size_t len);

/* ---- Sampler --------------------------------------------------------- */

struct cm_fault_config {
	const char *tracefs;	/* NULL: /sys/kernel/tracing, mounted there
				 * if it is not (then /sys/kernel/debug/
				 * tracing is tried) */
	unsigned ring_pages;	/* data pages per CPU ring, power of 2 */
};

void cm_fault_config_default(struct cm_fault_config *cfg);

struct cm_fault_stats {
	uint64_t records;	/* sample records read */
	uint64_t lost;		/* dropped by the kernel (ring full) */
	uint64_t malformed;	/* corrupt records (the ring was resynced) */
	uint64_t other;		/* other records skipped */
	uint64_t filters;	/* filters installed */
	uint64_t filter_fail;	/* filters refused (too long, ...): none */
};

struct cm_fault_sampler;

/* Find the tracepoint (mounting tracefs if needed), open one event per
 * online CPU, map its ring and enable it.  The initial filter accepts no
 * process (common_pid<0) until cm_fault_sampler_set_tids.  NULL with
 * errno/err: ENOENT no tracefs or no such tracepoint (the message says
 * which), EACCES/EPERM not allowed (names kernel.perf_event_paranoid:
 * CPU-wide tracepoints need root or CAP_PERFMON), EMFILE, ENOMEM. */
struct cm_fault_sampler *cm_fault_sampler_new(const struct cm_fault_config *c,
					      struct cm_error *err);
void cm_fault_sampler_free(struct cm_fault_sampler *s);

/* Restrict the kernel side to these threads (tids sorted in place).  The
 * kernel sets a perf tracepoint filter only once per event, so this opens
 * a new event per CPU with the filter, writing into the same ring, and
 * closes the previous one (call it when the thread set changed, not per
 * interval).  A filter the kernel refuses (too long) is replaced by none:
 * every fault then reaches the ring and the consumer's identity check
 * drops foreign ones.  0 with the filter installed, 1 with no filter, -1
 * with errno (EINVAL, or the events could not be opened: the previous
 * ones stay). */
int cm_fault_sampler_set_tids(struct cm_fault_sampler *s, pid_t *tids, int n);

typedef void (*cm_fault_fn)(const struct cm_fault *f, void *arg);

/* Drain every ring without blocking, calling fn (may be NULL) per fault.
 * Returns the number of fault records delivered. */
long cm_fault_sampler_read(struct cm_fault_sampler *s, cm_fault_fn fn,
			   void *arg);

/* One pollfd (POLLIN) per ring; returns how many were written. */
int cm_fault_sampler_pollfds(const struct cm_fault_sampler *s,
			     struct pollfd *pfd, int max);

void cm_fault_sampler_stats(const struct cm_fault_sampler *s,
			    struct cm_fault_stats *st);

/* Events open (one per online CPU). */
int cm_fault_sampler_nevents(const struct cm_fault_sampler *s);

#endif
