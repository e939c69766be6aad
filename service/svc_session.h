/* svc_session.h: one-time login links and browser sessions for the web
 * pages (docs/service.md, "Web identity").
 *
 * A user who holds a munge credential asks POST /v1/web-login for a
 * token; the token, opened once in a browser (GET /login?token=T),
 * becomes a session whose id the browser keeps in a cookie.  Both are
 * 32 random bytes, kept in memory only (a restart forgets them) with
 * the identity of the munge caller who asked, in tables of fixed size:
 * when one is full the oldest entry goes.  Times are seconds on a
 * monotonic clock, passed in so that expiry is testable. */
#ifndef COMMAP_SVC_SESSION_H
#define COMMAP_SVC_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "svc_auth.h"

#define SVC_SESSION_TOKENS_MAX 256
#define SVC_SESSION_SESSIONS_MAX 1024
#define SVC_SESSION_LIFETIME_S (8 * 3600)
/* 32 bytes in hex and a NUL. */
#define SVC_SESSION_HEX_LEN 65

struct svc_sessions;

/* Tables holding at most max_tokens tokens valid token_ttl seconds and
 * max_sessions sessions valid session_ttl seconds.  NULL with errno
 * ENOMEM or EINVAL (a zero size). */
struct svc_sessions *svc_sessions_new(size_t max_tokens, unsigned token_ttl,
				      size_t max_sessions,
				      unsigned session_ttl);
void svc_sessions_free(struct svc_sessions *s);

/* A new login token for caller into hex: 0, or -1 with errno from
 * getrandom. */
int svc_sessions_token(struct svc_sessions *s, const struct svc_caller *caller,
		       int64_t now, char hex[SVC_SESSION_HEX_LEN]);

/* Spend token (once) on a new session whose id goes into sid: 0, or -1
 * with EACCES when the token is unknown, used, expired or not 64 hex
 * digits (the caller is not told which), or errno from getrandom. */
int svc_sessions_redeem(struct svc_sessions *s, const char *token,
			int64_t now, char sid[SVC_SESSION_HEX_LEN]);

/* The identity of a live session: 0, or -1 with EACCES. */
int svc_sessions_lookup(struct svc_sessions *s, const char *sid, int64_t now,
			struct svc_caller *caller);

/* Live entries now (for tests and metrics). */
size_t svc_sessions_count_tokens(struct svc_sessions *s, int64_t now);
size_t svc_sessions_count_sessions(struct svc_sessions *s, int64_t now);

#endif
