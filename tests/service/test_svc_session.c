/* test_svc_session: the login-token and session tables (svc_session.h):
 * once-only tokens, expiry, the identity carried through, bounds. */
#include <errno.h>
#include <string.h>

#include "svc_session.h"
#include "tap.h"

static struct svc_caller user(uint32_t uid, const char *name, int admin)
{
	struct svc_caller c;

	memset(&c, 0, sizeof(c));
	c.uid = uid;
	c.gid = uid;
	strcpy(c.user, name);
	c.is_admin = admin;
	return c;
}

static void test_login(void)
{
	struct svc_sessions *s = svc_sessions_new(4, 600, 4, 3600);
	struct svc_caller alice = user(1001, "alice", 0), got;
	char tok[SVC_SESSION_HEX_LEN], tok2[SVC_SESSION_HEX_LEN];
	char sid[SVC_SESSION_HEX_LEN], upper[SVC_SESSION_HEX_LEN];
	size_t i;

	ok(s != NULL, "tables made");
	ok(svc_sessions_token(s, &alice, 1000, tok) == 0, "a token");
	is_int(strlen(tok), 64, "64 hex digits");
	ok(strspn(tok, "0123456789abcdef") == 64, "lower-case hex");
	ok(svc_sessions_token(s, &alice, 1000, tok2) == 0 &&
	   strcmp(tok, tok2) != 0, "two tokens differ");
	is_int(svc_sessions_count_tokens(s, 1000), 2, "two live tokens");
	ok(svc_sessions_redeem(s, tok, 1599, sid) == 0, "redeemed in time");
	is_int(strlen(sid), 64, "a 64-digit session id");
	ok(strcmp(sid, tok) != 0, "the session id is not the token");
	errno = 0;
	ok(svc_sessions_redeem(s, tok, 1599, sid) < 0 && errno == EACCES,
	   "a token works once");
	memset(&got, 0, sizeof(got));
	ok(svc_sessions_lookup(s, sid, 2000, &got) == 0, "session found");
	is_int(got.uid, 1001, "session's uid");
	is_str(got.user, "alice", "session's user");
	is_int(got.is_admin, 0, "session's role");
	for (i = 0; i < 64; i++)
		upper[i] = (char)(sid[i] >= 'a' ? sid[i] - 32 : sid[i]);
	upper[64] = '\0';
	ok(svc_sessions_lookup(s, upper, 2000, &got) == 0,
	   "hex case does not matter");
	ok(svc_sessions_lookup(s, sid, 1599 + 3600, &got) < 0 &&
	   errno == EACCES, "session expires after its lifetime");
	ok(svc_sessions_redeem(s, tok2, 1600, sid) < 0 && errno == EACCES,
	   "an expired token is refused");
	ok(svc_sessions_redeem(s, "", 1000, sid) < 0, "empty token refused");
	ok(svc_sessions_redeem(s, NULL, 1000, sid) < 0, "no token refused");
	ok(svc_sessions_redeem(s, "zz", 1000, sid) < 0, "short token refused");
	memset(upper, 'g', 64);
	ok(svc_sessions_redeem(s, upper, 1000, sid) < 0,
	   "non-hex token refused");
	ok(svc_sessions_lookup(s, tok, 1000, &got) < 0,
	   "a token is not a session");
	svc_sessions_free(s);
}

static void test_bounds(void)
{
	struct svc_sessions *s = svc_sessions_new(3, 600, 2, 3600);
	struct svc_caller a = user(1, "a", 0), b = user(2, "b", 1), got;
	char t[5][SVC_SESSION_HEX_LEN], sid[3][SVC_SESSION_HEX_LEN];
	int i;

	for (i = 0; i < 5; i++)
		svc_sessions_token(s, i == 4 ? &b : &a, 100 + i, t[i]);
	is_int(svc_sessions_count_tokens(s, 104), 3,
	       "five tokens in a table of three: three kept");
	ok(svc_sessions_redeem(s, t[0], 105, sid[0]) < 0,
	   "the oldest token was dropped");
	ok(svc_sessions_redeem(s, t[1], 105, sid[0]) < 0,
	   "the second oldest too");
	ok(svc_sessions_redeem(s, t[2], 105, sid[0]) == 0, "third kept");
	ok(svc_sessions_redeem(s, t[3], 106, sid[1]) == 0, "fourth kept");
	ok(svc_sessions_redeem(s, t[4], 107, sid[2]) == 0, "fifth kept");
	is_int(svc_sessions_count_tokens(s, 107), 0, "all spent");
	is_int(svc_sessions_count_sessions(s, 107), 2,
	       "three sessions in a table of two: two kept");
	ok(svc_sessions_lookup(s, sid[0], 108, &got) < 0,
	   "the oldest session was dropped");
	ok(svc_sessions_lookup(s, sid[2], 108, &got) == 0 && got.uid == 2 &&
	   got.is_admin, "the newest session is the admin's");
	svc_sessions_free(s);
	errno = 0;
	ok(svc_sessions_new(0, 600, 2, 3600) == NULL && errno == EINVAL,
	   "an empty table is refused");
}

int main(void)
{
	test_login();
	test_bounds();
	return done_testing();
}
