/* svc_model_merge.c: the pure part of learned models (svc_models.h): the
 * key of a result and the aggregation of a run into a model.
 *
 * Thread identities are (rank, creation index within its process); the
 * model's threads are the sorted union of identities seen, and edges are
 * sparse triples over that list, so a merge is a sort and a merge-join:
 * O(E log E), no dense matrix even at thousands of threads. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"
#include "svc_models.h"

struct ident {
	int64_t rank, index;
};

struct wedge {
	size_t a, b;		/* a < b, indices into the identity union */
	double w;
};

/* A run or a model seen as identities and sparse edges. */
struct side {
	size_t n;
	struct ident *id;	/* per thread of the document */
	size_t ne;
	struct wedge *e;	/* over union indices after mapping */
};

static int ident_cmp(const void *x, const void *y)
{
	const struct ident *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	return 0;
}

static int wedge_cmp(const void *x, const void *y)
{
	const struct wedge *a = x, *b = y;

	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	return 0;
}

/* qsort unless already sorted: identities and edges usually arrive in
 * order (agents write them so, and the model keeps them so), and glibc's
 * merge sort does not notice. */
static void sort_unless_sorted(void *base, size_t n, size_t size,
			       int (*cmp)(const void *, const void *))
{
	const char *p = base;
	size_t k;

	for (k = 1; k < n; k++)
		if (cmp(p + (k - 1) * size, p + k * size) > 0) {
			qsort(base, n, size, cmp);
			return;
		}
}

static void side_free(struct side *s)
{
	free(s->id);
	free(s->e);
	memset(s, 0, sizeof(*s));
}

/* ---- the run: what a merge needs of a result, read from its text -------- */

/* A stored result is read without building jansson values for its
 * threads, edges and timeline (~4,000 values at 256 threads, most of the
 * cost of a fold): one pass over the text picks the thread identities,
 * the edges and the last placement; only the small identity and topology
 * objects become jansson values.  The text is a validated document, but
 * every token is still checked: anything unexpected is EINVAL. */
struct raw_edge {
	int64_t i, j;
	double w;
	int ok;			/* integers i, j and a number w */
};

struct run_thread {
	int64_t rank, index;	/* rank 0 when absent */
	int has_index;
};

struct run {
	json_t *head;		/* {"identity", "started_at", "topology"} */
	size_t n, ncap;
	struct run_thread *id;	/* in document order */
	size_t ne, ecap;
	struct raw_edge *e;
	size_t npu, pcap;
	int64_t *pu;		/* the last timeline entry's pu_of_thread;
				 * INT64_MIN: not an integer */
};

static void run_free(struct run *r)
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
static int run_read(const char *text, size_t len, struct run *r,
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

		run_free(r);
		return cm_errorf(err, e, "result: %s at byte %zu",
				 e == ENOMEM ? "out of memory" :
				 "not a JSON document", (size_t)(s.p - text));
	}
	return 0;
}

/* The same from a jansson document (the pure API and its tests): its
 * compact text, so the tests exercise the reader the service uses. */
static int run_from_json(const json_t *result, struct run *r,
			 struct cm_error *err)
{
	char *text = json_dumps(result, JSON_COMPACT);
	int rv;

	if (!text) {
		memset(r, 0, sizeof(*r));
		return cm_errorf(err, ENOMEM, "model: out of memory");
	}
	rv = run_read(text, strlen(text), r, err);
	free(text);
	return rv;
}

/* ---- argv shape and key ------------------------------------------------ */

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Append s to buf (of size cap, length *len), digit runs as '#' when
 * hash_digits; -1 when it does not fit. */
static int shape_append(char *buf, size_t cap, size_t *len, const char *s,
			int hash_digits)
{
	for (; *s; s++) {
		if (hash_digits && *s >= '0' && *s <= '9') {
			while (s[1] >= '0' && s[1] <= '9')
				s++;
		}
		if (*len + 1 >= cap)
			return -1;
		buf[(*len)++] = hash_digits && *s >= '0' && *s <= '9' ?
				'#' : *s;
	}
	buf[*len] = '\0';
	return 0;
}

