/* svc_model_ranks_api.c: GET /v1/models/{app}/ranks (svc_model_ranks.h,
 * docs/service.md "Rank matrix across nodes"): the caller's (or, for
 * admins and writers, the named uid's) node results of the application
 * that hold MPI traffic counts, newest first and bounded, folded into the
 * rank matrix by svc_model_ranks_build. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "svc_api.h"
#include "svc_auth.h"
#include "svc_db.h"
#include "svc_log.h"
#include "svc_model_ranks.h"

/* Text of the node results read for one answer, at most: a few large
 * documents must not make a read hold megabytes of JSON in memory. */
#define DOCS_BYTES_MAX ((size_t)64 << 20)

static const char SQL_DOCS[] =
	"SELECT document FROM results WHERE uid = ?1 AND app = ?2"
	" AND (?3 IS NULL OR exe_hash = ?3) AND job IS NOT NULL"
	" AND instr(document, '\"rank_traffic\"') > 0"
	" ORDER BY id DESC LIMIT ?4";

/* The documents, newest first; NULL with err on a storage error. */
static json_t *load_docs(struct svc_db *db, long long uid, const char *app,
			 const char *exe_hash, struct cm_error *err)
{
	sqlite3 *conn = svc_db_conn(db);
	sqlite3_stmt *st = NULL;
	json_t *docs = json_array();
	size_t bytes = 0;
	int rc;

	if (!docs || sqlite3_prepare_v2(conn, SQL_DOCS, -1, &st, NULL) !=
	    SQLITE_OK) {
		cm_errorf(err, EIO, "rank matrix: %s", sqlite3_errmsg(conn));
		json_decref(docs);
		return NULL;
	}
	sqlite3_bind_int64(st, 1, uid);
	sqlite3_bind_text(st, 2, app, -1, SQLITE_TRANSIENT);
	if (exe_hash)
		sqlite3_bind_text(st, 3, exe_hash, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 4, SVC_RANKS_DOCS_MAX);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(st, 0);
		size_t len = (size_t)sqlite3_column_bytes(st, 0);
		json_t *d;

		if (bytes + len > DOCS_BYTES_MAX)
			break;
		bytes += len;
		d = text ? json_loadb(text, len, 0, NULL) : NULL;
		if (d)
			json_array_append_new(docs, d);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		cm_errorf(err, rc == SQLITE_BUSY ? EBUSY : EIO,
			  "rank matrix: %s", sqlite3_errmsg(conn));
		json_decref(docs);
		docs = NULL;
	}
	sqlite3_finalize(st);
	return docs;
}

static int app_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 255)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '/')
			return 0;
	return 1;
}

/* Query values: 0, or -1 with a 400 answer naming the parameter. */
static int parse_query(const struct svc_api_request *rq, long long *uid,
		       struct svc_ranks_query *q, struct svc_api_response *rs)
{
	static const char *const known[] = { "uid", "exe_hash", "argv_shape",
					     "ranks", NULL };
	const char *s;
	int64_t v;

	if (svc_api_query_check(rq, known, rs) < 0)
		return -1;
	*uid = rq->caller->uid;
	if ((s = svc_api_query_get(rq, "uid")) &&
	    svc_api_parse_id(s, 4294967295LL, &v) < 0) {
		svc_api_error(rs, 400, "uid: '%.32s' is not a uid", s);
		return -1;
	}
	if (s)
		*uid = v;
	if ((s = svc_api_query_get(rq, "ranks")) &&
	    (svc_api_parse_id(s, SVC_RANKS_MAX, &v) < 0 || v < 1)) {
		svc_api_error(rs, 400, "ranks: '%.32s' is not an integer in "
			      "[1, %d]", s, SVC_RANKS_MAX);
		return -1;
	}
	q->ranks = s ? (int)v : 0;
	q->argv_shape = svc_api_query_get(rq, "argv_shape");
	s = svc_api_query_get(rq, "exe_hash");
	if (s && (!*s || strlen(s) > 128)) {
		svc_api_error(rs, 400, "exe_hash: expected 1-128 bytes");
		return -1;
	}
	return 0;
}

void svc_model_ranks_handle(const struct svc_api *api,
			    const struct svc_api_request *rq, const char *app,
			    struct svc_api_response *rs)
{
	const struct svc_caller *c = rq->caller;
	struct svc_ranks_query q = { 0 };
	struct cm_error e = { "" };
	struct svc_db *db;
	long long uid;
	json_t *docs, *out = NULL;
	char *text;

	if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD")) {
		svc_api_error(rs, 405, "%s: method %s not allowed", rq->path,
			      rq->method);
		rs->allow = "GET, HEAD";
		return;
	}
	if (!app_valid(app)) {
		svc_api_error(rs, 400, "app: expected 1-255 bytes, no '/' or "
			      "control characters");
		return;
	}
	if (parse_query(rq, &uid, &q, rs) < 0)
		return;
	/* Like the other model reads: the agent (a writer) reads for the
	 * job's user, admins for anyone. */
	if (uid != (long long)c->uid && !c->is_admin && !c->is_writer) {
		svc_api_error(rs, 403, "uid: rank matrices of user %lld are "
			      "not yours (admins and writers only)", uid);
		return;
	}
	db = svc_db_pool_get(api->pool);
	docs = load_docs(db, uid, app, svc_api_query_get(rq, "exe_hash"), &e);
	svc_db_pool_put(api->pool, db);
	if (docs)
		out = svc_model_ranks_build(docs, &q, &e);
	json_decref(docs);
	if (!out && docs && errno == ENOENT) {
		svc_api_error(rs, 404, "no rank matrix for app %.255s uid=%lld:"
			      " %s", app, uid, e.text);
		return;
	}
	if (!out) {
		svc_log(SVC_LOG_ERROR, "%s", e.text);
		svc_api_error(rs, errno == EBUSY ? 503 : 500, "%s",
			      errno == EBUSY ? "storage busy, retry later" :
			      "storage error");
		return;
	}
	json_object_set_new(out, "app", json_string(app));
	json_object_set_new(out, "uid", json_integer(uid));
	text = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	if (!text) {
		svc_api_error(rs, 500, "out of memory");
		return;
	}
	rs->body = text;
	rs->body_len = strlen(text);
	rs->status = 200;
	rs->content_type = "application/json";
}

int svc_model_ranks_route(const struct svc_api *api,
			  const struct svc_api_request *rq,
			  struct svc_api_response *rs)
{
	static const char head[] = "/v1/models/", tail[] = "/ranks";
	const char *p = rq->path, *app = p + sizeof(head) - 1;
	size_t n = strlen(p), an;
	char name[256];

	if (strncmp(p, head, sizeof(head) - 1) != 0 ||
	    n < sizeof(head) - 1 + sizeof(tail) ||
	    strcmp(p + n - (sizeof(tail) - 1), tail) != 0)
		return 0;
	an = n - (sizeof(head) - 1) - (sizeof(tail) - 1);
	if (an >= sizeof(name)) {
		svc_api_error(rs, 400, "app: expected 1-255 bytes");
		return 1;
	}
	memcpy(name, app, an);
	name[an] = '\0';
	svc_model_ranks_handle(api, rq, name, rs);
	return 1;
}
