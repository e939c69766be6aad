/* svc_db.c: SQLite storage of uploaded results.  SQL lives in the named
 * constants below; every statement is prepared once per connection, every
 * bind and step is checked, and statements are reset on every path. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "svc_db.h"

#define BUSY_TIMEOUT_MS 5000
/* Uploads committed together at most (svc_db_pool_store). */
#define GROUP_MAX 64
/* WAL length (4 KB pages) from which the models' worker checkpoints, and
 * from which a committing connection does it itself (wal_hook). */
#define WAL_SOFT_FRAMES 2000
#define WAL_HARD_FRAMES 16000

static const char SQL_SCHEMA_TABLE[] =
	"CREATE TABLE IF NOT EXISTS schema_version ("
	" version INTEGER PRIMARY KEY,"
	" name TEXT NOT NULL,"
	" applied_at TEXT NOT NULL)";
static const char SQL_SCHEMA_GET[] =
	"SELECT COALESCE(MAX(version), 0) FROM schema_version";
static const char SQL_SCHEMA_ADD[] =
	"INSERT INTO schema_version (version, name, applied_at)"
	" VALUES (?1, ?2, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))";

static const char SQL_BEGIN[] = "BEGIN IMMEDIATE";
static const char SQL_COMMIT[] = "COMMIT";
static const char SQL_ROLLBACK[] = "ROLLBACK";

/* The same run of a step on a node (sql/0008_cluster.sql): a reused job
 * id is another owner or another start time. */
static const char SQL_FIND_STEP[] =
	"SELECT id, document FROM results"
	" WHERE job = ?1 AND step = ?2 AND node = ?3 AND cluster = ?4"
	" AND uid = ?5 AND started_at = ?6";
static const char SQL_FIND_UPLOAD[] =
	"SELECT id, document FROM results WHERE upload_id = ?1";
static const char SQL_INSERT[] =
	"INSERT INTO results (upload_id, job, step, node, uid, user,"
	" executable, app, exe_hash, mode, backend, started_at, ended_at,"
	" ranks, threads, edges, migrations, final_cost, uploader_uid,"
	" received_at, document, cluster)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
	" ?14, ?15, ?16, ?17, ?18, ?19,"
	" strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), ?20, ?21)";

/* Jobs: a Slurm job groups its steps and nodes on one cluster; a result
 * outside Slurm (job NULL) is a job of its own.  Filters apply to results; a job is
 * listed at its first-started visible result, newest first.  "firsts"
 * walks the results by started_at (an index) and keeps those with no
 * earlier visible result of the same job (one probe of
 * results_job_started, 0003), so only LIMIT jobs are read and grouped,
 * however many are stored; each is then summed over its visible results. */
#define VISIBLE(r) \
	" (?1 IS NULL OR " r ".uid = ?1) AND (?2 IS NULL OR " r ".user = ?2)" \
	" AND (?3 IS NULL OR " r ".app = ?3 OR " r ".executable = ?3)" \
	" AND (?4 IS NULL OR " r ".started_at >= ?4)" \
	" AND (?5 IS NULL OR " r ".started_at < ?5)"
static const char SQL_LIST_JOBS[] =
	"WITH firsts AS ("
	" SELECT r.id AS id, r.job AS job, r.cluster AS cluster,"
	" r.started_at AS started_at"
	" FROM results r WHERE" VISIBLE("r")
	" AND (r.job IS NULL OR NOT EXISTS (SELECT 1 FROM results p"
	"  WHERE p.job = r.job AND p.cluster = r.cluster"
	"  AND (p.started_at, p.id) < (r.started_at, r.id)"
	"  AND" VISIBLE("p") "))"
	" ORDER BY r.started_at DESC, r.id DESC LIMIT ?6 OFFSET ?7)"
	" SELECT r.job AS job, r.cluster AS cluster, r.user AS user,"
	" r.uid AS uid,"
	/* an sbatch job is named by the application of its srun steps
	 * (ids below Slurm's batch/extern/interactive 4294967290..2),
	 * not by the batch script's shell */
	" COALESCE((SELECT q.executable FROM results q WHERE q.job = f.job"
	"  AND q.cluster = f.cluster AND q.step < 4294967290 AND" VISIBLE("q")
	"  ORDER BY q.started_at, q.id LIMIT 1), r.executable) AS executable,"
	" COALESCE((SELECT q.app FROM results q WHERE q.job = f.job"
	"  AND q.cluster = f.cluster AND q.step < 4294967290 AND" VISIBLE("q")
	"  ORDER BY q.started_at, q.id LIMIT 1), r.app) AS app,"
	" MIN(r.started_at) AS started_at, MAX(r.ended_at) AS ended_at,"
	" COUNT(*) AS results, COUNT(DISTINCT r.step) AS steps,"
	" COUNT(DISTINCT r.node) AS nodes, MAX(r.ranks) AS ranks,"
	/* threads of the largest step (summed over its nodes): steps run
	 * one after another as often as together */
	" CASE WHEN f.job IS NULL THEN SUM(r.threads) ELSE"
	" (SELECT MAX(s) FROM (SELECT SUM(q.threads) AS s FROM results q"
	"  WHERE q.job = f.job AND q.cluster = f.cluster AND" VISIBLE("q")
	"  GROUP BY q.step)) END AS threads,"
	" SUM(r.migrations) AS migrations," SVC_DB_JOB_COLUMNS("r") ","
	" group_concat(r.id) AS result_ids"
	" FROM firsts f JOIN results r"
	" ON r.id = f.id OR (f.job IS NOT NULL AND r.job = f.job"
	" AND r.cluster = f.cluster)"
	" WHERE" VISIBLE("r")
	" GROUP BY f.id ORDER BY f.started_at DESC, f.id DESC";
