/* svc_db.h: the service's SQLite storage (docs/service.md, sql/).
 *
 * One struct svc_db is one connection with its prepared statements, used by
 * one thread at a time; a pool hands them to the HTTP worker threads.
 * Opening applies the numbered migrations (embedded from sql/ at build
 * time) in one transaction, recorded in the schema_version table.
 * Functions return 0 (or an object) on success, -1 (or NULL) with errno
 * and a message in err.
 */
#ifndef COMMAP_SVC_DB_H
#define COMMAP_SVC_DB_H

#include <stdint.h>

#include <jansson.h>

#include "commap/error.h"
#include "result_validate.h"

struct svc_migration {
	unsigned version;
	const char *name;
	const char *sql;
};

/* Generated from sql/NNNN_*.sql by service/embed-sql.sh. */
extern const struct svc_migration svc_migrations[];
extern const unsigned svc_n_migrations;

struct svc_db;
struct svc_db_pool;

/* Open or create the database at path (WAL, busy timeout, foreign keys,
 * synchronous NORMAL or FULL) and bring its schema up to date.  Refuses a
 * database whose schema is newer than this program (EPROTO). */
struct svc_db *svc_db_open(const char *path, int sync_full,
			   struct cm_error *err);
void svc_db_close(struct svc_db *db);

/* The version recorded in schema_version, or -1. */
int svc_db_schema_version(struct svc_db *db);

enum svc_store_outcome {
	SVC_STORE_NEW,		/* stored: 201 */
	SVC_STORE_DUPLICATE,	/* the same document was already stored */
	SVC_STORE_CONFLICT,	/* same step/node or upload id, other data */
};

/* Store a validated result (document: its JSON text, len bytes, kept as
 * it is) in one committed transaction; *row_id is the new or existing row.
 * A result's identity is its upload id, or its cluster, job, step, node,
 * owner and start time (a reused job id is another run, stored beside the
 * first).  An existing row of the same identity is a duplicate when its
 * document is the same in canonical form (svc_result_same), else a
 * conflict. */
int svc_db_store_text(struct svc_db *db, const struct svc_result_ident *id,
		      const char *upload_id, uint32_t uploader_uid,
		      const char *document, size_t len, int64_t *row_id,
		      enum svc_store_outcome *outcome, struct cm_error *err);

/* The same for a NUL-terminated document. */
int svc_db_store(struct svc_db *db, const struct svc_result_ident *id,
		 const char *upload_id, uint32_t uploader_uid,
		 const char *document, int64_t *row_id,
		 enum svc_store_outcome *outcome, struct cm_error *err);

/* owner_uid: only results of this uid; -1 for all (admins). */
struct svc_job_filter {
	int64_t owner_uid;
	const char *user;	/* NULL: any */
	const char *app;	/* basename or full executable path */
	const char *since;	/* started_at >= since */
	const char *until;	/* started_at < until */
	int limit;
	int offset;		/* jobs skipped before the first listed */
	int sort;		/* SVC_JOB_SORT_*, 0: newest first */
	int ascending;		/* with sort: smallest first */
};

/* The orders of a job listing (?sort=KEY or ?sort=-KEY, descending). */
enum svc_job_sort {
	SVC_JOB_SORT_DEFAULT = 0, SVC_JOB_SORT_STARTED, SVC_JOB_SORT_ENDED,
	SVC_JOB_SORT_JOB, SVC_JOB_SORT_USER, SVC_JOB_SORT_APP,
	SVC_JOB_SORT_MODE, SVC_JOB_SORT_DURATION, SVC_JOB_SORT_NODES,
	SVC_JOB_SORT_THREADS, SVC_JOB_SORT_MIGRATIONS, SVC_JOB_SORT_PINS,
	SVC_JOB_SORT_COUNT
};

/* Parse "key" or "-key" into f->sort and f->ascending; -1 for an
 * unknown key. */
int svc_job_sort_parse(const char *s, struct svc_job_filter *f);
/* The keys, space-separated, for error messages. */
extern const char svc_job_sort_keys[];

/* Columns every job listing has besides the stored ones, over the
 * job's results aliased r: its modes, pins and duration in seconds
 * (first start to last end). */
#define SVC_DB_JOB_COLUMNS(r) \
	" group_concat(DISTINCT " r ".mode) AS mode," \
	" SUM(json_extract(" r ".document, '$.stats.pins')) AS pins," \
	" CAST(strftime('%s', MAX(" r ".ended_at)) -" \
	" strftime('%s', MIN(" r ".started_at)) AS INTEGER) AS duration_s"

/* {"jobs": [...]} newest first from f->offset (f->sort is ignored):
 * reads only offset + limit jobs. */
