/* svc_model_scan.c: what a model merge needs of a stored result, read
 * from its text in one pass (thread identities, edges, the last
 * placement), without building jansson values for the big arrays. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"
#include "svc_model_internal.h"
#include "svc_models.h"

void svc_run_free(struct run *r)
{
	json_decref(r->head);
	free(r->id);
	free(r->e);
	free(r->pu);
	memset(r, 0, sizeof(*r));
}

struct scan {
	const char *p, *end;
	int depth;
};

#define SCAN_DEPTH_MAX 64

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
				 *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* Consume c (after blanks); 0 if it is not there. */
static int accept(struct scan *s, char c)
{
	skip_ws(s);
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return 1;
	}
	return 0;
}

static int skip_string(struct scan *s)
{
	if (s->p >= s->end || *s->p != '"')
		return -1;
	for (s->p++; s->p < s->end; s->p++) {
		if (*s->p == '\\')
			s->p++;
		else if (*s->p == '"')
			return (int)(s->p++, 0);
	}
	return -1;
}

static int skip_value(struct scan *s);

/* What ends a number or a literal (strchr per byte was a tenth of a
 * fold). */
static int is_delimiter(char c)
{
	return c == ',' || c == ']' || c == '}' || c == ' ' || c == '\t' ||
	       c == '\r' || c == '\n';
}

/* The members or elements of a container, after its opening byte. */
static int skip_members(struct scan *s, char close, int keyed)
{
	if (++s->depth > SCAN_DEPTH_MAX)
		return -1;
	if (accept(s, close))
		return (int)(s->depth--, 0);
	do {
		skip_ws(s);
		if (keyed && (skip_string(s) < 0 || !accept(s, ':')))
			return -1;
		if (skip_value(s) < 0)
			return -1;
	} while (accept(s, ','));
	s->depth--;
	return accept(s, close) ? 0 : -1;
}

static int skip_value(struct scan *s)
{
	skip_ws(s);
	if (s->p >= s->end)
		return -1;
	if (*s->p == '"')
		return skip_string(s);
	if (*s->p == '{' || *s->p == '[') {
		char c = *s->p++;

		return skip_members(s, c == '{' ? '}' : ']', c == '{');
	}
	/* number or literal: up to the next delimiter */
	while (s->p < s->end && !is_delimiter(*s->p))
		s->p++;
	return 0;
}

/* An integer token: 1 read, 0 another value (skipped), -1 bad text.
 * Digits are read in place (strtoll on a copy was a tenth of a fold);
 * anything else (a fraction, an exponent, null, out of range) is
 * skipped as a value that is not an integer. */
static int scan_int(struct scan *s, int64_t *v)
{
	const char *p;
	uint64_t x = 0;
	int neg;

	skip_ws(s);
	p = s->p;
	neg = p < s->end && *p == '-';
	p += neg;
	if (p >= s->end || *p < '0' || *p > '9')
		return skip_value(s) < 0 ? -1 : 0;
	for (; p < s->end && *p >= '0' && *p <= '9'; p++) {
		if (x > (UINT64_MAX - 9) / 10)
			return skip_value(s) < 0 ? -1 : 0;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	if ((p < s->end && !is_delimiter(*p)) ||
	    x > (uint64_t)INT64_MAX + (uint64_t)neg)
		return skip_value(s) < 0 ? -1 : 0;
	s->p = p;
	*v = neg ? (int64_t)(0 - x) : (int64_t)x;
	return 1;
}

/* [-]digits[.digits] with at most 15 digits in all: m / 10^k with m and
 * 10^k exact doubles, so one correctly rounded division gives what
 * strtod gives (Clinger's fast path), without strtod's cost (a tenth of
 * reading a result).  0 for anything else. */
static int decimal_exact(const char *p, const char *end, double *v)
{
	static const double pow10[] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
		1e11, 1e12, 1e13, 1e14, 1e15,
	};
	uint64_t m = 0;
	int neg = *p == '-', digits = 0, frac = -1;

	for (p += neg; p < end; p++) {
		if (*p == '.' && frac < 0 && digits > 0) {
			frac = 0;
		} else if (*p >= '0' && *p <= '9' && digits < 15) {
			m = m * 10 + (uint64_t)(*p - '0');
			digits++;
			frac += frac >= 0;
		} else {
			return 0;
		}
	}
	if (digits == 0 || frac == 0)
		return 0;
	*v = (double)m / pow10[frac < 0 ? 0 : frac];
	*v = neg ? -*v : *v;
	return 1;
}

