/* svc_web_login.c: login links and the session cookie (docs/service.md,
 * "Web identity").  The link is asked for with munge, so it names the
 * same user with the same roles a munge request would; opening it in a
 * browser gives that browser a session.  The cookie is HttpOnly (no
 * script reads it) and SameSite=Strict (no other site's page makes the
 * browser send it); it is accepted for the GET-only web pages alone, so
 * a forged cross-site request can change nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "svc_log.h"
#include "svc_web.h"
#include "svc_web_login.h"

int64_t svc_web_login_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec;
}

void svc_web_login_link(struct svc_sessions *s, unsigned ttl,
			const struct svc_api_request *rq,
			struct svc_api_response *rs)
{
	char tok[SVC_SESSION_HEX_LEN], path[96];
	json_t *o;
	char *text;

	memset(rs, 0, sizeof(*rs));
	if (strcmp(rq->method, "POST") != 0) {
		svc_api_error(rs, 405, "%s: method %s not allowed", rq->path,
			      rq->method);
		rs->allow = "POST";
		return;
	}
	if (!rq->caller || svc_sessions_token(s, rq->caller,
					      svc_web_login_now(), tok) < 0) {
		svc_log(SVC_LOG_ERROR, "web-login: no random bytes: %s",
			strerror(errno));
		svc_api_error(rs, 500, "could not make a login token");
		return;
	}
	snprintf(path, sizeof(path), "/login?token=%s", tok);
	o = json_pack("{s:s,s:i}", "path", path, "expires_in", (int)ttl);
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	explicit_bzero(tok, sizeof(tok));
	explicit_bzero(path, sizeof(path));
	if (!text) {
		svc_api_error(rs, 500, "out of memory");
		return;
	}
	svc_log(SVC_LOG_INFO, "web-login: a link for uid %u (%s)",
		rq->caller->uid, rq->caller->user[0] ? rq->caller->user : "?");
	rs->status = 200;
	rs->body = text;
	rs->body_len = strlen(text);
	rs->content_type = "application/json";
}

void svc_web_login_open(struct svc_sessions *s,
			const struct svc_api_request *rq,
			struct svc_api_response *rs)
{
	const char *tok = svc_api_query_get(rq, "token");
	char sid[SVC_SESSION_HEX_LEN];

	memset(rs, 0, sizeof(*rs));
	/* GET only: a HEAD (a link checker, a preview) must not spend it. */
	if (strcmp(rq->method, "GET") != 0) {
		svc_web_error(rs, 405, "%s: method %s not allowed", rq->path,
			      rq->method);
		rs->allow = "GET";
		return;
	}
	if (!tok || !*tok) {
		svc_web_error(rs, 403, "login: the link has no token "
			      "(run `commap web` for a new link)");
		return;
	}
	if (svc_sessions_redeem(s, tok, svc_web_login_now(), sid) < 0) {
		if (errno != EACCES)
			svc_log(SVC_LOG_ERROR, "login: %s", strerror(errno));
		svc_web_error(rs, 403, "login: this link is unknown, used or "
			      "expired (links work once, for a few minutes: "
			      "run `commap web` for a new one)");
		return;
	}
	svc_web_error(rs, 303, "logged in: go to /jobs");
	rs->location = "/jobs";
	snprintf(rs->set_cookie, sizeof(rs->set_cookie),
		 SVC_SESSION_COOKIE "=%s; HttpOnly; SameSite=Strict; Path=/; "
		 "Max-Age=%d", sid, SVC_SESSION_LIFETIME_S);
	explicit_bzero(sid, sizeof(sid));
}
