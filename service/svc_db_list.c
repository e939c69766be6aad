/* svc_db_list.c: the listings the reports ask for besides the newest jobs
 * (svc_db.c): jobs in any order and page, the earlier runs of a result's
 * application, the runs that started from a learned model.  Each query is
 * prepared per call on the connection: they are read by people browsing,
 * not on the upload path, and the sorted listing's text depends on the
 * order asked for. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "svc_db.h"

/* Runs kept in a result's "earlier_runs", and results of an executable
 * looked at for a model's runs (bounds the JSON each request parses). */
#define HISTORY_MAX 20
#define MODEL_RUNS_SCAN 200

const char svc_job_sort_keys[] =
	"started ended job user app mode duration nodes threads migrations pins";

/* Key names in enum order, and the column of "g" (below) each sorts. */
static const char *const sort_names[SVC_JOB_SORT_COUNT] = {
	[SVC_JOB_SORT_STARTED] = "started", [SVC_JOB_SORT_ENDED] = "ended",
	[SVC_JOB_SORT_JOB] = "job", [SVC_JOB_SORT_USER] = "user",
	[SVC_JOB_SORT_APP] = "app", [SVC_JOB_SORT_MODE] = "mode",
	[SVC_JOB_SORT_DURATION] = "duration", [SVC_JOB_SORT_NODES] = "nodes",
	[SVC_JOB_SORT_THREADS] = "threads",
	[SVC_JOB_SORT_MIGRATIONS] = "migrations",
	[SVC_JOB_SORT_PINS] = "pins",
};
static const char *const sort_columns[SVC_JOB_SORT_COUNT] = {
	[SVC_JOB_SORT_DEFAULT] = "started_at",
	[SVC_JOB_SORT_STARTED] = "started_at",
	[SVC_JOB_SORT_ENDED] = "ended_at", [SVC_JOB_SORT_JOB] = "job",
	[SVC_JOB_SORT_USER] = "user", [SVC_JOB_SORT_APP] = "app",
	[SVC_JOB_SORT_MODE] = "mode",
	[SVC_JOB_SORT_DURATION] = "duration_s",
	[SVC_JOB_SORT_NODES] = "nodes",
	[SVC_JOB_SORT_THREADS] = "threads_sort",
	[SVC_JOB_SORT_MIGRATIONS] = "migrations",
	[SVC_JOB_SORT_PINS] = "pins_sort",
};

int svc_job_sort_parse(const char *s, struct svc_job_filter *f)
{
	int k;

	f->ascending = *s != '-';
	s += *s == '-';
	for (k = 1; k < SVC_JOB_SORT_COUNT; k++)
		if (strcmp(s, sort_names[k]) == 0) {
			f->sort = k;
			return 0;
		}
	return -1;
}

#define VISIBLE(r) \
	" (?1 IS NULL OR " r ".uid = ?1) AND (?2 IS NULL OR " r ".user = ?2)" \
	" AND (?3 IS NULL OR " r ".app = ?3 OR " r ".executable = ?3)" \
	" AND (?4 IS NULL OR " r ".started_at >= ?4)" \
	" AND (?5 IS NULL OR " r ".started_at < ?5)"
#define SAME_JOB(q, j) \
	" " q ".job = " j ".job AND " q ".cluster = " j ".cluster AND" \
	VISIBLE(q)
/* The threads of a job's largest step, summed over its nodes. */
#define THREADS(j) \
	" (SELECT MAX(s) FROM (SELECT SUM(q.threads) AS s FROM results q" \
	"  WHERE" SAME_JOB("q", j) " GROUP BY q.step))"
/* Every visible job grouped ("g": one row per job and cluster, a result
 * without a job alone), sorted and cut to the page; then the columns
 * that need the job's results again (the largest step's threads, the
 * pins read from the documents) for the page's jobs only: grouping
 * every job with them took 1.5 and 3 times as long.  The same columns
 * as the default listing (svc_db.c); %s: the column sorted by when it is
 * one of those (in "g" then), then the ORDER BY twice. */
