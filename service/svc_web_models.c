/* svc_web_models.c: /models, the learned models the caller may read, and
 * /models/{id}, one model with its history: the runs folded into it and
 * the runs that started from it.  The model itself comes from the API
 * asked as the caller (GET /v1/models/{id}: the owner and admins; 403
 * and 404 as there), the runs with the job list's visibility rule. */
#include <stdio.h>
#include <string.h>

#include "svc_log.h"
#include "svc_web.h"
#include "svc_web_internal.h"

static void page_list(const struct svc_api *api,
		      const struct svc_api_request *rq,
		      struct svc_api_response *rs)
{
	struct cm_render_opts o;
	struct cm_error e = { "" };
	json_t *q = svc_web_query_nonempty(rq->query), *models;
	struct svc_web_page pg;
	char footer[128];
	int rc;

	models = svc_web_api_get(api, rq, "/v1/models", q, rs);
	if (models && svc_web_page_open(&pg) == 0) {
		svc_web_opts_for(rq, &o, footer, sizeof(footer));
		rc = cm_render_models_html(pg.f, models, &o, &e);
		svc_web_page_send(&pg, rc, &e, rs);
	} else if (models) {
		svc_web_error(rs, 500, "out of memory");
	}
	json_decref(models);
	json_decref(q);
}

/* The runs of the model's executable, visible to the caller, that
 * started from it; NULL (logged) on a storage error: the page is still
 * worth showing. */
static json_t *model_runs(const struct svc_api *api,
			  const struct svc_api_request *rq, int64_t id,
			  const json_t *model)
{
	const struct svc_caller *c = rq->caller;
	const char *exe = json_string_value(json_object_get(model,
							    "executable"));
	struct cm_error e = { "" };
	struct svc_db *db;
	json_t *runs;

	if (!exe)
		return NULL;
	db = svc_db_pool_get(api->pool);
	runs = svc_db_model_runs(db, id, exe, c->is_admin ? -1 :
				 (int64_t)c->uid, &e);
	svc_db_pool_put(api->pool, db);
	if (!runs)
		svc_log(SVC_LOG_ERROR, "%s", e.text);
	return runs;
}

static void page_model(const struct svc_api *api,
		       const struct svc_api_request *rq, const char *arg,
		       struct svc_api_response *rs)
{
	struct cm_render_opts o;
	struct cm_error e = { "" };
	json_t *q = json_object(), *model, *runs;
	struct svc_web_page pg;
	char footer[128], path[48];
	int64_t id;
	int rc;

	if (svc_api_parse_id(arg, 1LL << 62, &id) < 0) {
		svc_web_error(rs, 400, "model: '%.32s' is not a model id", arg);
		json_decref(q);
		return;
	}
	snprintf(path, sizeof(path), "/v1/models/%lld", (long long)id);
	model = svc_web_api_get(api, rq, path, q, rs);
	json_decref(q);
	if (!model)
		return;
	runs = model_runs(api, rq, id, model);
	if (svc_web_page_open(&pg) == 0) {
		svc_web_opts_for(rq, &o, footer, sizeof(footer));
		rc = cm_render_model_page_html(pg.f, model, runs, &o, &e);
		svc_web_page_send(&pg, rc, &e, rs);
	} else {
		svc_web_error(rs, 500, "out of memory");
	}
	json_decref(runs);
	json_decref(model);
}

void svc_web_page_models(const struct svc_api *api,
			 const struct svc_api_request *rq, const char *id,
			 struct svc_api_response *rs)
{
	if (id)
		page_model(api, rq, id, rs);
	else
		page_list(api, rq, rs);
}