json_t *svc_db_list_jobs(struct svc_db *db, const struct svc_job_filter *f,
			 struct cm_error *err);

/* The same list in f->sort's order from f->offset (svc_db_list.c): it
 * groups every visible result, where the default order reads only
 * offset + limit jobs. */
json_t *svc_db_list_jobs_sorted(struct svc_db *db,
				const struct svc_job_filter *f,
				struct cm_error *err);

/* Add "earlier_runs" to each row of a job's results (svc_db_list.c):
 * the jobs of the same application identity (executable hash, or path
 * without one, ranks and threads) that started before it, visible to
 * owner_uid, newest first, at most 20: [{"job", "cluster",
 * "started_at", "duration_s"}]. */
int svc_db_add_history(struct svc_db *db, json_t *rows, int64_t owner_uid,
		       struct cm_error *err);

/* {"runs": [...]}: the most recent results (at most 200 looked at) of
 * the model's executable visible to owner_uid that started from learned
 * model model_id: job, cluster, step, node, started_at, duration_s. */
json_t *svc_db_model_runs(struct svc_db *db, int64_t model_id,
			  const char *executable, int64_t owner_uid,
			  struct cm_error *err);

/* {"apps": [...]} most recently run first. */
json_t *svc_db_list_apps(struct svc_db *db, int64_t owner_uid, int limit,
			 struct cm_error *err);

/* A job's results and summary; *status is 200, 403 (no result of the job
 * is the owner's) or 404 (unknown job, NULL returned).  cluster: only
 * that cluster's results ("" those without one), NULL every cluster's;
 * "clusters" lists the distinct ones shown. */
json_t *svc_db_job(struct svc_db *db, int64_t job, const char *cluster,
		   int64_t owner_uid, int with_documents, int *status,
		   struct cm_error *err);

/* One stored result with its document; *status 200, 403 or 404. */
json_t *svc_db_result(struct svc_db *db, int64_t id, int64_t owner_uid,
		      int *status, struct cm_error *err);

/* n connections to path; writes are serialised by a mutex in the pool so
 * worker threads do not spin on SQLite's busy handler. */
struct svc_db_pool *svc_db_pool_open(const char *path, unsigned n,
				     int sync_full, struct cm_error *err);
struct svc_db *svc_db_pool_get(struct svc_db_pool *pool);

/* svc_db_store_text with group commit, for the upload path: uploads
 * arriving while another group is being written are stored together in
 * the next transaction, on a connection of the pool's own, by one of the
 * waiting threads.  Returns when this upload's transaction committed (or
 * failed: then it was retried alone, so the error is its own). */
int svc_db_pool_store(struct svc_db_pool *pool,
		      const struct svc_result_ident *id,
		      const char *upload_id, uint32_t uploader_uid,
		      const char *document, size_t len, int64_t *row_id,
		      enum svc_store_outcome *outcome, struct cm_error *err);

/* Uploads stored through svc_db_pool_store so far, and the groups
 * (transactions, retries alone not counted) they were stored in. */
void svc_db_pool_store_stats(struct svc_db_pool *pool,
			     unsigned long long *stores,
			     unsigned long long *groups);

/* Copy the WAL back into the database (a passive checkpoint) when it has
 * grown past a few MB since the last one; db is a connection of the pool
 * held by the caller.  Pool connections do not checkpoint on commit (so
 * uploads do not pay for it) unless the WAL grows very long. */
void svc_db_pool_checkpoint(struct svc_db_pool *pool, struct svc_db *db);
void svc_db_pool_put(struct svc_db_pool *pool, struct svc_db *db);
void svc_db_pool_close(struct svc_db_pool *pool);

/* For the service's other tables (svc_models.c: learned models).  The
 * connection, for reads with statements of their own; and a write
 * transaction: fn(conn, arg, err) runs inside BEGIN IMMEDIATE under the
 * pool's write lock, committed when it returns 0, rolled back otherwise
 * (its -1, errno and err are passed on). */
struct sqlite3;
struct sqlite3_stmt;
struct sqlite3 *svc_db_conn(struct svc_db *db);
/* Step st to its end: an array of row objects keyed by column name
 * ("document" parsed, or left out unless with_document; "result_ids"
 * as integers); st is reset.  NULL with err on failure. */
json_t *svc_db_rows(struct svc_db *db, struct sqlite3_stmt *st,
		    int with_document, struct cm_error *err);
int svc_db_write_txn(struct svc_db *db,
		     int (*fn)(struct sqlite3 *conn, void *arg,
			       struct cm_error *err),
		     void *arg, struct cm_error *err);

#endif