static const char SQL_SORTED[] =
	"WITH g AS (SELECT r.job AS job, r.cluster AS cluster,"
	" MIN(r.user) AS user, MIN(r.uid) AS uid,"
	/* an sbatch job is named by its srun steps' application */
	" COALESCE(MIN(CASE WHEN r.step < 4294967290 THEN r.executable END),"
	"  MIN(r.executable)) AS executable,"
	" COALESCE(MIN(CASE WHEN r.step < 4294967290 THEN r.app END),"
	"  MIN(r.app)) AS app,"
	" MIN(r.started_at) AS started_at, MAX(r.ended_at) AS ended_at,"
	" COUNT(*) AS results, COUNT(DISTINCT r.step) AS steps,"
	" COUNT(DISTINCT r.node) AS nodes, MAX(r.ranks) AS ranks,"
	" SUM(r.migrations) AS migrations,"
	" group_concat(DISTINCT r.mode) AS mode,"
	" CAST(strftime('%%s', MAX(r.ended_at)) -"
	" strftime('%%s', MIN(r.started_at)) AS INTEGER) AS duration_s,"
	" group_concat(r.id) AS result_ids, MIN(r.id) AS first_id%s"
	" FROM results r WHERE" VISIBLE("r")
	" GROUP BY CASE WHEN r.job IS NULL THEN -r.id ELSE r.job END,"
	" r.cluster),"
	" page AS (SELECT * FROM g ORDER BY %s LIMIT ?6 OFFSET ?7)"
	" SELECT job, cluster, user, uid, executable, app, started_at,"
	" ended_at, results, steps, nodes, ranks,"
	" CASE WHEN p.job IS NULL THEN (SELECT q.threads FROM results q"
	"  WHERE q.id = p.first_id) ELSE" THREADS("p") " END AS threads,"
	" migrations, mode, duration_s,"
	" CASE WHEN p.job IS NULL THEN (SELECT json_extract(q.document,"
	"  '$.stats.pins') FROM results q WHERE q.id = p.first_id)"
	" ELSE (SELECT SUM(json_extract(q.document, '$.stats.pins'))"
	"  FROM results q WHERE" SAME_JOB("q", "p") ") END AS pins,"
	" result_ids FROM page p ORDER BY %s";
static const char SQL_PINS_SORT[] =
	", SUM(json_extract(r.document, '$.stats.pins')) AS pins_sort";
static const char SQL_THREADS_SORT[] =
	", CASE WHEN r.job IS NULL THEN SUM(r.threads) ELSE" THREADS("r")
	" END AS threads_sort";

/* The earlier jobs of a result's application identity: the same owner
 * (a learned model's key has the uid too), executable and hash, ranks
 * and threads; each job's span over its matching results. */
static const char SQL_HISTORY[] =
	"SELECT r.job AS job, r.cluster AS cluster,"
	" MIN(r.started_at) AS started_at,"
	" CAST(strftime('%s', MAX(r.ended_at)) -"
	" strftime('%s', MIN(r.started_at)) AS INTEGER) AS duration_s"
	" FROM results r WHERE r.executable = ?1 AND r.started_at < ?2"
	" AND r.uid = ?3 AND r.exe_hash IS ?4 AND r.ranks = ?5"
	" AND r.threads = ?6 AND NOT (r.job IS ?7 AND r.cluster = ?8)"
	" GROUP BY CASE WHEN r.job IS NULL THEN -r.id ELSE r.job END,"
	" r.cluster ORDER BY MIN(r.started_at) DESC LIMIT ?9";

static const char SQL_MODEL_RUNS[] =
	"SELECT id, job, cluster, step, node, user, started_at,"
	" CAST(strftime('%s', ended_at) - strftime('%s', started_at)"
	" AS INTEGER) AS duration_s FROM (SELECT * FROM results"
	" WHERE executable = ?1 AND (?2 IS NULL OR uid = ?2)"
	" ORDER BY started_at DESC LIMIT ?4)"
	" WHERE json_extract(document, '$.model.used') = 1"
	" AND json_extract(document, '$.model.id') = ?3"
	" ORDER BY started_at DESC, id DESC";