char *svc_model_argv_shape(const json_t *argv, const char *executable)
{
	size_t cap = SVC_MODEL_ARGV_SHAPE_MAX + 1, len = 0, i;
	char *buf = malloc(cap);
	const char *first;
	int bad = 0;

	if (!buf)
		return NULL;
	buf[0] = '\0';
	first = json_string_value(json_array_get(argv, 0));
	if (!first || !*first)
		first = executable ? executable : "";
	bad |= shape_append(buf, cap, &len, base_name(first), 0);
	for (i = 1; !bad && i < json_array_size(argv); i++) {
		const char *a = json_string_value(json_array_get(argv, i));

		bad |= shape_append(buf, cap, &len, " ", 0);
		bad |= shape_append(buf, cap, &len, a ? a : "", 1);
	}
	if (bad) {
		free(buf);
		errno = E2BIG;
		return NULL;
	}
	return buf;
}

/* Identities of a run's threads (rank default 0, index default the
 * position among the rank's threads).  Sets *tpr to the most threads of a
 * rank.  EINVAL when an identity repeats. */
static int result_idents(const struct run *r, struct side *s, int64_t *tpr,
			 struct cm_error *err)
{
	size_t n = r->n, k;
	struct ident *sorted;
	int64_t run = 0;

	s->n = n;
	s->id = calloc(n ? n : 1, sizeof(*s->id));
	sorted = calloc(n ? n : 1, sizeof(*sorted));
	if (!s->id || !sorted) {
		free(sorted);
		return cm_errorf(err, ENOMEM, "model: out of memory");
	}
	for (k = 0; k < n; k++) {
		size_t j;

		s->id[k].rank = r->id[k].rank;
		if (r->id[k].has_index) {
			s->id[k].index = r->id[k].index;
		} else {	/* position among its rank's threads */
			s->id[k].index = 0;
			for (j = 0; j < k; j++)
				s->id[k].index += s->id[j].rank ==
						  s->id[k].rank;
		}
	}
	memcpy(sorted, s->id, n * sizeof(*sorted));
	sort_unless_sorted(sorted, n, sizeof(*sorted), ident_cmp);
	*tpr = 0;
	for (k = 0; k < n; k++) {
		if (k && ident_cmp(&sorted[k - 1], &sorted[k]) == 0) {
			cm_errorf(err, EINVAL,
				  "threads: identity (rank %lld, index %lld) repeated",
				  (long long)sorted[k].rank,
				  (long long)sorted[k].index);
			free(sorted);
			return -1;
		}
		run = k && sorted[k - 1].rank == sorted[k].rank ? run + 1 : 1;
		if (run > *tpr)
			*tpr = run;
	}
	free(sorted);
	return 0;
}

static json_t *key_from(const json_t *result, const struct side *run,
			int64_t tpr_seen, struct cm_error *err)
{
	const json_t *idn = json_object_get(result, "identity");
	const char *hash = json_string_value(json_object_get(idn, "exe_hash"));
	const json_t *r = json_object_get(idn, "ranks");
	const json_t *t = json_object_get(idn, "threads_per_rank");
	const json_t *shape = json_object_get(idn, "argv_shape");
	int64_t ranks = json_is_integer(r) ? json_integer_value(r) : 1;
	int64_t tpr = tpr_seen;
	char *computed = NULL;
	json_t *key;

	if (!hash || !*hash) {
		cm_errorf(err, ENOENT,
			  "identity.exe_hash: absent, the run feeds no model");
		return NULL;
	}
	if (run->n == 0) {
		cm_errorf(err, ENOENT, "threads: empty, the run feeds no model");
		return NULL;
	}
	if (t && !json_is_null(t)) {
		if (!json_is_integer(t) || json_integer_value(t) < 1) {
			cm_errorf(err, EINVAL,
				  "identity.threads_per_rank: expected an integer >= 1");
			return NULL;
		}
		tpr = json_integer_value(t);
	}
	if (shape && !json_is_null(shape)) {
		const char *s = json_string_value(shape);

		if (!s || !*s || strlen(s) > SVC_MODEL_ARGV_SHAPE_MAX) {
			cm_errorf(err, EINVAL,
				  "identity.argv_shape: expected a string of 1-%d bytes",
				  SVC_MODEL_ARGV_SHAPE_MAX);
			return NULL;
		}
	} else {
		computed = svc_model_argv_shape(json_object_get(idn, "argv"),
			json_string_value(json_object_get(idn, "executable")));
		if (!computed) {
			cm_errorf(err, errno, "identity.argv: %s",
				  errno == E2BIG ? "shape too long" :
				  "out of memory");
			return NULL;
		}
	}
	key = json_pack("{s:s, s:I, s:I, s:s}", "exe_hash", hash,
			"ranks", (json_int_t)(ranks < 1 ? 1 : ranks),
			"threads_per_rank", (json_int_t)tpr,
			"argv_shape", computed ? computed :
			json_string_value(shape));
	free(computed);
	if (!key)
		cm_errorf(err, ENOMEM, "model: out of memory");
	return key;
}

