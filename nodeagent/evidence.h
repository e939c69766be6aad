/* evidence.h: where a decoded data reference becomes evidence of
 * communication — the one seam the live agent (collect.c) and a replay
 * (record_read.c) share, so both build the same matrix.
 *
 * A reference is classified by the mapping its address falls in
 * (collect.c: cm_collect_classify):
 *   - stack: the main stack ("[stack]") or a mapping that held a sampled
 *     stack pointer (thread stacks, and the static TLS glibc puts at their
 *     top).  Says nothing about sharing between threads, and neighbouring
 *     threads' stacks sit side by side: dropped, counted;
 *   - read-only: data every thread reads (tables, .rodata) makes all
 *     threads look alike to an overlap measure: into the sharer table
 *     (time-local, fine blocks) but not the overlap;
 *   - data: writable memory: both.
 * The decoder keeps rsp/rbp-based operands (CM_DECODE_KEEP_STACK): at -O2
 * rbp is an ordinary register, so the mapping, not the register, says
 * what is stack.
 *
 * Runs: a thread whose reference is on the cache line (same key, same
 * 64 bytes) of its previous non-stack reference, with nothing else in
 * between, tells nothing new about sharing: the whole run counts as one
 * reference (run-length), the others are counted (run_refs) and left out
 * of the table and the overlap.  This is what keeps a wait on a flag
 * without `pause` (an unrolled load loop the decoder's spin filter cannot
 * see, and whose IP changes from sample to sample) from drowning the
 * evidence: a few flags read by every thread would otherwise outweigh the
 * buffers that pairs of threads really exchange.  Stack references do
 * not break a run (a spin loop's `lock or $0,(%rsp)` fence).  A run's
 * first reference enters the table; its continuation marks its line as
 * waited on (detect_table.h, "Lines waited on"): references to it, by any
 * thread, are then counted (spin_refs) and enter neither the table's
 * events nor the overlap, and the table sees the line's block by line.  A
 * run lasting longer than the table's window counts again.  The state
 * is one line per thread, in CM_EVIDENCE_RUN_SLOTS slots by thread index
 * (tracker indices are never reused for another thread); two threads in
 * one slot only break each other's runs, which counts more, never less.
 */
#ifndef COMMAP_NODEAGENT_EVIDENCE_H
#define COMMAP_NODEAGENT_EVIDENCE_H

#include <stdint.h>

#include "commap/matrix.h"
#include "detect_overlap.h"
#include "detect_table.h"

enum cm_ref_class {
	CM_REF_DATA = 0,	/* writable memory */
	CM_REF_READONLY = 1,	/* a mapping without write permission */
	CM_REF_STACK = 2,	/* a thread's stack or TLS */
	CM_REF_NCLASSES
};

#define CM_EVIDENCE_RUN_SLOTS 256

/* A thread's current run: the line of its previous non-stack reference. */
struct cm_evidence_run {
	uint32_t thread1;	/* thread index + 1; 0: empty */
	int32_t shared;		/* the key's */
	uint64_t space, inode;	/* the key's */
	uint64_t line;		/* the key's addr / 64 */
	uint64_t since_ns;	/* when the run was last counted */
};

/* Counts, and the runs' state; all zero to start. */
struct cm_evidence_counts {
	uint64_t refs[CM_REF_NCLASSES];	/* references seen per class */
	uint64_t run_refs;	/* data and read-only ones continuing a run */
	uint64_t spin_refs;	/* ones on a line waited on: no evidence */
	struct cm_evidence_run runs[CM_EVIDENCE_RUN_SLOTS];
};

/* Thread `thread` touched key (in the mapping starting at region; 0 for
 * shared memory or an address in no mapping) of class cls at now_ns:
 * stack references and those continuing a run are only counted; others
 * enter the sharer table t, data references the overlap ov too (NULL:
 * none).  Returns the sharer table's events (>= 0), -1/EINVAL (bad class
 * or arguments), -1/ENOMEM (m cannot grow). */
int cm_evidence_add(struct cm_detect_table *t, struct cm_overlap *ov,
		    struct cm_matrix *m, int thread,
		    const struct cm_block_key *key, uint64_t region, int cls,
		    uint64_t now_ns, struct cm_evidence_counts *n);

/* Forget every thread's run (the counts stay): after the table is
 * cleared, the next reference of each thread must enter it. */
void cm_evidence_forget_runs(struct cm_evidence_counts *n);

#endif
