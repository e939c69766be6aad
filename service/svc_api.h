/* svc_api.h: the JSON API under /v1 (docs/service.md), independent of the
 * HTTP library: the HTTP layer (svc_http.c) authenticates, collects the
 * body and query, and sends what svc_api_handle answers. */
#ifndef COMMAP_SVC_API_H
#define COMMAP_SVC_API_H

#include <stddef.h>

#include <jansson.h>

#include "svc_auth.h"
#include "svc_config.h"
#include "svc_db.h"

struct svc_api {
	const struct svc_config *config;
	struct svc_db_pool *pool;
};

struct svc_api_request {
	const char *method;
	const char *path;		/* without the query string */
	const json_t *query;		/* {"name": "value"} */
	const char *upload_id;		/* X-Commap-Upload-Id, or NULL */
	const char *body;
	size_t body_len;
	int body_too_large;		/* more than max_body was sent */
	const struct svc_caller *caller; /* NULL for unauthenticated paths */
};

struct svc_api_response {
	unsigned status;
	char *body;			/* malloc'd */
	size_t body_len;
	const char *content_type;
	const char *allow;		/* Allow header for 405, or NULL */
	const char *location;		/* Location header, or NULL */
	char set_cookie[160];		/* Set-Cookie header, or "" */
};

enum svc_route_auth {
	SVC_ROUTE_PUBLIC,	/* /healthz, /metrics */
	SVC_ROUTE_READER,	/* any authenticated user */
	SVC_ROUTE_WRITER,	/* uploads */
};

/* What a request for method and path needs before its body is read. */
enum svc_route_auth svc_api_route_auth(const char *method, const char *path);

/* Answer one request; rs->body is always set (JSON error objects name the
 * problem: {"error": "edges[3][2]: weight is negative"}). */
void svc_api_handle(const struct svc_api *api,
		    const struct svc_api_request *rq,
		    struct svc_api_response *rs);

/* A query parameter's value, NULL when absent. */
const char *svc_api_query_get(const struct svc_api_request *rq,
			      const char *key);
/* 0 when every query parameter is in known (NULL-terminated); else a 400
 * naming the first unknown one (typos would otherwise silently widen a
 * listing) and -1. */
int svc_api_query_check(const struct svc_api_request *rq,
			const char *const *known,
			struct svc_api_response *rs);

/* A decimal id (digits only, no sign or blanks) in [0, max] into *out:
 * 0, or -1 for anything else.  Job ids use max 2^32 - 1, result ids
 * 2^62. */
int svc_api_parse_id(const char *s, long long max, int64_t *out);

/* 1 if s may name a cluster in a query ("" for results without one). */
int svc_api_cluster_valid(const char *s);

/* Fill rs with {"error": text} and status. */
void svc_api_error(struct svc_api_response *rs, unsigned status,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