/* Slurm's id of the batch step (slurm.h: SLURM_BATCH_SCRIPT). */
#define BATCH_STEP 4294967291LL

static json_t *run_key(const struct run *r, struct cm_error *err)
{
	const json_t *step = json_object_get(json_object_get(r->head,
						"identity"), "step");
	struct side ids = { 0 };
	int64_t tpr = 0;
	json_t *key = NULL;

	/* An sbatch script whose threads shared nothing (a shell starting
	 * srun steps) has no mapping to learn; a batch step that
	 * communicates (mpirun inside the script) is the application. */
	if (json_integer_value(step) == BATCH_STEP && r->ne == 0) {
		cm_errorf(err, ENODATA, "the batch script shared no memory: "
			  "nothing to learn");
		return NULL;
	}
	if (result_idents(r, &ids, &tpr, err) == 0)
		key = key_from(r->head, &ids, tpr, err);
	side_free(&ids);
	return key;
}

json_t *svc_model_key(const json_t *result, struct cm_error *err)
{
	struct run r;
	json_t *key;

	if (run_from_json(result, &r, err) < 0)
		return NULL;
	key = run_key(&r, err);
	run_free(&r);
	return key;
}

/* "key.ranks: the result's 2 differs from the model's 1". */
static int key_check(const json_t *model_key, const json_t *key,
		     struct cm_error *err)
{
	static const char *const fields[] = {
		"exe_hash", "ranks", "threads_per_rank", "argv_shape", NULL,
	};
	const char *const *f;

	for (f = fields; *f; f++) {
		const json_t *a = json_object_get(key, *f);
		const json_t *b = json_object_get(model_key, *f);
		char *as, *bs;

		if (b && json_equal(a, b))
			continue;
		as = json_dumps(a, JSON_ENCODE_ANY);
		bs = b ? json_dumps(b, JSON_ENCODE_ANY) : NULL;
		cm_errorf(err, EINVAL,
			  "key.%s: the result's %.80s differs from the model's %.80s",
			  *f, as ? as : "?", bs ? bs : "(none)");
		free(as);
		free(bs);
		return -1;
	}
	return 0;
}

/* ---- sparse matrices over the identity union ----------------------------- */

static int model_idents(const json_t *model, struct side *s,
			struct cm_error *err)
{
	const json_t *threads = json_object_get(model, "threads");
	size_t k;

	s->n = json_array_size(threads);
	s->id = calloc(s->n ? s->n : 1, sizeof(*s->id));
	if (!s->id)
		return cm_errorf(err, ENOMEM, "model: out of memory");
	for (k = 0; k < s->n; k++) {
		const json_t *t = json_array_get(threads, k);
		const json_t *r = json_object_get(t, "rank");
		const json_t *i = json_object_get(t, "index");

		if (!json_is_integer(r) || !json_is_integer(i))
			return cm_errorf(err, EINVAL,
					 "model.threads[%zu]: expected rank and index",
					 k);
		s->id[k].rank = json_integer_value(r);
		s->id[k].index = json_integer_value(i);
	}
	return 0;
}

/* Sorted union of two identity lists: each sorted (usually already),
 * then merged in one pass. */
static struct ident *ident_union(const struct side *x, const struct side *y,
				 size_t *n)
{
	size_t total = x->n + y->n, i = 0, j = 0, m = 0;
	struct ident *u = calloc(total ? total : 1, sizeof(*u));
	struct ident *t = calloc(total ? total : 1, sizeof(*t));

	if (!u || !t) {
		free(u);
		free(t);
		return NULL;
	}
	if (x->n)	/* x->id is NULL for a first run's empty model */
		memcpy(t, x->id, x->n * sizeof(*t));
	if (y->n)
		memcpy(t + x->n, y->id, y->n * sizeof(*t));
	sort_unless_sorted(t, x->n, sizeof(*t), ident_cmp);
	sort_unless_sorted(t + x->n, y->n, sizeof(*t), ident_cmp);
	while (i < x->n || j < y->n) {
		const struct ident *c;

		if (j == y->n || (i < x->n &&
				  ident_cmp(&t[i], &t[x->n + j]) <= 0))
			c = &t[i++];
		else
			c = &t[x->n + j++];
		if (m == 0 || ident_cmp(&u[m - 1], c) != 0)
			u[m++] = *c;
	}
	free(t);
	*n = m;
	return u;
}

