/* svc_web.c: the HTML pages: the job list and a job's page here, the
 * others one per file (svc_web_apps.c, svc_web_models.c,
 * svc_web_compare.c, svc_web_matrix.c).  The list pages ask the JSON API
 * (svc_api_handle) the question the page is about, as the authenticated
 * caller, so they enforce exactly the API's authorization and parameter
 * rules; job and result pages read the database with the API's
 * visibility rule directly (their documents are large).  The answer is
 * rendered by report/librender. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commap/topology.h"
#include "render.h"
#include "svc_log.h"
#include "svc_models.h"
#include "svc_web.h"
#include "svc_web_internal.h"

static const char HTML_TYPE[] = "text/html; charset=utf-8";

int svc_web_is_page(const char *p)
{
	return strcmp(p, "/") == 0 || strcmp(p, "/jobs") == 0 ||
	       (strncmp(p, "/jobs/", 6) == 0 && p[6]) ||
	       (strncmp(p, "/results/", 9) == 0 && p[9]) ||
	       strcmp(p, "/apps") == 0 || strcmp(p, "/models") == 0 ||
	       (strncmp(p, "/apps/", 6) == 0 && p[6]) ||
	       (strncmp(p, "/models/", 8) == 0 && p[8]) ||
	       strcmp(p, "/compare") == 0;
}

void *svc_web_start(void)
{
	struct cm_topo *t = NULL;

	if (cm_topo_load_synthetic(&t, "pu:1", NULL) < 0)
		return NULL;
	return t;
}

void svc_web_stop(void *keep)
{
	cm_topo_free(keep);
}

int svc_web_page_open(struct svc_web_page *pg)
{
	pg->buf = NULL;
	pg->len = 0;
	pg->f = open_memstream(&pg->buf, &pg->len);
	return pg->f ? 0 : -1;
}

/* Close the page and send it, or a 500 if rendering failed. */
void svc_web_page_send(struct svc_web_page *pg, int rc, const struct cm_error *e,
		      struct svc_api_response *rs)
{
	if (fclose(pg->f) != 0)
		rc = -1;
	if (rc < 0) {
		free(pg->buf);
		svc_log(SVC_LOG_ERROR, "rendering a page: %s", e->text);
		svc_web_error(rs, 500, "the page could not be rendered: %s",
			      e->text);
		return;
	}
	rs->status = 200;
	rs->body = pg->buf;
	rs->body_len = pg->len;
	rs->content_type = HTML_TYPE;
}

void svc_web_error(struct svc_api_response *rs, unsigned status,
		   const char *fmt, ...)
{
	char text[512];
	struct svc_web_page pg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	rs->status = status;
	rs->content_type = HTML_TYPE;
	if (svc_web_page_open(&pg) < 0) {
		rs->body = strdup("error\n");
		rs->body_len = rs->body ? 6 : 0;
		return;
	}
	fprintf(pg.f, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
		"<meta charset=\"utf-8\"><title>%u \xe2\x80\x94 commap</title>"
		"</head><body><h1>%u</h1><p class=\"error\">", status, status);
	cm_render_escape(pg.f, text);
	fputs("</p><p><a href=\"/jobs\">Jobs</a></p></body></html>\n", pg.f);
	fclose(pg.f);
	rs->body = pg.buf;
	rs->body_len = pg.len;
}

/* Ask the API for path with query as the caller.  NULL (rs filled with an
 * error page carrying the API's status and message) unless 200. */
json_t *svc_web_api_get(const struct svc_api *api,
		       const struct svc_api_request *rq, const char *path,
		       const json_t *query, struct svc_api_response *rs)
{
	struct svc_api_request sub = *rq;
	struct svc_api_response ars;
	json_t *j;

	sub.method = "GET";
	sub.path = path;
	sub.query = query;
	sub.body = NULL;
	sub.body_len = 0;
	svc_api_handle(api, &sub, &ars);
	j = json_loadb(ars.body, ars.body_len, 0, NULL);
	if (ars.status != 200 || !j) {
		const char *msg = json_string_value(json_object_get(j,
								    "error"));

		svc_web_error(rs, ars.status == 200 ? 500 : ars.status, "%s",
			      msg ? msg : "unexpected answer from the API");
		json_decref(j);
		j = NULL;
	}
	free(ars.body);
	return j;
}

/* The query without empty values: an HTML form sends every field, and
 * an empty filter means "any". */
json_t *svc_web_query_nonempty(const json_t *q)
{
	json_t *out = json_object(), *v;
	const char *key;

	json_object_foreach((json_t *)q, key, v)
		if (json_string_length(v) > 0)
			json_object_set(out, key, v);
	return out;
}

void svc_web_opts_for(const struct svc_api_request *rq,
		     struct cm_render_opts *o, char *footer, size_t n)
{
	memset(o, 0, sizeof(*o));
	snprintf(footer, n, "signed in as %s", rq->caller->user[0] ?
		 rq->caller->user : "uid");
	if (!rq->caller->user[0])
		snprintf(footer, n, "signed in as uid %u", rq->caller->uid);
	o->footer = footer;
}

