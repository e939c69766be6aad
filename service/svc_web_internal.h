/* svc_web_internal.h: what the page files of the web interface share
 * (svc_web.c): pages rendered into memory, the API asked as the caller,
 * a job loaded with the API's visibility rule.  Not used outside the
 * svc_web*.c files. */
#ifndef COMMAP_SVC_WEB_INTERNAL_H
#define COMMAP_SVC_WEB_INTERNAL_H

#include <stdio.h>

#include "render.h"
#include "svc_api.h"

/* A page rendered into memory. */
struct svc_web_page {
	FILE *f;
	char *buf;
	size_t len;
};

/* 0, or -1 (ENOMEM). */
int svc_web_page_open(struct svc_web_page *pg);
/* Close the page and send it as HTML, or a 500 if rendering failed (rc
 * < 0, e says why). */
void svc_web_page_send(struct svc_web_page *pg, int rc,
		       const struct cm_error *e, struct svc_api_response *rs);

/* Ask the API for path with query as the caller.  NULL (rs filled with
 * an error page carrying the API's status and message) unless 200. */
json_t *svc_web_api_get(const struct svc_api *api,
			const struct svc_api_request *rq, const char *path,
			const json_t *query, struct svc_api_response *rs);

/* The query without empty values (a form sends every field). */
json_t *svc_web_query_nonempty(const json_t *q);

/* Render options with the "signed in as" footer (footer: n bytes). */
void svc_web_opts_for(const struct svc_api_request *rq,
		      struct cm_render_opts *o, char *footer, size_t n);

/* A job (is_job, arg its id; query "cluster" honoured) or a result with
 * its documents, as GET /v1/jobs/{job} or /v1/results/{id} would answer
 * the caller; NULL with rs filled (400, 403, 404, 5xx) otherwise. */
json_t *svc_web_load_job(const struct svc_api *api,
			 const struct svc_api_request *rq, int is_job,
			 const char *arg, struct svc_api_response *rs);

/* The pages of the other files.  app/id: what follows "/apps/" or
 * "/models/", NULL for the lists. */
void svc_web_page_apps(const struct svc_api *api,
		       const struct svc_api_request *rq, const char *app,
		       struct svc_api_response *rs);
void svc_web_page_models(const struct svc_api *api,
			 const struct svc_api_request *rq, const char *id,
			 struct svc_api_response *rs);
void svc_web_page_compare(const struct svc_api *api,
			  const struct svc_api_request *rq,
			  struct svc_api_response *rs);

/* Is rest ("ID/matrix.json" after "/results/") a matrix download? */
int svc_web_matrix_path(const char *rest);
/* The result's matrix as commap-matrix JSON or CSV (lib/matrix_io). */
void svc_web_matrix(const struct svc_api *api,
		    const struct svc_api_request *rq, const char *rest,
		    struct svc_api_response *rs);

#endif
