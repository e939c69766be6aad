/* svc_db_read.c: reading stored results back as JSON: the newest jobs,
 * the applications, one job with its summary, one result; each visible
 * only to its owner unless the caller reads all (owner_uid < 0).  The
 * statements are the connection's (svc_db.c); other listings:
 * svc_db_list.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "svc_db.h"
#include "svc_db_internal.h"

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
		svc_db_error(db, err, "query");
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

	if (svc_db_bind_id_or_null(st, 1, f->owner_uid) != SQLITE_OK ||
	    svc_db_bind_text_or_null(st, 2, f->user) != SQLITE_OK ||
	    svc_db_bind_text_or_null(st, 3, f->app) != SQLITE_OK ||
	    svc_db_bind_text_or_null(st, 4, f->since) != SQLITE_OK ||
	    svc_db_bind_text_or_null(st, 5, f->until) != SQLITE_OK ||
	    sqlite3_bind_int(st, 6, f->limit) != SQLITE_OK ||
	    sqlite3_bind_int(st, 7, f->offset) != SQLITE_OK) {
		svc_db_error(db, err, "bind");
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

	if (svc_db_bind_id_or_null(st, 1, owner_uid) != SQLITE_OK ||
	    sqlite3_bind_int(st, 2, limit) != SQLITE_OK) {
		svc_db_error(db, err, "bind");
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
	    svc_db_bind_text_or_null(st, 2, cluster) != SQLITE_OK) {
		svc_db_error(db, err, "bind");
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
		svc_db_error(db, err, "bind");
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
