/* evidence.c: a data reference into the sharer table and the overlap
 * (see evidence.h). */
#include "config.h"

#include <errno.h>

#include "evidence.h"

int cm_evidence_add(struct cm_detect_table *t, struct cm_overlap *ov,
		    struct cm_matrix *m, int thread,
		    const struct cm_block_key *key, uint64_t region, int cls,
		    uint64_t now_ns, struct cm_evidence_counts *n)
{
	int ev;

	if (!t || !m || !key || !n || cls < 0 || cls >= CM_REF_NCLASSES) {
		errno = EINVAL;
		return -1;
	}
	n->refs[cls]++;
	if (cls == CM_REF_STACK)
		return 0;
	ev = cm_detect_access(t, m, thread, key, now_ns);
	if (ev < 0 || cls != CM_REF_DATA || !ov)
		return ev;
	if (cm_overlap_add(ov, m, thread, key->space, key->inode,
			   key->shared ? 0 : region, key->addr, now_ns) < 0)
		return -1;
	return ev;
}
