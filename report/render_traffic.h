/* render_traffic.h: a job's MPI ranks across its nodes, from the
 * rank_traffic of its node results (docs/result-format.md): each node's
 * agent read what its ranks sent to every rank (Open MPI's monitoring);
 * the union is the job's rank matrix, and each result's ranks list says
 * which node a rank ran on.  From both: the bytes within each node, the
 * bytes between nodes and the heaviest pairs of ranks on different nodes.
 * Shown by `commap report JOB` and the web job page (docs/reports.md).
 */
#ifndef COMMAP_RENDER_TRAFFIC_H
#define COMMAP_RENDER_TRAFFIC_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "commap/error.h"

#define CM_TRAFFIC_TOP 5		/* heaviest pairs across nodes shown */
#define CM_TRAFFIC_RANK_MAX (1 << 20)	/* as the service accepts */
#define CM_TRAFFIC_NODES_MAX 4096
#define CM_TRAFFIC_MATRIX_MAX 16	/* ranks shown as a matrix */

struct cm_traffic_node {
	const char *name;	/* points into the job document */
	int ranks;
	uint64_t within;	/* bytes between two ranks of this node */
	uint64_t out, in;	/* bytes to / from ranks of other nodes */
};

struct cm_traffic_pair {
	int a, b;		/* ranks, a < b, on nodes na != nb */
	int na, nb;
	uint64_t bytes;		/* both directions */
};

struct cm_traffic {
	long long step;
	const char *source;	/* "ompi-monitoring" */
	int nnodes;
	struct cm_traffic_node *nodes;
	int nranks;		/* ranks whose node is known */
	int rank_max;		/* highest known rank + 1 */
	int *node_of;		/* [rank_max]: node index or -1 */
	uint64_t total, within, between, unknown, messages;
	int ntop;
	struct cm_traffic_pair top[CM_TRAFFIC_TOP];
	/* bytes[i * rank_max + j], i to j; only when rank_max <=
	 * CM_TRAFFIC_MATRIX_MAX (else NULL) */
	uint64_t *matrix;
	/* rank_traffic.placement of a node: srun placed the ranks across
	 * nodes from the learned traffic ("learned") or kept block, with the
	 * bytes between nodes it predicted both ways; NULL when not asked */
	const char *placement;
	long long predicted_block, predicted;
};

/* The steps of job (GET /v1/jobs/{job} with documents) whose results carry
 * rank_traffic, in order of appearance, at most max into steps.  The
 * count. */
int cm_traffic_steps(const json_t *job, long long *steps, int max);

/* The traffic of one step.  Entries the service would refuse are skipped.
 * 0, or -1 with err (ENOENT: no rank_traffic for the step, ENOMEM). */
int cm_traffic_compute(const json_t *job, long long step,
		       struct cm_traffic *t, struct cm_error *err);
void cm_traffic_free(struct cm_traffic *t);

/* The traffic as text lines (commap report) or an HTML section (the job
 * page).  0 or -1 on a write error. */
int cm_traffic_text(FILE *out, const struct cm_traffic *t);
int cm_traffic_html(FILE *out, const struct cm_traffic *t);

/* Both for every step of job with rank_traffic: the count of steps shown,
 * -1 on an error. */
int cm_traffic_job_text(FILE *out, const json_t *job);
int cm_traffic_job_html(FILE *out, const json_t *job);

#endif
