/* svc_http.h: the HTTP server (libmicrohttpd, epoll, a thread pool). */
#ifndef COMMAP_SVC_HTTP_H
#define COMMAP_SVC_HTTP_H

#include "commap/error.h"
#include "svc_api.h"
#include "svc_auth.h"
#include "svc_config.h"

struct svc_http;

/* Listen on config->listen_host:listen_port and serve until stopped.  The
 * caller keeps config, pool and auth alive until svc_http_stop returns. */
struct svc_http *svc_http_start(const struct svc_config *config,
				struct svc_db_pool *pool,
				const struct svc_auth *auth,
				struct cm_error *err);

/* The bound port (useful with port 0). */
unsigned svc_http_port(const struct svc_http *h);

/* Stop accepting, finish the requests in progress, free. */
void svc_http_stop(struct svc_http *h);

#endif
