/* result_validate.c: full validation of an uploaded commap-result v1
 * document (docs/result-format.md).  Unknown keys are ignored, as the format
 * promises; every known key is checked for type and range so that what the
 * service stores can be read back without further checks.
 *
 * Speed matters here (the aim: 2,000 uploads/s of 25 KB results on two
 * cores), so the body is not turned into jansson values: a strict JSON
 * parser decodes a copy of it in place into an arena of small nodes, and
 * field paths for error messages are formatted only when an error is
 * reported.  The parser refuses everything jansson (JSON_REJECT_DUPLICATES,
 * no JSON_ALLOW_NUL) refuses, so an accepted body can be stored as it came
 * and read back with json_loads; the fuzz target checks that both agree. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commap/placement_check.h"
#include "result_validate.h"

#define PATH_LEN 96
#define STRING_MAX 4096
#define ID_MAX 4294967295LL	/* Slurm job and step ids are 32 bits */
#define DEPTH_MAX 2048		/* jansson's JSON_PARSER_MAX_DEPTH */
#define CHUNK_NODES 1024
#define SMALL_OBJECT 8		/* duplicate keys: pairwise up to this */

/* ---- the arena ----------------------------------------------------------*/

enum jv_type {
	JV_NULL, JV_TRUE, JV_FALSE, JV_INTEGER, JV_REAL, JV_STRING, JV_ARRAY,
	JV_OBJECT,
};

/* One JSON value.  Children of arrays and objects are a list through next;
 * object members carry their key. */
struct jv {
	struct jv *next;
	const char *key;
	unsigned key_len;	/* keys never hold a NUL */
	unsigned char type;
	unsigned char has_nul;	/* a string decoded from \u0000 */
	union {
		long long i;
		double r;
		struct {
			const char *s;
			size_t len;
		} str;
		struct {
			struct jv *first;
			size_t n;
		} kids;
	} u;
};

struct jv_chunk {
	struct jv_chunk *next;
	struct jv node[CHUNK_NODES];
};