#undef VISIBLE
static const char SQL_LIST_APPS[] =
	"SELECT app, executable,"
	" COUNT(DISTINCT COALESCE(job, -id)) AS jobs, COUNT(*) AS results,"
	" COUNT(DISTINCT uid) AS users, MAX(started_at) AS last_started_at,"
	" MAX(threads) AS max_threads"
	" FROM results WHERE (?1 IS NULL OR uid = ?1)"
	" GROUP BY executable ORDER BY MAX(started_at) DESC LIMIT ?2";
/* ?2: one cluster's results of the job, or NULL for every cluster's. */
static const char SQL_JOB[] =
	"SELECT id, job, cluster, step, node, uid, user, executable, app,"
	" exe_hash,"
	" mode, backend, started_at, ended_at, ranks, threads, edges,"
	" migrations, final_cost, received_at, document"
	" FROM results WHERE job = ?1 AND (?2 IS NULL OR cluster = ?2)"
	" ORDER BY cluster, step, node, started_at";
static const char SQL_RESULT[] =
	"SELECT id, job, cluster, step, node, uid, user, executable, app,"
	" exe_hash,"
	" mode, backend, started_at, ended_at, ranks, threads, edges,"
	" migrations, final_cost, received_at, document"
	" FROM results WHERE id = ?1";

enum stmt_id {
	ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_FIND_STEP, ST_FIND_UPLOAD,
	ST_INSERT, ST_LIST_JOBS, ST_LIST_APPS, ST_JOB, ST_RESULT, ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_BEGIN] = SQL_BEGIN,
	[ST_COMMIT] = SQL_COMMIT,
	[ST_ROLLBACK] = SQL_ROLLBACK,
	[ST_FIND_STEP] = SQL_FIND_STEP,
	[ST_FIND_UPLOAD] = SQL_FIND_UPLOAD,
	[ST_INSERT] = SQL_INSERT,
	[ST_LIST_JOBS] = SQL_LIST_JOBS,
	[ST_LIST_APPS] = SQL_LIST_APPS,
	[ST_JOB] = SQL_JOB,
	[ST_RESULT] = SQL_RESULT,
};

struct svc_db {
	sqlite3 *conn;
	sqlite3_stmt *st[ST_COUNT];
	pthread_mutex_t *write_lock;	/* the pool's, or NULL */
	struct svc_db *next_free;
};

/* One upload waiting for its group commit (svc_db_pool_store). */
struct store_req {
	const struct svc_result_ident *id;
	const char *upload_id;
	uint32_t uploader;
	const char *document;
	size_t len;
	int64_t row_id;
	enum svc_store_outcome outcome;
	int rc, errnum;
	struct cm_error err;
	int done;
	struct store_req *next;
};

struct svc_db_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_mutex_t write_lock;
	struct svc_db *free_list;
	struct svc_db **all;
	unsigned n;
	/* Group commit: uploads queue here; one of the waiting threads (the
	 * leader) stores everything queued in one transaction on the
	 * writer connection, the others wait for its commit. */
	struct svc_db *writer;
	pthread_mutex_t group_lock;
	pthread_cond_t group_cond;
	struct store_req *queue, **queue_tail;
	int leading;
	unsigned long long groups, grouped;	/* under group_lock */
	int wal_frames;		/* after the last commit (wal_hook) */
};

static int db_error(struct svc_db *db, struct cm_error *err, const char *what)
{
	int code = sqlite3_extended_errcode(db->conn);
	int e = code == SQLITE_BUSY || code == SQLITE_LOCKED ? EBUSY :
		code == SQLITE_FULL ? ENOSPC : code == SQLITE_NOMEM ? ENOMEM :
		EIO;

	return cm_errorf(err, e, "database: %s: %s", what,
			 sqlite3_errmsg(db->conn));
}

/* Step a statement that returns no rows, then reset it. */
static int step_done(struct svc_db *db, sqlite3_stmt *st, const char *what,
		     struct cm_error *err)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return db_error(db, err, what);
	return 0;
}

/* A one-off statement (setup only): prepare, step to the end, finalize. */
static int exec_once(struct svc_db *db, const char *sql, struct cm_error *err)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db->conn, sql, -1, &st, NULL) != SQLITE_OK)
		return db_error(db, err, sql);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_error(db, err, sql);
	return 0;
}

