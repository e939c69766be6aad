/* svc_model_ranks.h: an application's learned matrix of bytes between
 * MPI ranks (docs/service.md "Rank matrix across nodes").
 *
 * Each node result of a step run with MPI traffic on holds rank_traffic:
 * the world ranks of that node and the bytes and messages each of them
 * sent to every other rank (docs/result-format.md).  The union over a
 * step's node results is the step's rank matrix; a step whose results
 * do not cover ranks 0..N-1 exactly once (a node's result still on its
 * way) is left out.  The application's matrix is the mean of its newest
 * SVC_RANKS_RUNS_MAX complete steps of N ranks, symmetric (i < j, bytes
 * both ways), answered by GET /v1/models/{app}/ranks with each step's
 * bytes between nodes and in all, so a run placed across nodes with the
 * learned matrix can be compared with the runs before it.
 */
#ifndef COMMAP_SVC_MODEL_RANKS_H
#define COMMAP_SVC_MODEL_RANKS_H

#include <jansson.h>

#include "commap/error.h"

struct svc_api;
struct svc_api_request;
struct svc_api_response;

/* Steps averaged into the matrix (the newest). */
#define SVC_RANKS_RUNS_MAX 8
/* Node results read for one answer, newest first: bounds the work of a
 * read whatever the history holds. */
#define SVC_RANKS_DOCS_MAX 256
/* Largest world handled (the placement's own bound). */
#define SVC_RANKS_MAX 4096

/* What the matrix is asked for; NULL / <= 0 fields are not filtered. */
struct svc_ranks_query {
	const char *argv_shape;
	int ranks;
};

/* From stored node results (an array of commap-result documents, newest
 * first), the answer {"ranks": N, "pairs": [[i, j, bytes], ...],
 * "runs": [{"job", "step", "cluster", "nodes", "bytes_total",
 * "bytes_between_nodes", "placement"}, ...]} (runs newest first;
 * placement: a node's rank_traffic.placement, how srun placed the ranks
 * across nodes, or null: shared with docs by reference count).  Without q->ranks,
 * N is that of the newest complete step.  NULL with ENOENT (and err
 * saying why) when no complete step matches, ENOMEM. */
json_t *svc_model_ranks_build(const json_t *docs,
			      const struct svc_ranks_query *q,
			      struct cm_error *err);

/* GET /v1/models/{app}/ranks (svc_model_ranks_api.c): 1 when rq's path
 * is one (rs then holds the answer), 0 when it is not. */
int svc_model_ranks_route(const struct svc_api *api,
			  const struct svc_api_request *rq,
			  struct svc_api_response *rs);
/* The same for an application's name already taken from the path. */
void svc_model_ranks_handle(const struct svc_api *api,
			    const struct svc_api_request *rq, const char *app,
			    struct svc_api_response *rs);

#endif