/* A number token: 1 read, 0 another value, -1 bad text. */
static int scan_number(struct scan *s, double *v)
{
	const char *start;
	char buf[64], *e;
	size_t n;

	skip_ws(s);
	start = s->p;
	if (skip_value(s) < 0)
		return -1;
	n = (size_t)(s->p - start);
	if (n == 0 || n >= sizeof(buf) || !(*start == '-' ||
					   (*start >= '0' && *start <= '9')))
		return 0;
	if (decimal_exact(start, s->p, v))
		return 1;
	memcpy(buf, start, n);
	buf[n] = '\0';
	*v = strtod(buf, &e);
	return *e ? 0 : 1;
}

/* The next member's key: *k (NUL-terminated, unescaped by jansson when
 * it holds an escape) in buf of size n; "" for a key too long to be one
 * we look for. */
static int scan_key(struct scan *s, char *buf, size_t n)
{
	const char *start;
	size_t len;

	skip_ws(s);
	start = s->p;
	if (skip_string(s) < 0)
		return -1;
	len = (size_t)(s->p - start);	/* with its quotes */
	if (!accept(s, ':'))
		return -1;
	buf[0] = '\0';
	if (memchr(start, '\\', len)) {
		json_t *k = json_loadb(start, len, JSON_DECODE_ANY, NULL);
		const char *t = json_string_value(k);

		if (t && strlen(t) < n)
			strcpy(buf, t);
		json_decref(k);
	} else if (len - 2 < n) {
		memcpy(buf, start + 1, len - 2);
		buf[len - 2] = '\0';
	}
	return 0;
}

/* Read one value into a jansson value (small parts only). */
static json_t *scan_json(struct scan *s)
{
	const char *start;

	skip_ws(s);
	start = s->p;
	if (skip_value(s) < 0)
		return NULL;
	return json_loadb(start, (size_t)(s->p - start), JSON_DECODE_ANY,
			  NULL);
}

/* Iterate over an array: *first 1 before the first element.  1 when
 * an element follows, 0 at the end, -1 bad text. */
static int next_element(struct scan *s, int *first)
{
	if (*first) {
		*first = 0;
		if (!accept(s, '['))
			return -1;
		return accept(s, ']') ? 0 : 1;
	}
	if (accept(s, ','))
		return 1;
	return accept(s, ']') ? 0 : -1;
}

static int next_member(struct scan *s, int *first, char *key, size_t n)
{
	int more;

	if (*first) {
		*first = 0;
		if (!accept(s, '{'))
			return -1;
		more = !accept(s, '}');
	} else if (accept(s, ',')) {
		more = 1;
	} else {
		return accept(s, '}') ? 0 : -1;
	}
	return more ? (scan_key(s, key, n) < 0 ? -1 : 1) : 0;
}

#define GROW(arr, len, cap) \
	((len) < (cap) ? 0 : grow((void **)&(arr), &(cap), sizeof(*(arr))))

static int grow(void **arr, size_t *cap, size_t size)
{
	size_t n = *cap ? 2 * *cap : 64;
	void *p = realloc(*arr, n * size);

	if (!p)
		return -1;
	*arr = p;
	*cap = n;
	return 0;
}

/* threads: [{"rank": r, "index": i, ...}, ...] */
static int scan_threads(struct scan *s, struct run *r)
{
	int first = 1, more;
	char key[16];

	while ((more = next_element(s, &first)) > 0) {
		struct run_thread id = { 0, 0, 0 };
		int f = 1, m, rc = 0;

		while (rc >= 0 && (m = next_member(s, &f, key,
						   sizeof(key))) > 0) {
			int64_t v;

			if (strcmp(key, "rank") == 0 ||
			    strcmp(key, "index") == 0) {
				rc = scan_int(s, &v);
				if (rc > 0 && key[0] == 'r') {
					id.rank = v;
				} else if (rc > 0) {
					id.index = v;
					id.has_index = 1;
				}
			} else {
				rc = skip_value(s);
			}
		}
		if (rc < 0 || m < 0 || GROW(r->id, r->n, r->ncap) < 0)
			return -1;
		r->id[r->n++] = id;
	}
	return more;
}