static int schema_get(struct svc_db *db, int *version, struct cm_error *err)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db->conn, SQL_SCHEMA_GET, -1, &st, NULL) !=
	    SQLITE_OK)
		return db_error(db, err, "schema_version");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return db_error(db, err, "schema_version");
	return 0;
}

static int schema_add(struct svc_db *db, const struct svc_migration *m,
		      struct cm_error *err)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db->conn, SQL_SCHEMA_ADD, -1, &st, NULL) !=
	    SQLITE_OK)
		return db_error(db, err, "schema_version");
	if (sqlite3_bind_int(st, 1, (int)m->version) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, m->name, -1, SQLITE_STATIC) != SQLITE_OK)
		rc = SQLITE_ERROR;
	else
		rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_error(db, err, "schema_version");
	return 0;
}

/* Apply migrations newer than the recorded version, all in one
 * transaction: a crash in the middle leaves the old schema. */
static int migrate(struct svc_db *db, struct cm_error *err)
{
	int version = 0;
	unsigned i;
	char *msg = NULL;

	if (exec_once(db, SQL_BEGIN, err) < 0)
		return -1;
	if (exec_once(db, SQL_SCHEMA_TABLE, err) < 0 ||
	    schema_get(db, &version, err) < 0)
		goto fail;
	if (version > (int)svc_n_migrations) {
		cm_errorf(err, EPROTO,
			  "database: schema version %d is newer than this commap-service (%u)",
			  version, svc_n_migrations);
		goto fail;
	}
	for (i = (unsigned)version; i < svc_n_migrations; i++) {
		/* Migration scripts are trusted text compiled into the
		 * binary, so several statements at once are fine here. */
		if (sqlite3_exec(db->conn, svc_migrations[i].sql, NULL, NULL,
				 &msg) != SQLITE_OK) {
			cm_errorf(err, EIO, "database: migration %s: %s",
				  svc_migrations[i].name, msg ? msg : "?");
			sqlite3_free(msg);
			goto fail;
		}
		if (schema_add(db, &svc_migrations[i], err) < 0)
			goto fail;
	}
	return exec_once(db, SQL_COMMIT, err);
fail:
	exec_once(db, SQL_ROLLBACK, NULL);
	errno = errno ? errno : EIO;
	return -1;
}

static int configure(struct svc_db *db, int sync_full, struct cm_error *err)
{
	sqlite3_stmt *st;
	int rc;
	const unsigned char *mode = NULL;

	if (sqlite3_busy_timeout(db->conn, BUSY_TIMEOUT_MS) != SQLITE_OK)
		return db_error(db, err, "busy timeout");
	/* journal_mode returns the mode in effect: check it is WAL. */
	if (sqlite3_prepare_v2(db->conn, "PRAGMA journal_mode=WAL", -1, &st,
			       NULL) != SQLITE_OK)
		return db_error(db, err, "journal_mode");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		mode = sqlite3_column_text(st, 0);
	rc = rc == SQLITE_ROW && mode &&
	     strcmp((const char *)mode, "wal") == 0;
	sqlite3_finalize(st);
	if (!rc)
		return cm_errorf(err, EIO, "database: cannot use WAL mode");
	if (exec_once(db, "PRAGMA foreign_keys=ON", err) < 0 ||
	    exec_once(db, sync_full ? "PRAGMA synchronous=FULL" :
		      "PRAGMA synchronous=NORMAL", err) < 0)
		return -1;
	return 0;
}