struct svc_result_parsed {
	char *text;		/* copy of the body, strings decoded in it */
	struct jv_chunk *chunks;
	size_t used;		/* nodes used in the first chunk */
	struct jv *root;
};

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
static struct svc_result_parsed *parse_text(const char *body, size_t len,
					    int from_tree,
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

/* ---- accessors ----------------------------------------------------------*/

static int jv_is(const struct jv *v, enum jv_type t)
{
	return v && v->type == t;
}

static int jv_is_number(const struct jv *v)
{
	return jv_is(v, JV_INTEGER) || jv_is(v, JV_REAL);
}

static double jv_number(const struct jv *v)
{
	return v->type == JV_INTEGER ? (double)v->u.i : v->u.r;
}

/* Inline, so strlen of the literal key folds to a constant; the first
 * byte is compared before calling memcmp (a 256-thread result looks up
 * ~1,300 keys, and these calls were a tenth of validating it). */
static inline const struct jv *jv_get(const struct jv *obj, const char *key)
{
	size_t n = strlen(key);
	const struct jv *v;

	if (!jv_is(obj, JV_OBJECT))
		return NULL;
	for (v = obj->u.kids.first; v; v = v->next)
		if (v->key_len == n && v->key[0] == key[0] &&
		    memcmp(v->key, key, n) == 0)
			return v;
	return NULL;
}

static size_t jv_size(const struct jv *a)
{
	return jv_is(a, JV_ARRAY) || jv_is(a, JV_OBJECT) ? a->u.kids.n : 0;
}

static const struct jv *jv_first(const struct jv *a)
{
	return jv_is(a, JV_ARRAY) ? a->u.kids.first : NULL;
}

/* ---- field paths, formatted only for an error message -------------------*/

/* base[i].key[j]; i, j < 0 and key NULL are left out.  "identity.job",
 * "threads[3].tid", "edges[2][1]", "timeline[0].pu_of_thread[5]". */
struct fpath {
	const char *base;
	long i;
	const char *key;
	long j;
};

static const char *fpath_str(const struct fpath *f, char *buf, size_t n)
{
	int k = snprintf(buf, n, "%s", f->base);

	if (f->i >= 0 && k >= 0 && (size_t)k < n)
		k += snprintf(buf + k, n - (size_t)k, "[%ld]", f->i);
	if (f->key && k >= 0 && (size_t)k < n)
		k += snprintf(buf + k, n - (size_t)k, "%s%s",
			      *buf ? "." : "", f->key);
	if (f->j >= 0 && k >= 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, "[%ld]", f->j);
	return buf;
}

/* "PATH: " + fmt. */
static int __attribute__((format(printf, 3, 4)))
field_error(struct cm_error *err, const struct fpath *f, const char *fmt,
	    ...)
{
	char path[2 * PATH_LEN], text[sizeof(err->text)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return cm_errorf(err, EINVAL, "%s: %s",
			 fpath_str(f, path, sizeof(path)), text);
}

#define FP(base, key) (&(struct fpath){ (base), -1, (key), -1 })
#define FPI(base, i, key) (&(struct fpath){ (base), (long)(i), (key), -1 })
#define FPIJ(base, i, key, j) \
	(&(struct fpath){ (base), (long)(i), (key), (long)(j) })

/* ---- checks -------------------------------------------------------------*/

static int check_int(const struct jv *v, const struct fpath *f, int64_t lo,
		     int64_t hi, int64_t *out, struct cm_error *err)
{
	long long x;

	if (!jv_is(v, JV_INTEGER))
		return field_error(err, f, "expected an integer");
	x = v->u.i;
	if (x < lo || x > hi)
		return field_error(err, f, "%lld is out of range [%lld, %lld]",
				   x, (long long)lo, (long long)hi);
	if (out)
		*out = x;
	return 0;
}

static int check_number(const struct jv *v, const struct fpath *f,
			double *out, struct cm_error *err)
{
	double x;

	if (!jv_is_number(v))
		return field_error(err, f, "expected a number");
	x = jv_number(v);
	if (!isfinite(x))
		return field_error(err, f, "is not finite");
	if (x < 0)
		return field_error(err, f, "is negative");
	if (out)
		*out = x;
	return 0;
}

static int check_string(const struct jv *v, const struct fpath *f,
			size_t max, const char **out, struct cm_error *err)
{
	if (!jv_is(v, JV_STRING))
		return field_error(err, f, "expected a string");
	if (v->u.str.len == 0)
		return field_error(err, f, "is empty");
	if (v->u.str.len > max)
		return field_error(err, f, "longer than %zu bytes", max);
	if (v->has_nul)
		return field_error(err, f, "contains a NUL character");
	if (out)
		*out = v->u.str.s;
	return 0;
}

/* The member f->key of obj, or an error "PATH: missing". */
static const struct jv *member(const struct jv *obj, const struct fpath *f,
			       struct cm_error *err)
{
	const struct jv *v = jv_get(obj, f->key);

	if (!v)
		field_error(err, f, "missing");
	return v;
}

static int field_int(const struct jv *obj, const struct fpath *f, int64_t lo,
		     int64_t hi, int64_t *out, struct cm_error *err)
{
	const struct jv *v = member(obj, f, err);

	return v ? check_int(v, f, lo, hi, out, err) : -1;
}

/* Like field_int, but null gives -1. */
static int field_id(const struct jv *obj, const struct fpath *f,
		    int64_t *out, struct cm_error *err)
{
	const struct jv *v = member(obj, f, err);

	if (!v)
		return -1;
	if (jv_is(v, JV_NULL)) {
		*out = -1;
		return 0;
	}
	return check_int(v, f, 0, ID_MAX, out, err);
}

static int field_string(const struct jv *obj, const struct fpath *f,
			size_t max, const char **out, struct cm_error *err)
{
	const struct jv *v = member(obj, f, err);

	return v ? check_string(v, f, max, out, err) : -1;
}

/* An optional member: absent and null give *out = NULL. */
static int field_opt_string(const struct jv *obj, const struct fpath *f,
			    size_t max, const char **out,
			    struct cm_error *err)
{
	const struct jv *v = jv_get(obj, f->key);

	*out = NULL;
	if (!v || jv_is(v, JV_NULL))
		return 0;
	return check_string(v, f, max, out, err);
}

static int field_opt_number(const struct jv *obj, const struct fpath *f,
			    double *out, struct cm_error *err)
{
	const struct jv *v = jv_get(obj, f->key);

	return v ? check_number(v, f, out, err) : 0;
}

static int field_time(const struct jv *obj, const char *key, char out[21],
		      struct cm_error *err)
{
	const char *s;

	if (field_string(obj, FP("", key), 64, &s, err) < 0)
		return -1;
	if (!svc_timestamp_valid(s, out))
		return cm_errorf(err, EINVAL,
				 "%s: '%.40s' is not a UTC time YYYY-MM-DDTHH:MM:SSZ",
				 key, s);
	return 0;
}

static const struct jv *field_array(const struct jv *obj, const char *key,
				    size_t max, struct cm_error *err)
{
	const struct jv *v = member(obj, FP("", key), err);

	if (!v)
		return NULL;
	if (!jv_is(v, JV_ARRAY)) {
		cm_errorf(err, EINVAL, "%s: expected an array", key);
		return NULL;
	}
	if (jv_size(v) > max) {
		cm_errorf(err, EINVAL, "%s: more than %zu entries", key, max);
		return NULL;
	}
	return v;
}

static const struct jv *field_object(const struct jv *obj,
				     const struct fpath *f,
				     struct cm_error *err)
{
	const struct jv *v = member(obj, f, err);

	if (v && !jv_is(v, JV_OBJECT)) {
		field_error(err, f, "expected an object");
		return NULL;
	}
	return v;
}

static int digits(const char *s, int n, int lo, int hi)
{
	int i, v = 0;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	return v >= lo && v <= hi;
}

int svc_timestamp_valid(const char *s, char out[21])
{
	const char *p = s + 19;

	if (strnlen(s, 20) < 20 || !digits(s, 4, 1970, 9999) ||
	    s[4] != '-' || !digits(s + 5, 2, 1, 12) || s[7] != '-' ||
	    !digits(s + 8, 2, 1, 31) || s[10] != 'T' ||
	    !digits(s + 11, 2, 0, 23) || s[13] != ':' ||
	    !digits(s + 14, 2, 0, 59) || s[16] != ':' ||
	    !digits(s + 17, 2, 0, 60))
		return 0;
	if (*p == '.') {
		if (!(p[1] >= '0' && p[1] <= '9'))
			return 0;
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	}
	if (p[0] != 'Z' || p[1] != '\0')
		return 0;
	if (out) {
		memcpy(out, s, 19);
		out[19] = 'Z';
		out[20] = '\0';
	}
	return 1;
}

/* ---- the document -------------------------------------------------------*/

static int validate_argv(const struct jv *o, struct cm_error *err)
{
	const struct jv *argv = jv_get(o, "argv"), *a;
	size_t i = 0;

	if (!argv)
		return 0;
	if (!jv_is(argv, JV_ARRAY))
		return cm_errorf(err, EINVAL,
				 "identity.argv: expected an array");
	for (a = jv_first(argv); a; a = a->next, i++)
		if (!jv_is(a, JV_STRING))
			return cm_errorf(err, EINVAL,
					 "identity.argv[%zu]: expected a string",
					 i);
	return 0;
}

static int validate_identity(const struct jv *doc,
			     struct svc_result_ident *id,
			     struct cm_error *err)
{
	const char *P = "identity";
	const struct jv *o = field_object(doc, FP("", P), err);
	int64_t uid;

	if (!o)
		return -1;
	if (field_id(o, FP(P, "job"), &id->job, err) < 0 ||
	    field_id(o, FP(P, "step"), &id->step, err) < 0)
		return -1;
	if ((id->job < 0) != (id->step < 0))
		return cm_errorf(err, EINVAL,
				 "identity.step: must be null exactly when identity.job is");
	if (field_string(o, FP(P, "node"), 255, &id->node, err) < 0 ||
	    field_string(o, FP(P, "user"), 64, &id->user, err) < 0 ||
	    field_string(o, FP(P, "executable"), STRING_MAX, &id->executable,
			 err) < 0 ||
	    field_opt_string(o, FP(P, "exe_hash"), 128, &id->exe_hash,
			     err) < 0)
		return -1;
	if (field_int(o, FP(P, "uid"), 0, 4294967294LL, &uid, err) < 0)
		return -1;
	id->uid = (uint32_t)uid;
	if (field_int(o, FP(P, "ranks"), 0, 1 << 24, &id->ranks, err) < 0 ||
	    field_int(o, FP(P, "threads"), 0, SVC_RESULT_THREADS_MAX,
		      &id->threads, err) < 0)
		return -1;
	id->app = strrchr(id->executable, '/');
	id->app = id->app ? id->app + 1 : id->executable;
	if (!*id->app)
		return cm_errorf(err, EINVAL,
				 "identity.executable: ends with '/'");
	return validate_argv(o, err);
}

static int validate_mode(const struct jv *doc, struct svc_result_ident *id,
			 struct cm_error *err)
{
	static const char *const modes[] = {
		"off", "dynamic", "learned", "static",
	};
	size_t i;

	if (field_string(doc, FP("", "mode"), 16, &id->mode, err) < 0)
		return -1;
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(id->mode, modes[i]) == 0)
			return 0;
	return cm_errorf(err, EINVAL,
			 "mode: '%s' is not one of off, dynamic, learned, static",
			 id->mode);
}

static int validate_topology(const struct jv *doc, struct cm_error *err)
{
	const char *P = "topology";
	const struct jv *o = field_object(doc, FP("", P), err), *dry;
	const char *s;

	if (!o)
		return -1;
	if (field_string(o, FP(P, "cpuset"), STRING_MAX, &s, err) < 0 ||
	    field_int(o, FP(P, "pus"), 1, SVC_RESULT_THREADS_MAX, NULL,
		      err) < 0 ||
	    field_opt_string(o, FP(P, "synthetic"), STRING_MAX, &s, err) < 0)
		return -1;
	dry = jv_get(o, "dry_run");
	if (dry && !jv_is(dry, JV_TRUE) && !jv_is(dry, JV_FALSE))
		return cm_errorf(err, EINVAL,
				 "topology.dry_run: expected true or false");
	return 0;
}

static int validate_thread(const struct jv *t, size_t i, struct cm_error *err)
{
	const char *P = "threads";
	const struct jv *rank;
	int64_t x;

	if (!jv_is(t, JV_OBJECT))
		return field_error(err, FPI(P, i, NULL), "expected an object");
	rank = jv_get(t, "rank");
	if (rank && !jv_is(rank, JV_NULL) &&
	    check_int(rank, FPI(P, i, "rank"), 0, 1 << 24, &x, err) < 0)
		return -1;
	if (field_int(t, FPI(P, i, "index"), 0, SVC_RESULT_THREADS_MAX, &x,
		      err) < 0 ||
	    field_int(t, FPI(P, i, "tid"), 0, 1LL << 31, &x, err) < 0)
		return -1;
	if (jv_get(t, "pid") &&
	    field_int(t, FPI(P, i, "pid"), 0, 1LL << 31, &x, err) < 0)
		return -1;
	return field_opt_number(t, FPI(P, i, "cpu_s"), NULL, err);
}

static int validate_threads(const struct jv *doc,
			    struct svc_result_ident *id,
			    struct cm_error *err)
{
	const struct jv *a = field_array(doc, "threads",
					 SVC_RESULT_THREADS_MAX, err), *t;
	size_t i = 0;

	if (!a)
		return -1;
	for (t = jv_first(a); t; t = t->next, i++)
		if (validate_thread(t, i, err) < 0)
			return -1;
	id->n_threads = jv_size(a);
	return 0;
}

/* [i, j, w]: thread indices i < j < len(threads), w finite and >= 0. */
static int validate_edge(const struct jv *e, size_t k, size_t n,
			 struct cm_error *err)
{
	const struct jv *vi, *vj, *w;
	int64_t i, j;

	if (!jv_is(e, JV_ARRAY) || jv_size(e) != 3)
		return cm_errorf(err, EINVAL,
				 "edges[%zu]: expected [i, j, weight]", k);
	vi = e->u.kids.first;
	vj = vi->next;
	w = vj->next;
	if (check_int(vi, FPIJ("edges", k, NULL, 0), 0, (int64_t)n - 1, &i,
		      err) < 0 ||
	    check_int(vj, FPIJ("edges", k, NULL, 1), 0, (int64_t)n - 1, &j,
		      err) < 0)
		return -1;
	if (j <= i)
		return cm_errorf(err, EINVAL,
				 "edges[%zu][1]: %lld is not greater than i (%lld)",
				 k, (long long)j, (long long)i);
	if (!jv_is_number(w))
		return cm_errorf(err, EINVAL,
				 "edges[%zu][2]: weight is not a number", k);
	if (!isfinite(jv_number(w)))
		return cm_errorf(err, EINVAL,
				 "edges[%zu][2]: weight is not finite", k);
	if (jv_number(w) < 0)
		return cm_errorf(err, EINVAL,
				 "edges[%zu][2]: weight is negative", k);
	return 0;
}

static int validate_edges(const struct jv *doc, struct svc_result_ident *id,
			  struct cm_error *err)
{
	const struct jv *a = field_array(doc, "edges", SVC_RESULT_LIST_MAX,
					 err), *e;
	size_t k = 0;

	if (!a)
		return -1;
	if (jv_size(a) > 0 && id->n_threads < 2)
		return cm_errorf(err, EINVAL,
				 "edges: %zu edges but only %zu threads",
				 jv_size(a), id->n_threads);
	for (e = jv_first(a); e; e = e->next, k++)
		if (validate_edge(e, k, id->n_threads, err) < 0)
			return -1;
	id->n_edges = jv_size(a);
	return 0;
}

static int validate_placement(const struct jv *pus, size_t k,
			      const struct svc_result_ident *id,
			      struct cm_error *err)
{
	const char *P = "timeline", *K = "pu_of_thread";
	const struct jv *v;
	size_t i = 0;

	if (!jv_is(pus, JV_ARRAY))
		return field_error(err, FPI(P, k, K), "expected an array");
	if (jv_size(pus) > id->n_threads)
		return field_error(err, FPI(P, k, K),
				   "%zu entries for %zu threads",
				   jv_size(pus), id->n_threads);
	for (v = jv_first(pus); v; v = v->next, i++)
		if (check_int(v, FPIJ(P, k, K, i), -1,
			      SVC_RESULT_THREADS_MAX * 64LL, NULL, err) < 0)
			return -1;
	return 0;
}

static int validate_step_entry(const struct jv *s, size_t k,
			       const struct svc_result_ident *id,
			       double *cost, struct cm_error *err)
{
	const char *P = "timeline";
	const struct jv *pus, *t;
	const char *reason;

	if (!jv_is(s, JV_OBJECT))
		return field_error(err, FPI(P, k, NULL), "expected an object");
	if (field_opt_number(s, FPI(P, k, "cost"), cost, err) < 0 ||
	    field_opt_string(s, FPI(P, k, "reason"), 64, &reason, err) < 0)
		return -1;
	t = member(s, FPI(P, k, "t"), err);
	if (!t || check_number(t, FPI(P, k, "t"), NULL, err) < 0)
		return -1;
	pus = member(s, FPI(P, k, "pu_of_thread"), err);
	if (!pus)
		return -1;
	return validate_placement(pus, k, id, err);
}

static int validate_timeline(const struct jv *doc,
			     struct svc_result_ident *id,
			     struct cm_error *err)
{
	const struct jv *a = field_array(doc, "timeline", SVC_RESULT_LIST_MAX,
					 err), *s;
	size_t k = 0;

	if (!a)
		return -1;
	id->final_cost = -1;
	for (s = jv_first(a); s; s = s->next, k++) {
		double cost = -1;

		if (validate_step_entry(s, k, id, &cost, err) < 0)
			return -1;
		id->final_cost = cost;
	}
	id->n_timeline = jv_size(a);
	return 0;
}

/* One pin; *moved says whether it moved a thread already placed (from
 * >= 0) rather than placing it for the first time (from -1). */
static int validate_migration(const struct jv *m, size_t k, size_t n,
			      int *moved, struct cm_error *err)
{
	const char *P = "migrations";
	const struct jv *t;
	int64_t from;

	if (!jv_is(m, JV_OBJECT))
		return field_error(err, FPI(P, k, NULL), "expected an object");
	t = member(m, FPI(P, k, "t"), err);
	if (!t || check_number(t, FPI(P, k, "t"), NULL, err) < 0)
		return -1;
	if (n == 0)
		return field_error(err, FPI(P, k, "thread"), "no threads");
	if (field_int(m, FPI(P, k, "thread"), 0, (int64_t)n - 1, NULL,
		      err) < 0 ||
	    field_int(m, FPI(P, k, "from"), -1, SVC_RESULT_THREADS_MAX * 64LL,
		      &from, err) < 0 ||
	    field_int(m, FPI(P, k, "to"), 0, SVC_RESULT_THREADS_MAX * 64LL,
		      NULL, err) < 0)
		return -1;
	*moved = from >= 0;
	return 0;
}

static int validate_migrations(const struct jv *doc,
			       struct svc_result_ident *id,
			       struct cm_error *err)
{
	const struct jv *a = field_array(doc, "migrations",
					 SVC_RESULT_LIST_MAX, err), *m;
	size_t k = 0, moves = 0;
	int moved = 0;

	if (!a)
		return -1;
	for (m = jv_first(a); m; m = m->next, k++) {
		if (validate_migration(m, k, id->n_threads, &moved, err) < 0)
			return -1;
		moves += (size_t)moved;
	}
	id->n_migrations = moves;
	return 0;
}

/* Known counters must be non-negative numbers; others are ignored. */
static int validate_stats(const struct jv *doc, struct cm_error *err)
{
	static const char *const keys[] = {
		"samples", "lost", "decoded", "faults", "agent_cpu_s",
		"mapping_ms", "pins", "intervals", "sample_period_us",
	};
	const struct jv *o = field_object(doc, FP("", "stats"), err);
	size_t i;

	if (!o)
		return -1;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (field_opt_number(o, FP("stats", keys[i]), NULL, err) < 0)
			return -1;
	return 0;
}

static int validate_header(const struct jv *doc, struct cm_error *err)
{
	const struct jv *v;

	if (!jv_is(doc, JV_OBJECT))
		return cm_errorf(err, EINVAL, "body: expected a JSON object");
	v = member(doc, FP("", "format"), err);
	if (!v)
		return -1;
	if (!jv_is(v, JV_STRING) ||
	    strcmp(v->u.str.s, "commap-result") != 0)
		return cm_errorf(err, EINVAL,
				 "format: expected \"commap-result\"");
	v = member(doc, FP("", "version"), err);
	if (!v)
		return -1;
	if (!jv_is(v, JV_INTEGER) || v->u.i != 1)
		return cm_errorf(err, EINVAL,
				 "version: not supported (this service reads version 1)");
	return 0;
}

/* "cluster" (optional): Slurm's ClusterName, part of a result's key
 * (docs/result-format.md); shown in listings, so short and plain. */
static int validate_cluster(const struct jv *doc,
			    struct svc_result_ident *id, struct cm_error *err)
{
	const char *s;
	size_t i;

	if (field_opt_string(doc, FP("", "cluster"), 64, &s, err) < 0)
		return -1;
	id->cluster = s ? s : "";
	for (i = 0; s && s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("._-", s[i])))
			return cm_errorf(err, EINVAL,
					 "cluster: character %zu is not one of A-Z a-z 0-9 . _ -",
					 i + 1);
	if (s && !*s)
		return cm_errorf(err, EINVAL,
				 "cluster: empty (leave it out instead)");
	return 0;
}