/* edges: [[i, j, w], ...] */
static int scan_edges(struct scan *s, struct run *r)
{
	int first = 1, more;

	while ((more = next_element(s, &first)) > 0) {
		struct raw_edge e = { 0 };
		int f = 1, k = 0, m, rc = 1, ok = 1;

		while ((m = next_element(s, &f)) > 0) {
			if (k == 0 || k == 1)
				rc = scan_int(s, k ? &e.j : &e.i);
			else if (k == 2)
				rc = scan_number(s, &e.w);
			else
				rc = skip_value(s) < 0 ? -1 : 0;
			if (rc < 0)
				return -1;
			ok &= rc > 0;
			k++;
		}
		if (m < 0 || GROW(r->e, r->ne, r->ecap) < 0)
			return -1;
		e.ok = ok && k == 3;
		r->e[r->ne++] = e;
	}
	return more;
}

/* pu_of_thread: [p, ...] of one timeline entry */
static int scan_pus(struct scan *s, struct run *r)
{
	int first = 1, more;

	r->npu = 0;
	while ((more = next_element(s, &first)) > 0) {
		int64_t v;
		int rc = scan_int(s, &v);

		if (rc < 0 || GROW(r->pu, r->npu, r->pcap) < 0)
			return -1;
		r->pu[r->npu++] = rc > 0 ? v : INT64_MIN;
	}
	return more;
}

/* timeline: the last entry's pu_of_thread (earlier ones are overwritten). */
static int scan_timeline(struct scan *s, struct run *r)
{
	int first = 1, more;
	char key[16];

	while ((more = next_element(s, &first)) > 0) {
		int f = 1, m, rc = 0;

		r->npu = 0;
		while (rc >= 0 && (m = next_member(s, &f, key,
						   sizeof(key))) > 0)
			rc = strcmp(key, "pu_of_thread") == 0 ?
			     scan_pus(s, r) : skip_value(s);
		if (rc < 0 || m < 0)
			return -1;
	}
	return more;
}

static int scan_head(struct scan *s, struct run *r, const char *key)
{
	json_t *v = scan_json(s);

	if (!v || json_object_set_new(r->head, key, v) < 0)
		return -1;
	return 0;
}

static int scan_document(struct scan *s, struct run *r)
{
	int first = 1, m, rc = 0;
	char key[16];

	while (rc >= 0 && (m = next_member(s, &first, key, sizeof(key))) > 0) {
		if (strcmp(key, "identity") == 0 ||
		    strcmp(key, "started_at") == 0 ||
		    strcmp(key, "topology") == 0)
			rc = scan_head(s, r, key);
		else if (strcmp(key, "threads") == 0)
			rc = scan_threads(s, r);
		else if (strcmp(key, "edges") == 0)
			rc = scan_edges(s, r);
		else if (strcmp(key, "timeline") == 0)
			rc = scan_timeline(s, r);
		else
			rc = skip_value(s);
	}
	if (rc < 0 || m < 0)
		return -1;
	skip_ws(s);
	return s->p == s->end ? 0 : -1;
}

/* Read a result's text into r. */
int svc_run_read(const char *text, size_t len, struct run *r,
		 struct cm_error *err)
{
	struct scan s = { text, text + len, 0 };

	memset(r, 0, sizeof(*r));
	errno = 0;
	r->head = json_object();
	if (!r->head)
		return cm_errorf(err, ENOMEM, "model: out of memory");
	if (scan_document(&s, r) < 0) {
		int e = errno == ENOMEM ? ENOMEM : EINVAL;

		svc_run_free(r);
		return cm_errorf(err, e, "result: %s at byte %zu",
				 e == ENOMEM ? "out of memory" :
				 "not a JSON document", (size_t)(s.p - text));
	}
	return 0;
}

/* The same from a jansson document (the pure API and its tests): its
 * compact text, so the tests exercise the reader the service uses. */
int svc_run_from_json(const json_t *result, struct run *r,
		      struct cm_error *err)
{
	char *text = json_dumps(result, JSON_COMPACT);
	int rv;

	if (!text) {
		memset(r, 0, sizeof(*r));
		return cm_errorf(err, ENOMEM, "model: out of memory");
	}
	rv = svc_run_read(text, strlen(text), r, err);
	free(text);
	return rv;
}
