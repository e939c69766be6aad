/* svc_models.c: learned models in SQLite (sql/0002_models.sql) and
 * GET /v1/models (docs/service.md, "Learned models").
 *
 * Uploads do not touch models: a trigger queues each new result in the
 * upload's own transaction (sql/0004_model_queue.sql), and the worker
 * (svc_model_worker.c) folds the queue in batches, one load and one store
 * per model per batch.  Reads of a model fold its pending runs first, so
 * an answer always includes every run acknowledged before it (up to a
 * bound, READ_FOLD_MAX).  Statements here are prepared per call: folds
 * happen once per batch and lookups once per step start, far from the
 * hot path of the results table, and svc_db keeps its own statement
 * table private. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "svc_api.h"
#include "svc_db.h"
#include "svc_log.h"
#include "svc_metrics.h"
#include "svc_models.h"

#define LIST_LIMIT_DEFAULT 100
#define LIST_LIMIT_MAX 1000
#define EXE_HASH_MAX 128
/* Pending runs a read folds before answering (~0.3 ms each at 256
 * threads): the agent's model fetch times out after 500 ms. */
#define READ_FOLD_MAX 32

static const char SQL_FIND_KEY[] =
	"SELECT id, model FROM models WHERE uid = ?1 AND exe_hash = ?2"
	" AND ranks = ?3 AND threads_per_rank = ?4 AND argv_shape = ?5";
static const char SQL_INSERT[] =
	"INSERT INTO models (uid, user, app, executable, exe_hash, ranks,"
	" threads_per_rank, argv_shape, runs, stability, threads,"
	" last_result_id, created_at, updated_at, model)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
	" ?13, ?14)";
static const char SQL_UPDATE[] =
	"UPDATE models SET user = ?2, app = ?3, executable = ?4, runs = ?5,"
	" stability = ?6, threads = ?7, last_result_id = ?8,"
	" updated_at = ?9, model = ?10 WHERE id = ?1";
/* Without threads_per_rank (?4 NULL): the model with the most runs. */
static const char SQL_LOOKUP[] =
	"SELECT id, model FROM models WHERE uid = ?1 AND exe_hash = ?2"
	" AND ranks = ?3 AND (?4 IS NULL OR threads_per_rank = ?4)"
	" AND argv_shape = ?5"
	" ORDER BY runs DESC, updated_at DESC, id DESC LIMIT 1";
/* The queue of pending folds, oldest first, with the stored documents. */
#define SQL_PENDING(where) \
	"SELECT q.result_id, q.uid, r.document FROM model_queue q" \
	" JOIN results r ON r.id = q.result_id" where \
	" ORDER BY q.result_id LIMIT ?"
static const char SQL_PENDING_ALL[] = SQL_PENDING("");
static const char SQL_PENDING_UID[] = SQL_PENDING(" WHERE q.uid = ?");
static const char SQL_PENDING_KEY[] =
	SQL_PENDING(" WHERE q.uid = ? AND q.exe_hash = ?");
#undef SQL_PENDING
static const char SQL_DEQUEUE[] =
	"DELETE FROM model_queue WHERE result_id = ?1";
static const char SQL_PENDING_COUNT[] = "SELECT COUNT(*) FROM model_queue";
static const char SQL_GET[] = "SELECT id, model FROM models WHERE id = ?1";
static const char SQL_LIST[] =
	"SELECT id, model FROM models WHERE (?1 IS NULL OR uid = ?1)"
	" AND (?2 IS NULL OR app = ?2 OR executable = ?2)"
	" ORDER BY updated_at DESC, id DESC LIMIT ?3";

/* ---- SQLite helpers ------------------------------------------------------ */

static int sql_error(sqlite3 *conn, struct cm_error *err, const char *what)
{
	int code = sqlite3_extended_errcode(conn);
	int e = code == SQLITE_BUSY || code == SQLITE_LOCKED ? EBUSY :
		code == SQLITE_FULL ? ENOSPC : code == SQLITE_NOMEM ? ENOMEM :
		EIO;

	return cm_errorf(err, e, "database: models: %s: %s", what,
			 sqlite3_errmsg(conn));
}

static sqlite3_stmt *prepare(sqlite3 *conn, const char *sql,
			     struct cm_error *err)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK) {
		sql_error(conn, err, "prepare");
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

static int bind_text(sqlite3_stmt *st, int i, const char *s)
{
	return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) :
		   sqlite3_bind_null(st, i);
}

/* Step a prepared query expected to give at most one (id, model) row:
 * the parsed model with "id" set, or NULL (ENOENT when no row, EBADMSG
 * when the stored text is not JSON: *row_id names the row). */
