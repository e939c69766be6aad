/* model_fetch.h: the learned model of an application, fetched from the
 * service at step start (docs/service.md "Learned models",
 * docs/agent.md "Learned mappings").
 *
 *   GET /v1/models?exe_hash=H&ranks=R&argv_shape=S[&threads_per_rank=T]
 *                 [&uid=U]
 *
 * with a munge credential (upload.h cm_service_get), bounded by a short
 * timeout (CM_MODEL_FETCH_TIMEOUT_MS): a slow or dead service must not
 * delay the job's placement, the agent then runs dynamic.
 */
#ifndef COMMAP_MODEL_FETCH_H
#define COMMAP_MODEL_FETCH_H

#include <stddef.h>
#include <sys/types.h>

#include "commap/error.h"
#include "commap/matrix.h"
#include "upload.h"

#define CM_MODEL_FETCH_TIMEOUT_MS 500L

/* A commap-model document, reduced to what the agent uses. */
struct cm_model {
	long long id;
	int runs;
	int threads_per_rank;	/* key.threads_per_rank, 0 unknown */
	int n;			/* identities */
	int *rank, *index;	/* identity k = (rank[k], index[k]) */
	struct cm_matrix *m;	/* n x n, indices into the identities */
	int *last_os;		/* last_mapping OS PUs (-1), or NULL */
	char *cpuset;		/* topology of the last run, or NULL */
	char *synthetic;
};

/* What the model is asked for. */
struct cm_model_key {
	const char *exe_hash;
	int ranks;
	const char *argv_shape;
	int threads_per_rank;	/* <= 0: omitted (the service picks) */
	long long uid;		/* < 0: omitted (the caller's) */
};

/* The request path "/v1/models?..." with every value percent-encoded
 * (RFC 3986 unreserved characters kept).  0, or -1/ENAMETOOLONG. */
int cm_model_query(const struct cm_model_key *k, char *out, size_t len);

/* Parse a commap-model document.  0, or -1/EINVAL with err naming the
 * field; on failure out is left empty. */
int cm_model_parse(const char *text, struct cm_model *out,
		   struct cm_error *err);
void cm_model_free(struct cm_model *m);

/* Fetch the model for k from o->service_url (o->timeout_ms: use
 * CM_MODEL_FETCH_TIMEOUT_MS) with a credential made beforehand (cred,
 * cm_service_credential) or, cred NULL, a fresh one.  1 with out filled;
 * 0 no model (404, err says so); -1 with errno/err when the service could
 * not answer (down, slow, munge, bad answer). */
int cm_model_fetch(const struct cm_deliver_opts *o,
		   const struct cm_model_key *k, const char *cred,
		   struct cm_model *out, struct cm_error *err);

/* Model index of identity (rank, index), -1 if the model has none. */
int cm_model_find(const struct cm_model *m, int rank, int index);

/* 1 - cosine similarity between a run's matrix d (indexed by the run's
 * threads 0..n-1 with identities rank[]/index[]) and the model's matrix,
 * over the identities both have (0 same pattern, 1 unrelated).  1 when
 * either side has no weight there. */
double cm_model_distance(const struct cm_model *m, const struct cm_matrix *d,
			 const int *rank, const int *index, int n);

#endif
