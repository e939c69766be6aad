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
 * and read back with json_loads; the fuzz target checks that both agree.
 *
 * This file holds the checks; the parser and the entry points are listed
 * in result_validate_internal.h. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"
#include "result_validate_internal.h"

#define PATH_LEN 96
#define STRING_MAX 4096
#define ID_MAX 4294967295LL	/* Slurm job and step ids are 32 bits */

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

int svc_result_validate_doc(const struct jv *doc,
			    struct svc_result_ident *id, struct cm_error *err)
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
	    validate_stats(doc, err) < 0 ||
	    svc_result_validate_traffic(doc, err) < 0)
		goto fail;
	summarize(doc, &tmp);
	if (id)
		*id = tmp;
	return 0;
fail:
	errno = EINVAL;
	return -1;
}