static size_t union_index(const struct ident *u, size_t n,
			  const struct ident *id)
{
	const struct ident *p = bsearch(id, u, n, sizeof(*u), ident_cmp);

	return (size_t)(p - u);	/* always found: u is a superset */
}

/* Read raw edges (over s's thread positions) into s->e over union
 * indices, sorted, duplicates summed; normalise to a maximum of 1 when
 * normalise. */
static int side_edges(const struct raw_edge *re, size_t ne, const char *what,
		      struct side *s, const struct ident *u, size_t nu,
		      int normalise, struct cm_error *err)
{
	size_t k, m = 0, *at;
	double max = 0;

	s->e = calloc(ne ? ne : 1, sizeof(*s->e));
	at = malloc((s->n ? s->n : 1) * sizeof(*at));
	if (!s->e || !at) {
		free(at);
		return cm_errorf(err, ENOMEM, "model: out of memory");
	}
	/* Each thread's place in the union, once (not twice per edge). */
	for (k = 0; k < s->n; k++)
		at[k] = union_index(u, nu, &s->id[k]);
	for (k = 0; k < ne; k++) {
		int64_t i = re[k].i, j = re[k].j;
		double w = re[k].w;
		size_t a, b;

		if (!re[k].ok || i < 0 || j < 0 || (uint64_t)i >= s->n ||
		    (uint64_t)j >= s->n || i == j || !isfinite(w) || w < 0) {
			free(at);
			return cm_errorf(err, EINVAL,
					 "%s.edges[%zu]: not a valid edge", what,
					 k);
		}
		a = at[i];
		b = at[j];
		s->e[k].a = a < b ? a : b;
		s->e[k].b = a < b ? b : a;
		s->e[k].w = w;
	}
	free(at);
	sort_unless_sorted(s->e, ne, sizeof(*s->e), wedge_cmp);
	for (k = 0; k < ne; k++) {
		if (m && wedge_cmp(&s->e[m - 1], &s->e[k]) == 0)
			s->e[m - 1].w += s->e[k].w;
		else
			s->e[m++] = s->e[k];
	}
	s->ne = m;
	for (k = 0; k < m; k++)
		max = s->e[k].w > max ? s->e[k].w : max;
	for (k = 0; normalise && max > 0 && k < m; k++)
		s->e[k].w /= max;
	return 0;
}

/* Cosine similarity of two sparse vectors over the same pair space; both
 * empty: 1 (nothing differs), one empty: 0. */
static double cosine(const struct side *x, const struct side *y)
{
	double dot = 0, nx = 0, ny = 0;
	size_t i = 0, j = 0;

	while (i < x->ne || j < y->ne) {
		int c = i >= x->ne ? 1 : j >= y->ne ? -1 :
			wedge_cmp(&x->e[i], &y->e[j]);

		if (c == 0)
			dot += x->e[i].w * y->e[j].w;
		if (c <= 0)
			nx += x->e[i].w * x->e[i].w, i++;
		if (c >= 0)
			ny += y->e[j].w * y->e[j].w, j++;
	}
	if (nx == 0 && ny == 0)
		return 1;
	if (nx == 0 || ny == 0)
		return 0;
	return dot / (sqrt(nx) * sqrt(ny));
}

/* (1 - alpha) * old + alpha * run, small weights dropped. */
static struct wedge *blend(const struct side *old, const struct side *run,
			   double alpha, size_t *n)
{
	struct wedge *out = calloc(old->ne + run->ne + 1, sizeof(*out));
	size_t i = 0, j = 0, m = 0;

	if (!out)
		return NULL;
	while (i < old->ne || j < run->ne) {
		int c = i >= old->ne ? 1 : j >= run->ne ? -1 :
			wedge_cmp(&old->e[i], &run->e[j]);
		struct wedge w = c <= 0 ? old->e[i] : run->e[j];

		w.w = 0;
		if (c <= 0)
			w.w += (1 - alpha) * old->e[i++].w;
		if (c >= 0)
			w.w += alpha * run->e[j++].w;
		if (w.w >= SVC_MODEL_EPSILON)
			out[m++] = w;
	}
	*n = m;
	return out;
}