static int64_t count_or_0(const struct jv *v)
{
	return jv_is(v, JV_INTEGER) && v->u.i > 0 ? v->u.i : 0;
}

/* The agent's outcome for the metrics (struct svc_result_ident): keys
 * added to the format over time, so read as found, never refused. */
static void summarize(const struct jv *doc, struct svc_result_ident *id)
{
	const struct jv *g = jv_get(doc, "guard"), *v, *e;

	id->n_warnings = jv_is(jv_get(doc, "warnings"), JV_ARRAY) ?
			 jv_size(jv_get(doc, "warnings")) : 0;
	v = jv_get(doc, "not_pinned");
	id->not_pinned = jv_is(v, JV_STRING) ? v->u.str.s : NULL;
	id->guard_checked = count_or_0(jv_get(g, "checked"));
	id->guard_undone = count_or_0(jv_get(g, "undone"));
	id->dry_run = jv_is(jv_get(jv_get(doc, "topology"), "dry_run"),
			    JV_TRUE);
	for (e = jv_first(jv_get(doc, "timeline")); e; e = e->next)
		id->n_forced += jv_is(jv_get(e, "forced"), JV_TRUE);
}

static int validate(const struct jv *doc, struct svc_result_ident *id,
		    struct cm_error *err)
{
	struct svc_result_ident tmp;