static void page_jobs(const struct svc_api *api,
		      const struct svc_api_request *rq,
		      struct svc_api_response *rs)
{
	struct cm_render_opts o;
	struct cm_error e = { "" };
	json_t *q = svc_web_query_nonempty(rq->query), *jobs;
	struct svc_web_page pg;
	char footer[128];
	int rc;

	jobs = svc_web_api_get(api, rq, "/v1/jobs", q, rs);
	if (jobs && svc_web_page_open(&pg) == 0) {
		svc_web_opts_for(rq, &o, footer, sizeof(footer));
		rc = cm_render_jobs_html(pg.f, jobs, q, &o, &e);
		svc_web_page_send(&pg, rc, &e, rs);
	} else if (jobs) {
		svc_web_error(rs, 500, "out of memory");
	}
	json_decref(jobs);
	json_decref(q);
}

/* The stored job or result, straight from the database: the same query
 * and visibility rule as GET /v1/jobs/{job} and /v1/results/{id}
 * (admins all, others their own), without serialising the documents to
 * JSON text and parsing them again, which would double the page's cost
 * for large results.  NULL with rs filled on any failure. */
json_t *svc_web_load_job(const struct svc_api *api,
			const struct svc_api_request *rq, int is_job,
			const char *arg, struct svc_api_response *rs)
{
	const struct svc_caller *c = rq->caller;
	int64_t owner = c->is_admin ? -1 : (int64_t)c->uid, id;
	const char *cluster;
	struct cm_error e = { "" };
	struct svc_db *db;
	json_t *out;
	int status = 0;

	if (svc_api_parse_id(arg, is_job ? 4294967295LL : 1LL << 62,
			     &id) < 0) {
		svc_web_error(rs, 400, "%s: '%.32s' is not a %s id",
			      is_job ? "job" : "result", arg,
			      is_job ? "job" : "result");
		return NULL;
	}
	cluster = svc_api_query_get(rq, "cluster");
	if (cluster && !svc_api_cluster_valid(cluster)) {
		svc_web_error(rs, 400, "cluster: expected up to 64 of A-Z a-z 0-9 . _ -");
		return NULL;
	}
	db = svc_db_pool_get(api->pool);
	out = is_job ? svc_db_job(db, id, cluster, owner, 1, &status, &e) :
		       svc_db_result(db, id, owner, &status, &e);
	svc_db_pool_put(api->pool, db);
	if (status == 404 || status == 403) {
		svc_web_error(rs, (unsigned)status, "%s %lld: %s",
			      is_job ? "job" : "result", (long long)id,
			      status == 404 ? "not found" : "not yours");
		json_decref(out);
		return NULL;
	}
	if (!out) {
		svc_log(SVC_LOG_ERROR, "%s", e.text);
		svc_web_error(rs, errno == EBUSY || errno == ENOSPC ? 503 : 500,
			      "storage error");
	}
	return out;
}

/* /jobs/{job} and /results/{id}: one job (or job-less result) page. */
static void page_job(const struct svc_api *api,
		     const struct svc_api_request *rq, int is_job,
		     const char *arg, struct svc_api_response *rs)
{
	struct cm_render_opts o;
	struct cm_error e = { "" };
	json_t *doc;
	struct svc_web_page pg;
	char footer[128];
	int rc;

	doc = svc_web_load_job(api, rq, is_job, arg, rs);
	if (doc && svc_web_page_open(&pg) == 0) {
		svc_web_opts_for(rq, &o, footer, sizeof(footer));
		rc = cm_render_job_html(pg.f, doc, &o, &e);
		svc_web_page_send(&pg, rc, &e, rs);
	} else if (doc) {
		svc_web_error(rs, 500, "out of memory");
	}
	json_decref(doc);
}

void svc_web_handle(const struct svc_api *api,
		    const struct svc_api_request *rq,
		    struct svc_api_response *rs)
{
	const char *p = rq->path;

	memset(rs, 0, sizeof(*rs));
	if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0) {
		svc_web_error(rs, 405, "%s: method %s not allowed", p,
			      rq->method);
		rs->allow = "GET, HEAD";
	} else if (strcmp(p, "/") == 0 || strcmp(p, "/jobs") == 0) {
		page_jobs(api, rq, rs);
	} else if (strncmp(p, "/jobs/", 6) == 0) {
		page_job(api, rq, 1, p + 6, rs);
	} else if (strncmp(p, "/results/", 9) == 0 &&
		   svc_web_matrix_path(p + 9)) {
		svc_web_matrix(api, rq, p + 9, rs);
	} else if (strncmp(p, "/results/", 9) == 0) {
		page_job(api, rq, 0, p + 9, rs);
	} else if (strcmp(p, "/apps") == 0 || strncmp(p, "/apps/", 6) == 0) {
		svc_web_page_apps(api, rq, p[5] ? p + 6 : NULL, rs);
	} else if (strcmp(p, "/models") == 0 ||
		   strncmp(p, "/models/", 8) == 0) {
		svc_web_page_models(api, rq, p[7] ? p + 8 : NULL, rs);
	} else if (strcmp(p, "/compare") == 0) {
		svc_web_page_compare(api, rq, rs);
	} else {
		svc_web_error(rs, 404, "%.200s: no such page", p);
	}
}