/* ---- the model being folded -------------------------------------------- */

/* A model between runs: its document without the big arrays (light),
 * and the threads, edges and last placement as C arrays, so a batch of
 * runs is merged without building and parsing jansson arrays for every
 * run (svc_model_acc_*).  The document is built once, at the end. */
struct svc_model_acc {
	json_t *light;		/* NULL: no run yet.  No "threads", "edges"
				 * or last_mapping.pu_of_thread */
	size_t n;
	struct ident *id;	/* threads, sorted by identity */
	size_t ne;
	struct raw_edge *e;	/* over thread indices, weights as stored */
	long *pu;		/* last placement per thread, -1 unknown */
};

struct merge {
	const struct svc_model_acc *model;
	const json_t *light;	/* model->light */
	const json_t *result;	/* the run's identity, started_at, topology */
	const struct run *r;
	struct side old, run;
	struct ident *u;	/* union of identities */
	size_t nu;
	long *keep;		/* union index -> new index, or -1 */
	size_t nkeep;
	struct wedge *e;	/* merged edges over union indices */
	size_t ne;
	double stability;	/* -1: first run */
	int run_is_latest;
};

/* Keep identities of the latest run and those on a remaining edge. */
static int choose_threads(struct merge *m)
{
	size_t k;

	m->keep = malloc((m->nu ? m->nu : 1) * sizeof(*m->keep));
	if (!m->keep)
		return -1;
	for (k = 0; k < m->nu; k++)
		m->keep[k] = -1;
	for (k = 0; k < m->run.n; k++)
		m->keep[union_index(m->u, m->nu, &m->run.id[k])] = 0;
	for (k = 0; k < m->ne; k++)
		m->keep[m->e[k].a] = m->keep[m->e[k].b] = 0;
	for (k = 0; k < m->nu; k++)
		if (m->keep[k] == 0)
			m->keep[k] = (long)m->nkeep++;
	return 0;
}

/* The new threads, edges (weights kept to 6 decimals, the resolution of
 * SVC_MODEL_EPSILON, so the stored text stays short and stable: the
 * same values whether a model is stored between runs or not) and last
 * placement, into out. */
static int merged_arrays(const struct merge *m, struct svc_model_acc *out)
{
	size_t k;

	out->n = m->nkeep;
	out->ne = m->ne;
	out->id = calloc(m->nkeep ? m->nkeep : 1, sizeof(*out->id));
	out->e = calloc(m->ne ? m->ne : 1, sizeof(*out->e));
	out->pu = malloc((m->nkeep ? m->nkeep : 1) * sizeof(*out->pu));
	if (!out->id || !out->e || !out->pu)
		return -1;
	for (k = 0; k < m->nu; k++)
		if (m->keep[k] >= 0)
			out->id[m->keep[k]] = m->u[k];
	for (k = 0; k < m->ne; k++) {
		out->e[k].i = m->keep[m->e[k].a];
		out->e[k].j = m->keep[m->e[k].b];
		out->e[k].w = round(m->e[k].w * 1e6) / 1e6;
		out->e[k].ok = 1;
	}
	for (k = 0; k < m->nkeep; k++)
		out->pu[k] = -1;
	if (m->run_is_latest) {	/* the run's last placement */
		for (k = 0; k < m->r->npu && k < m->run.n; k++) {
			long nk = m->keep[union_index(m->u, m->nu,
						      &m->run.id[k])];

			if (nk >= 0 && m->r->pu[k] != INT64_MIN)
				out->pu[nk] = (long)m->r->pu[k];
		}
	} else {		/* the model's, re-aligned */
		for (k = 0; k < m->old.n; k++) {
			long nk = m->keep[union_index(m->u, m->nu,
						      &m->old.id[k])];

			if (nk >= 0)
				out->pu[nk] = m->model->pu[k];
		}
	}
	return 0;
}

/* last_mapping without its pu_of_thread: of the run, or the model's. */
static json_t *mapping_light(const struct merge *m, int64_t result_id)
{
	const json_t *old = json_object_get(m->light, "last_mapping");

	if (!m->run_is_latest)
		return json_pack("{s:O?, s:O?}",
				 "result_id", json_object_get(old, "result_id"),
				 "started_at", json_object_get(old,
							       "started_at"));
	return json_pack("{s:I, s:O?}", "result_id", (json_int_t)result_id,
			 "started_at", json_object_get(m->result,
						       "started_at"));
}

