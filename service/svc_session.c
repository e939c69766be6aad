/* svc_session.c: the login-token and session tables (svc_session.h).
 *
 * Entries hold the 32 secret bytes, never their text; a lookup decodes
 * the given hex and compares it with every live entry in full, so the
 * time a guess takes does not say how much of it was right.  The tables
 * are small (at most a few thousand entries of 32 bytes), so a scan costs
 * microseconds, less than a page render. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "svc_session.h"

#define SECRET_LEN 32

struct entry {
	unsigned char secret[SECRET_LEN];
	int64_t created;
	int64_t expires;	/* 0: free slot */
	struct svc_caller caller;
};

struct table {
	struct entry *e;
	size_t n;
	unsigned ttl;
};

struct svc_sessions {
	pthread_mutex_t lock;	/* the HTTP server's threads share it */
	struct table tokens;
	struct table sessions;
};

static int table_init(struct table *t, size_t n, unsigned ttl)
{
	t->e = calloc(n, sizeof(*t->e));
	t->n = n;
	t->ttl = ttl;
	return t->e ? 0 : -1;
}

struct svc_sessions *svc_sessions_new(size_t max_tokens, unsigned token_ttl,
				      size_t max_sessions,
				      unsigned session_ttl)
{
	struct svc_sessions *s;

	if (!max_tokens || !max_sessions || !token_ttl || !session_ttl) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (table_init(&s->tokens, max_tokens, token_ttl) < 0 ||
	    table_init(&s->sessions, max_sessions, session_ttl) < 0) {
		svc_sessions_free(s);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void svc_sessions_free(struct svc_sessions *s)
{
	if (!s)
		return;
	/* Secrets do not outlive the service in freed memory. */
	if (s->tokens.e)
		explicit_bzero(s->tokens.e, s->tokens.n * sizeof(struct entry));
	if (s->sessions.e)
		explicit_bzero(s->sessions.e,
			       s->sessions.n * sizeof(struct entry));
	free(s->tokens.e);
	free(s->sessions.e);
	free(s);
}

static int random_bytes(unsigned char *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(b + got, n - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

static void to_hex(const unsigned char *b, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < SECRET_LEN; i++) {
		hex[2 * i] = digits[b[i] >> 4];
		hex[2 * i + 1] = digits[b[i] & 15];
	}
	hex[2 * SECRET_LEN] = '\0';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Exactly 64 hex digits into b: 0, or -1. */
static int from_hex(const char *hex, unsigned char *b)
{
	size_t i;

	if (!hex || strnlen(hex, 2 * SECRET_LEN + 1) != 2 * SECRET_LEN)
		return -1;
	for (i = 0; i < SECRET_LEN; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		b[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

static int secret_equal(const unsigned char *a, const unsigned char *b)
{
	unsigned char d = 0;
	size_t i;

	for (i = 0; i < SECRET_LEN; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

/* A free or expired slot, else the oldest entry (it is dropped). */
static struct entry *slot_for_new(struct table *t, int64_t now)
{
	struct entry *oldest = &t->e[0];
	size_t i;

	for (i = 0; i < t->n; i++) {
		if (t->e[i].expires <= now)
			return &t->e[i];
		if (t->e[i].created < oldest->created)
			oldest = &t->e[i];
	}
	return oldest;
}

/* The live entry whose secret is b, or NULL; every live entry is
 * compared, whatever matched first. */
static struct entry *find(struct table *t, const unsigned char *b,
			  int64_t now)
{
	struct entry *hit = NULL;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->e[i].expires > now && secret_equal(t->e[i].secret, b))
			hit = &t->e[i];
	return hit;
}

/* A new entry for caller in t; its secret's text into hex. */
static int table_add(struct table *t, const struct svc_caller *caller,
		     int64_t now, char *hex)
{
	unsigned char b[SECRET_LEN];
	struct entry *e;

	if (random_bytes(b, sizeof(b)) < 0)
		return -1;
	e = slot_for_new(t, now);
	memcpy(e->secret, b, sizeof(b));
	e->created = now;
	e->expires = now + t->ttl;
	e->caller = *caller;
	to_hex(b, hex);
	explicit_bzero(b, sizeof(b));
	return 0;
}

int svc_sessions_token(struct svc_sessions *s, const struct svc_caller *caller,
		       int64_t now, char hex[SVC_SESSION_HEX_LEN])
{
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = table_add(&s->tokens, caller, now, hex);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int svc_sessions_redeem(struct svc_sessions *s, const char *token,
			int64_t now, char sid[SVC_SESSION_HEX_LEN])
{
	unsigned char b[SECRET_LEN];
	struct entry *e;
	struct svc_caller caller;
	int rc = -1;

	if (from_hex(token, b) < 0) {
		errno = EACCES;
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	e = find(&s->tokens, b, now);
	if (!e) {
		errno = EACCES;
	} else {
		/* Spent whether or not the session can be made: once. */
		caller = e->caller;
		memset(e, 0, sizeof(*e));
		rc = table_add(&s->sessions, &caller, now, sid);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int svc_sessions_lookup(struct svc_sessions *s, const char *sid, int64_t now,
			struct svc_caller *caller)
{
	unsigned char b[SECRET_LEN];
	struct entry *e;

	if (from_hex(sid, b) < 0) {
		errno = EACCES;
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	e = find(&s->sessions, b, now);
	if (e)
		*caller = e->caller;
	pthread_mutex_unlock(&s->lock);
	if (!e) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

static size_t count_live(struct svc_sessions *s, struct table *t,
			 int64_t now)
{
	size_t i, n = 0;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < t->n; i++)
		n += t->e[i].expires > now;
	pthread_mutex_unlock(&s->lock);
	return n;
}

size_t svc_sessions_count_tokens(struct svc_sessions *s, int64_t now)
{
	return count_live(s, &s->tokens, now);
}

size_t svc_sessions_count_sessions(struct svc_sessions *s, int64_t now)
{
	return count_live(s, &s->sessions, now);
}
