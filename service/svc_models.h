/* svc_models.h: learned models of applications (docs/service.md,
 * "Learned models").
 *
 * A model is the communication matrix of one user's runs of one
 * executable with one shape, aggregated over runs (recent runs weigh
 * more), with the topology and the last mapping of the latest run.  It is
 * keyed by (uid, exe_hash, ranks, threads_per_rank, argv_shape) and
 * indexed by thread identities (rank, creation index within its process),
 * so runs whose threads appear in another order still line up.
 *
 * Two parts:
 *  - pure functions over jansson documents (svc_model_merge.c): the key
 *    of a result, the argv shape, the aggregation.  No I/O, no global
 *    state; unit-tested in tests/service/test_svc_models.c.
 *  - storage and the HTTP answers (svc_models.c): the models table
 *    (sql/0002_models.sql) on a connection of the pool, the queue of
 *    pending folds (sql/0004_model_queue.sql), GET /v1/models; and the
 *    background worker that folds the queue (svc_model_worker.c).
 * Functions return 0 (or an object) on success, -1 (or NULL) with errno
 * and a message naming the problem in err.
 */
#ifndef COMMAP_SVC_MODELS_H
#define COMMAP_SVC_MODELS_H

#include <stdint.h>

#include <jansson.h>

#include "commap/error.h"
#include "result_validate.h"

/* New model = (1 - ALPHA) * model + ALPHA * run (each run normalised to a
 * maximum of 1): the run k runs ago weighs ALPHA * (1 - ALPHA)^k. */
#define SVC_MODEL_ALPHA 0.5
/* Aggregated weights below this are dropped (an edge unseen for ~20 runs). */
#define SVC_MODEL_EPSILON 1e-6
/* Stability values kept in stability_history. */
#define SVC_MODEL_HISTORY 20
/* Longest argv_shape accepted (bytes). */
#define SVC_MODEL_ARGV_SHAPE_MAX 4096

/* ---- pure part (svc_model_merge.c) -------------------------------------- */

/* The shape of a command line: basename(argv[0]) as is, then each
 * argument with every run of ASCII digits replaced by one '#', joined by
 * single spaces ("./app -n 16 --size 1024x768" -> "app -n # --size #x#").
 * argv NULL or empty: the basename of executable.  Malloc'd; NULL with
 * ENOMEM, or E2BIG when longer than SVC_MODEL_ARGV_SHAPE_MAX. */
char *svc_model_argv_shape(const json_t *argv, const char *executable);

/* The model key of a valid commap-result document:
 * {"exe_hash": s, "ranks": n, "threads_per_rank": n, "argv_shape": s},
 * taken from identity (ranks 0 counts as 1; threads_per_rank and
 * argv_shape computed when absent).  NULL with ENOENT when the result
 * feeds no model (no exe_hash, no threads), EINVAL for a repeated thread
 * identity or a malformed identity field (err names it). */
json_t *svc_model_key(const json_t *result, struct cm_error *err);

/* Fold a result (a valid commap-result, stored as result_id) into model
 * (a commap-model document, or NULL for the first run): a new document,
 * model is not modified.  now is the time of the update
 * ("YYYY-MM-DDTHH:MM:SSZ").  EINVAL when the result's key differs from
 * the model's ("key.threads_per_rank: the result's 8 differs from the
 * model's 4"), ENOENT when the result feeds no model, ENOMEM. */
json_t *svc_model_merge(const json_t *model, const json_t *result,
			int64_t result_id, const char *now,
			struct cm_error *err);

/* The service's fold path, the same math from the text of a stored
 * result: svc_model_run_read reads len bytes in one pass without
 * building jansson values for the threads, edges and timeline (EINVAL for
 * text that is not a JSON object); svc_model_run_key keys it.  An
 * accumulator holds a model between runs without its big arrays as
 * jansson values: new from a stored model (NULL: none yet), fold runs in
 * upload order (the accumulator is unchanged when a fold fails: errors as
 * svc_model_merge), then the document once (ENOENT before any run).
 * svc_model_key and svc_model_merge go through the same code on their
 * document's text. */
struct svc_model_run;
struct svc_model_acc;
struct svc_model_run *svc_model_run_read(const char *text, size_t len,
					 struct cm_error *err);
json_t *svc_model_run_key(const struct svc_model_run *run,
			  struct cm_error *err);
void svc_model_run_free(struct svc_model_run *run);
struct svc_model_acc *svc_model_acc_new(const json_t *model,
					struct cm_error *err);
int svc_model_acc_fold(struct svc_model_acc *acc,
		       const struct svc_model_run *run, int64_t result_id,
		       const char *now, struct cm_error *err);