static json_t *topology_json(const struct merge *m)
{
	const json_t *t = json_object_get(m->result, "topology");

	if (!m->run_is_latest)
		return json_deep_copy(json_object_get(m->light, "topology"));
	return json_pack("{s:O?, s:O?, s:O?, s:O?}",
			 "synthetic", json_object_get(t, "synthetic"),
			 "cpuset", json_object_get(t, "cpuset"),
			 "pus", json_object_get(t, "pus"),
			 "node", json_object_get(json_object_get(m->result,
					"identity"), "node"));
}

static json_t *history_json(const struct merge *m, int64_t result_id,
			    const char *now)
{
	const json_t *old = json_object_get(m->light, "stability_history");
	json_t *h = old ? json_deep_copy(old) : json_array();

	if (!h || m->stability < 0)
		return h;
	if (json_array_append_new(h, json_pack("{s:I, s:f, s:s}",
			"result_id", (json_int_t)result_id,
			"value", m->stability, "at", now)) < 0)
		return json_decref(h), NULL;
	while (json_array_size(h) > SVC_MODEL_HISTORY)
		json_array_remove(h, 0);
	return h;
}

/* Is the result's started_at at or after the model's last mapping's? */
static int result_is_latest(const json_t *model, const json_t *result)
{
	const json_t *lm = json_object_get(model, "last_mapping");
	const char *was = json_string_value(json_object_get(lm, "started_at"));
	const char *is = json_string_value(json_object_get(result,
							   "started_at"));
	char a[21], b[21];

	if (!model || !was || !svc_timestamp_valid(was, a))
		return 1;
	if (!is || !svc_timestamp_valid(is, b))
		return 0;
	return strcmp(b, a) >= 0;
}

static json_t *build_light(struct merge *m, const json_t *key,
			   int64_t result_id, const char *now)
{
	const json_t *idn = json_object_get(m->result, "identity");
	const json_t *runs = json_object_get(m->light, "runs");
	const char *exe = json_string_value(json_object_get(idn, "executable"));
	const char *created = json_string_value(json_object_get(m->light,
								"created_at"));
	json_t *topo = topology_json(m), *hist = history_json(m, result_id,
							       now);
	json_t *map = mapping_light(m, result_id);

	if (!topo || !hist || !map) {
		json_decref(topo);
		json_decref(hist);
		json_decref(map);
		return NULL;
	}
	return json_pack("{s:s, s:i, s:O, s:O, s:s, s:s, s:O,"
			 " s:I, s:o, s:o, s:f, s:s, s:s, s:o, s:o}",
		"format", "commap-model", "version", 1,
		"uid", json_object_get(idn, "uid"),
		"user", json_object_get(idn, "user"),
		"app", exe ? strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe :
			"unknown",
		"executable", exe ? exe : "unknown",
		"key", key,
		"runs", (json_int_t)(json_integer_value(runs) + 1),
		"stability", m->stability < 0 ? json_null() :
			json_real(m->stability),
		"stability_history", hist,
		"alpha", SVC_MODEL_ALPHA,
		"created_at", created ? created : now,
		"updated_at", now,
		"topology", topo,
		"last_mapping", map);
}

static void merge_free(struct merge *m)
{
	side_free(&m->old);
	side_free(&m->run);
	free(m->u);
	free(m->keep);
	free(m->e);
}

static int merge_matrices(struct merge *m, struct cm_error *err)
{
	if (!(m->u = ident_union(&m->old, &m->run, &m->nu)))
		return cm_errorf(err, ENOMEM, "model: out of memory");
	if (side_edges(m->r->e, m->r->ne, "result", &m->run, m->u, m->nu, 1,
		       err) < 0 ||
	    (m->light && side_edges(m->model->e, m->model->ne, "model",
				    &m->old, m->u, m->nu, 0, err) < 0))
		return -1;
	m->stability = m->light ? cosine(&m->old, &m->run) : -1;
	m->e = blend(&m->old, &m->run, m->light ? SVC_MODEL_ALPHA : 1,
		     &m->ne);
	if (!m->e || choose_threads(m) < 0)
		return cm_errorf(err, ENOMEM, "model: out of memory");
	return 0;
}