static json_t *model_row_id(sqlite3 *conn, sqlite3_stmt *st,
			    int64_t *row_id, struct cm_error *err)
{
	int rc = sqlite3_step(st);
	json_error_t je;
	json_t *m;

	if (rc == SQLITE_DONE) {
		cm_errorf(err, ENOENT, "no model");
		return NULL;
	}
	if (rc != SQLITE_ROW) {
		sql_error(conn, err, "read");
		return NULL;
	}
	*row_id = sqlite3_column_int64(st, 0);
	m = json_loads((const char *)sqlite3_column_text(st, 1), 0, &je);
	if (!m) {
		cm_errorf(err, EBADMSG, "stored model %lld is not JSON: %s",
			  (long long)*row_id, je.text);
		return NULL;
	}
	if (json_object_set_new(m, "id", json_integer(*row_id)) < 0) {
		json_decref(m);
		cm_errorf(err, ENOMEM, "model: out of memory");
		return NULL;
	}
	return m;
}

static json_t *model_row(sqlite3 *conn, sqlite3_stmt *st,
			 struct cm_error *err)
{
	int64_t id;
	json_t *m = model_row_id(conn, st, &id, err);

	if (!m && errno == EBADMSG)
		errno = EIO;
	return m;
}

static void utc_now(char out[21])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- model rows ---------------------------------------------------------- */

static json_t *find_by_key(sqlite3 *conn, const json_t *key, int64_t uid,
			   int64_t *row_id, struct cm_error *err)
{
	sqlite3_stmt *st = prepare(conn, SQL_FIND_KEY, err);
	json_t *m = NULL;
	int rc = SQLITE_OK;

	if (!st)
		return NULL;
	rc |= sqlite3_bind_int64(st, 1, uid);
	rc |= bind_text(st, 2, json_string_value(json_object_get(key,
							"exe_hash")));
	rc |= sqlite3_bind_int64(st, 3, json_integer_value(json_object_get(key,
							"ranks")));
	rc |= sqlite3_bind_int64(st, 4, json_integer_value(json_object_get(key,
							"threads_per_rank")));
	rc |= bind_text(st, 5, json_string_value(json_object_get(key,
							"argv_shape")));
	if (rc != SQLITE_OK)
		sql_error(conn, err, "bind");
	else
		m = model_row_id(conn, st, row_id, err);
	sqlite3_finalize(st);
	return m;
}

/* Columns shared by INSERT and UPDATE, from the merged document. */
static int bind_model(sqlite3_stmt *st, const json_t *m, const char *text,
		      int64_t result_id, int insert)
{
	const json_t *stab = json_object_get(m, "stability");
	const json_t *key = json_object_get(m, "key");
	int rc = SQLITE_OK;

	if (insert) {
		rc |= sqlite3_bind_int64(st, 1, json_integer_value(
				json_object_get(m, "uid")));
		rc |= bind_text(st, 5, json_string_value(json_object_get(key,
				"exe_hash")));
		rc |= sqlite3_bind_int64(st, 6, json_integer_value(
				json_object_get(key, "ranks")));
		rc |= sqlite3_bind_int64(st, 7, json_integer_value(
				json_object_get(key, "threads_per_rank")));
		rc |= bind_text(st, 8, json_string_value(json_object_get(key,
				"argv_shape")));
		rc |= sqlite3_bind_int64(st, 9, 1);
		rc |= json_is_number(stab) ?
		      sqlite3_bind_double(st, 10, json_number_value(stab)) :
		      sqlite3_bind_null(st, 10);
		rc |= sqlite3_bind_int64(st, 11, (sqlite3_int64)json_array_size(
				json_object_get(m, "threads")));
		rc |= sqlite3_bind_int64(st, 12, result_id);
		rc |= bind_text(st, 13, json_string_value(json_object_get(m,
				"updated_at")));
		rc |= bind_text(st, 14, text);
	} else {
		rc |= sqlite3_bind_int64(st, 5, json_integer_value(
				json_object_get(m, "runs")));
		rc |= json_is_number(stab) ?
		      sqlite3_bind_double(st, 6, json_number_value(stab)) :
		      sqlite3_bind_null(st, 6);
		rc |= sqlite3_bind_int64(st, 7, (sqlite3_int64)json_array_size(
				json_object_get(m, "threads")));
		rc |= sqlite3_bind_int64(st, 8, result_id);
		rc |= bind_text(st, 9, json_string_value(json_object_get(m,
				"updated_at")));
		rc |= bind_text(st, 10, text);
	}
	/* ?2-?4 are the same columns in both statements. */
	rc |= bind_text(st, 2, json_string_value(json_object_get(m, "user")));
	rc |= bind_text(st, 3, json_string_value(json_object_get(m, "app")));
	rc |= bind_text(st, 4, json_string_value(json_object_get(m,
							"executable")));
	return rc == SQLITE_OK ? 0 : -1;
}