	memset(&tmp, 0, sizeof(tmp));
	if (validate_header(doc, err) < 0 ||
	    validate_identity(doc, &tmp, err) < 0 ||
	    validate_cluster(doc, &tmp, err) < 0 ||
	    validate_mode(doc, &tmp, err) < 0 ||
	    field_opt_string(doc, FP("", "backend"), 32, &tmp.backend,
			     err) < 0 ||
	    field_time(doc, "started_at", tmp.started_at, err) < 0 ||
	    field_time(doc, "ended_at", tmp.ended_at, err) < 0)
		goto fail;
	if (strcmp(tmp.ended_at, tmp.started_at) < 0) {
		cm_errorf(err, EINVAL, "ended_at: before started_at");
		goto fail;
	}
	if (validate_topology(doc, err) < 0 ||
	    validate_threads(doc, &tmp, err) < 0 ||
	    validate_edges(doc, &tmp, err) < 0 ||
	    validate_timeline(doc, &tmp, err) < 0 ||
	    validate_migrations(doc, &tmp, err) < 0 ||
	    validate_stats(doc, err) < 0)
		goto fail;
	summarize(doc, &tmp);
	if (id)
		*id = tmp;
	return 0;
fail:
	errno = EINVAL;
	return -1;
}

/* ---- entry points -------------------------------------------------------*/

