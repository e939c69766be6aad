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

struct cm_evidence_counts {
	uint64_t refs[CM_REF_NCLASSES];	/* references seen per class */
};

/* Thread `thread` touched key (in the mapping starting at region; 0 for
 * shared memory or an address in no mapping) of class cls at now_ns:
 * stack references are only counted; others enter the sharer table t,
 * data references the overlap ov too (NULL: none).  Returns the sharer
 * table's events (>= 0), -1/EINVAL (bad class or arguments), -1/ENOMEM
 * (m cannot grow). */
int cm_evidence_add(struct cm_detect_table *t, struct cm_overlap *ov,
		    struct cm_matrix *m, int thread,
		    const struct cm_block_key *key, uint64_t region, int cls,
		    uint64_t now_ns, struct cm_evidence_counts *n);

#endif
