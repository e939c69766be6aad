/* tracepoint.h: what the agent's tracepoint readers share: the fault
 * sampler (fault_sample.h) and the CMA tracer (cma_trace.h).
 *
 * Both find their tracepoints in tracefs (mounting it where it is not),
 * read the ids and the field offsets from the format files, and read the
 * events CPU-wide (pid -1), sample_type TID | TIME | RAW, into one perf
 * ring per online CPU.  A ring belongs to an "owner" event whose filter
 * matches nothing; the events doing the work ("active", one per tracepoint
 * id) write into it.  The kernel lets a perf tracepoint event have a
 * filter set only once (EEXIST after), so a new thread set means new
 * active events, redirected into the same ring (PERF_EVENT_IOC_SET_OUTPUT,
 * only into a mapped ring), and the old ones closed.
 *
 * The format-file parser is pure and fuzzed (through fuzz_fault_format
 * and fuzz_cma_record).  Functions return -1 with errno and a message in
 * the optional struct cm_error; messages start with the reader's name
 * ("fault backend", "cma tracing").
 */
#ifndef COMMAP_NODEAGENT_TRACEPOINT_H
#define COMMAP_NODEAGENT_TRACEPOINT_H

#include <linux/perf_event.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"

/* PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW */
#define CM_TP_SAMPLE_TYPE 0x406ull
/* Largest offset or size believed: a trace entry lives in one page. */
#define CM_TP_FORMAT_NUM_MAX 65535u
/* The kernel copies at most a page of filter text. */
#define CM_TP_FILTER_MAX 4096
/* Tracepoints written into one ring. */
#define CM_TP_EVENTS_MAX 4

/* ---- format files (pure) ---------------------------------------------- */

/* One line [line, end) of a format file: "field:TYPE NAME;\toffset:N;\t
 * size:N;".  0 when it declares no field; 1 with *name (inside line, not
 * NUL-terminated), *namelen, *off and *size; -1 with *name and *namelen
 * when it declares a field whose offset or size is missing or not a
 * decimal number up to CM_TP_FORMAT_NUM_MAX ("-8" is not taken as a huge
 * offset).  The name is the last word before ';' ("*buf" gives "buf"). */
int cm_tp_format_line(const char *line, const char *end, const char **name,
		      size_t *namelen, unsigned *off, unsigned *size);

/* ---- tracefs ---------------------------------------------------------- */

/* The whole of a small file in buf (NUL-terminated, cut at len - 1
 * bytes): the bytes read, or -1 with errno. */
ssize_t cm_tp_read_small(const char *path, char *buf, size_t len);

/* The root of tracefs: `given` when not NULL; else /sys/kernel/tracing if
 * probe (a path under the root, e.g. "events/syscalls/X/id") is readable
 * there, or once tracefs is mounted there (root only); else the debugfs
 * path if probe is readable there; else /sys/kernel/tracing (the caller's
 * error then names it). */
const char *cm_tp_tracefs_root(const char *given, const char *probe);

/* A tracepoint's id from root/events/EVENT/id (EVENT "group/name"): 0
 * with *id non-zero, -1 with errno (ENOENT also for an id of 0). */
int cm_tp_read_id(const char *root, const char *event, uint64_t *id);

/* kernel.perf_event_paranoid, or 99 when it cannot be read. */
int cm_tp_paranoid(void);

/* The message for a refused perf_event_open of `event` on cpu: EACCES and
 * EPERM name kernel.perf_event_paranoid and what CPU-wide tracepoints
 * need.  Always -1 with errno e. */
int cm_tp_open_error(struct cm_error *err, const char *who,
		     const char *event, int e, int cpu);

/* ---- per-CPU rings ---------------------------------------------------- */

struct cm_tp_ring {
	int cpu;
	int owner;			/* mapped, polled; -1 none */
	int active[CM_TP_EVENTS_MAX];	/* per tracepoint id; -1 none */
	void *base;
	size_t maplen;
	uint8_t *data;
	uint64_t size;
};

struct cm_tp_rings {
	/* Set by the caller before cm_tp_rings_open: */
	const char *who;		/* "fault backend" (messages) */
	const char *event;		/* "exceptions:page_fault_user" */
	uint64_t ids[CM_TP_EVENTS_MAX];	/* ids[0] also opens the owners */
	int nids;
	/* Filled by cm_tp_rings_open: */
	struct perf_event_attr attr;	/* config: each id in turn */
	struct cm_tp_ring *ring;
	int nring;			/* online CPUs */
};

/* Open, map and enable one owner event per online CPU (filter
 * "common_pid<0": it records nothing itself), rings of `pages` data pages
 * (a power of two), every event recorded (period 1) on CLOCK_MONOTONIC,
 * a wakeup at a quarter of the ring.  No active event yet.  0; -1 with
 * errno and err (EINVAL pages, ENOMEM, ENODEV no online CPU, or the
 * failing call: cm_tp_open_error's message).  On failure what was opened
 * is closed (cm_tp_rings_close is still safe). */
int cm_tp_rings_open(struct cm_tp_rings *r, unsigned pages,
		     struct cm_error *err);

/* Close everything; safe on a zeroed or half-opened set, and twice. */
void cm_tp_rings_close(struct cm_tp_rings *r);

/* Replace every CPU's active events by new ones with this filter (NULL:
 * none), all or nothing: 0, or -1 with errno (the previous ones stay). */
int cm_tp_rings_filter(struct cm_tp_rings *r, const char *filter);

/* Record only these threads (tids sorted in place; n == 0: none): the
 * filter of cm_fault_filter_build.  One the kernel refuses (too long) is
 * replaced by none, so every process's events reach the rings and the
 * consumer's identity check drops the foreign ones.  0 with the filter
 * installed, 1 with no filter, -1 with errno (EINVAL, or the events could
 * not be opened: the previous ones stay). */
int cm_tp_rings_set_tids(struct cm_tp_rings *r, pid_t *tids, int n);

/* What a drain met besides samples. */
struct cm_tp_counts {
	uint64_t lost;		/* dropped by the kernel (ring full) */
	uint64_t other;		/* other records skipped */
	uint64_t malformed;	/* a corrupt ring (resynced) */
};

/* Called per PERF_RECORD_SAMPLE, rec[0..len) header included. */
typedef void (*cm_tp_record_fn)(const uint8_t *rec, size_t len, void *arg);

/* Read ring i without blocking: samples to fn, lost records counted, a
 * corrupt ring skipped to its head (counted).  buf (buflen bytes) holds a
 * record that wraps at the ring's end. */
void cm_tp_ring_drain(struct cm_tp_rings *r, int i, uint8_t *buf,
		      size_t buflen, cm_tp_record_fn fn, void *arg,
		      struct cm_tp_counts *c);

/* One pollfd (POLLIN) per ring; returns how many were written. */
int cm_tp_rings_pollfds(const struct cm_tp_rings *r, struct pollfd *pfd,
			int max);

#endif
