/* svc_db.c: SQLite storage of uploaded results: a connection, its schema
 * migrations and storing one result.  SQL lives in the named constants
 * below; every statement is prepared once per connection, every bind and
 * step is checked, and statements are reset on every path.  Reading jobs
 * and results: svc_db_read.c; the pool of connections and group commit:
 * svc_db_pool.c. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "svc_db.h"
#include "svc_db_internal.h"

#define BUSY_TIMEOUT_MS 5000

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

int svc_db_error(struct svc_db *db, struct cm_error *err, const char *what)
{
	int code = sqlite3_extended_errcode(db->conn);
	int e = code == SQLITE_BUSY || code == SQLITE_LOCKED ? EBUSY :
		code == SQLITE_FULL ? ENOSPC : code == SQLITE_NOMEM ? ENOMEM :
		EIO;

	return cm_errorf(err, e, "database: %s: %s", what,
			 sqlite3_errmsg(db->conn));
}

/* Step a statement that returns no rows, then reset it. */
int svc_db_step_done(struct svc_db *db, sqlite3_stmt *st, const char *what,
		     struct cm_error *err)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return svc_db_error(db, err, what);
	return 0;
}

/* A one-off statement (setup only): prepare, step to the end, finalize. */
static int exec_once(struct svc_db *db, const char *sql, struct cm_error *err)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db->conn, sql, -1, &st, NULL) != SQLITE_OK)
		return svc_db_error(db, err, sql);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return svc_db_error(db, err, sql);
	return 0;
}

static int schema_get(struct svc_db *db, int *version, struct cm_error *err)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db->conn, SQL_SCHEMA_GET, -1, &st, NULL) !=
	    SQLITE_OK)
		return svc_db_error(db, err, "schema_version");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return svc_db_error(db, err, "schema_version");
	return 0;
}

static int schema_add(struct svc_db *db, const struct svc_migration *m,
		      struct cm_error *err)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db->conn, SQL_SCHEMA_ADD, -1, &st, NULL) !=
	    SQLITE_OK)
		return svc_db_error(db, err, "schema_version");
	if (sqlite3_bind_int(st, 1, (int)m->version) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, m->name, -1, SQLITE_STATIC) != SQLITE_OK)
		rc = SQLITE_ERROR;
	else
		rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return svc_db_error(db, err, "schema_version");
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
		return svc_db_error(db, err, "busy timeout");
	/* journal_mode returns the mode in effect: check it is WAL. */
	if (sqlite3_prepare_v2(db->conn, "PRAGMA journal_mode=WAL", -1, &st,
			       NULL) != SQLITE_OK)
		return svc_db_error(db, err, "journal_mode");
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
			svc_db_error(db, err, stmt_sql[i]);
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

int svc_db_bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (!s)
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

int svc_db_bind_id_or_null(sqlite3_stmt *st, int i, int64_t v)
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
		found = svc_db_error(db, err, "find result");
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

	rc |= svc_db_bind_text_or_null(st, 1, upload_id);
	rc |= svc_db_bind_id_or_null(st, 2, id->job);
	rc |= svc_db_bind_id_or_null(st, 3, id->step);
	rc |= sqlite3_bind_text(st, 4, id->node, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_int64(st, 5, id->uid);
	rc |= sqlite3_bind_text(st, 6, id->user, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 7, id->executable, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 8, id->app, -1, SQLITE_STATIC);
	rc |= svc_db_bind_text_or_null(st, 9, id->exe_hash);
	rc |= sqlite3_bind_text(st, 10, id->mode, -1, SQLITE_STATIC);
	rc |= svc_db_bind_text_or_null(st, 11, id->backend);
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
int svc_db_store_in_txn(struct svc_db *db, const struct svc_result_ident *id,
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
	if (svc_db_step_done(db, st, "insert result", err) < 0)
		return -1;
	*row_id = sqlite3_last_insert_rowid(db->conn);
	*outcome = SVC_STORE_NEW;
	return 0;
bind_fail:
	svc_db_error(db, err, "bind");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return -1;
}

void svc_db_rollback(struct svc_db *db)
{
	int saved = errno;

	/* Fails harmlessly when SQLite already rolled back. */
	svc_db_step_done(db, db->st[ST_ROLLBACK], "rollback", NULL);
	errno = saved;
}

int svc_db_store_locked(struct svc_db *db, const struct svc_result_ident *id,
			const char *upload_id, uint32_t uploader,
			const char *document, size_t len, int64_t *row_id,
			enum svc_store_outcome *outcome, struct cm_error *err)
{
	if (svc_db_step_done(db, db->st[ST_BEGIN], "begin", err) < 0)
		return -1;
	if (svc_db_store_in_txn(db, id, upload_id, uploader, document, len,
				row_id, outcome, err) < 0)
		goto fail;
	/* Committed (durable) before the caller answers 201. */
	if (svc_db_step_done(db, db->st[ST_COMMIT], "commit", err) < 0)
		goto fail;
	return 0;
fail:
	svc_db_rollback(db);
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
	rv = svc_db_store_locked(db, id, upload_id, uploader_uid, document, len,
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

sqlite3 *svc_db_conn(struct svc_db *db)
{
	return db->conn;
}

static int write_txn_locked(struct svc_db *db,
			    int (*fn)(sqlite3 *, void *, struct cm_error *),
			    void *arg, struct cm_error *err)
{
	int saved;

	if (svc_db_step_done(db, db->st[ST_BEGIN], "begin", err) < 0)
		return -1;
	if (fn(db->conn, arg, err) == 0 &&
	    svc_db_step_done(db, db->st[ST_COMMIT], "commit", err) == 0)
		return 0;
	saved = errno;
	svc_db_step_done(db, db->st[ST_ROLLBACK], "rollback", NULL);
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