static sqlite3_stmt *prepare(struct svc_db *db, const char *sql,
			     struct cm_error *err)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(svc_db_conn(db), sql, -1, &st, NULL) !=
	    SQLITE_OK) {
		cm_errorf(err, EIO, "prepare: %s",
			  sqlite3_errmsg(svc_db_conn(db)));
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

static int bind_int(sqlite3_stmt *st, int i, int64_t v, int null_below_0)
{
	return null_below_0 && v < 0 ? sqlite3_bind_null(st, i) :
	       sqlite3_bind_int64(st, i, v);
}

/* Run st (bound: 0 from every bind) and finalize it. */
static json_t *run_rows(struct svc_db *db, sqlite3_stmt *st, int bound,
			struct cm_error *err)
{
	json_t *rows = NULL;

	if (bound != 0)
		cm_errorf(err, EIO, "bind: %s",
			  sqlite3_errmsg(svc_db_conn(db)));
	else
		rows = svc_db_rows(db, st, 0, err);
	sqlite3_finalize(st);
	return rows;
}

json_t *svc_db_list_jobs_sorted(struct svc_db *db,
				const struct svc_job_filter *f,
				struct cm_error *err)
{
	char order[128], sql[sizeof(SQL_SORTED) + sizeof(SQL_THREADS_SORT) +
			     256];
	sqlite3_stmt *st;
	json_t *rows;
	int sort = f->sort > 0 && f->sort < SVC_JOB_SORT_COUNT ? f->sort : 0;
	int b = 0;

	/* Ties (and the default) newest first, as the default listing. */
	snprintf(order, sizeof(order), "%s %s NULLS LAST, started_at DESC,"
		 " first_id DESC", sort_columns[sort],
		 sort && f->ascending ? "ASC" : "DESC");
	snprintf(sql, sizeof(sql), SQL_SORTED,
		 sort == SVC_JOB_SORT_PINS ? SQL_PINS_SORT :
		 sort == SVC_JOB_SORT_THREADS ? SQL_THREADS_SORT : "", order,
		 order);
	st = prepare(db, sql, err);
	if (!st)
		return NULL;
	b |= bind_int(st, 1, f->owner_uid, 1);
	b |= bind_text(st, 2, f->user);
	b |= bind_text(st, 3, f->app);
	b |= bind_text(st, 4, f->since);
	b |= bind_text(st, 5, f->until);
	b |= sqlite3_bind_int(st, 6, f->limit);
	b |= sqlite3_bind_int(st, 7, f->offset);
	rows = run_rows(db, st, b, err);
	return rows ? json_pack("{s:o}", "jobs", rows) : NULL;
}

static const char *row_str(const json_t *row, const char *k)
{
	return json_string_value(json_object_get(row, k));
}

static json_int_t row_int(const json_t *row, const char *k)
{
	return json_integer_value(json_object_get(row, k));
}

static json_t *history_of(struct svc_db *db, const json_t *row,
			  struct cm_error *err)
{
	sqlite3_stmt *st = prepare(db, SQL_HISTORY, err);
	const json_t *job = json_object_get(row, "job");
	int b = 0;

	if (!st)
		return NULL;
	b |= bind_text(st, 1, row_str(row, "executable"));
	b |= bind_text(st, 2, row_str(row, "started_at"));
	b |= bind_int(st, 3, row_int(row, "uid"), 0);
	b |= bind_text(st, 4, row_str(row, "exe_hash"));
	b |= bind_int(st, 5, row_int(row, "ranks"), 0);
	b |= bind_int(st, 6, row_int(row, "threads"), 0);
	b |= json_is_integer(job) ?
	     bind_int(st, 7, json_integer_value(job), 0) :
	     sqlite3_bind_null(st, 7);
	b |= bind_text(st, 8, row_str(row, "cluster") ?
		       row_str(row, "cluster") : "");
	b |= sqlite3_bind_int(st, 9, HISTORY_MAX);
	return run_rows(db, st, b, err);
}

int svc_db_add_history(struct svc_db *db, json_t *rows, int64_t owner_uid,
		       struct cm_error *err)
{
	json_t *row, *h;
	size_t i;

	(void)owner_uid;	/* rows are already the caller's to see */
	json_array_foreach(rows, i, row) {
		if (!row_str(row, "executable") || !row_str(row, "started_at"))
			continue;
		h = history_of(db, row, err);
		if (!h || json_object_set_new(row, "earlier_runs", h) < 0)
			return -1;
	}
	return 0;
}

json_t *svc_db_model_runs(struct svc_db *db, int64_t model_id,
			  const char *executable, int64_t owner_uid,
			  struct cm_error *err)
{
	sqlite3_stmt *st = prepare(db, SQL_MODEL_RUNS, err);
	json_t *rows;
	int b = 0;

	if (!st)
		return NULL;
	b |= bind_text(st, 1, executable);
	b |= bind_int(st, 2, owner_uid, 1);
	b |= sqlite3_bind_int64(st, 3, model_id);
	b |= sqlite3_bind_int(st, 4, MODEL_RUNS_SCAN);
	rows = run_rows(db, st, b, err);
	return rows ? json_pack("{s:o}", "runs", rows) : NULL;
}