static int body_size_ok(size_t len, size_t max_len, struct cm_error *err)
{
	if (len > max_len)
		return cm_errorf(err, EINVAL,
				 "body: %zu bytes is more than max_body (%zu)",
				 len, max_len);
	if (len == 0)
		return cm_errorf(err, EINVAL, "body: empty");
	return 0;
}

int svc_result_check(const void *body, size_t len, size_t max_len,
		     struct svc_result_parsed **parsed,
		     struct svc_result_ident *id, struct cm_error *err)
{
	struct svc_result_parsed *pr;

	*parsed = NULL;
	if (body_size_ok(len, max_len, err) < 0)
		return -1;
	pr = parse_text(body, len, 0, err);
	if (!pr)
		return -1;
	if (validate(pr->root, id, err) < 0 ||
	    cm_placement_check_result(body, len, err) < 0) {
		svc_result_parsed_free(pr);
		errno = EINVAL;
		return -1;
	}
	*parsed = pr;
	return 0;
}

/* Point id's strings into doc (valid: every member is there). */
static void ident_from_tree(const json_t *doc, struct svc_result_ident *id)
{
	const json_t *o = json_object_get(doc, "identity");

	id->cluster = json_string_value(json_object_get(doc, "cluster"));
	if (!id->cluster)
		id->cluster = "";
	id->node = json_string_value(json_object_get(o, "node"));
	id->user = json_string_value(json_object_get(o, "user"));
	id->executable = json_string_value(json_object_get(o, "executable"));
	id->exe_hash = json_string_value(json_object_get(o, "exe_hash"));
	id->app = strrchr(id->executable, '/');
	id->app = id->app ? id->app + 1 : id->executable;
	id->mode = json_string_value(json_object_get(doc, "mode"));
	id->backend = json_string_value(json_object_get(doc, "backend"));
	id->not_pinned = json_string_value(json_object_get(doc,
							   "not_pinned"));
}