void svc_db_close(struct svc_db *db)
{
	int i;

	if (!db)
		return;
	for (i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(db->st[i]);
	sqlite3_close(db->conn);
	free(db);
}

struct svc_db *svc_db_open(const char *path, int sync_full,
			   struct cm_error *err)
{
	struct svc_db *db = calloc(1, sizeof(*db));
	int i, saved;

	if (!db) {
		cm_errorf(err, ENOMEM, "database: out of memory");
		return NULL;
	}
	if (sqlite3_open_v2(path, &db->conn, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		cm_errorf(err, EIO, "database %s: %s", path,
			  db->conn ? sqlite3_errmsg(db->conn) : "no memory");
		goto fail;
	}
	sqlite3_extended_result_codes(db->conn, 1);
	if (configure(db, sync_full, err) < 0 || migrate(db, err) < 0)
		goto fail;
	for (i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v3(db->conn, stmt_sql[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &db->st[i],
				       NULL) != SQLITE_OK) {
			db_error(db, err, stmt_sql[i]);
			goto fail;
		}
	}
	return db;
fail:
	saved = errno;
	svc_db_close(db);
	errno = saved;
	return NULL;
}

int svc_db_schema_version(struct svc_db *db)
{
	int v = -1;

	return schema_get(db, &v, NULL) < 0 ? -1 : v;
}

static int bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (!s)
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

static int bind_id_or_null(sqlite3_stmt *st, int i, int64_t v)
{
	if (v < 0)
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_int64(st, i, v);
}

/* Look for a stored result by step/node or by upload id; 1 if found.  A
 * retry usually resends the same bytes; otherwise the documents are
 * compared in canonical form (what earlier versions stored). */
static int find_existing(struct svc_db *db, sqlite3_stmt *st,
			 const char *document, size_t len, int64_t *row_id,
			 enum svc_store_outcome *outcome, struct cm_error *err)
{
	int rc = sqlite3_step(st), found = 0, same;

	if (rc == SQLITE_ROW) {
		const char *doc = (const char *)sqlite3_column_text(st, 1);
		size_t n = (size_t)sqlite3_column_bytes(st, 1);

		*row_id = sqlite3_column_int64(st, 0);
		same = doc ? svc_result_same(doc, n, document, len) : 0;
		if (same < 0)
			found = cm_errorf(err, ENOMEM,
					  "database: cannot compare documents");
		else
			found = 1;
		*outcome = same > 0 ? SVC_STORE_DUPLICATE : SVC_STORE_CONFLICT;
	} else if (rc != SQLITE_DONE) {
		found = db_error(db, err, "find result");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return found;
}

/* Results without a "cluster" (and idents filled by older callers). */
static const char *cluster_of(const struct svc_result_ident *id)
{
	return id->cluster ? id->cluster : "";
}

static int bind_insert(sqlite3_stmt *st, const struct svc_result_ident *id,
		       const char *upload_id, uint32_t uploader,
		       const char *document, size_t len)
{
	int rc = SQLITE_OK;

	rc |= bind_text_or_null(st, 1, upload_id);
	rc |= bind_id_or_null(st, 2, id->job);
	rc |= bind_id_or_null(st, 3, id->step);
	rc |= sqlite3_bind_text(st, 4, id->node, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_int64(st, 5, id->uid);
	rc |= sqlite3_bind_text(st, 6, id->user, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 7, id->executable, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 8, id->app, -1, SQLITE_STATIC);
	rc |= bind_text_or_null(st, 9, id->exe_hash);
	rc |= sqlite3_bind_text(st, 10, id->mode, -1, SQLITE_STATIC);
	rc |= bind_text_or_null(st, 11, id->backend);
	rc |= sqlite3_bind_text(st, 12, id->started_at, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 13, id->ended_at, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_int64(st, 14, id->ranks);
	rc |= sqlite3_bind_int64(st, 15, id->threads);
	rc |= sqlite3_bind_int64(st, 16, (int64_t)id->n_edges);
	rc |= sqlite3_bind_int64(st, 17, (int64_t)id->n_migrations);
	if (id->final_cost >= 0)
		rc |= sqlite3_bind_double(st, 18, id->final_cost);
	else
		rc |= sqlite3_bind_null(st, 18);
	rc |= sqlite3_bind_int64(st, 19, uploader);
	rc |= sqlite3_bind_text64(st, 20, document, len, SQLITE_STATIC,
				  SQLITE_UTF8);
	rc |= sqlite3_bind_text(st, 21, cluster_of(id), -1, SQLITE_STATIC);
	return rc == SQLITE_OK ? 0 : -1;
}

/* Find or insert one result inside the open transaction. */
static int store_in_txn(struct svc_db *db, const struct svc_result_ident *id,
			const char *upload_id, uint32_t uploader,
			const char *document, size_t len, int64_t *row_id,
			enum svc_store_outcome *outcome, struct cm_error *err)
{
	sqlite3_stmt *st;
	int found = 0;

	if (id->job >= 0) {
		st = db->st[ST_FIND_STEP];
		if (sqlite3_bind_int64(st, 1, id->job) != SQLITE_OK ||
		    sqlite3_bind_int64(st, 2, id->step) != SQLITE_OK ||
		    sqlite3_bind_text(st, 3, id->node, -1, SQLITE_STATIC) !=
		    SQLITE_OK ||
		    sqlite3_bind_text(st, 4, cluster_of(id), -1,
				      SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_int64(st, 5, id->uid) != SQLITE_OK ||
		    sqlite3_bind_text(st, 6, id->started_at, -1,
				      SQLITE_STATIC) != SQLITE_OK)
			goto bind_fail;
		found = find_existing(db, st, document, len, row_id, outcome,
				      err);
	}
	if (!found && upload_id) {
		st = db->st[ST_FIND_UPLOAD];
		if (sqlite3_bind_text(st, 1, upload_id, -1, SQLITE_STATIC) !=
		    SQLITE_OK)
			goto bind_fail;
		found = find_existing(db, st, document, len, row_id, outcome,
				      err);
	}
	if (found)
		return found < 0 ? -1 : 0;
	st = db->st[ST_INSERT];
	if (bind_insert(st, id, upload_id, uploader, document, len) < 0)
		goto bind_fail;
	if (step_done(db, st, "insert result", err) < 0)
		return -1;
	*row_id = sqlite3_last_insert_rowid(db->conn);
	*outcome = SVC_STORE_NEW;
	return 0;
bind_fail:
	db_error(db, err, "bind");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return -1;
}

static void rollback(struct svc_db *db)
{
	int saved = errno;

	/* Fails harmlessly when SQLite already rolled back. */
	step_done(db, db->st[ST_ROLLBACK], "rollback", NULL);
	errno = saved;
}

static int store_locked(struct svc_db *db, const struct svc_result_ident *id,
			const char *upload_id, uint32_t uploader,
			const char *document, size_t len, int64_t *row_id,
			enum svc_store_outcome *outcome, struct cm_error *err)
{
	if (step_done(db, db->st[ST_BEGIN], "begin", err) < 0)
		return -1;
	if (store_in_txn(db, id, upload_id, uploader, document, len, row_id,
			 outcome, err) < 0)
		goto fail;
	/* Committed (durable) before the caller answers 201. */
	if (step_done(db, db->st[ST_COMMIT], "commit", err) < 0)
		goto fail;
	return 0;
fail:
	rollback(db);
	return -1;
}

int svc_db_store_text(struct svc_db *db, const struct svc_result_ident *id,
		      const char *upload_id, uint32_t uploader_uid,
		      const char *document, size_t len, int64_t *row_id,
		      enum svc_store_outcome *outcome, struct cm_error *err)
{
	int rv;

	if (db->write_lock)
		pthread_mutex_lock(db->write_lock);
	rv = store_locked(db, id, upload_id, uploader_uid, document, len,
			  row_id, outcome, err);
	if (db->write_lock)
		pthread_mutex_unlock(db->write_lock);
	return rv;
}

int svc_db_store(struct svc_db *db, const struct svc_result_ident *id,
		 const char *upload_id, uint32_t uploader_uid,
		 const char *document, int64_t *row_id,
		 enum svc_store_outcome *outcome, struct cm_error *err)
{
	return svc_db_store_text(db, id, upload_id, uploader_uid, document,
				 strlen(document), row_id, outcome, err);
}

static json_t *column_json(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		return json_real(sqlite3_column_double(st, i));
	case SQLITE_TEXT:
		return json_stringn((const char *)sqlite3_column_text(st, i),
				    (size_t)sqlite3_column_bytes(st, i));
	default:
		return json_null();
	}
}

/* The row as an object keyed by column name; "document" is parsed back
 * into JSON (or left out when with_document is 0); "result_ids" becomes
 * an array of integers. */
static json_t *row_object(sqlite3_stmt *st, int with_document)
{
	json_t *o = json_object();
	int i, n = sqlite3_column_count(st);

	for (i = 0; o && i < n; i++) {
		const char *name = sqlite3_column_name(st, i);
		json_t *v;

		if (strcmp(name, "document") == 0) {
			if (!with_document)
				continue;
			v = json_loads((const char *)sqlite3_column_text(st, i),
				       0, NULL);
		} else if (strcmp(name, "result_ids") == 0) {
			const char *s;
			char *end;

			s = (const char *)sqlite3_column_text(st, i);

			v = json_array();
			while (v && s && *s) {
				json_array_append_new(v,
					json_integer(strtoll(s, &end, 10)));
				s = *end == ',' ? end + 1 : end;
				if (end == s)
					break;
			}
		} else {
			v = column_json(st, i);
		}
		if (!v || json_object_set_new(o, name, v) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* Step st to the end, appending each row to a new array; reset st. */
static json_t *rows_array(struct svc_db *db, sqlite3_stmt *st,
			  int with_document, struct cm_error *err)
{
	json_t *a = json_array(), *row;
	int rc = SQLITE_DONE;

	while (a && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		row = row_object(st, with_document);
		if (!row || json_array_append_new(a, row) < 0) {
			json_decref(a);
			a = NULL;
			cm_errorf(err, ENOMEM, "out of memory");
		}
	}
	if (a && rc != SQLITE_DONE) {
		json_decref(a);
		a = NULL;
		db_error(db, err, "query");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return a;
}

json_t *svc_db_rows(struct svc_db *db, struct sqlite3_stmt *st,
		    int with_document, struct cm_error *err)
{
	return rows_array(db, st, with_document, err);
}

static json_t *wrap(const char *key, json_t *a)
{
	return a ? json_pack("{s:o}", key, a) : NULL;
}

json_t *svc_db_list_jobs(struct svc_db *db, const struct svc_job_filter *f,
			 struct cm_error *err)
{
	sqlite3_stmt *st = db->st[ST_LIST_JOBS];

	if (bind_id_or_null(st, 1, f->owner_uid) != SQLITE_OK ||
	    bind_text_or_null(st, 2, f->user) != SQLITE_OK ||
	    bind_text_or_null(st, 3, f->app) != SQLITE_OK ||
	    bind_text_or_null(st, 4, f->since) != SQLITE_OK ||
	    bind_text_or_null(st, 5, f->until) != SQLITE_OK ||
	    sqlite3_bind_int(st, 6, f->limit) != SQLITE_OK ||
	    sqlite3_bind_int(st, 7, f->offset) != SQLITE_OK) {
		db_error(db, err, "bind");
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return NULL;
	}
	return wrap("jobs", rows_array(db, st, 0, err));
}

json_t *svc_db_list_apps(struct svc_db *db, int64_t owner_uid, int limit,
			 struct cm_error *err)
{
	sqlite3_stmt *st = db->st[ST_LIST_APPS];

	if (bind_id_or_null(st, 1, owner_uid) != SQLITE_OK ||
	    sqlite3_bind_int(st, 2, limit) != SQLITE_OK) {
		db_error(db, err, "bind");
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return NULL;
	}
	return wrap("apps", rows_array(db, st, 0, err));
}

/* Keep only rows of owner_uid (when >= 0); 200, 403 or 404. */
static int filter_owner(json_t *rows, int64_t owner_uid)
{
	size_t i = 0, total = json_array_size(rows);

	if (total == 0)
		return 404;
	while (owner_uid >= 0 && i < json_array_size(rows)) {
		json_t *uid = json_object_get(json_array_get(rows, i), "uid");

		if (json_integer_value(uid) != owner_uid)
			json_array_remove(rows, i);
		else
			i++;
	}
	return json_array_size(rows) ? 200 : 403;
}

static void add_unique(json_t *set, json_t *v)
{
	size_t i;

	for (i = 0; i < json_array_size(set); i++)
		if (json_equal(json_array_get(set, i), v))
			return;
	json_array_append(set, v);
}

/* The distinct clusters of a job's visible results, in order: more than
 * one when two clusters (or a cluster and results without a name) used
 * the same job id. */
static json_t *clusters_of(const json_t *rows)
{
	json_t *set = json_array();
	size_t i;

	for (i = 0; set && i < json_array_size(rows); i++)
		add_unique(set, json_object_get(json_array_get(rows, i),
						"cluster"));
	return set;
}

/* Threads of row's step, summed over its nodes. */
static json_int_t step_threads(const json_t *rows, const json_t *row)
{
	const json_t *step = json_object_get(row, "step"), *o;
	json_int_t sum = 0;
	size_t i;

	json_array_foreach(rows, i, o)
		if (json_equal(json_object_get(o, "step"), step))
			sum += json_integer_value(json_object_get(o,
								  "threads"));
	return sum;
}

/* Totals over a job's visible results, for reports; threads are those of
 * the largest step, not a sum over steps that ran one after another. */
static json_t *job_summary(const json_t *rows)
{
	json_t *steps = json_array(), *nodes = json_array(), *row;
	json_int_t threads = 0, migrations = 0, ranks = 0;
	const char *start = NULL, *end = NULL;
	size_t i;

	json_array_foreach(rows, i, row) {
		const char *s = json_string_value(json_object_get(row,
							"started_at"));
		const char *e = json_string_value(json_object_get(row,
							"ended_at"));
		json_int_t r = json_integer_value(json_object_get(row,
							"ranks"));

		add_unique(steps, json_object_get(row, "step"));
		add_unique(nodes, json_object_get(row, "node"));
		threads = step_threads(rows, row) > threads ?
			  step_threads(rows, row) : threads;
		migrations += json_integer_value(json_object_get(row,
							"migrations"));
		ranks = r > ranks ? r : ranks;
		if (s && (!start || strcmp(s, start) < 0))
			start = s;
		if (e && (!end || strcmp(e, end) > 0))
			end = e;
	}
	return json_pack("{s:I, s:o, s:o, s:I, s:I, s:I, s:s?, s:s?}",
			 "results", (json_int_t)json_array_size(rows),
			 "steps", steps, "nodes", nodes, "ranks", ranks,
			 "threads", threads, "migrations", migrations,
			 "started_at", start, "ended_at", end);
}

json_t *svc_db_job(struct svc_db *db, int64_t job, const char *cluster,
		   int64_t owner_uid, int with_documents, int *status,
		   struct cm_error *err)
{
	sqlite3_stmt *st = db->st[ST_JOB];
	json_t *rows, *first;

	*status = 500;
	if (sqlite3_bind_int64(st, 1, job) != SQLITE_OK ||
	    bind_text_or_null(st, 2, cluster) != SQLITE_OK) {
		db_error(db, err, "bind");
		sqlite3_reset(st);
		return NULL;
	}
	rows = rows_array(db, st, with_documents, err);
	if (!rows)
		return NULL;
	*status = filter_owner(rows, owner_uid);
	if (*status != 200) {
		json_decref(rows);
		return NULL;
	}
	if (with_documents && svc_db_add_history(db, rows, owner_uid, err) < 0) {
		json_decref(rows);
		return NULL;
	}
	first = json_array_get(rows, 0);
	return json_pack("{s:I, s:o, s:O, s:O, s:O, s:o, s:o}", "job",
			 (json_int_t)job, "clusters", clusters_of(rows),
			 "user", json_object_get(first, "user"),
			 "uid", json_object_get(first, "uid"),
			 "executable", json_object_get(first, "executable"),
			 "summary", job_summary(rows), "results", rows);
}

json_t *svc_db_result(struct svc_db *db, int64_t id, int64_t owner_uid,
		      int *status, struct cm_error *err)
{
	sqlite3_stmt *st = db->st[ST_RESULT];
	json_t *rows, *row;

	*status = 500;
	if (sqlite3_bind_int64(st, 1, id) != SQLITE_OK) {
		db_error(db, err, "bind");
		sqlite3_reset(st);
		return NULL;
	}
	rows = rows_array(db, st, 1, err);
	if (!rows)
		return NULL;
	*status = filter_owner(rows, owner_uid);
	row = *status == 200 ? json_incref(json_array_get(rows, 0)) : NULL;
	json_decref(rows);
	return row;
}

/* After each commit on a pool connection (nframes: the WAL's length).
 * Checkpoints are the models' worker's job (svc_db_pool_checkpoint), off
 * the upload path; only when it falls far behind (a long burst while it
 * yields the CPU) does the committing connection copy the WAL back
 * itself, so the WAL stays bounded. */
static int wal_hook(void *arg, sqlite3 *conn, const char *name, int nframes)
{
	struct svc_db_pool *pool = arg;

	__atomic_store_n(&pool->wal_frames, nframes, __ATOMIC_RELAXED);
	if (nframes >= WAL_HARD_FRAMES)
		sqlite3_wal_checkpoint_v2(conn, name, SQLITE_CHECKPOINT_PASSIVE,
					  NULL, NULL);
	return SQLITE_OK;
}

void svc_db_pool_checkpoint(struct svc_db_pool *pool, struct svc_db *db)
{
	if (__atomic_load_n(&pool->wal_frames, __ATOMIC_RELAXED) <
	    WAL_SOFT_FRAMES)
		return;
	/* PASSIVE: copies what no reader still needs, never waits, never
	 * blocks a writer; the next commit restarts a fully copied WAL. */
	sqlite3_wal_checkpoint_v2(db->conn, NULL, SQLITE_CHECKPOINT_PASSIVE,
				  NULL, NULL);
	__atomic_store_n(&pool->wal_frames, 0, __ATOMIC_RELAXED);
}

void svc_db_pool_close(struct svc_db_pool *pool)
{
	unsigned i;

	if (!pool)
		return;
	for (i = 0; i < pool->n; i++)
		svc_db_close(pool->all[i]);
	svc_db_close(pool->writer);
	free(pool->all);
	pthread_mutex_destroy(&pool->lock);
	pthread_mutex_destroy(&pool->write_lock);
	pthread_mutex_destroy(&pool->group_lock);
	pthread_cond_destroy(&pool->cond);
	pthread_cond_destroy(&pool->group_cond);
	free(pool);
}

static struct svc_db *pool_conn(struct svc_db_pool *pool, const char *path,
				int sync_full, struct cm_error *err)
{
	struct svc_db *db = svc_db_open(path, sync_full, err);

	if (!db)
		return NULL;
	db->write_lock = &pool->write_lock;
	sqlite3_wal_hook(db->conn, wal_hook, pool);
	return db;
}

struct svc_db_pool *svc_db_pool_open(const char *path, unsigned n,
				     int sync_full, struct cm_error *err)
{
	struct svc_db_pool *pool = calloc(1, sizeof(*pool));
	int saved;

	if (!pool || !(pool->all = calloc(n, sizeof(*pool->all)))) {
		free(pool);
		cm_errorf(err, ENOMEM, "database: out of memory");
		return NULL;
	}
	pthread_mutex_init(&pool->lock, NULL);
	pthread_mutex_init(&pool->write_lock, NULL);
	pthread_mutex_init(&pool->group_lock, NULL);
	pthread_cond_init(&pool->cond, NULL);
	pthread_cond_init(&pool->group_cond, NULL);
	pool->queue_tail = &pool->queue;
	pool->writer = pool_conn(pool, path, sync_full, err);
	if (!pool->writer)
		goto fail;
	for (pool->n = 0; pool->n < n; pool->n++) {
		struct svc_db *db = pool_conn(pool, path, sync_full, err);

		if (!db)
			goto fail;
		db->next_free = pool->free_list;
		pool->free_list = db;
		pool->all[pool->n] = db;
	}
	return pool;
fail:
	saved = errno;
	svc_db_pool_close(pool);
	errno = saved;
	return NULL;
}

static void store_one(struct svc_db *db, struct store_req *r)
{
	r->rc = store_locked(db, r->id, r->upload_id, r->uploader,
			     r->document, r->len, &r->row_id, &r->outcome,
			     &r->err);
	r->errnum = errno;
}

/* Store a group in one transaction: one WAL append and one commit for
 * all (the indexes' pages, most of what a commit writes, are shared).
 * If anything fails, the group is rolled back and each upload is stored
 * in a transaction of its own, so every one gets its own answer. */
static void store_group(struct svc_db *db, struct store_req *group)
{
	struct store_req *r;

	if (!group->next) {
		store_one(db, group);
		return;
	}
	if (step_done(db, db->st[ST_BEGIN], "begin", &group->err) < 0)
		goto one_by_one;
	for (r = group; r; r = r->next)
		if (store_in_txn(db, r->id, r->upload_id, r->uploader,
				 r->document, r->len, &r->row_id, &r->outcome,
				 &r->err) < 0)
			break;
	if (!r && step_done(db, db->st[ST_COMMIT], "commit",
			    &group->err) == 0) {
		for (r = group; r; r = r->next)
			r->rc = 0;
		return;
	}
	rollback(db);
one_by_one:
	for (r = group; r; r = r->next)
		store_one(db, r);
}

/* Lead one group: take everything queued, store it, wake its owners.
 * Called and returns with group_lock held. */
static void lead_group(struct svc_db_pool *pool)
{
	struct store_req *group = pool->queue, *r;
	unsigned n;

	pool->leading = 1;
	for (n = 1, r = group; r->next && n < GROUP_MAX; r = r->next, n++)
		;
	pool->queue = r->next;
	if (!pool->queue)
		pool->queue_tail = &pool->queue;
	r->next = NULL;
	pthread_mutex_unlock(&pool->group_lock);

	pthread_mutex_lock(&pool->write_lock);
	store_group(pool->writer, group);
	pthread_mutex_unlock(&pool->write_lock);

	pthread_mutex_lock(&pool->group_lock);
	for (r = group; r; r = r->next)
		r->done = 1;
	pool->groups++;
	pool->grouped += n;
	pool->leading = 0;
	pthread_cond_broadcast(&pool->group_cond);
}

void svc_db_pool_store_stats(struct svc_db_pool *pool,
			     unsigned long long *stores,
			     unsigned long long *groups)
{
	pthread_mutex_lock(&pool->group_lock);
	*stores = pool->grouped;
	*groups = pool->groups;
	pthread_mutex_unlock(&pool->group_lock);
}

int svc_db_pool_store(struct svc_db_pool *pool,
		      const struct svc_result_ident *id,
		      const char *upload_id, uint32_t uploader_uid,
		      const char *document, size_t len, int64_t *row_id,
		      enum svc_store_outcome *outcome, struct cm_error *err)
{
	struct store_req me = {
		.id = id, .upload_id = upload_id, .uploader = uploader_uid,
		.document = document, .len = len, .rc = -1,
	};

	pthread_mutex_lock(&pool->group_lock);
	*pool->queue_tail = &me;
	pool->queue_tail = &me.next;
	/* Whoever finds no leader at work leads; the others wait, and
	 * meanwhile queue up into the next group. */
	while (!me.done) {
		if (!pool->leading)
			lead_group(pool);
		else
			pthread_cond_wait(&pool->group_cond, &pool->group_lock);
	}
	pthread_mutex_unlock(&pool->group_lock);
	*row_id = me.row_id;
	*outcome = me.outcome;
	if (me.rc < 0) {
		if (err)
			*err = me.err;
		errno = me.errnum;
	}
	return me.rc;
}

struct svc_db *svc_db_pool_get(struct svc_db_pool *pool)
{
	struct svc_db *db;

	pthread_mutex_lock(&pool->lock);
	while (!pool->free_list)
		pthread_cond_wait(&pool->cond, &pool->lock);
	db = pool->free_list;
	pool->free_list = db->next_free;
	pthread_mutex_unlock(&pool->lock);
	return db;
}

void svc_db_pool_put(struct svc_db_pool *pool, struct svc_db *db)
{
	pthread_mutex_lock(&pool->lock);
	db->next_free = pool->free_list;
	pool->free_list = db;
	pthread_cond_signal(&pool->cond);
	pthread_mutex_unlock(&pool->lock);
}

sqlite3 *svc_db_conn(struct svc_db *db)
{
	return db->conn;
}

static int write_txn_locked(struct svc_db *db,
			    int (*fn)(sqlite3 *, void *, struct cm_error *),
			    void *arg, struct cm_error *err)
{
	int saved;

	if (step_done(db, db->st[ST_BEGIN], "begin", err) < 0)
		return -1;
	if (fn(db->conn, arg, err) == 0 &&
	    step_done(db, db->st[ST_COMMIT], "commit", err) == 0)
		return 0;
	saved = errno;
	step_done(db, db->st[ST_ROLLBACK], "rollback", NULL);
	errno = saved;
	return -1;
}

int svc_db_write_txn(struct svc_db *db,
		     int (*fn)(sqlite3 *, void *, struct cm_error *),
		     void *arg, struct cm_error *err)
{
	int rv;

	if (db->write_lock)
		pthread_mutex_lock(db->write_lock);
	rv = write_txn_locked(db, fn, arg, err);
	if (db->write_lock)
		pthread_mutex_unlock(db->write_lock);
	return rv;
}
