/* record.h: recordings of what detection consumes (docs/formats.md,
 * "Recordings"), written by the agent with --record FILE and replayed by
 * `commap replay` (replay.h).
 *
 * The seam is where a decoded data reference becomes evidence (evidence.h:
 * the sharer table and the overlap; collect.c, account_ref): every
 * cm_evidence_add call is one "a" line
 * (time, thread index, block key), so a replay that feeds the same lines
 * to a table of the same configuration rebuilds the same events and the
 * same matrix.  A thread's identity is written before its first access;
 * the header holds the table's configuration and the clocks at start, the
 * trailer the topology and CPU set the agent mapped onto.
 *
 * Version 3 also records the inputs of the agent's remap decisions, so
 * that a replay makes them again (replay_clock.c): the options they use
 * ("options"), the end of each interval and each checkpoint inside a long
 * one with its time ("interval", "checkpoint": the accesses before the
 * line are what was drained until then), every thread of the step as it
 * is seen (its identity, "thread") and as it exits ("exit").
 *
 * Version 4 adds what the replay could not know: the pins that failed
 * ("nopin": a thread gone, or pinning refused), and the single-copy
 * transfers as the collector drained them, before their attribution
 * ("cma_unit", "cma"), which the replay attributes again with the
 * agent's code.
 *
 * Version 5 adds the evidence of shared-segment ownership (shm_owner.h)
 * as the collector added it ("shm": time, thread, the owner's thread,
 * weight), right after the access that gave it: the owners come from
 * file paths, /proc and the step's ranks, which a replay does not have,
 * so the replay adds the recorded units with the agent's own function
 * (cm_shm_evidence_add) at the same point of the stream.
 *
 * Writes are buffered (stdio) and never fail the agent: the first error
 * is kept, the recorder stops writing and says why at the end.  The file
 * is bounded: past 1 GiB less 1 MiB accesses, clock lines, snapshots and
 * ownership evidence are only counted, and the trailer says how many
 * were left out ("dropped N").  Not thread-safe.
 */
#ifndef COMMAP_NODEAGENT_RECORD_H
#define COMMAP_NODEAGENT_RECORD_H

#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"
#include "commap/topology.h"
#include "detect_table.h"

#define CM_RECORD_FORMAT "commap-recording"
/* Version 2 adds each access's mapping start and class (evidence.h);
 * version 3 the decisions' inputs (above); version 4 the pins that
 * failed ("nopin") and the single-copy transfers ("cma_unit", "cma");
 * version 5 the evidence of segment ownership ("shm").  Older versions
 * are still read (1: sharer table only; 1 and 2: one mapping at the
 * end; 3: every pin made; 1 to 4: no ownership evidence). */
#define CM_RECORD_VERSION 5

struct cm_recorder;
struct cm_cma_transfer;

/* Create path (mode 0644, truncated; never through a symbolic link) and
 * write the header: format, version and the clocks now.  NULL with
 * errno/err naming the file (open failure, ENOMEM). */
struct cm_recorder *cm_record_open(const char *path, struct cm_error *err);

/* The sharer table's configuration: written by the collector when it
 * creates its table, before any access. */
void cm_record_detect(struct cm_recorder *r,
		      const struct cm_detect_config *cfg);

/* Thread index i is (pid, tid) of rank, creation index within its
 * process; written once per index, before its first access. */
void cm_record_thread(struct cm_recorder *r, int i, pid_t pid, pid_t tid,
		      int rank, int index);
/* Thread i accessed key at time_ns (the samples' clock), in the mapping
 * starting at region (0: shared or none), of class cls (enum
 * cm_ref_class, evidence.h). */
void cm_record_access(struct cm_recorder *r, int i,
		      const struct cm_block_key *key, uint64_t region,
		      int cls, uint64_t time_ns);
/* Whether thread index i has been written (cm_record_thread). */
int cm_record_has_thread(const struct cm_recorder *r, int i);

/* What the remap decisions depend on besides the events: the agent's
 * start (t0_ns, CLOCK_MONOTONIC: the timeline's zero), the aging factor
 * per 200 ms, the gain a remap must bring, the share of the events of
 * pairs pinned near each other that sampling sees (near_seen: 1 in a dry
 * run), the mode.  Written once (later calls do nothing), before the
 * first interval. */
void cm_record_options(struct cm_recorder *r, uint64_t t0_ns, double alpha,
		       double gain, double near_seen, const char *mode);
/* Thread index i has exited (once per index). */
void cm_record_exit(struct cm_recorder *r, int i);
/* A snapshot of the progress guard (progress_guard.h) at t_ns: kind 'm'
 * the window before a mapping starts, 'a' a mapping is applied, 'p' the
 * window after it has passed (judged now); per thread index below n its
 * CPU and wait seconds (-1 unread). */
void cm_record_snapshot(struct cm_recorder *r, char kind, uint64_t t_ns,
			int n, const double *cpu, const double *wait);
/* The agent's pin of thread index i to OS PU os (-1: back to the
 * step's CPUs) at t_ns (the decision's time) failed with err: ESRCH the
 * thread was gone (or its tid reused), another errno the kernel refused
 * it (the agent then pins nothing more).  Pins that succeed are not
 * written: the replay makes them. */
void cm_record_nopin(struct cm_recorder *r, uint64_t t_ns, int i, int os,
		     int err);
/* A single-copy transfer (cma_trace.h) as the collector drained it,
 * before its attribution (cma_attrib.h, which the replay runs again on
 * the recorded threads): the time, caller, peer and bytes.  The first
 * one writes the matrix unit too (bytes_per_unit; <= 0 the default). */
void cm_record_cma(struct cm_recorder *r, const struct cm_cma_transfer *x,
		   double bytes_per_unit);
/* Evidence of segment ownership (shm_owner.h): thread i referenced, at
 * time_ns, a segment owned by the process of thread j, which weighs
 * weight (0 < weight <= 1) between them (written with all its digits:
 * the replay adds the very same double). */
void cm_record_shm(struct cm_recorder *r, uint64_t time_ns, int i, int j,
		   double weight);
/* An interval of interval_ms ended at t_ns (CLOCK_MONOTONIC), before its
 * decision; a checkpoint inside a long interval aged and folded at t_ns
 * (interval_ms 0: written as "checkpoint").  app_ns: the step's progress
 * clock then (cm_remap_progress, from t0_ns; <= t_ns), which the live
 * matrix ages by; a line without it (older recordings) ages by t_ns. */
void cm_record_clock(struct cm_recorder *r, uint64_t t_ns, int interval_ms,
		     uint64_t app_ns);

/* The trailer: topo (the one mapped onto; NULL: none) as hwloc's
 * synthetic description of the whole machine and its allowed PUs as the
 * CPU set (a machine hwloc cannot describe so, asymmetric, gets neither),
 * whether it was a dry run, the mode; then flush and close.  0, or -1
 * with err saying what failed first (the recording is then incomplete).
 * r is freed either way; NULL r: 0. */
int cm_record_close(struct cm_recorder *r, const struct cm_topo *topo,
		    int dry_run, const char *mode, struct cm_error *err);

#endif
