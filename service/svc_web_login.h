/* svc_web_login.h: the two routes of the browser login (svc_session.h):
 * POST /v1/web-login (munge caller) answers a one-time link, GET /login
 * opens it and sets the session cookie. */
#ifndef COMMAP_SVC_WEB_LOGIN_H
#define COMMAP_SVC_WEB_LOGIN_H

#include "svc_api.h"
#include "svc_session.h"

#define SVC_SESSION_COOKIE "commap_session"

/* Seconds on the monotonic clock, the sessions' time. */
int64_t svc_web_login_now(void);

/* POST /v1/web-login: {"path": "/login?token=T", "expires_in": ttl}. */
void svc_web_login_link(struct svc_sessions *s, unsigned ttl,
			const struct svc_api_request *rq,
			struct svc_api_response *rs);

/* GET /login?token=T: 303 to /jobs with the session cookie, or a 403
 * page. */
void svc_web_login_open(struct svc_sessions *s,
			const struct svc_api_request *rq,
			struct svc_api_response *rs);

#endif
