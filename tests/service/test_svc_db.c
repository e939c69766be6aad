/* test_svc_db.c: storage of results (service/svc_db.c) on a temp file:
 * migrations, idempotent uploads, visibility filters, reopening. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "svc_db.h"
#include "svc_retention.h"
#include "tap.h"

static char dir[] = "/tmp/commap-svc-db-XXXXXX";
static char path[256];

/* A valid result for job/step/node owned by uid; canonical text out. */
static json_t *make_result(long long job, long long step, const char *node,
			   int uid, const char *user, const char *exe,
			   const char *start, double w)
{
	json_t *job_v = job < 0 ? json_null() : json_integer(job);
	json_t *step_v = step < 0 ? json_null() : json_integer(step);

	return json_pack("{s:s, s:i, s:{s:o, s:o, s:s, s:s, s:i, s:s, s:i,"
			 " s:i}, s:s, s:s, s:s, s:{s:s, s:i},"
			 " s:[{s:i, s:i, s:i}, {s:i, s:i, s:i}],"
			 " s:[[i, i, f]], s:[{s:f, s:[i, i], s:f}], s:[],"
			 " s:{s:i}}",
			 "format", "commap-result", "version", 1,
			 "identity", "job", job_v, "step", step_v, "node", node,
			 "user", user, "uid", uid, "executable", exe,
			 "ranks", 1, "threads", 2, "mode", "dynamic",
			 "started_at", start, "ended_at", "2030-01-01T00:00:00Z",
			 "topology", "cpuset", "0-1", "pus", 2,
			 "threads", "rank", 0, "index", 0, "tid", 10,
			 "rank", 0, "index", 1, "tid", 11,
			 "edges", 0, 1, w, "timeline", "t", 0.0,
			 "pu_of_thread", 0, 1, "cost", 3.0, "migrations",
			 "stats", "samples", 5);
}

/* Validate and store; returns the outcome or -1. */
static int store(struct svc_db *db, json_t *doc, const char *upload_id,
		 int64_t *row)
{
	struct svc_result_ident id;
	struct cm_error e = { "" };
	enum svc_store_outcome out;
	char *text;
	int rc;

	if (svc_result_validate(doc, &id, &e) < 0) {
		diag("invalid test document: %s", e.text);
		return -1;
	}
	text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	rc = svc_db_store(db, &id, upload_id, 0, text, row, &out, &e);
	free(text);
	if (rc < 0)
		diag("store: %s", e.text);
	return rc < 0 ? -1 : (int)out;
}

static size_t count_jobs(struct svc_db *db, int64_t owner, const char *user,
			 const char *app, const char *since)
{
	struct svc_job_filter f = { owner, user, app, since, NULL, 100,
				    0, 0, 0 };
	json_t *o = svc_db_list_jobs(db, &f, NULL);
	size_t n = json_array_size(json_object_get(o, "jobs"));

	json_decref(o);
	return n;
}

static void test_store(struct svc_db *db)
{
	json_t *a = make_result(42, 0, "n1", 1000, "alice", "/bin/appa",
				"2029-01-01T00:00:00Z", 5);
	json_t *a2 = make_result(42, 0, "n1", 1000, "alice", "/bin/appa",
				 "2029-01-01T00:00:00Z", 6);
	json_t *a3 = make_result(42, 1, "n2", 1000, "alice", "/bin/appa",
				 "2029-01-01T00:00:01Z", 6);
	json_t *b = make_result(43, 0, "n1", 1001, "bob", "/opt/appb",
				"2029-02-01T00:00:00Z", 1);
	json_t *l = make_result(-1, -1, "n1", 1001, "bob", "/opt/appb",
				"2029-03-01T00:00:00Z", 1);
	int64_t r1 = 0, r2 = 0, r3 = 0;

	is_int(store(db, a, NULL, &r1), SVC_STORE_NEW, "first upload stored");
	is_int(store(db, a, NULL, &r2), SVC_STORE_DUPLICATE,
	       "the same upload again is a duplicate");
	is_int(r2, r1, "  and names the stored row");
	is_int(store(db, a2, NULL, &r2), SVC_STORE_CONFLICT,
	       "other data for the same job/step/node is a conflict");
	is_int(store(db, a3, NULL, &r3), SVC_STORE_NEW, "step 1 on n2 stored");
	is_int(store(db, b, NULL, &r3), SVC_STORE_NEW, "bob's job stored");
	is_int(store(db, l, "up-1", &r2), SVC_STORE_NEW,
	       "a result outside Slurm with an upload id is stored");
	is_int(store(db, l, "up-1", &r3), SVC_STORE_DUPLICATE,
	       "  its retry with the same upload id is a duplicate");
	is_int(r3, r2, "  same row");
	is_int(store(db, l, NULL, &r3), SVC_STORE_NEW,
	       "without an upload id a job-less result is a new row");
	is_int(store(db, a2, "up-1", &r3), SVC_STORE_CONFLICT,
	       "a reused upload id with other data is a conflict");
	json_decref(a);
	json_decref(a2);
	json_decref(a3);
	json_decref(b);
	json_decref(l);
}