int svc_result_validate(const json_t *doc, struct svc_result_ident *id,
			struct cm_error *err)
{
	struct svc_result_parsed *pr;
	char *text;
	int rc;

	/* The tree as text through the same parser and validator; NUL is
	 * allowed here so that a string holding one is named below. */
	text = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return cm_errorf(err, ENOMEM, "body: cannot serialise");
	pr = parse_text(text, strlen(text), 1, err);
	free(text);
	if (!pr)
		return -1;
	rc = validate(pr->root, id, err);
	svc_result_parsed_free(pr);
	if (rc < 0) {
		errno = EINVAL;
		return -1;
	}
	if (id)
		ident_from_tree(doc, id);
	return 0;
}

int svc_result_parse(const void *body, size_t len, size_t max_len,
		     json_t **doc, struct svc_result_ident *id,
		     struct cm_error *err)
{
	struct svc_result_parsed *pr;
	struct svc_result_ident tmp;
	json_error_t jerr;
	json_t *d;

	*doc = NULL;
	if (svc_result_check(body, len, max_len, &pr, &tmp, err) < 0)
		return -1;
	svc_result_parsed_free(pr);
	d = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!d)
		return cm_errorf(err, EINVAL,
				 "body: invalid JSON at line %d column %d: %s",
				 jerr.line, jerr.column, jerr.text);
	if (id) {
		*id = tmp;
		ident_from_tree(d, id);
	}
	*doc = d;
	return 0;
}

static char *canonical(const char *text, size_t len)
{
	json_t *d = json_loadb(text, len, 0, NULL);
	char *c = d ? json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(d);
	return c;
}

int svc_result_same(const char *a, size_t a_len, const char *b,
		    size_t b_len)
{
	char *ca, *cb;
	int rc;

	if (a_len == b_len && memcmp(a, b, a_len) == 0)
		return 1;
	ca = canonical(a, a_len);
	cb = ca ? canonical(b, b_len) : NULL;
	rc = ca && cb ? strcmp(ca, cb) == 0 : -1;
	free(ca);
	free(cb);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}