static int store_model(sqlite3 *conn, int64_t id, const json_t *m,
		       int64_t result_id, int64_t *new_id,
		       struct cm_error *err)
{
	char *text = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS |
				JSON_REAL_PRECISION(9));
	sqlite3_stmt *st;
	int rv = -1;

	if (!text)
		return cm_errorf(err, ENOMEM, "model: out of memory");
	st = prepare(conn, id ? SQL_UPDATE : SQL_INSERT, err);
	if (st && id && sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
		sql_error(conn, err, "bind");
	else if (st && bind_model(st, m, text, result_id, !id) < 0)
		sql_error(conn, err, "bind");
	else if (st && sqlite3_step(st) != SQLITE_DONE)
		sql_error(conn, err, id ? "update" : "insert");
	else if (st)
		rv = 0;
	if (rv == 0)
		*new_id = id ? id : sqlite3_last_insert_rowid(conn);
	sqlite3_finalize(st);
	free(text);
	return rv;
}

/* ---- folding pending results (sql/0004_model_queue.sql) ------------------- */

/* One folder at a time (the worker or a read): two could otherwise fold
 * the same queued run twice.  Taken before the pool's write lock, never
 * while waiting for a pool connection. */
static pthread_mutex_t fold_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_llong pending_gauge;	/* queued, not yet folded */
static atomic_ullong fold_batches;

/* A model being folded: loaded once per batch, merged run after run. */
struct fold_group {
	json_t *key;
	int64_t uid;
	int64_t model_id;	/* 0: a new model */
	struct svc_model_acc *model;	/* merged so far (no jansson arrays) */
	int64_t last_result;
	int runs;		/* merged in this batch */
	int64_t bad_id;		/* a stored model to quarantine, or 0 */
	char bad_reason[200];
};

struct fold_batch {
	struct fold_group *g;
	size_t ng, gcap;
	int64_t *done;		/* queue rows to delete */
	size_t ndone, dcap;
	int skipped, failed;
	char now[21];
};

static void batch_free(struct fold_batch *b)
{
	size_t i;

	for (i = 0; i < b->ng; i++) {
		json_decref(b->g[i].key);
		svc_model_acc_free(b->g[i].model);
	}
	free(b->g);
	free(b->done);
}

static int batch_done(struct fold_batch *b, int64_t result_id)
{
	if (b->ndone == b->dcap) {
		size_t cap = b->dcap ? 2 * b->dcap : 32;
		int64_t *d = realloc(b->done, cap * sizeof(*d));

		if (!d)
			return -1;
		b->done = d;
		b->dcap = cap;
	}
	b->done[b->ndone++] = result_id;
	return 0;
}

/* A stored model that cannot be read (not JSON, or not a model) is to
 * be quarantined: the group starts a fresh model.  0, or -1 on a storage
 * error or ENOMEM. */
static int group_load(struct fold_group *g, sqlite3 *conn,
		      const json_t *key, int64_t uid, struct cm_error *err)
{
	struct cm_error e = { "" };
	int64_t row = 0;
	json_t *stored = find_by_key(conn, key, uid, &row, &e);

	if (!stored && errno != ENOENT && errno != EBADMSG)
		return cm_errorf(err, errno, "%s", e.text);
	if (stored) {
		g->model = svc_model_acc_new(stored, &e);
		json_decref(stored);
		if (!g->model && errno == ENOMEM)
			return cm_errorf(err, ENOMEM, "%s", e.text);
		if (g->model)
			g->model_id = row;
	}
	if (!g->model && row) {
		g->bad_id = row;
		snprintf(g->bad_reason, sizeof(g->bad_reason), "%s", e.text);
	}
	if (!g->model)
		g->model = svc_model_acc_new(NULL, err);
	return g->model ? 0 : -1;
}

/* The group of (uid, key), loading its model on first use. */
static struct fold_group *batch_group(struct fold_batch *b, sqlite3 *conn,
				      json_t *key, int64_t uid,
				      struct cm_error *err)
{
	struct fold_group *g;
	size_t i;

	for (i = 0; i < b->ng; i++)
		if (b->g[i].uid == uid && json_equal(b->g[i].key, key))
			return &b->g[i];
	if (b->ng == b->gcap) {
		size_t cap = b->gcap ? 2 * b->gcap : 4;

		g = realloc(b->g, cap * sizeof(*g));
		if (!g) {
			cm_errorf(err, ENOMEM, "model: out of memory");
			return NULL;
		}
		b->g = g;
		b->gcap = cap;
	}
	g = &b->g[b->ng];
	memset(g, 0, sizeof(*g));
	if (group_load(g, conn, key, uid, err) < 0)
		return NULL;
	g->key = json_incref(key);
	g->uid = uid;
	b->ng++;
	return g;
}

/* Merge one queued result (its stored text, read without jansson: see
 * svc_model_run_read) into its group's model.  0 merged, skipped or
 * failed (dequeued either way), -1 when the batch must stop (ENOMEM or a
 * storage error: nothing is committed). */