/* Store a document given as text (kept as it is). */
static int store_text(struct svc_db *db, const char *text, int64_t *row)
{
	struct svc_result_ident id;
	struct cm_error e = { "" };
	enum svc_store_outcome out;
	json_t *doc;
	int rc;

	if (svc_result_parse(text, strlen(text), 1 << 20, &doc, &id, &e) < 0) {
		diag("invalid test document: %s", e.text);
		return -1;
	}
	rc = svc_db_store_text(db, &id, NULL, 0, text, strlen(text), row,
			       &out, &e);
	json_decref(doc);
	if (rc < 0)
		diag("store: %s", e.text);
	return rc < 0 ? -1 : (int)out;
}

static char *stored_document(struct svc_db *db, int64_t row)
{
	int status = 0;
	json_t *o = svc_db_result(db, row, -1, &status, NULL);
	char *text = o ? json_dumps(json_object_get(o, "document"),
				    JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(o);
	return text;
}

/* The body is stored as received; a retry is recognised in canonical
 * form whatever its key order and spacing. */
static void test_raw_documents(struct svc_db *db)
{
	json_t *a = make_result(60, 0, "n1", 1000, "alice", "/bin/appa",
				"2029-05-01T00:00:00Z", 5);
	json_t *b = make_result(60, 0, "n1", 1000, "alice", "/bin/appa",
				"2029-05-01T00:00:00Z", 5.5);
	char *pretty = json_dumps(a, JSON_INDENT(3) | JSON_PRESERVE_ORDER);
	char *canon = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
	char *other = json_dumps(b, JSON_COMPACT);
	char *back;
	sqlite3_stmt *st;
	int64_t r1 = 0, r2 = 0;

	is_int(store_text(db, pretty, &r1), SVC_STORE_NEW,
	       "an indented upload is stored");
	st = NULL;
	sqlite3_prepare_v2(svc_db_conn(db),
			   "SELECT document FROM results WHERE id = ?1", -1,
			   &st, NULL);
	sqlite3_bind_int64(st, 1, r1);
	ok(sqlite3_step(st) == SQLITE_ROW &&
	   strcmp((const char *)sqlite3_column_text(st, 0), pretty) == 0,
	   "  byte for byte as received");
	sqlite3_finalize(st);
	is_int(store_text(db, canon, &r2), SVC_STORE_DUPLICATE,
	       "its canonical form (other order, no spaces) is a duplicate");
	is_int(r2, r1, "  of the same row");
	is_int(store_text(db, pretty, &r2), SVC_STORE_DUPLICATE,
	       "the same bytes again are a duplicate");
	is_int(store_text(db, other, &r2), SVC_STORE_CONFLICT,
	       "one weight changed is a conflict");
	back = stored_document(db, r1);
	ok(back && strcmp(back, canon) == 0,
	   "the stored document reads back to the same JSON");
	free(back);
	free(pretty);
	free(canon);
	free(other);
	json_decref(a);
	json_decref(b);
}

/* The "jobs" array of a listing for owner (-1: admin), limit entries;
 * valid until the next call. */
static json_t *list(struct svc_db *db, int64_t owner, int limit)
{
	static json_t *last;
	struct svc_job_filter f = { owner, NULL, NULL, NULL, NULL, limit,
				    0, 0, 0 };

	json_decref(last);
	last = db ? svc_db_list_jobs(db, &f, NULL) : NULL;
	return json_object_get(last, "jobs");
}

static long long job_at(json_t *jobs, size_t i, const char *key)
{
	return json_integer_value(json_object_get(json_array_get(jobs, i),
						  key));
}

/* A job is listed once, at its first-started visible result, with every
 * visible result counted; LIMIT counts jobs, not results. */
static void test_job_list(void)
{
	static const struct {
		long long job, step;
		const char *node, *start;
		int uid;
	} rows[] = {
		{ 70, 0, "n1", "2029-06-01T00:00:00Z", 1000 },
		{ 71, 0, "n1", "2029-06-02T00:00:00Z", 1000 },
		{ 70, 1, "n1", "2029-06-03T00:00:00Z", 1000 },
		{ 70, 1, "n2", "2029-06-03T00:00:00Z", 1000 },
		{ 72, 0, "n1", "2029-06-04T00:00:00Z", 1001 },
		{ 72, 1, "n1", "2029-05-31T00:00:00Z", 1000 },
		{ -1, -1, "n1", "2029-06-05T00:00:00Z", 1000 },
		{ 73, 0, "n1", "2029-06-04T00:00:00Z", 1000 },
		{ 73, 1, "n1", "2029-06-04T00:00:00Z", 1000 },
	};
	char p[300];
	struct cm_error e = { "" };
	struct svc_db *db;
	json_t *jobs;
	int64_t row;
	size_t i;

	snprintf(p, sizeof(p), "%s/list.db", dir);
	db = svc_db_open(p, 0, &e);
	for (i = 0; db && i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *d = make_result(rows[i].job, rows[i].step,
					rows[i].node, rows[i].uid, "u",
					"/bin/app", rows[i].start, 1);

		if (store(db, d, rows[i].job < 0 ? "jl" : NULL, &row) !=
		    SVC_STORE_NEW)
			ok(0, "row %zu stored", i);
		json_decref(d);
	}
	jobs = list(db, -1, 100);
	is_int(json_array_size(jobs), 5, "5 entries: jobs 70-73, one job-less");
	is_int(job_at(jobs, 0, "job"), 0, "newest first: the job-less result");
	ok(json_is_null(json_object_get(json_array_get(jobs, 0), "job")),
	   "  (job null)");
	is_int(job_at(jobs, 1, "job"), 73, "then 73 (two steps, same start)");
	is_int(job_at(jobs, 1, "results"), 2, "  with both results");
	is_int(job_at(jobs, 2, "job"), 71, "then 71");
	is_int(job_at(jobs, 3, "job"), 70, "then 70, at its first step");
	is_int(job_at(jobs, 3, "results"), 3, "  with 3 results");
	is_int(job_at(jobs, 3, "nodes"), 2, "  on 2 nodes");
	is_int(job_at(jobs, 4, "job"), 72, "last 72 (its step 1 is oldest)");
	jobs = list(db, -1, 2);
	is_int(json_array_size(jobs), 2, "limit 2: two jobs");
	is_int(job_at(jobs, 1, "results"), 2, "  each with all its results");
	jobs = list(db, 1001, 100);
	is_int(json_array_size(jobs), 1, "uid 1001 sees only job 72");
	is_int(job_at(jobs, 0, "results"), 1, "  and only its own result");
	jobs = list(db, 1000, 100);
	is_int(json_array_size(jobs), 5, "uid 1000 sees 5 entries");
	is_int(job_at(jobs, 4, "job"), 72,
	       "  72 listed at uid 1000's (oldest) result");
	list(NULL, 0, 0);
	svc_db_close(db);
	unlink(p);
}

/* A database made by an older service (migrations 1 and 2, with data)
 * is brought up to date by opening it. */
/* On a database migrated from before clusters (sql/0008): the old rows
 * have the cluster "", and a run is (cluster, job, step, node, owner,
 * start).  Job 9 step 0 on n, uid 5, started 2020-01-01T00:00:00Z is
 * stored with the document "{}". */
static void test_reused_ids(struct svc_db *db)
{
	json_t *same = make_result(9, 0, "n", 5, "u", "/a",
				   "2020-01-01T00:00:00Z", 1.0);
	json_t *later = make_result(9, 0, "n", 5, "u", "/a",
				    "2021-05-01T00:00:00Z", 1.0);
	json_t *other = make_result(9, 0, "n", 6, "v", "/a",
				    "2020-01-01T00:00:00Z", 1.0);
	json_t *beta = make_result(9, 0, "n", 5, "u", "/a",
				   "2020-01-01T00:00:00Z", 1.0);
	sqlite3_stmt *st = NULL;
	int64_t r1 = 0, r2 = 0;

	sqlite3_prepare_v2(svc_db_conn(db), "SELECT COUNT(*) FROM results"
			   " WHERE cluster = ''", -1, &st, NULL);
	ok(st && sqlite3_step(st) == SQLITE_ROW &&
	   sqlite3_column_int(st, 0) == 2, "  the old results have cluster ''");
	sqlite3_finalize(st);
	json_object_set_new(beta, "cluster", json_string("beta"));
	is_int(store(db, same, NULL, &r1), SVC_STORE_CONFLICT,
	       "other data for an old row's run (same owner, start, no cluster): conflict");
	is_int(store(db, later, NULL, &r1), SVC_STORE_NEW,
	       "job 9 step 0 on n started later (a reused id): a new row");
	is_int(store(db, later, NULL, &r2), SVC_STORE_DUPLICATE,
	       "  its retry: a duplicate");
	is_int(r2, r1, "  of the same row");
	is_int(store(db, other, NULL, &r1), SVC_STORE_NEW,
	       "another owner, same start: a new row");
	is_int(store(db, beta, NULL, &r1), SVC_STORE_NEW,
	       "cluster beta, same owner and start: a new row");
	json_decref(same);
	json_decref(later);
	json_decref(other);
	json_decref(beta);
}

static void test_migrate_old(void)
{
	char p[300], *msg = NULL;
	struct cm_error e = { "" };
	struct svc_db *db;
	sqlite3 *raw;
	sqlite3_stmt *st = NULL;
	json_t *jobs;
	int rc = 0;
	unsigned i;

	snprintf(p, sizeof(p), "%s/old.db", dir);
	sqlite3_open(p, &raw);
	rc |= sqlite3_exec(raw, "CREATE TABLE schema_version (version INTEGER"
			   " PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT"
			   " NOT NULL)", NULL, NULL, &msg);
	for (i = 0; i < 2 && i < svc_n_migrations; i++) {
		char ins[200];

		rc |= sqlite3_exec(raw, svc_migrations[i].sql, NULL, NULL,
				   &msg);
		snprintf(ins, sizeof(ins), "INSERT INTO schema_version VALUES"
			 " (%u, '%s', 'then')", svc_migrations[i].version,
			 svc_migrations[i].name);
		rc |= sqlite3_exec(raw, ins, NULL, NULL, &msg);
	}
	rc |= sqlite3_exec(raw, "INSERT INTO results (job, step, node, uid,"
			   " user, executable, app, mode, started_at, ended_at,"
			   " ranks, threads, edges, migrations, uploader_uid,"
			   " received_at, document) VALUES (9, 0, 'n', 5, 'u',"
			   " '/a', 'a', 'off', '2020-01-01T00:00:00Z',"
			   " '2020-01-01T00:00:01Z', 1, 1, 0, 0, 0, 'then',"
			   " '{}')", NULL, NULL, &msg);
	/* Before 0006, migrations counted first placements too. */
	rc |= sqlite3_exec(raw, "INSERT INTO results (job, step, node, uid,"
			   " user, executable, app, mode, started_at, ended_at,"
			   " ranks, threads, edges, migrations, uploader_uid,"
			   " received_at, document) VALUES (10, 0, 'n', 5, 'u',"
			   " '/a', 'a', 'off', '2020-01-02T00:00:00Z',"
			   " '2020-01-02T00:00:01Z', 1, 2, 0, 3, 0, 'then',"
			   " '{\"migrations\":[{\"from\":-1,\"t\":0.1,"
			   "\"thread\":0,\"to\":0},{\"from\":-1,\"t\":0.1,"
			   "\"thread\":1,\"to\":1},{\"from\":1,\"t\":2,"
			   "\"thread\":1,\"to\":0}]}')", NULL, NULL, &msg);
	ok(rc == SQLITE_OK, "an old database (schema 2) made (%s)",
	   msg ? msg : "ok");
	sqlite3_free(msg);
	sqlite3_close(raw);
	db = svc_db_open(p, 0, &e);
	ok(db != NULL, "opened by this service (%s)", e.text);
	is_int(db ? svc_db_schema_version(db) : -1, (int)svc_n_migrations,
	       "  migrated to the latest schema");
	if (db)
		sqlite3_prepare_v2(svc_db_conn(db), "SELECT count(*) FROM"
				   " sqlite_master WHERE type = 'index' AND"
				   " name = 'results_job_started'", -1, &st,
				   NULL);
	ok(st && sqlite3_step(st) == SQLITE_ROW &&
	   sqlite3_column_int(st, 0) == 1, "  the job list index exists");
	sqlite3_finalize(st);
	jobs = db ? list(db, -1, 10) : NULL;
	is_int(json_array_size(jobs), 2, "  and the old results are listed");
	is_int(job_at(jobs, 1, "job"), 9, "  as jobs 9");
	is_int(job_at(jobs, 0, "job"), 10, "  and 10");
	is_int(job_at(jobs, 0, "migrations"), 1,
	       "  job 10 recounted: 1 migration, its 2 first placements not");
	is_int(job_at(jobs, 1, "migrations"), 0, "  job 9: none");
	list(NULL, 0, 0);
	if (db)
		test_reused_ids(db);
	svc_db_close(db);
	unlink(p);
}

static void test_queries(struct svc_db *db)
{
	json_t *o;
	int status = 0;

	is_int(count_jobs(db, -1, NULL, NULL, NULL), 4,
	       "admin sees 4 jobs (42, 43 and two job-less results)");
	is_int(count_jobs(db, 1000, NULL, NULL, NULL), 1, "alice sees 1 job");
	is_int(count_jobs(db, 1001, NULL, NULL, NULL), 3, "bob sees 3 jobs");
	is_int(count_jobs(db, 1000, "bob", NULL, NULL), 0,
	       "alice filtering on bob sees nothing");
	is_int(count_jobs(db, -1, NULL, "appb", NULL), 3,
	       "app filter by basename");
	is_int(count_jobs(db, -1, NULL, "/bin/appa", NULL), 1,
	       "app filter by full path");
	is_int(count_jobs(db, -1, NULL, NULL, "2029-02-01T00:00:00Z"), 3,
	       "since filter");

	o = svc_db_job(db, 42, NULL, 1000, 1, &status, NULL);
	is_int(status, 200, "alice reads job 42");
	is_int(json_array_size(json_object_get(o, "results")), 2,
	       "  two results (steps 0 and 1)");
	is_int(json_integer_value(json_object_get(json_object_get(o,
		"summary"), "threads")), 2,
	       "  summary: 2 threads (the largest step's, not a sum over "
	       "steps)");
	ok(json_is_object(json_object_get(json_array_get(json_object_get(o,
		"results"), 0), "document")), "  with the documents");
	json_decref(o);
	o = svc_db_job(db, 42, NULL, 1001, 1, &status, NULL);
	ok(!o && status == 403, "bob may not read job 42 (403)");
	o = svc_db_job(db, 77, NULL, -1, 1, &status, NULL);
	ok(!o && status == 404, "job 77 does not exist (404)");
	o = svc_db_result(db, 1, -1, &status, NULL);
	ok(o && status == 200 &&
	   json_is_object(json_object_get(o, "document")),
	   "result 1 with its document");
	json_decref(o);
	o = svc_db_list_apps(db, -1, 10, NULL);
	is_int(json_array_size(json_object_get(o, "apps")), 2, "two apps");
	json_decref(o);
}

static void test_newer_schema(void)
{
	struct cm_error e = { "" };
	sqlite3 *raw;
	struct svc_db *db;

	sqlite3_open(path, &raw);
	sqlite3_exec(raw, "INSERT INTO schema_version VALUES (99, 'x', 'now')",
		     NULL, NULL, NULL);
	sqlite3_close(raw);
	errno = 0;
	db = svc_db_open(path, 0, &e);
	ok(!db && errno == EPROTO && strstr(e.text, "schema version 99"),
	   "a database from a newer service is refused: %s", e.text);
	svc_db_close(db);
}

/* One upload through the pool's group commit, on a thread of its own. */
struct pool_upload {
	struct svc_db_pool *pool;
	json_t *doc;
	int null_step;		/* an identity the schema refuses */
	pthread_t thread;
	int rc;
	int64_t row;
	enum svc_store_outcome out;
	char err[256];
};

static void *pool_upload_main(void *arg)
{
	struct pool_upload *u = arg;
	struct svc_result_ident id;
	struct cm_error e = { "" };
	char *text;

	u->rc = -2;
	if (svc_result_validate(u->doc, &id, &e) < 0)
		return NULL;
	if (u->null_step)
		id.step = -1;	/* job without step: CHECK constraint */
	text = json_dumps(u->doc, JSON_COMPACT | JSON_SORT_KEYS);
	u->rc = svc_db_pool_store(u->pool, &id, NULL, 0, text, strlen(text),
				  &u->row, &u->out, &e);
	snprintf(u->err, sizeof(u->err), "%s", e.text);
	free(text);
	return NULL;
}

/* Start n uploads while another connection holds the write lock, so the
 * first one to lead waits in BEGIN and the others queue behind it; then
 * let them go. */
static void pool_upload_blocked(struct svc_db_pool *pool, const char *db_path,
				struct pool_upload *u, int n)
{
	sqlite3 *raw = NULL;
	int i;

	sqlite3_open(db_path, &raw);
	sqlite3_exec(raw, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	for (i = 0; i < n; i++) {
		u[i].pool = pool;
		pthread_create(&u[i].thread, NULL, pool_upload_main, &u[i]);
	}
	usleep(400 * 1000);	/* all queued (the leader waits 5 s) */
	sqlite3_exec(raw, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(raw);
	for (i = 0; i < n; i++)
		pthread_join(u[i].thread, NULL);
}

static long long wal_bytes(const char *db_path)
{
	char p[300];
	struct stat st;

	snprintf(p, sizeof(p), "%s-wal", db_path);
	return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* Group commit (svc_db_pool_store): concurrent uploads share a
 * transaction and each gets its own outcome; a failing one is retried
 * alone without costing the others theirs.  Then the WAL: uploads do not
 * checkpoint it (that is the models' worker's job, off their path), and
 * svc_db_pool_checkpoint does. */
static void test_group_commit(void)
{
	char gpath[300];
	struct cm_error e = { "" };
	struct svc_db_pool *pool;
	struct pool_upload u[6] = { { 0 } }, v[4] = { { 0 } };
	unsigned long long stores = 0, groups = 0;
	struct svc_db *db;
	sqlite3 *raw = NULL;
	int i, new_same = 0, rows_same = 1, nlog = -1, nckpt = -1;
	long long wal_before;

	snprintf(gpath, sizeof(gpath), "%s/group.db", dir);
	pool = svc_db_pool_open(gpath, 2, 0, &e);
	if (!ok(pool != NULL, "a pool for group commits (%s)", e.text))
		return;
	/* Three uploads of one job step: one stored, the others name its
	 * row (duplicate, or conflict for the other data). */
	for (i = 0; i < 3; i++)
		u[i].doc = make_result(70, 0, "n1", 1000, "alice", "/bin/g",
				       "2029-05-01T00:00:00Z", i == 2 ? 9 : 1);
	u[3].doc = make_result(71, 0, "n1", 1000, "alice", "/bin/g",
			       "2029-05-01T00:00:00Z", 1);
	u[3].null_step = 1;
	u[4].doc = make_result(72, 0, "n1", 1000, "alice", "/bin/g",
			       "2029-05-01T00:00:00Z", 1);
	u[5].doc = make_result(73, 0, "n1", 1001, "bob", "/bin/g",
			       "2029-05-01T00:00:00Z", 1);
	pool_upload_blocked(pool, gpath, u, 6);
	for (i = 0; i < 3; i++) {
		new_same += u[i].rc == 0 && u[i].out == SVC_STORE_NEW;
		rows_same &= u[i].rc == 0 && u[i].row == u[0].row;
	}
	is_int(new_same, 1, "one job step uploaded three times at once: stored once");
	ok(rows_same, "  the other two name the same row (duplicate or conflict)");
	ok((u[0].out == SVC_STORE_DUPLICATE) +
	   (u[1].out == SVC_STORE_DUPLICATE) <= 1 &&
	   u[2].out != SVC_STORE_DUPLICATE,
	   "  other data is never taken for a duplicate");
	ok(u[3].rc < 0 && strstr(u[3].err, "CHECK"),
	   "an upload the database refuses fails alone: %s", u[3].err);
	ok(u[4].rc == 0 && u[4].out == SVC_STORE_NEW && u[5].rc == 0 &&
	   u[5].out == SVC_STORE_NEW && u[4].row != u[5].row,
	   "  the uploads grouped with it are stored all the same");
	svc_db_pool_store_stats(pool, &stores, &groups);
	is_int((int)stores, 6, "six uploads went through the group commit");

	for (i = 0; i < 4; i++)
		v[i].doc = make_result(80 + i, 0, "n1", 1000, "alice", "/bin/g",
				       "2029-05-02T00:00:00Z", 1);
	pool_upload_blocked(pool, gpath, v, 4);
	for (i = 0; i < 4; i++)
		if (v[i].rc != 0 || v[i].out != SVC_STORE_NEW)
			break;
	is_int(i, 4, "four concurrent new uploads all stored");
	{
		unsigned long long s2, g2;

		svc_db_pool_store_stats(pool, &s2, &g2);
		ok(s2 == 10 && g2 - groups <= 2 && g2 - groups >= 1,
		   "  in at most 2 transactions (%llu): they queued behind the blocked one",
		   g2 - groups);
	}
	db = svc_db_pool_get(pool);
	is_int(count_jobs(db, -1, NULL, NULL, NULL), 7,
	       "  every stored job is listed (70, 72, 73, 80-83), not the refused");
	is_int(count_jobs(db, 1000, NULL, NULL, NULL), 6,
	       "  alice's: 70, 72, 80-83");
	svc_db_pool_put(pool, db);

	/* 400 more small uploads (~2,600 WAL pages): no checkpoint on the
	 * upload path, so the WAL holds them all... */
	for (i = 0; i < 400; i++) {
		struct pool_upload w = { .pool = pool };

		w.doc = make_result(1000 + i, 0, "n1", 1000, "alice", "/bin/g",
				    "2029-05-03T00:00:00Z", 1);
		pool_upload_main(&w);
		json_decref(w.doc);
		if (w.rc != 0)
			break;
	}
	is_int(i, 400, "400 uploads one after the other");
	wal_before = wal_bytes(gpath);
	ok(wal_before > 2000LL * 4096,
	   "  the uploads did not checkpoint: WAL of %lld bytes", wal_before);
	/* ... until the worker's checkpoint copies it back, and the next
	 * commit starts the WAL over. */
	db = svc_db_pool_get(pool);
	svc_db_pool_checkpoint(pool, db);
	svc_db_pool_put(pool, db);
	{
		struct pool_upload w = { .pool = pool };

		w.doc = make_result(2000, 0, "n1", 1000, "alice", "/bin/g",
				    "2029-05-03T00:00:00Z", 1);
		pool_upload_main(&w);
		json_decref(w.doc);
	}
	sqlite3_open(gpath, &raw);
	sqlite3_exec(raw, "SELECT COUNT(*) FROM results", NULL, NULL, NULL);
	sqlite3_wal_checkpoint_v2(raw, NULL, SQLITE_CHECKPOINT_PASSIVE, &nlog,
				  &nckpt);
	sqlite3_close(raw);
	ok(nlog >= 0 && nlog < 100,
	   "svc_db_pool_checkpoint copied the WAL back: it restarted (%d frames)",
	   nlog);
	ok(wal_bytes(gpath) <= wal_before, "  and did not grow");

	for (i = 0; i < 6; i++)
		json_decref(u[i].doc);
	for (i = 0; i < 4; i++)
		json_decref(v[i].doc);
	svc_db_pool_close(pool);
	unlink(gpath);
}


static long long count_rows(struct svc_db *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	long long n = -1;

	if (sqlite3_prepare_v2(svc_db_conn(db), sql, -1, &st, NULL) ==
	    SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* Retention: the cutoff date, and a prune that deletes only results
 * started before it, oldest first, a batch at a time, never one still
 * queued for its model. */
static void test_retention(void)
{
	static const char *starts[] = {
		"2020-01-01T00:00:00Z", "2020-06-01T00:00:00Z",
		"2021-01-01T00:00:00Z", "2024-12-31T23:59:59Z",
		"2025-01-01T00:00:00Z", "2029-01-01T00:00:00Z",
	};
	char p[300], cut[21];
	struct cm_error e = { "" };
	struct svc_db *db;
	int64_t row;

	ok(svc_retention_cutoff(30, 86400 * 365, cut) == 0 &&
	   strcmp(cut, "1970-12-02T00:00:00Z") == 0,
	   "cutoff 30 days before 1971-01-01: %s", cut);
	ok(svc_retention_cutoff(1, 1764115200 + 3723, cut) == 0 &&
	   strcmp(cut, "2025-11-25T01:02:03Z") == 0,
	   "cutoff keeps the time of day: %s", cut);
	ok(svc_retention_cutoff(0, 86400, cut) == -1 && errno == EINVAL,
	   "0 days is no retention: EINVAL");
	ok(svc_retention_cutoff(2, 86400, cut) == -1 && errno == EINVAL,
	   "a cutoff before 1970: EINVAL");

	snprintf(p, sizeof(p), "%s/retention.db", dir);
	db = svc_db_open(p, 0, &e);
	if (!ok(db != NULL, "a database for retention (%s)", e.text))
		return;
	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		json_t *d = make_result(80 + (long long)i, 0, "n1", 1000, "u",
					"/bin/app", starts[i], 1);

		store(db, d, NULL, &row);
		json_decref(d);
	}
	/* make_result has no exe_hash: nothing is queued.  Queue the
	 * oldest by hand, as an upload with an exe_hash would. */
	ok(sqlite3_exec(svc_db_conn(db), "INSERT INTO model_queue "
			"(result_id, uid, exe_hash) SELECT id, uid, 'sha256:0' "
			"FROM results WHERE job = 80", NULL, NULL, NULL) ==
	   SQLITE_OK, "the oldest result is queued for its model");

	ok(svc_retention_prune(db, "2025-01-01T00:00:00Z", 2, &e) == 2,
	   "a batch of 2 deletes 2 (%s)", e.text);
	is_int(count_rows(db, "SELECT COUNT(*) FROM results WHERE job IN "
			  "(81, 82)"), 0, "  the two oldest not queued");
	is_int(svc_retention_prune(db, "2025-01-01T00:00:00Z", 500, &e), 1,
	       "the next prune deletes the last one before the cutoff");
	is_int(count_rows(db, "SELECT COUNT(*) FROM results WHERE job = 83"),
	       0, "  (started 2024-12-31T23:59:59Z)");
	is_int(svc_retention_prune(db, "2025-01-01T00:00:00Z", 500, &e), 0,
	       "then nothing is left to delete");
	is_int(count_rows(db, "SELECT COUNT(*) FROM results"), 3,
	       "kept: the queued one and the two from the cutoff on");
	is_int(count_rows(db, "SELECT COUNT(*) FROM results WHERE job = 80"),
	       1, "  the result queued for its model is kept");
	sqlite3_exec(svc_db_conn(db), "DELETE FROM model_queue", NULL, NULL,
		     NULL);
	is_int(svc_retention_prune(db, "2025-01-01T00:00:00Z", 500, &e), 1,
	       "once folded, it goes too");
	is_int(count_rows(db, "SELECT COUNT(*) FROM results"), 2,
	       "2 results left (2025-01-01 and 2029-01-01)");
	ok(svc_retention_prune(db, NULL, 500, &e) == -1 && errno == EINVAL,
	   "no cutoff: EINVAL");
	svc_db_close(db);
	unlink(p);
}

int main(void)
{
	struct cm_error e = { "" };
	struct svc_db *db;
	struct svc_db_pool *pool;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/t.db", dir);
	db = svc_db_open(path, 0, &e);
	if (!ok(db != NULL, "create a database (%s)", e.text))
		return done_testing();
	is_int(svc_db_schema_version(db), (int)svc_n_migrations,
	       "every migration applied");
	test_store(db);
	svc_db_close(db);

	/* Reopen through a pool: data kept, migrations not re-run. */
	pool = svc_db_pool_open(path, 2, 1, &e);
	ok(pool != NULL, "reopen as a pool of 2 (%s)", e.text);
	db = svc_db_pool_get(pool);
	is_int(svc_db_schema_version(db), (int)svc_n_migrations,
	       "schema version unchanged after reopening");
	test_queries(db);
	test_raw_documents(db);
	svc_db_pool_put(pool, db);
	svc_db_pool_close(pool);
	test_newer_schema();
	test_job_list();
	test_migrate_old();
	test_group_commit();
	test_retention();

	unlink(path);
	{
		char p[300];

		snprintf(p, sizeof(p), "%s-wal", path);
		unlink(p);
		snprintf(p, sizeof(p), "%s-shm", path);
		unlink(p);
	}
	rmdir(dir);
	return done_testing();
}
