/* result_json.c: the strict JSON parser of the upload validator.  A copy
 * of the body is decoded in place into an arena of small nodes, so that
 * 25 KB results are checked without building jansson values.  The parser
 * refuses everything jansson (JSON_REJECT_DUPLICATES, no JSON_ALLOW_NUL)
 * refuses, so an accepted body can be stored as it came and read back with
 * json_loads; the fuzz target checks that both agree. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"
#include "result_validate_internal.h"

#define DEPTH_MAX 2048		/* jansson's JSON_PARSER_MAX_DEPTH */
#define SMALL_OBJECT 8		/* duplicate keys: pairwise up to this */

/* ---- the arena ----------------------------------------------------------*/

void svc_result_parsed_free(struct svc_result_parsed *pr)
{
	struct jv_chunk *c, *next;

	if (!pr)
		return;
	for (c = pr->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(pr->text);
	free(pr);
}

/* ---- the parser (RFC 8259) ----------------------------------------------*/

struct jparser {
	struct svc_result_parsed *pr;
	char *p, *end;
	int from_tree;		/* svc_result_validate's json_t input: any
				 * top level, \u0000 allowed (and named) */
	const char *error;	/* static text of the first error */
	char *error_at;
};

static void *jp_fail(struct jparser *jp, char *at, const char *what)
{
	if (!jp->error) {
		jp->error = what;
		jp->error_at = at;
	}
	return NULL;
}

static struct jv *jv_new(struct jparser *jp, enum jv_type type)
{
	struct svc_result_parsed *pr = jp->pr;
	struct jv *v;

	if (!pr->chunks || pr->used == CHUNK_NODES) {
		struct jv_chunk *c = malloc(sizeof(*c));

		if (!c)
			return jp_fail(jp, jp->p, "out of memory");
		c->next = pr->chunks;
		pr->chunks = c;
		pr->used = 0;
	}
	v = &pr->chunks->node[pr->used++];
	v->next = NULL;
	v->key = NULL;
	v->type = (unsigned char)type;
	v->has_nul = 0;
	return v;
}

static void skip_space(struct jparser *jp)
{
	char *p = jp->p;

	while (p < jp->end &&
	       (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	jp->p = p;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hex4(const char *s, unsigned *out)
{
	unsigned v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *put_utf8(char *w, unsigned cp)
{
	if (cp < 0x80) {
		*w++ = (char)cp;
	} else if (cp < 0x800) {
		*w++ = (char)(0xC0 | (cp >> 6));
		*w++ = (char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*w++ = (char)(0xE0 | (cp >> 12));
		*w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
		*w++ = (char)(0x80 | (cp & 0x3F));
	} else {
		*w++ = (char)(0xF0 | (cp >> 18));
		*w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
		*w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
		*w++ = (char)(0x80 | (cp & 0x3F));
	}
	return w;
}

/* Length of the valid UTF-8 sequence at s (first byte >= 0x80), or 0:
 * no overlong forms, surrogates or code points above U+10FFFF (jansson's
 * utf8_check_full). */
static size_t utf8_valid(const unsigned char *s, const unsigned char *end)
{
	unsigned cp, c = s[0];
	size_t n, i;

	if (c < 0xC2)
		return 0;
	if (c < 0xE0) {
		n = 2;
		cp = c & 0x1F;
	} else if (c < 0xF0) {
		n = 3;
		cp = c & 0x0F;
	} else if (c < 0xF5) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if ((size_t)(end - s) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/* The escape at r (r[0] == '\\'): decoded to *w; returns the new r. */
static char *unescape(struct jparser *jp, char *r, char **w)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *k;
	unsigned cp, lo;

	if (jp->end - r < 2)
		return jp_fail(jp, r, "premature end of input");
	if (r[1] != 'u') {
		k = strchr(from, r[1]);
		if (!k || !r[1])
			return jp_fail(jp, r, "invalid escape");
		*(*w)++ = to[k - from];
		return r + 2;
	}
	if (jp->end - r < 6 || hex4(r + 2, &cp) < 0)
		return jp_fail(jp, r, "invalid escape");
	if (cp >= 0xDC00 && cp <= 0xDFFF)
		return jp_fail(jp, r, "invalid \\u escape: lone low surrogate");
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		if (jp->end - r < 12 || r[6] != '\\' || r[7] != 'u' ||
		    hex4(r + 8, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
			return jp_fail(jp, r,
				       "invalid \\u escape: lone high surrogate");
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		*w = put_utf8(*w, cp);
		return r + 12;
	}
	if (cp == 0 && !jp->from_tree)
		return jp_fail(jp, r, "\\u0000 is not allowed");
	*w = put_utf8(*w, cp);
	return r + 6;
}

/* The string at jp->p (a '"'), decoded in place and NUL-terminated; the
 * decoded text is never longer than its source. */
static char *parse_string(struct jparser *jp, size_t *len, int *has_nul)
{
	char *r = jp->p + 1, *w = r, *s = r;

	for (;;) {
		unsigned char c;

		if (r >= jp->end)
			return jp_fail(jp, r, "premature end of input");
		c = (unsigned char)*r;
		if (c == '"')
			break;
		if (c < 0x20)
			return jp_fail(jp, r, "control character in string");
		if (c == '\\') {
			*has_nul |= r[1] == 'u' && r[2] == '0' && r[3] == '0' &&
				    r[4] == '0' && r[5] == '0';
			r = unescape(jp, r, &w);
			if (!r)
				return NULL;
		} else if (c >= 0x80) {
			size_t n = utf8_valid((unsigned char *)r,
					      (unsigned char *)jp->end);

			if (!n)
				return jp_fail(jp, r,
					       "invalid UTF-8 in string");
			memmove(w, r, n);
			w += n;
			r += n;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	*len = (size_t)(w - s);
	jp->p = r + 1;
	return s;
}

static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
	1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* A real without exponent of at most 15 digits is m / 10^k with both
 * exact doubles, so one division rounds correctly (Clinger's fast path);
 * anything else goes to strtod. */
static int parse_real(struct jparser *jp, char *s, char *e, double *out)
{
	unsigned long long m = 0;
	int digits = 0, frac = -1, neg = *s == '-';
	char *p, *end;

	for (p = s + neg; p < e && digits <= 15; p++) {
		if (*p == '.') {
			frac = 0;
		} else if (is_digit(*p)) {
			m = m * 10 + (unsigned long long)(*p - '0');
			digits++;
			frac += frac >= 0;
		} else {
			break;
		}
	}
	if (p == e && digits <= 15 && frac >= 0) {
		*out = (double)m / pow10_exact[frac];
		*out = neg ? -*out : *out;
		return 0;
	}
	*out = strtod(s, &end);
	if (end != e)
		return jp_fail(jp, s, "invalid number"), -1;
	if (isinf(*out))
		return jp_fail(jp, s, "real number overflow"), -1;
	return 0;
}

static struct jv *parse_number(struct jparser *jp)
{
	char *s = jp->p, *p = s, *end = jp->end;
	int is_real = 0, neg = *p == '-';
	unsigned long long acc = 0, limit;
	struct jv *v;

	p += neg;
	if (p < end && *p == '0') {
		p++;
		if (p < end && is_digit(*p))
			return jp_fail(jp, s, "invalid number");
	} else if (p < end && *p >= '1' && *p <= '9') {
		while (p < end && is_digit(*p))
			p++;
	} else {
		return jp_fail(jp, s, "invalid number");
	}
	if (p < end && *p == '.') {
		if (++p >= end || !is_digit(*p))
			return jp_fail(jp, s, "invalid number");
		while (p < end && is_digit(*p))
			p++;
		is_real = 1;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !is_digit(*p))
			return jp_fail(jp, s, "invalid number");
		while (p < end && is_digit(*p))
			p++;
		is_real = 1;
	}
	jp->p = p;
	v = jv_new(jp, is_real ? JV_REAL : JV_INTEGER);
	if (!v)
		return NULL;
	if (is_real)
		return parse_real(jp, s, p, &v->u.r) < 0 ? NULL : v;
	/* As strtoll: [-2^63, 2^63 - 1]. */
	limit = neg ? 9223372036854775808ULL : 9223372036854775807ULL;
	for (s += neg; s < p; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (acc > (limit - d) / 10)
			return jp_fail(jp, jp->p, "too big integer");
		acc = acc * 10 + d;
	}
	v->u.i = neg ? (long long)(0 - acc) : (long long)acc;
	return v;
}

static struct jv *parse_literal(struct jparser *jp, const char *word,
				enum jv_type type)
{
	size_t n = strlen(word);

	if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, word, n) != 0)
		return jp_fail(jp, jp->p, "invalid token");
	jp->p += n;
	return jv_new(jp, type);
}

static struct jv *parse_value(struct jparser *jp, int depth);

static int key_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct jv *const *)a)->key,
		      (*(const struct jv *const *)b)->key);
}

/* Duplicate keys are refused (JSON_REJECT_DUPLICATES): pairwise for small
 * objects, by sorting for large ones (a hostile body's big object must
 * not cost n^2). */
static int check_duplicates(struct jparser *jp, struct jv *obj, char *at)
{
	size_t n = obj->u.kids.n, i = 0;
	struct jv **keys, *a, *b;
	int dup = 0;

	if (n <= SMALL_OBJECT) {
		for (a = obj->u.kids.first; a && !dup; a = a->next)
			for (b = a->next; b && !dup; b = b->next)
				dup = a->key_len == b->key_len &&
				      memcmp(a->key, b->key, a->key_len) == 0;
	} else {
		keys = malloc(n * sizeof(*keys));
		if (!keys)
			return jp_fail(jp, at, "out of memory"), -1;
		for (a = obj->u.kids.first; a; a = a->next)
			keys[i++] = a;
		qsort(keys, n, sizeof(*keys), key_cmp);
		for (i = 1; i < n && !dup; i++)
			dup = strcmp(keys[i - 1]->key, keys[i]->key) == 0;
		free(keys);
	}
	if (dup)
		return jp_fail(jp, at, "duplicate object key"), -1;
	return 0;
}

/* Members or elements after the opening bracket, up to close. */
static struct jv *parse_container(struct jparser *jp, int depth,
				  enum jv_type type, char close)
{
	struct jv *c = jv_new(jp, type), **tail, *v;
	char *open = jp->p;

	if (!c)
		return NULL;
	if (depth > DEPTH_MAX)
		return jp_fail(jp, jp->p, "maximum parsing depth reached");
	c->u.kids.first = NULL;
	c->u.kids.n = 0;
	tail = &c->u.kids.first;
	jp->p++;
	skip_space(jp);
	if (jp->p < jp->end && *jp->p == close) {
		jp->p++;
		return c;
	}
	for (;;) {
		const char *key = NULL;
		size_t klen = 0;

		skip_space(jp);
		if (type == JV_OBJECT) {
			int nul = 0;

			if (jp->p >= jp->end || *jp->p != '"')
				return jp_fail(jp, jp->p, "string expected");
			key = parse_string(jp, &klen, &nul);
			if (!key)
				return NULL;
			if (nul || klen > UINT32_MAX)
				return jp_fail(jp, jp->p, "NUL in object key");
			skip_space(jp);
			if (jp->p >= jp->end || *jp->p != ':')
				return jp_fail(jp, jp->p, "':' expected");
			jp->p++;
		}
		v = parse_value(jp, depth);
		if (!v)
			return NULL;
		v->key = key;
		v->key_len = (unsigned)klen;
		*tail = v;
		tail = &v->next;
		c->u.kids.n++;
		skip_space(jp);
		if (jp->p < jp->end && *jp->p == ',') {
			jp->p++;
			continue;
		}
		if (jp->p < jp->end && *jp->p == close)
			break;
		return jp_fail(jp, jp->p, jp->p < jp->end ?
			       "',' or closing bracket expected" :
			       "premature end of input");
	}
	jp->p++;
	if (type == JV_OBJECT && check_duplicates(jp, c, open) < 0)
		return NULL;
	return c;
}

static struct jv *parse_value(struct jparser *jp, int depth)
{
	struct jv *v;
	size_t len;
	const char *s;
	int nul = 0;

	skip_space(jp);
	if (jp->p >= jp->end)
		return jp_fail(jp, jp->p, "premature end of input");
	switch (*jp->p) {
	case '{':
		return parse_container(jp, depth + 1, JV_OBJECT, '}');
	case '[':
		return parse_container(jp, depth + 1, JV_ARRAY, ']');
	case '"':
		s = parse_string(jp, &len, &nul);
		v = s ? jv_new(jp, JV_STRING) : NULL;
		if (v) {
			v->u.str.s = s;
			v->u.str.len = len;
			v->has_nul = (unsigned char)nul;
		}
		return v;
	case 't':
		return parse_literal(jp, "true", JV_TRUE);
	case 'f':
		return parse_literal(jp, "false", JV_FALSE);
	case 'n':
		return parse_literal(jp, "null", JV_NULL);
	default:
		if (*jp->p == '-' || is_digit(*jp->p))
			return parse_number(jp);
		return jp_fail(jp, jp->p, "invalid token");
	}
}

/* "body: invalid JSON at line L column C: what", positions counted in the
 * original body (the copy's strings have been rewritten). */
static int syntax_error(const char *body, size_t off, const char *what,
			struct cm_error *err)
{
	size_t i, line = 1, col_start = 0;

	for (i = 0; i < off; i++)
		if (body[i] == '\n') {
			line++;
			col_start = i + 1;
		}
	return cm_errorf(err, EINVAL,
			 "body: invalid JSON at line %zu column %zu: %s", line,
			 off - col_start + 1, what);
}

/* Parse a JSON text whose top level is an object or array, as jansson's
 * json_loadb does; NULL with err on failure. */
struct svc_result_parsed *svc_result_parse_text(const char *body,
						 size_t len, int from_tree,
						 struct cm_error *err)
{
	struct svc_result_parsed *pr = calloc(1, sizeof(*pr));
	struct jparser jp = { .pr = pr, .from_tree = from_tree };

	if (!pr || !(pr->text = malloc(len + 1))) {
		free(pr);
		cm_errorf(err, ENOMEM, "body: out of memory");
		return NULL;
	}
	memcpy(pr->text, body, len);
	pr->text[len] = '\0';
	jp.p = pr->text;
	jp.end = pr->text + len;
	skip_space(&jp);
	if (!from_tree && jp.p < jp.end && *jp.p != '{' && *jp.p != '[')
		jp_fail(&jp, jp.p, "'[' or '{' expected");
	else
		pr->root = parse_value(&jp, 0);
	if (pr->root) {
		skip_space(&jp);
		if (jp.p != jp.end)
			jp_fail(&jp, jp.p, "end of file expected");
	}
	if (jp.error) {
		syntax_error(body, (size_t)(jp.error_at - pr->text), jp.error,
			     err);
		svc_result_parsed_free(pr);
		errno = EINVAL;
		return NULL;
	}
	return pr;
}