static int fold_one(struct fold_batch *b, sqlite3 *conn, int64_t result_id,
		    int64_t uid, const char *text, size_t len,
		    struct cm_error *err)
{
	struct cm_error e = { "" };
	struct svc_model_run *run = svc_model_run_read(text, len, &e);
	struct fold_group *g;
	json_t *key;
	int saved, rc;

	key = run ? svc_model_run_key(run, &e) : NULL;
	saved = errno;
	if (!key)
		svc_model_run_free(run);
	if (!key && saved == ENOMEM)
		return cm_errorf(err, ENOMEM, "%s", e.text);
	if (!key) {	/* no exe_hash or threads, a repeated identity */
		svc_log(saved == EINVAL ? SVC_LOG_WARNING : SVC_LOG_DEBUG,
			"result %lld feeds no model: %s", (long long)result_id,
			e.text);
		b->skipped++;
		return batch_done(b, result_id) < 0 ?
		       cm_errorf(err, ENOMEM, "model: out of memory") : 0;
	}
	g = batch_group(b, conn, key, uid, err);
	json_decref(key);
	rc = g ? svc_model_acc_fold(g->model, run, result_id, b->now, &e) :
	     -1;
	saved = errno;
	svc_model_run_free(run);
	if (!g)
		return -1;
	if (rc < 0 && saved == ENOMEM)
		return cm_errorf(err, ENOMEM, "%s", e.text);
	if (rc < 0) {
		svc_log(SVC_LOG_ERROR, "model update for result %lld failed: %s",
			(long long)result_id, e.text);
		b->failed++;
	} else {
		g->last_result = result_id;
		g->runs++;
	}
	return batch_done(b, result_id) < 0 ?
	       cm_errorf(err, ENOMEM, "model: out of memory") : 0;
}

/* Read up to max queued results (oldest first) and merge them. */
static int fold_read(struct fold_batch *b, sqlite3 *conn, int64_t uid,
		     const char *exe_hash, int max, struct cm_error *err)
{
	int by_key = uid >= 0 && exe_hash;	/* a hash alone: any model */
	sqlite3_stmt *st = prepare(conn, by_key ? SQL_PENDING_KEY :
				   uid >= 0 ? SQL_PENDING_UID :
				   SQL_PENDING_ALL, err);
	int rc = SQLITE_OK, i = 1;

	if (!st)
		return -1;
	if (uid >= 0)
		rc |= sqlite3_bind_int64(st, i++, uid);
	if (by_key)
		rc |= bind_text(st, i++, exe_hash);
	rc |= sqlite3_bind_int(st, i, max);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(st);
		return sql_error(conn, err, "bind");
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (fold_one(b, conn, sqlite3_column_int64(st, 0),
			     sqlite3_column_int64(st, 1),
			     (const char *)sqlite3_column_blob(st, 2),
			     (size_t)sqlite3_column_bytes(st, 2), err) < 0) {
			sqlite3_finalize(st);
			return -1;
		}
	}
	if (rc != SQLITE_DONE)
		sql_error(conn, err, "read the model queue");
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int dequeue(sqlite3 *conn, const struct fold_batch *b,
		   struct cm_error *err)
{
	sqlite3_stmt *st = prepare(conn, SQL_DEQUEUE, err);
	size_t k;

