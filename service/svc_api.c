/* svc_api.c: the /v1 endpoints, /healthz and /metrics. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"
#include "svc_api.h"
#include "svc_log.h"
#include "svc_metrics.h"
#include "svc_model_ranks.h"
#include "svc_models.h"

#define LIST_LIMIT_DEFAULT 100
#define LIST_LIMIT_MAX 1000
/* Jobs a listing may skip (?offset). */
#define OFFSET_MAX 1000000000L
#define UPLOAD_ID_MAX 128

static const char JSON_TYPE[] = "application/json";

static void respond_json(struct svc_api_response *rs, unsigned status,
			 json_t *obj)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;

	json_decref(obj);
	if (!text) {
		rs->status = 500;
		rs->body = strdup("{\"error\":\"out of memory\"}\n");
		rs->body_len = rs->body ? strlen(rs->body) : 0;
		rs->content_type = JSON_TYPE;
		return;
	}
	rs->status = status;
	rs->body_len = strlen(text);
	/* Room for the newline curl users like to see. */
	rs->body = realloc(text, rs->body_len + 2);
	if (!rs->body) {
		rs->body = text;
	} else {
		rs->body[rs->body_len++] = '\n';
		rs->body[rs->body_len] = '\0';
	}
	rs->content_type = JSON_TYPE;
}

void svc_api_error(struct svc_api_response *rs, unsigned status,
		   const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	respond_json(rs, status, json_pack("{s:s}", "error", text));
}

/* Map a storage failure: busy/full are transient (503: retry later). */
static void db_failure(struct svc_api_response *rs, const struct cm_error *e)
{
	svc_log(SVC_LOG_ERROR, "%s", e->text);
	if (errno == EBUSY || errno == ENOSPC)
		svc_api_error(rs, 503, "storage busy or full, retry later");
	else
		svc_api_error(rs, 500, "storage error");
}

enum svc_route_auth svc_api_route_auth(const char *method, const char *path)
{
	if (strcmp(path, "/healthz") == 0 || strcmp(path, "/metrics") == 0)
		return SVC_ROUTE_PUBLIC;
	if (strcmp(path, "/v1/results") == 0 && strcmp(method, "POST") == 0)
		return SVC_ROUTE_WRITER;
	return SVC_ROUTE_READER;
}

/* Admins read everything; others their own results only. */
static int64_t owner_of(const struct svc_caller *c)
{
	return c->is_admin ? -1 : (int64_t)c->uid;
}

static int upload_id_valid(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > UPLOAD_ID_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._:-", s[i]))
			return 0;
	return 1;
}

/* The body is parsed and validated in one pass without jansson values
 * (svc_result_check) and stored as received: no canonical re-dump.  A
 * retry is recognised by comparing canonical forms only when a result of
 * the same identity exists (svc_db_store_text).  Concurrent uploads are
 * committed together (svc_db_pool_store); each is answered only once its
 * transaction committed. */
static void post_result(const struct svc_api *api,
			const struct svc_api_request *rq,
			struct svc_api_response *rs)
{
	struct svc_result_parsed *parsed;
	struct svc_result_ident id;
	struct cm_error e = { "" };
	enum svc_store_outcome outcome;
	int64_t row = 0;
	int rc;

	if (rq->body_too_large) {
		svc_api_error(rs, 400, "body: more than max_body (%zu bytes)",
			      api->config->max_body);
		return;
	}
	if (rq->upload_id && !upload_id_valid(rq->upload_id)) {
		svc_api_error(rs, 400,
			      "X-Commap-Upload-Id: expected 1-%d characters of A-Z a-z 0-9 . _ : -",
			      UPLOAD_ID_MAX);
		return;
	}
	if (svc_result_check(rq->body, rq->body_len, api->config->max_body,
			     &parsed, &id, &e) < 0) {
		svc_api_error(rs, errno == ENOMEM ? 500 : 400, "%s", e.text);
		return;
	}
	rc = svc_db_pool_store(api->pool, &id, rq->upload_id, rq->caller->uid,
			       rq->body, rq->body_len, &row, &outcome, &e);
	/* The result was queued for its model in the same transaction
	 * (sql/0004): this only counts it and wakes the models' worker. */
	if (rc == 0 && outcome == SVC_STORE_NEW)
		svc_models_after_upload(&id, row);
	svc_result_parsed_free(parsed);
	if (rc < 0) {
		db_failure(rs, &e);
	} else if (outcome == SVC_STORE_CONFLICT) {
		respond_json(rs, 409, json_pack("{s:s, s:I}", "error",
			"a different result is already stored for this job step and node (or upload id)",
			"id", (json_int_t)row));
	} else {
		respond_json(rs, outcome == SVC_STORE_NEW ? 201 : 200,
			     json_pack("{s:I, s:s}", "id", (json_int_t)row,
				       "status", outcome == SVC_STORE_NEW ?
				       "stored" : "duplicate"));
	}
}