static void acc_clear(struct svc_model_acc *a)
{
	json_decref(a->light);
	free(a->id);
	free(a->e);
	free(a->pu);
	memset(a, 0, sizeof(*a));
}

/* The model's identities, for the merge (a copy: the side owns it). */
static int old_side(const struct svc_model_acc *a, struct side *s,
		    struct cm_error *err)
{
	s->n = a->n;
	s->id = malloc((a->n ? a->n : 1) * sizeof(*s->id));
	if (!s->id)
		return cm_errorf(err, ENOMEM, "model: out of memory");
	if (a->n)
		memcpy(s->id, a->id, a->n * sizeof(*s->id));
	return 0;
}

/* Fold run r (stored as result_id) into a; a is unchanged on failure. */
static int acc_fold(struct svc_model_acc *a, const struct run *r,
		    int64_t result_id, const char *now, struct cm_error *err)
{
	struct merge m = { .model = a, .light = a->light, .result = r->head,
			   .r = r };
	struct svc_model_acc next = { 0 };
	json_t *key = NULL;
	int64_t tpr = 0;
	int rv = -1;

	if (result_idents(r, &m.run, &tpr, err) < 0 ||
	    !(key = key_from(r->head, &m.run, tpr, err)))
		goto out;
	if (a->light && (key_check(json_object_get(a->light, "key"), key,
				   err) < 0 || old_side(a, &m.old, err) < 0))
		goto out;
	if (merge_matrices(&m, err) < 0)
		goto out;
	m.run_is_latest = result_is_latest(a->light, r->head);
	if (merged_arrays(&m, &next) < 0 ||
	    !(next.light = build_light(&m, key, result_id, now))) {
		cm_errorf(err, ENOMEM, "model: cannot build the document");
		goto out;
	}
	acc_clear(a);
	*a = next;
	memset(&next, 0, sizeof(next));
	rv = 0;
out:
	acc_clear(&next);
	json_decref(key);
	merge_free(&m);
	return rv;
}

/* A stored model document into a. */
static int acc_load(struct svc_model_acc *a, const json_t *model,
		    struct cm_error *err)
{
	const json_t *lm = json_object_get(model, "last_mapping");
	const json_t *pus = json_object_get(lm, "pu_of_thread");
	const json_t *edges = json_object_get(model, "edges");
	struct side s = { 0 };
	size_t k;

	memset(a, 0, sizeof(*a));
	if (model_idents(model, &s, err) < 0) {
		side_free(&s);
		return -1;
	}
	a->n = s.n;
	a->id = s.id;
	a->ne = json_array_size(edges);
	a->e = calloc(a->ne ? a->ne : 1, sizeof(*a->e));
	a->pu = malloc((a->n ? a->n : 1) * sizeof(*a->pu));
	a->light = json_copy((json_t *)model);	/* shallow */
	if (!a->e || !a->pu || !a->light)
		goto nomem;
	for (k = 0; k < a->ne; k++) {
		const json_t *e = json_array_get(edges, k);
		const json_t *i = json_array_get(e, 0), *j = json_array_get(e, 1);
		const json_t *w = json_array_get(e, 2);

		a->e[k].i = json_integer_value(i);
		a->e[k].j = json_integer_value(j);
		a->e[k].w = json_number_value(w);
		a->e[k].ok = json_is_integer(i) && json_is_integer(j) &&
			     json_is_number(w);
	}
	for (k = 0; k < a->n; k++) {
		const json_t *v = json_array_get(pus, k);

		a->pu[k] = json_is_integer(v) ? (long)json_integer_value(v) :
			   -1;
	}
	json_object_del(a->light, "threads");
	json_object_del(a->light, "edges");
	json_object_del(a->light, "id");
	if (lm) {
		json_t *light_lm = json_copy((json_t *)lm);

		if (!light_lm ||
		    json_object_set_new(a->light, "last_mapping", light_lm) < 0)
			goto nomem;
		json_object_del(light_lm, "pu_of_thread");
	}
	return 0;
nomem:
	acc_clear(a);
	return cm_errorf(err, ENOMEM, "model: out of memory");
}

/* Arrays built with json_array/json_integer directly: json_pack parses
 * its format for every element, which dominated the merge at 256 threads
 * (32,640 edges). */