	if (!st)
		return -1;
	for (k = 0; k < b->ndone; k++) {
		if (sqlite3_bind_int64(st, 1, b->done[k]) != SQLITE_OK ||
		    sqlite3_step(st) != SQLITE_DONE) {
			sql_error(conn, err, "dequeue");
			sqlite3_finalize(st);
			return -1;
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return 0;
}

/* The write transaction: every merged model stored, every folded result
 * dequeued, or nothing. */
static int fold_store_txn(sqlite3 *conn, void *arg, struct cm_error *err)
{
	struct fold_batch *b = arg;
	size_t i;

	for (i = 0; i < b->ng; i++) {
		struct fold_group *g = &b->g[i];
		json_t *doc;
		int rc;

		if (g->bad_id &&
		    svc_models_quarantine(conn, g->bad_id, g->bad_reason,
					  err) < 0)
			return -1;
		if (!g->runs)
			continue;
		/* The document is built once per model and batch. */
		doc = svc_model_acc_doc(g->model, err);
		rc = doc ? store_model(conn, g->model_id, doc, g->last_result,
				       &g->model_id, err) : -1;
		json_decref(doc);
		if (rc < 0)
			return -1;
	}
	return dequeue(conn, b, err);
}

static void fold_report(const struct fold_batch *b)
{
	size_t i;
	int k;

	for (i = 0; i < b->ng; i++) {
		if (b->g[i].bad_id)
			svc_log(SVC_LOG_ERROR, "model %lld quarantined (models_quarantine), its runs start a new model: %s",
				(long long)b->g[i].bad_id, b->g[i].bad_reason);
		for (k = 0; k < b->g[i].runs; k++)
			svc_metrics_model(1);
		if (b->g[i].runs)
			svc_log(SVC_LOG_DEBUG, "model %lld updated with %d run%s (last result %lld)",
				(long long)b->g[i].model_id, b->g[i].runs,
				b->g[i].runs == 1 ? "" : "s",
				(long long)b->g[i].last_result);
	}
	for (k = 0; k < b->skipped; k++)
		svc_metrics_model(0);
	for (k = 0; k < b->failed; k++)
		svc_metrics_model(-1);
	atomic_fetch_sub(&pending_gauge, (long long)b->ndone);
	atomic_fetch_add(&fold_batches, 1);
}

int svc_models_fold_pending(struct svc_db *db, int64_t uid,
			    const char *exe_hash, int max,
			    struct cm_error *err)
{
	struct fold_batch b = { 0 };
	int rv = -1;

	pthread_mutex_lock(&fold_lock);
	utc_now(b.now);
	if (fold_read(&b, svc_db_conn(db), uid, exe_hash, max, err) < 0)
		goto out;
	rv = 0;
	if (b.ndone == 0)
		goto out;
	if (svc_db_write_txn(db, fold_store_txn, &b, err) < 0) {
		rv = -1;
		goto out;
	}
	fold_report(&b);
	rv = (int)b.ndone;
out:
	pthread_mutex_unlock(&fold_lock);
	batch_free(&b);
	return rv;
}

void svc_models_after_upload(const struct svc_result_ident *id,
			     int64_t result_id)
{
	svc_metrics_result(id);	/* what the agent did, for /metrics */
	if (!id->exe_hash) {
		svc_metrics_model(0);
		svc_log(SVC_LOG_DEBUG,
			"result %lld feeds no model: identity.exe_hash: absent",
			(long long)result_id);
		return;
	}
	atomic_fetch_add(&pending_gauge, 1);
	svc_model_worker_notify();
}

long long svc_models_count_pending(struct svc_db *db, struct cm_error *err)
{
	sqlite3 *conn = svc_db_conn(db);
	sqlite3_stmt *st = prepare(conn, SQL_PENDING_COUNT, err);
	long long n = -1;

	if (!st)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW) {
		n = sqlite3_column_int64(st, 0);
		atomic_store(&pending_gauge, n);
	} else {
		sql_error(conn, err, "count the model queue");
	}
	sqlite3_finalize(st);
	return n;
}

char *svc_models_metrics(void)
{
	long long pending = atomic_load(&pending_gauge);
	char *text = malloc(512);

	if (!text)
		return NULL;
	/* The hook counts a result after its commit, so the worker may
	 * dequeue it first: never show a negative backlog. */
	snprintf(text, 512,
		     "# HELP commap_model_pending Results stored but not yet folded into their model.\n"
		     "# TYPE commap_model_pending gauge\n"
		     "commap_model_pending %lld\n"
		     "# HELP commap_model_fold_batches_total Transactions that folded pending results into models.\n"
		     "# TYPE commap_model_fold_batches_total counter\n"
		     "commap_model_fold_batches_total %llu\n",
		     pending > 0 ? pending : 0,
		     (unsigned long long)atomic_load(&fold_batches));
	return text;
}

/* ---- reads ---------------------------------------------------------------- */

/* Before answering, fold what is pending for the models asked about, so
 * a model read right after an upload includes it.  A failure leaves the
 * runs to the worker: the stored model is answered all the same. */
static int read_fold(struct svc_db *db, int64_t uid, const char *exe_hash)
{
	struct cm_error e = { "" };
	int n = svc_models_fold_pending(db, uid, exe_hash, READ_FOLD_MAX, &e);

	if (n < 0)
		svc_log(SVC_LOG_WARNING, "folding pending runs before a read: %s",
			e.text);
	return n;
}

json_t *svc_models_find(struct svc_db *db, const struct svc_model_query *q,
			struct cm_error *err)
{
	sqlite3 *conn = svc_db_conn(db);
	sqlite3_stmt *st = prepare(conn, SQL_LOOKUP, err);
	json_t *m = NULL;
	int rc = SQLITE_OK;

