/* svc_web.h: the HTML report pages (docs/reports.md), rendered by
 * report/librender from what the JSON API would answer.  The HTTP layer
 * authenticates (munge, or the web_auth policy) and then hands the
 * request here instead of to svc_api_handle. */
#ifndef COMMAP_SVC_WEB_H
#define COMMAP_SVC_WEB_H

#include <stdarg.h>

#include "svc_api.h"

/* Is path one of the web pages: "/", "/jobs", "/jobs/{job}",
 * "/results/{id}", "/apps/{app}"? */
int svc_web_is_page(const char *path);

/* Answer one page request (rq->caller is set); rs->body is always set,
 * an HTML page also for errors. */
void svc_web_handle(const struct svc_api *api,
		    const struct svc_api_request *rq,
		    struct svc_api_response *rs);

/* While the server runs it holds one tiny hwloc topology: hwloc loads
 * its plugins when the first topology is created and unloads them when
 * the last is freed, so without it every page that draws a topology
 * would dlopen and relocate them again (~13% of a page's CPU).  NULL if
 * it could not be made (pages still work, only slower). */
void *svc_web_start(void);
void svc_web_stop(void *keep);

/* Fill rs with a small HTML error page (the text escaped). */
void svc_web_error(struct svc_api_response *rs, unsigned status,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