const char *svc_api_query_get(const struct svc_api_request *rq,
			      const char *key)
{
	return json_string_value(json_object_get(rq->query, key));
}

int svc_api_query_check(const struct svc_api_request *rq,
			const char *const *known,
			struct svc_api_response *rs)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)rq->query, key, v) {
		const char *const *k;

		for (k = known; *k && strcmp(*k, key) != 0; k++)
			;
		if (!*k) {
			svc_api_error(rs, 400, "%s: unknown query parameter",
				      key);
			return -1;
		}
	}
	return 0;
}

/* The query's key as a count in [lo, hi], or dflt when it is absent.
 * 0, or -1 after a 400 that names the key, its value and the range (what
 * says what the range is: "in", "a count of jobs in"). */
static int query_count(const struct svc_api_request *rq, const char *key,
		       long lo, long hi, int dflt, const char *what, int *out,
		       struct svc_api_response *rs)
{
	const char *s = svc_api_query_get(rq, key);
	char *end;
	long v;

	*out = dflt;
	if (!s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (!isdigit((unsigned char)*s) || *end || errno || v < lo ||
	    v > hi) {
		svc_api_error(rs, 400, "%s: '%.32s' is not %s [%ld, %ld]", key,
			      s, what, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int query_limit(const struct svc_api_request *rq, int *limit,
		       struct svc_api_response *rs)
{
	return query_count(rq, "limit", 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT,
			   "in", limit, rs);
}

/* since/until: YYYY-MM-DD or a UTC time, normalised to the stored form. */
static int query_time(const struct svc_api_request *rq, const char *key,
		      char out[21], const char **value,
		      struct svc_api_response *rs)
{
	const char *s = svc_api_query_get(rq, key);
	char tmp[32];

	*value = NULL;
	if (!s)
		return 0;
	if (strlen(s) == 10) {
		snprintf(tmp, sizeof(tmp), "%sT00:00:00Z", s);
		s = tmp;
	}
	if (!svc_timestamp_valid(s, out)) {
		svc_api_error(rs, 400,
			      "%s: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ",
			      key);
		return -1;
	}
	*value = out;
	return 0;
}

static int query_sort(const struct svc_api_request *rq,
		      struct svc_job_filter *f, struct svc_api_response *rs)
{
	const char *s = svc_api_query_get(rq, "sort");

	if (!s || svc_job_sort_parse(s, f) == 0)
		return 0;
	svc_api_error(rs, 400, "sort: '%.32s' is not one of %s (a leading "
		      "'-' sorts largest first)", s, svc_job_sort_keys);
	return -1;
}

/* One more job than asked is read, so the answer can say whether a
 * next page exists ("more") without counting every job. */
static json_t *jobs_page(struct svc_db *db, struct svc_job_filter *f,
			 struct cm_error *e)
{
	json_t *out, *arr;
	int more;

	f->limit++;
	out = f->sort ? svc_db_list_jobs_sorted(db, f, e) :
	      svc_db_list_jobs(db, f, e);
	f->limit--;
	arr = json_object_get(out, "jobs");
	more = (int)json_array_size(arr) > f->limit;
	if (more)
		json_array_remove(arr, json_array_size(arr) - 1);
	if (out && json_object_set_new(out, "more", json_boolean(more)) < 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static void list_jobs(const struct svc_api *api,
		      const struct svc_api_request *rq,
		      struct svc_api_response *rs)
{
	static const char *const known[] = {
		"user", "app", "since", "until", "limit", "offset", "sort",
		NULL,
	};
	struct svc_job_filter f = { 0 };
	char since[21], until[21];
	struct cm_error e = { "" };
	struct svc_db *db;
	json_t *out;

	if (svc_api_query_check(rq, known, rs) < 0 ||
	    query_limit(rq, &f.limit, rs) ||
	    query_count(rq, "offset", 0, OFFSET_MAX, 0, "a count of jobs in",
			&f.offset, rs) ||
	    query_sort(rq, &f, rs) ||
	    query_time(rq, "since", since, &f.since, rs) < 0 ||
	    query_time(rq, "until", until, &f.until, rs) < 0)
		return;
	f.owner_uid = owner_of(rq->caller);
	f.user = svc_api_query_get(rq, "user");
	f.app = svc_api_query_get(rq, "app");
	db = svc_db_pool_get(api->pool);
	out = jobs_page(db, &f, &e);
	svc_db_pool_put(api->pool, db);
	if (!out)
		db_failure(rs, &e);
	else
		respond_json(rs, 200, out);
}

static void list_apps(const struct svc_api *api,
		      const struct svc_api_request *rq,
		      struct svc_api_response *rs)
{
	static const char *const known[] = { "limit", NULL };
	struct cm_error e = { "" };
	struct svc_db *db;
	json_t *out;
	int limit;

	if (svc_api_query_check(rq, known, rs) < 0 ||
	    query_limit(rq, &limit, rs))
		return;
	db = svc_db_pool_get(api->pool);
	out = svc_db_list_apps(db, owner_of(rq->caller), limit, &e);
	svc_db_pool_put(api->pool, db);
	if (!out)
		db_failure(rs, &e);
	else
		respond_json(rs, 200, out);
}

int svc_api_cluster_valid(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			  "0123456789._-");

	return s[n] == '\0' && n <= 64;
}

int svc_api_parse_id(const char *s, long long max, int64_t *out)
{
	char *end;
	long long v;

	if (!isdigit((unsigned char)*s) || strlen(s) > 19)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || errno || v > max)
		return -1;
	*out = v;
	return 0;
}

static void get_job(const struct svc_api *api,
		    const struct svc_api_request *rq, const char *arg,
		    struct svc_api_response *rs)
{
	static const char *const known[] = { "documents", "cluster", NULL };
	const char *docs = svc_api_query_get(rq, "documents");
	const char *cluster = svc_api_query_get(rq, "cluster");
	struct cm_error e = { "" };
	struct svc_db *db;
	int64_t job;
	int status;
	json_t *out;

	if (svc_api_query_check(rq, known, rs) < 0)
		return;
	if (svc_api_parse_id(arg, 4294967295LL, &job) < 0) {
		svc_api_error(rs, 400, "job: '%.32s' is not a job id", arg);
		return;
	}
	if (docs && strcmp(docs, "0") != 0 && strcmp(docs, "1") != 0) {
		svc_api_error(rs, 400, "documents: expected 0 or 1");
		return;
	}
	if (cluster && !svc_api_cluster_valid(cluster)) {
		svc_api_error(rs, 400,
			      "cluster: expected up to 64 of A-Z a-z 0-9 . _ -");
		return;
	}
	db = svc_db_pool_get(api->pool);
	out = svc_db_job(db, job, cluster, owner_of(rq->caller),
			 !docs || strcmp(docs, "1") == 0, &status, &e);
	svc_db_pool_put(api->pool, db);
	if (status == 404)
		svc_api_error(rs, 404, "job %lld: not found", (long long)job);
	else if (status == 403)
		svc_api_error(rs, 403, "job %lld: not yours", (long long)job);
	else if (!out)
		db_failure(rs, &e);
	else
		respond_json(rs, 200, out);
}

static void get_result(const struct svc_api *api,
		       const struct svc_api_request *rq, const char *arg,
		       struct svc_api_response *rs)
{
	static const char *const known[] = { NULL };
	struct cm_error e = { "" };
	struct svc_db *db;
	int64_t id;
	int status;
	json_t *out;

	if (svc_api_query_check(rq, known, rs) < 0)
		return;
	if (svc_api_parse_id(arg, 1LL << 62, &id) < 0) {
		svc_api_error(rs, 400, "result: '%.32s' is not a result id",
			      arg);
		return;
	}
	db = svc_db_pool_get(api->pool);
	out = svc_db_result(db, id, owner_of(rq->caller), &status, &e);
	svc_db_pool_put(api->pool, db);
	if (status == 404)
		svc_api_error(rs, 404, "result %lld: not found", (long long)id);
	else if (status == 403)
		svc_api_error(rs, 403, "result %lld: not yours", (long long)id);
	else if (!out)
		db_failure(rs, &e);
	else
		respond_json(rs, 200, out);
}

static void healthz(const struct svc_api *api, struct svc_api_response *rs)
{
	struct svc_db *db = svc_db_pool_get(api->pool);
	int version = svc_db_schema_version(db);

	svc_db_pool_put(api->pool, db);
	if (version < 0)
		respond_json(rs, 503, json_pack("{s:s}", "status",
						"database unavailable"));
	else
		respond_json(rs, 200, json_pack("{s:s, s:i}", "status", "ok",
						"schema_version", version));
}

/* Group commit (svc_db_pool_store): how many uploads shared a commit. */
static char *store_metrics(const struct svc_api *api)
{
	unsigned long long stores, groups;
	char *text = malloc(512);

	if (!text)
		return NULL;
	svc_db_pool_store_stats(api->pool, &stores, &groups);
	snprintf(text, 512,
		 "# HELP commap_upload_stores_total Uploads that reached the database (new, duplicate or conflicting).\n"
		 "# TYPE commap_upload_stores_total counter\n"
		 "commap_upload_stores_total %llu\n"
		 "# HELP commap_upload_commits_total Transactions that stored them: concurrent uploads are committed together.\n"
		 "# TYPE commap_upload_commits_total counter\n"
		 "commap_upload_commits_total %llu\n", stores, groups);
	return text;
}

/* The counters (svc_metrics.c), then the group commits' and the learned
 * models' lines (svc_models.c: the fold backlog). */
static void metrics(const struct svc_api *api, struct svc_api_response *rs)
{
	char *extra[2] = { store_metrics(api), svc_models_metrics() };
	size_t i, n;
	char *body;

	rs->body = svc_metrics_render(api->config->database, &rs->body_len);
	for (i = 0; i < 2; i++) {
		n = extra[i] ? strlen(extra[i]) : 0;
		body = rs->body && extra[i] ?
		       realloc(rs->body, rs->body_len + n + 1) : NULL;
		if (body) {
			memcpy(body + rs->body_len, extra[i], n + 1);
			rs->body = body;
			rs->body_len += n;
		}
		free(extra[i]);
	}
	if (!rs->body) {
		svc_api_error(rs, 500, "out of memory");
		return;
	}
	rs->status = 200;
	rs->content_type = "text/plain; version=0.0.4";
}

static int method_is(const struct svc_api_request *rq, const char *m,
		     struct svc_api_response *rs)
{
	if (strcmp(rq->method, m) == 0 ||
	    (strcmp(m, "GET") == 0 && strcmp(rq->method, "HEAD") == 0))
		return 1;
	svc_api_error(rs, 405, "%s: method %s not allowed", rq->path,
		      rq->method);
	rs->allow = strcmp(m, "GET") == 0 ? "GET, HEAD" : m;
	return 0;
}

void svc_api_handle(const struct svc_api *api,
		    const struct svc_api_request *rq,
		    struct svc_api_response *rs)
{
	const char *p = rq->path;

	memset(rs, 0, sizeof(*rs));
	if (strcmp(p, "/healthz") == 0) {
		if (method_is(rq, "GET", rs))
			healthz(api, rs);
	} else if (strcmp(p, "/metrics") == 0) {
		if (method_is(rq, "GET", rs))
			metrics(api, rs);
	} else if (strcmp(p, "/v1/results") == 0) {
		if (method_is(rq, "POST", rs))
			post_result(api, rq, rs);
	} else if (strncmp(p, "/v1/results/", 12) == 0) {
		if (method_is(rq, "GET", rs))
			get_result(api, rq, p + 12, rs);
	} else if (strcmp(p, "/v1/jobs") == 0) {
		if (method_is(rq, "GET", rs))
			list_jobs(api, rq, rs);
	} else if (strncmp(p, "/v1/jobs/", 9) == 0) {
		if (method_is(rq, "GET", rs))
			get_job(api, rq, p + 9, rs);
	} else if (svc_model_ranks_route(api, rq, rs)) {
		/* answered: the rank matrix across nodes */
	} else if (strcmp(p, "/v1/models") == 0 ||
		   strncmp(p, "/v1/models/", 11) == 0) {
		svc_models_handle(api, rq, p + 10, rs);
	} else if (strcmp(p, "/v1/apps") == 0) {
		if (method_is(rq, "GET", rs))
			list_apps(api, rq, rs);
	} else {
		svc_api_error(rs, 404, "%.200s: no such endpoint", p);
	}
}
