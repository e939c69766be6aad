/* evidence.c: a data reference into the sharer table and the overlap
 * (see evidence.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "evidence.h"

/* Bytes of a run's line: the cache line. */
#define RUN_LINE_SHIFT 6

/* Does thread's reference to key at now_ns continue its run (evidence.h,
 * "Runs")?  If not, it starts a new one.  A run lasting longer than the
 * table's window counts again. */
static bool continues_run(struct cm_evidence_counts *n,
			  const struct cm_detect_table *t, int thread,
			  const struct cm_block_key *key, uint64_t now_ns)
{
	struct cm_evidence_run *r =
		&n->runs[(unsigned)thread % CM_EVIDENCE_RUN_SLOTS];
	uint64_t line = key->addr >> RUN_LINE_SHIFT;
	struct cm_detect_config cfg;

	cm_detect_table_config(t, &cfg);
	if (r->thread1 == (uint32_t)thread + 1 && r->line == line &&
	    r->space == key->space && r->inode == key->inode &&
	    r->shared == !!key->shared && now_ns >= r->since_ns &&
	    (!cfg.window_ns || now_ns - r->since_ns <= cfg.window_ns))
		return true;
	r->thread1 = (uint32_t)thread + 1;
	r->shared = !!key->shared;
	r->space = key->space;
	r->inode = key->inode;
	r->line = line;
	r->since_ns = now_ns;
	return false;
}

int cm_evidence_add(struct cm_detect_table *t, struct cm_overlap *ov,
		    struct cm_matrix *m, int thread,
		    const struct cm_block_key *key, uint64_t region, int cls,
		    uint64_t now_ns, struct cm_evidence_counts *n)
{
	int ev, spin;

	if (!t || !m || !key || !n || thread < 0 || cls < 0 ||
	    cls >= CM_REF_NCLASSES) {
		errno = EINVAL;
		return -1;
	}
	n->refs[cls]++;
	if (cls == CM_REF_STACK)
		return 0;
	if (continues_run(n, t, thread, key, now_ns)) {
		/* A thread re-reading its line: a wait; the line is marked
		 * (detect_table.h, "Lines waited on"). */
		n->run_refs++;
		return cm_detect_mark_spin(t, key);
	}
	/* A waited-on line is no evidence; the rest of its block is seen
	 * by line in the table, and the overlap cannot see lines. */
	spin = cm_detect_spin_line(t, key);
	ev = cm_detect_access(t, m, thread, key, now_ns);
	if (ev >= 0 && spin == CM_DETECT_SPIN_LINE)
		n->spin_refs++;
	if (ev < 0 || spin || cls != CM_REF_DATA || !ov)
		return ev;
	if (cm_overlap_add(ov, m, thread, key->space, key->inode,
			   key->shared ? 0 : region, key->addr, now_ns) < 0)
		return -1;
	return ev;
}

void cm_evidence_forget_runs(struct cm_evidence_counts *n)
{
	if (n)
		memset(n->runs, 0, sizeof(n->runs));
}
