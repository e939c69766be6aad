/* svc_web_compare.c: /compare?a=JOB&b=JOB, two runs side by side.  Each
 * job is loaded as its own page would be (svc_web_load_job: admins any,
 * others their own; 403 and 404 as there), so comparing cannot show a
 * run the caller could not open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svc_web.h"
#include "svc_web_internal.h"

/* The job named by query key ("a" or "b"), with "cluster_a"/"cluster_b"
 * when the same id was used by two clusters. */
static json_t *load_side(const struct svc_api *api,
			 const struct svc_api_request *rq, const char *key,
			 struct svc_api_response *rs)
{
	struct svc_api_request sub = *rq;
	const char *arg = svc_api_query_get(rq, key);
	char ckey[16];
	json_t *q, *job;

	if (!arg || !*arg) {
		svc_web_error(rs, 400, "%s: missing (compare?a=JOB&b=JOB)",
			      key);
		return NULL;
	}
	snprintf(ckey, sizeof(ckey), "cluster_%s", key);
	q = json_object();
	if (svc_api_query_get(rq, ckey))
		json_object_set_new(q, "cluster",
				    json_string(svc_api_query_get(rq, ckey)));
	sub.query = q;
	job = svc_web_load_job(api, &sub, 1, arg, rs);
	json_decref(q);
	return job;
}

void svc_web_page_compare(const struct svc_api *api,
			  const struct svc_api_request *rq,
			  struct svc_api_response *rs)
{
	static const char *const known[] = {
		"a", "b", "cluster_a", "cluster_b", NULL,
	};
	struct cm_render_opts o;
	struct cm_error e = { "" };
	struct svc_api_response ers;
	json_t *a = NULL, *b = NULL;
	struct svc_web_page pg;
	char footer[128];
	int rc;

	memset(&ers, 0, sizeof(ers));
	if (svc_api_query_check(rq, known, &ers) < 0) {
		svc_web_error(rs, 400, "compare: unknown query parameter "
			      "(a, b, cluster_a, cluster_b)");
		free(ers.body);
		return;
	}
	if ((a = load_side(api, rq, "a", rs)) &&
	    (b = load_side(api, rq, "b", rs))) {
		if (svc_web_page_open(&pg) == 0) {
			svc_web_opts_for(rq, &o, footer, sizeof(footer));
			rc = cm_render_compare_html(pg.f, a, b, &o, &e);
			svc_web_page_send(&pg, rc, &e, rs);
		} else {
			svc_web_error(rs, 500, "out of memory");
		}
	}
	json_decref(a);
	json_decref(b);
}