static json_t *threads_json(const struct svc_model_acc *a)
{
	json_t *arr = json_array();
	size_t k;

	for (k = 0; arr && k < a->n; k++) {
		json_t *t = json_object();

		if (!t || json_object_set_new(t, "rank",
					      json_integer(a->id[k].rank)) < 0 ||
		    json_object_set_new(t, "index",
					json_integer(a->id[k].index)) < 0 ||
		    json_array_append_new(arr, t) < 0)
			return json_decref(arr), NULL;
	}
	return arr;
}

static json_t *edge_json(json_int_t i, json_int_t j, double w)
{
	json_t *e = json_array();

	if (!e || json_array_append_new(e, json_integer(i)) < 0 ||
	    json_array_append_new(e, json_integer(j)) < 0 ||
	    json_array_append_new(e, json_real(w)) < 0)
		return json_decref(e), NULL;
	return e;
}

static json_t *edges_json(const struct svc_model_acc *a)
{
	json_t *arr = json_array();
	size_t k;

	for (k = 0; arr && k < a->ne; k++)
		if (json_array_append_new(arr, edge_json(a->e[k].i, a->e[k].j,
							 a->e[k].w)) < 0)
			return json_decref(arr), NULL;
	return arr;
}

static json_t *pus_json(const struct svc_model_acc *a)
{
	json_t *arr = json_array();
	size_t k;

	for (k = 0; arr && k < a->n; k++)
		if (json_array_append_new(arr, json_integer(a->pu[k])) < 0)
			return json_decref(arr), NULL;
	return arr;
}

/* The whole document of a. */
static json_t *acc_doc(const struct svc_model_acc *a, struct cm_error *err)
{
	json_t *doc = json_copy(a->light), *lm = NULL;

	if (doc)
		lm = json_copy(json_object_get(a->light, "last_mapping"));
	if (!doc || !lm ||
	    json_object_set_new(lm, "pu_of_thread", pus_json(a)) < 0 ||
	    json_object_set_new(doc, "last_mapping", lm) < 0 ||
	    json_object_set_new(doc, "threads", threads_json(a)) < 0 ||
	    json_object_set_new(doc, "edges", edges_json(a)) < 0) {
		json_decref(doc);
		cm_errorf(err, ENOMEM, "model: cannot build the document");
		return NULL;
	}
	return doc;
}

struct svc_model_acc *svc_model_acc_new(const json_t *model,
					struct cm_error *err)
{
	struct svc_model_acc *a = calloc(1, sizeof(*a));

	if (!a) {
		cm_errorf(err, ENOMEM, "model: out of memory");
		return NULL;
	}
	if (model && acc_load(a, model, err) < 0) {
		free(a);
		return NULL;
	}
	return a;
}

int svc_model_acc_fold(struct svc_model_acc *a,
		       const struct svc_model_run *run, int64_t result_id,
		       const char *now, struct cm_error *err)
{
	return acc_fold(a, (const struct run *)run, result_id, now, err);
}

json_t *svc_model_acc_doc(const struct svc_model_acc *a,
			  struct cm_error *err)
{
	if (!a->light) {
		cm_errorf(err, ENOENT, "model: no run folded yet");
		return NULL;
	}
	return acc_doc(a, err);
}

void svc_model_acc_free(struct svc_model_acc *a)
{
	if (a)
		acc_clear(a);
	free(a);
}

json_t *svc_model_merge(const json_t *model, const json_t *result,
			int64_t result_id, const char *now,
			struct cm_error *err)
{
	struct svc_model_acc a = { 0 };
	json_t *doc = NULL;
	struct run r;

	if (run_from_json(result, &r, err) < 0)
		return NULL;
	if ((!model || acc_load(&a, model, err) == 0) &&
	    acc_fold(&a, &r, result_id, now, err) == 0)
		doc = acc_doc(&a, err);
	acc_clear(&a);
	run_free(&r);
	return doc;
}

struct svc_model_run *svc_model_run_read(const char *text, size_t len,
					 struct cm_error *err)
{
	struct run *r = malloc(sizeof(*r));

	if (!r) {
		cm_errorf(err, ENOMEM, "model: out of memory");
		return NULL;
	}
	if (run_read(text, len, r, err) < 0) {
		free(r);
		return NULL;
	}
	return (struct svc_model_run *)r;
}

json_t *svc_model_run_key(const struct svc_model_run *run,
			  struct cm_error *err)
{
	return run_key((const struct run *)run, err);
}

void svc_model_run_free(struct svc_model_run *run)
{
	if (run)
		run_free((struct run *)run);
	free(run);
}