	if (!st)
		return NULL;
	rc |= sqlite3_bind_int64(st, 1, q->uid);
	rc |= bind_text(st, 2, q->exe_hash);
	rc |= sqlite3_bind_int64(st, 3, q->ranks);
	rc |= q->threads_per_rank < 0 ? sqlite3_bind_null(st, 4) :
	      sqlite3_bind_int64(st, 4, q->threads_per_rank);
	rc |= bind_text(st, 5, q->argv_shape);
	if (rc != SQLITE_OK)
		sql_error(conn, err, "bind");
	else
		m = model_row(conn, st, err);
	sqlite3_finalize(st);
	return m;
}

json_t *svc_models_get(struct svc_db *db, int64_t id, struct cm_error *err)
{
	sqlite3 *conn = svc_db_conn(db);
	sqlite3_stmt *st = prepare(conn, SQL_GET, err);
	json_t *m = NULL;

	if (!st)
		return NULL;
	if (sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
		sql_error(conn, err, "bind");
	else
		m = model_row(conn, st, err);
	sqlite3_finalize(st);
	return m;
}

/* A listing entry: the model without its matrix and mapping. */
static void summarise(json_t *m)
{
	json_object_set_new(m, "n_threads", json_integer((json_int_t)
		json_array_size(json_object_get(m, "threads"))));
	json_object_set_new(m, "n_edges", json_integer((json_int_t)
		json_array_size(json_object_get(m, "edges"))));
	json_object_del(m, "threads");
	json_object_del(m, "edges");
	json_object_del(m, "last_mapping");
}

json_t *svc_models_list(struct svc_db *db, int64_t owner_uid,
			const char *app, int limit, int full,
			struct cm_error *err)
{
	sqlite3 *conn = svc_db_conn(db);
	sqlite3_stmt *st = prepare(conn, SQL_LIST, err);
	json_t *list = json_array(), *m;
	int rc = SQLITE_OK;

	if (!st || !list)
		goto fail;
	read_fold(db, owner_uid, NULL);
	rc |= owner_uid < 0 ? sqlite3_bind_null(st, 1) :
	      sqlite3_bind_int64(st, 1, owner_uid);
	rc |= bind_text(st, 2, app);
	rc |= sqlite3_bind_int(st, 3, limit);
	if (rc != SQLITE_OK) {
		sql_error(conn, err, "bind");
		goto fail;
	}
	for (;;) {
		int64_t row;

		m = model_row_id(conn, st, &row, err);
		/* The next fold of its key quarantines it; till then the
		 * owner's other models are still listed. */
		if (!m && errno == EBADMSG) {
			svc_log(SVC_LOG_DEBUG, "models: left out of a listing: %s",
				err->text);
			continue;
		}
		if (!m)
			break;
		if (!full)
			summarise(m);
		if (json_array_append_new(list, m) < 0)
			goto fail;
	}
	if (errno != ENOENT)
		goto fail;
	sqlite3_finalize(st);
	return json_pack("{s:o}", "models", list);
fail:
	sqlite3_finalize(st);
	json_decref(list);
	return NULL;
}

/* ---- GET /v1/models --------------------------------------------------------- */

static void respond(struct svc_api_response *rs, unsigned status, json_t *o)
{
	/* 9 digits: weights are kept to 6 decimals; the default 17 digits
	 * would make a 256-thread model half again as long. */
	char *text = o ? json_dumps(o, JSON_COMPACT |
				    JSON_REAL_PRECISION(9)) : NULL;
	size_t n;

	json_decref(o);
	if (!text) {
		svc_api_error(rs, 500, "out of memory");
		return;
	}
	n = strlen(text);
	rs->body = realloc(text, n + 2);
	if (!rs->body) {
		rs->body = text;
	} else {
		rs->body[n++] = '\n';
		rs->body[n] = '\0';
	}
	rs->body_len = n;
	rs->status = status;
	rs->content_type = "application/json";
}

static void failure(struct svc_api_response *rs, const struct cm_error *e)
{
	svc_log(SVC_LOG_ERROR, "%s", e->text);
	if (errno == EBUSY || errno == ENOSPC)
		svc_api_error(rs, 503, "storage busy or full, retry later");
	else
		svc_api_error(rs, 500, "storage error");
}

/* A decimal integer in [lo, hi]. */
static int parse_int(const char *s, long long lo, long long hi,
		     long long *out)
{
	char *end;
	long long v;

	if (!isdigit((unsigned char)*s) || strlen(s) > 19)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || errno || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static int exe_hash_valid(const char *s)
{
	size_t n = strlen(s), i;

	if (n > EXE_HASH_MAX || !printable(s))
		return 0;
	if (strncmp(s, "sha256:", 7) == 0) {
		if (n != 7 + 64)
			return 0;
		for (i = 7; i < n; i++)
			if (!isxdigit((unsigned char)s[i]))
				return 0;
		return 1;
	}
	return strncmp(s, "meta:", 5) == 0 && n > 5;
}

/* An integer parameter; absent: *out = dflt (-1: required). */
static int q_int(const struct svc_api_request *rq, const char *k,
		 long long lo, long long hi, long long dflt, long long *out,
		 struct svc_api_response *rs)
{
	const char *s = svc_api_query_get(rq, k);

	if (!s && dflt == -1) {
		svc_api_error(rs, 400, "%s: required", k);
		return -1;
	}
	if (!s) {
		*out = dflt;
		return 0;
	}
	if (parse_int(s, lo, hi, out) < 0) {
		svc_api_error(rs, 400, "%s: '%.32s' is not an integer in [%lld, %lld]",
			      k, s, lo, hi);
		return -1;
	}
	return 0;
}

/* Whose models: the uid parameter (default the caller).  Admins and
 * writers (the agent fetches for the job's user) may name anyone. */
static int q_owner(const struct svc_api_request *rq, int writers_too,
		   long long *uid, struct svc_api_response *rs)
{
	const struct svc_caller *c = rq->caller;

	if (q_int(rq, "uid", 0, 4294967295LL, (long long)c->uid, uid, rs) < 0)
		return -1;
	if (*uid != (long long)c->uid && !c->is_admin &&
	    !(writers_too && c->is_writer)) {
		svc_api_error(rs, 403,
			      "uid: models of user %lld are not yours (admins%s only)",
			      *uid, writers_too ? " and writers" : "");
		return -1;
	}
	return 0;
}

static void lookup(const struct svc_api *api,
		   const struct svc_api_request *rq,
		   struct svc_api_response *rs)
{
	struct svc_model_query q = { 0 };
	struct cm_error e = { "" };
	long long uid, ranks, tpr;
	char tpr_text[40] = "";
	struct svc_db *db;
	json_t *m;
	const char *listing = svc_api_query_get(rq, "app") ? "app" :
			      svc_api_query_get(rq, "limit") ? "limit" : NULL;

	if (listing) {
		svc_api_error(rs, 400, "%s: only for listing models (without "
			      "exe_hash, ranks, argv_shape)", listing);
		return;
	}
	q.exe_hash = svc_api_query_get(rq, "exe_hash");
	q.argv_shape = svc_api_query_get(rq, "argv_shape");
	if (!q.exe_hash || !exe_hash_valid(q.exe_hash)) {
		svc_api_error(rs, 400, "exe_hash: %s", q.exe_hash ?
			      "expected sha256:<64 hex digits> or meta:<size>:<mtime>:<path>, at most 128 bytes" :
			      "required");
		return;
	}
	if (q_int(rq, "ranks", 1, 1 << 24, -1, &ranks, rs) < 0 ||
	    q_int(rq, "threads_per_rank", 1, 65536, -2, &tpr, rs) < 0)
		return;
	if (!q.argv_shape || !*q.argv_shape ||
	    strlen(q.argv_shape) > SVC_MODEL_ARGV_SHAPE_MAX ||
	    !printable(q.argv_shape)) {
		svc_api_error(rs, 400, "argv_shape: %s", q.argv_shape ?
			      "expected 1-4096 bytes without control characters" :
			      "required");
		return;
	}
	if (q_owner(rq, 1, &uid, rs) < 0)
		return;
	q.uid = uid;
	q.ranks = ranks;
	q.threads_per_rank = tpr < 0 ? -1 : tpr;
	db = svc_db_pool_get(api->pool);
	read_fold(db, q.uid, q.exe_hash);
	m = svc_models_find(db, &q, &e);
	svc_db_pool_put(api->pool, db);
	if (m)
		respond(rs, 200, m);
	else if (errno == ENOENT) {
		if (tpr >= 0)
			snprintf(tpr_text, sizeof(tpr_text),
				 " threads_per_rank=%lld", tpr);
		svc_api_error(rs, 404,
			      "no model for exe_hash=%.128s ranks=%lld%s argv_shape=%.256s uid=%lld",
			      q.exe_hash, ranks, tpr_text, q.argv_shape, uid);
	} else
		failure(rs, &e);
}

static void list(const struct svc_api *api, const struct svc_api_request *rq,
		 struct svc_api_response *rs)
{
	struct cm_error e = { "" };
	long long uid, limit;
	int64_t owner;
	struct svc_db *db;
	json_t *out;

	if (q_int(rq, "limit", 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT, &limit,
		  rs) < 0)
		return;
	if (svc_api_query_get(rq, "uid")) {
		if (q_owner(rq, 0, &uid, rs) < 0)
			return;
		owner = uid;
	} else {
		owner = rq->caller->is_admin ? -1 : (int64_t)rq->caller->uid;
	}
	db = svc_db_pool_get(api->pool);
	out = svc_models_list(db, owner, svc_api_query_get(rq, "app"),
			      (int)limit, 0, &e);
	svc_db_pool_put(api->pool, db);
	if (out)
		respond(rs, 200, out);
	else
		failure(rs, &e);
}

/* The {id} of /v1/models/{id}, which takes no query parameters: 0, or
 * -1 with a 400 answer. */
static int model_id_arg(const struct svc_api_request *rq, const char *arg,
			struct svc_api_response *rs, long long *id)
{
	static const char *const known[] = { NULL };

	if (svc_api_query_check(rq, known, rs) < 0)
		return -1;
	if (parse_int(arg, 1, 1LL << 62, id) < 0) {
		svc_api_error(rs, 400, "model: '%.32s' is not a model id", arg);
		return -1;
	}
	return 0;
}

struct delete_args {
	int64_t id;
	int deleted;
};

static int delete_txn(sqlite3 *conn, void *arg, struct cm_error *err)
{
	struct delete_args *a = arg;
	sqlite3_stmt *st = prepare(conn, "DELETE FROM models WHERE id = ?1",
				   err);
	int rc;

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, a->id);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_error(conn, err, "delete model");
	a->deleted = sqlite3_changes(conn) > 0;
	return 0;
}

int svc_models_delete(struct svc_db *db, int64_t id, struct cm_error *err)
{
	struct delete_args a = { id, 0 };

	if (svc_db_write_txn(db, delete_txn, &a, err) < 0)
		return -1;
	return a.deleted;
}

/* DELETE /v1/models/{id}: the owner or an admin (not a writer: agents
 * read models, they never drop them).  The model's pending runs are
 * folded first, so that they do not bring it back at the next fold;
 * runs uploaded afterwards start a new model. */
static void delete_one(const struct svc_api *api,
		       const struct svc_api_request *rq, const char *arg,
		       struct svc_api_response *rs)
{
	const struct svc_caller *c = rq->caller;
	struct cm_error e = { "" };
	struct svc_db *db;
	long long id, uid, runs;
	json_t *m;
	int rc = -1, missing;

	if (model_id_arg(rq, arg, rs, &id) < 0)
		return;
	db = svc_db_pool_get(api->pool);
	m = svc_models_get(db, id, &e);
	missing = !m && errno == ENOENT;
	uid = m ? json_integer_value(json_object_get(m, "uid")) : -1;
	if (m && (uid == (long long)c->uid || c->is_admin)) {
		read_fold(db, uid, json_string_value(json_object_get(
				       json_object_get(m, "key"), "exe_hash")));
		rc = svc_models_delete(db, id, &e);
	}
	svc_db_pool_put(api->pool, db);
	runs = m ? json_integer_value(json_object_get(m, "runs")) : 0;
	if (missing) {
		svc_api_error(rs, 404, "model %lld: not found", id);
	} else if (!m) {
		failure(rs, &e);
	} else if (uid != (long long)c->uid && !c->is_admin) {
		svc_api_error(rs, 403, "model %lld: not yours", id);
	} else if (rc < 0) {
		failure(rs, &e);
	} else if (rc == 0) {
		svc_api_error(rs, 404, "model %lld: not found", id);
	} else {
		svc_log(SVC_LOG_INFO, "model %lld (%s, %lld runs) deleted by "
			"uid %u", id, json_string_value(json_object_get(m,
			"app")), runs, c->uid);
		respond(rs, 200, json_pack("{s:I, s:I}", "deleted",
					   (json_int_t)id, "runs",
					   (json_int_t)runs));
	}
	json_decref(m);
}

static void get_one(const struct svc_api *api,
		    const struct svc_api_request *rq, const char *arg,
		    struct svc_api_response *rs)
{
	const struct svc_caller *c = rq->caller;
	struct cm_error e = { "" };
	struct svc_db *db;
	long long id;
	json_t *m;

	if (model_id_arg(rq, arg, rs, &id) < 0)
		return;
	db = svc_db_pool_get(api->pool);
	m = svc_models_get(db, id, &e);
	if (m && read_fold(db, json_integer_value(json_object_get(m, "uid")),
			   json_string_value(json_object_get(json_object_get(m,
						"key"), "exe_hash"))) > 0) {
		json_decref(m);
		m = svc_models_get(db, id, &e);
	}
	svc_db_pool_put(api->pool, db);
	if (!m && errno == ENOENT) {
		svc_api_error(rs, 404, "model %lld: not found", id);
	} else if (!m) {
		failure(rs, &e);
	} else if (json_integer_value(json_object_get(m, "uid")) !=
		   (json_int_t)c->uid && !c->is_admin && !c->is_writer) {
		json_decref(m);
		svc_api_error(rs, 403, "model %lld: not yours", id);
	} else {
		respond(rs, 200, m);
	}
}

void svc_models_handle(const struct svc_api *api,
		       const struct svc_api_request *rq, const char *arg,
		       struct svc_api_response *rs)
{
	static const char *const known[] = {
		"exe_hash", "ranks", "threads_per_rank", "argv_shape", "uid",
		"app", "limit", NULL,
	};

	if (arg[0] == '/' && strcmp(rq->method, "DELETE") == 0) {
		delete_one(api, rq, arg + 1, rs);
		return;
	}
	if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0) {
		svc_api_error(rs, 405, "%s: method %s not allowed", rq->path,
			      rq->method);
		rs->allow = arg[0] == '/' ? "GET, HEAD, DELETE" : "GET, HEAD";
		return;
	}
	if (arg[0] == '/') {
		get_one(api, rq, arg + 1, rs);
		return;
	}
	if (svc_api_query_check(rq, known, rs) < 0)
		return;
	if (svc_api_query_get(rq, "exe_hash") || svc_api_query_get(rq, "ranks") ||
	    svc_api_query_get(rq, "argv_shape") || svc_api_query_get(rq, "threads_per_rank"))
		lookup(api, rq, rs);
	else
		list(api, rq, rs);
}