json_t *svc_model_acc_doc(const struct svc_model_acc *acc,
			  struct cm_error *err);
void svc_model_acc_free(struct svc_model_acc *acc);

/* ---- storage and API (svc_models.c) ------------------------------------- */

struct svc_db;
struct svc_api;
struct svc_api_request;
struct svc_api_response;

/* Move model row model_id into models_quarantine with reason, inside the
 * caller's write transaction (svc_model_quarantine.c).  0, or -1 with
 * errno and err. */
struct sqlite3;
int svc_models_quarantine(struct sqlite3 *conn, int64_t model_id,
			  const char *reason, struct cm_error *err);

/* Fold pending results (sql/0004_model_queue.sql: queued by a trigger in
 * each upload's transaction) into their models, oldest first: at most max
 * of them, only those of uid (-1: any) and exe_hash (NULL: any; used
 * only with a uid).  The
 * results are grouped by model key; each model is loaded once, the runs
 * are merged in upload order (svc_model_merge), and the models are stored
 * and the folded results dequeued in one transaction (BEGIN IMMEDIATE
 * under the pool's write lock), so a run is folded exactly once whatever
 * happens.  A result that feeds no model or cannot be merged is dequeued,
 * logged and counted.  A stored model that cannot be read is quarantined
 * (svc_models_quarantine) in the same transaction, with one log line
 * naming it, and its runs start a fresh model.  Folds are serialised (one folder at a time).
 * Returns the number of results dequeued (0: none pending), -1 on a
 * storage error or ENOMEM (nothing changed, the results stay pending). */
int svc_models_fold_pending(struct svc_db *db, int64_t uid,
			    const char *exe_hash, int max,
			    struct cm_error *err);

/* Set the pending-folds gauge of svc_models_metrics from the queue (the
 * worker does it at start).  The count, or -1 on a storage error. */
long long svc_models_count_pending(struct svc_db *db, struct cm_error *err);

/* The upload hook, after a NEW result's commit: what the agent did is
 * counted for /metrics (svc_metrics_result); a result without
 * exe_hash is counted as skipped; any other was queued by the upload's
 * transaction: count it pending and wake the worker.  Cheap, never
 * fails. */
void svc_models_after_upload(const struct svc_result_ident *id,
			     int64_t result_id);

/* Learned-model lines for GET /metrics (Prometheus text, malloc'd):
 * pending folds, fold batches; the per-run counters are in
 * svc_metrics.c. */
char *svc_models_metrics(void);

/* ---- the background worker (svc_model_worker.c) --------------------------- */

struct svc_db_pool;
struct svc_model_worker;

/* Start the thread that folds pending results: it resumes whatever is
 * pending at once, then wakes on svc_model_worker_notify (after a short
 * delay that lets a batch gather) or every second.  It borrows a
 * connection of pool per batch.  With retention_days > 0 it also deletes
 * older results (svc_retention.h) after its first fold and every hour. */
struct svc_model_worker *svc_model_worker_start(struct svc_db_pool *pool,
						unsigned retention_days,
						struct cm_error *err);
/* Stop and join it: a batch in progress is finished (committed), the
 * rest stays pending for the next start.  NULL is accepted. */
void svc_model_worker_stop(struct svc_model_worker *w);
/* Wake the running worker (no-op without one). */
void svc_model_worker_notify(void);

struct svc_model_query {
	int64_t uid;
	const char *exe_hash;
	int64_t ranks;
	int64_t threads_per_rank;	/* -1: the one with most runs */
	const char *argv_shape;
};

/* The model document with "id" added; NULL with ENOENT if none. */
json_t *svc_models_find(struct svc_db *db, const struct svc_model_query *q,
			struct cm_error *err);
json_t *svc_models_get(struct svc_db *db, int64_t id, struct cm_error *err);

/* Delete model id (a user forgetting a learned mapping).  1 deleted, 0
 * no such model, -1 with errno and err.  The runs stay stored; a later
 * run of the application starts a new model. */
int svc_models_delete(struct svc_db *db, int64_t id, struct cm_error *err);

/* {"models": [...]} newest first; owner_uid -1 for all; app NULL for any.
 * full != 0: whole documents, else summaries (no threads, edges,
 * last_mapping). */
json_t *svc_models_list(struct svc_db *db, int64_t owner_uid,
			const char *app, int limit, int full,
			struct cm_error *err);

/* GET /v1/models and /v1/models/{id}, DELETE /v1/models/{id} (the
 * owner or an admin); arg is what follows "/v1/models" ("" or "/7"). */
void svc_models_handle(const struct svc_api *api,
		       const struct svc_api_request *rq, const char *arg,
		       struct svc_api_response *rs);

#endif
