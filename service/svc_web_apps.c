/* svc_web_apps.c: /apps, the applications the caller ran, and
 * /apps/{app}, one application's history: its runs (sortable, paged, as
 * the job list), its learned models linked to their pages, and a form
 * comparing two runs.  Lists come from the API asked as the caller
 * (svc_web_api_get), so they follow its visibility rule: another user's
 * application is a 404, as if it did not exist. */
#include <string.h>

#include "svc_log.h"
#include "svc_models.h"
#include "svc_web.h"
#include "svc_web_internal.h"

/* This application's entry in the caller's /v1/apps, or NULL. */
static json_t *app_info(const json_t *apps, const char *app)
{
	const json_t *arr = json_object_get(apps, "apps");
	size_t i;

	for (i = 0; i < json_array_size(arr); i++) {
		json_t *a = json_array_get(arr, i);

		if (strcmp(json_string_value(json_object_get(a, "app")) ?
			   json_string_value(json_object_get(a, "app")) : "",
			   app) == 0)
			return a;
	}
	return NULL;
}

/* The application's learned models visible to the caller (the rule of
 * GET /v1/models: admins all, others their own), whole documents; NULL
 * (logged) if the store fails: the page is still worth showing. */
static json_t *app_models(const struct svc_api *api,
			  const struct svc_api_request *rq, const char *app)
{
	const struct svc_caller *c = rq->caller;
	struct cm_error e = { "" };
	struct svc_db *db = svc_db_pool_get(api->pool);
	json_t *out = svc_models_list(db, c->is_admin ? -1 : (int64_t)c->uid,
				      app, 20, 1, &e);

	svc_db_pool_put(api->pool, db);
	if (!out)
		svc_log(SVC_LOG_ERROR, "%s", e.text);
	return out;
}

static void page_app(const struct svc_api *api,
		     const struct svc_api_request *rq, const char *app,
		     struct svc_api_response *rs)
{
	struct cm_render_opts o;
	struct cm_error e = { "" };
	json_t *q = svc_web_query_nonempty(rq->query), *aq, *jobs = NULL, *apps;
	json_t *shown = svc_web_query_nonempty(rq->query);
	json_t *models = NULL;
	struct svc_web_page pg;
	char footer[128];
	int rc;

	json_object_set_new(q, "app", json_string(app));
	aq = json_pack("{s:s}", "limit", "1000");
	apps = svc_web_api_get(api, rq, "/v1/apps", aq, rs);
	if (apps)
		jobs = svc_web_api_get(api, rq, "/v1/jobs", q, rs);
	if (jobs && json_array_size(json_object_get(jobs, "jobs")) == 0 &&
	    !svc_api_query_get(rq, "offset")) {
		svc_web_error(rs, 404, "%s: no runs of this application are "
			      "visible to you", app);
	} else if (jobs && svc_web_page_open(&pg) == 0) {
		svc_web_opts_for(rq, &o, footer, sizeof(footer));
		models = app_models(api, rq, app);
		rc = cm_render_app_page_html(pg.f, app, app_info(apps, app),
					     jobs, shown, models, &o, &e);
		svc_web_page_send(&pg, rc, &e, rs);
	} else if (jobs) {
		svc_web_error(rs, 500, "out of memory");
	}
	json_decref(models);
	json_decref(jobs);
	json_decref(apps);
	json_decref(aq);
	json_decref(q);
	json_decref(shown);
}

static void page_apps(const struct svc_api *api,
		      const struct svc_api_request *rq,
		      struct svc_api_response *rs)
{
	struct cm_render_opts o;
	struct cm_error e = { "" };
	json_t *q = svc_web_query_nonempty(rq->query), *apps;
	struct svc_web_page pg;
	char footer[128];
	int rc;

	apps = svc_web_api_get(api, rq, "/v1/apps", q, rs);
	if (apps && svc_web_page_open(&pg) == 0) {
		svc_web_opts_for(rq, &o, footer, sizeof(footer));
		rc = cm_render_apps_html(pg.f, apps, &o, &e);
		svc_web_page_send(&pg, rc, &e, rs);
	} else if (apps) {
		svc_web_error(rs, 500, "out of memory");
	}
	json_decref(apps);
	json_decref(q);
}

void svc_web_page_apps(const struct svc_api *api,
		       const struct svc_api_request *rq, const char *app,
		       struct svc_api_response *rs)
{
	if (app)
		page_app(api, rq, app, rs);
	else
		page_apps(api, rq, rs);
}
