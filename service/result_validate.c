/* result_validate.c: full validation of an uploaded commap-result v1
 * document (docs/result-format.md).  Unknown keys are ignored, as the format
 * promises; every known key is checked for type and range so that what the
 * service stores can be read back without further checks. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "result_validate.h"

#define PATH_LEN 96
#define STRING_MAX 4096
#define ID_MAX 4294967295LL	/* Slurm job and step ids are 32 bits */

/* "parent.key", or "key" at the top level. */
static void join(char *out, const char *parent, const char *key)
{
	if (*parent)
		snprintf(out, PATH_LEN, "%s.%s", parent, key);
	else
		snprintf(out, PATH_LEN, "%s", key);
}

static int check_int(const json_t *v, const char *path, int64_t lo,
		     int64_t hi, int64_t *out, struct cm_error *err)
{
	json_int_t x;

	if (!json_is_integer(v))
		return cm_errorf(err, EINVAL, "%s: expected an integer", path);
	x = json_integer_value(v);
	if (x < lo || x > hi)
		return cm_errorf(err, EINVAL,
				 "%s: %lld is out of range [%lld, %lld]", path,
				 (long long)x, (long long)lo, (long long)hi);
	if (out)
		*out = x;
	return 0;
}

static int check_number(const json_t *v, const char *path, double *out,
			struct cm_error *err)
{
	double x;

	if (!json_is_number(v))
		return cm_errorf(err, EINVAL, "%s: expected a number", path);
	x = json_number_value(v);
	if (!isfinite(x))
		return cm_errorf(err, EINVAL, "%s: is not finite", path);
	if (x < 0)
		return cm_errorf(err, EINVAL, "%s: is negative", path);
	if (out)
		*out = x;
	return 0;
}

static int check_string(const json_t *v, const char *path, size_t max,
			const char **out, struct cm_error *err)
{
	const char *s;
	size_t len;

	if (!json_is_string(v))
		return cm_errorf(err, EINVAL, "%s: expected a string", path);
	s = json_string_value(v);
	len = json_string_length(v);
	if (len == 0)
		return cm_errorf(err, EINVAL, "%s: is empty", path);
	if (len > max)
		return cm_errorf(err, EINVAL, "%s: longer than %zu bytes",
				 path, max);
	if (strlen(s) != len)
		return cm_errorf(err, EINVAL, "%s: contains a NUL character",
				 path);
	if (out)
		*out = s;
	return 0;
}

/* The member key of obj, or an error "PATH: missing". */
static const json_t *member(const json_t *obj, const char *parent,
			    const char *key, char *path, struct cm_error *err)
{
	const json_t *v;

	join(path, parent, key);
	v = json_object_get(obj, key);
	if (!v)
		cm_errorf(err, EINVAL, "%s: missing", path);
	return v;
}

static int field_int(const json_t *obj, const char *parent, const char *key,
		     int64_t lo, int64_t hi, int64_t *out, struct cm_error *err)
{
	char path[PATH_LEN];
	const json_t *v = member(obj, parent, key, path, err);

	return v ? check_int(v, path, lo, hi, out, err) : -1;
}

/* Like field_int, but null gives -1. */
static int field_id(const json_t *obj, const char *parent, const char *key,
		    int64_t *out, struct cm_error *err)
{
	char path[PATH_LEN];
	const json_t *v = member(obj, parent, key, path, err);

	if (!v)
		return -1;
	if (json_is_null(v)) {
		*out = -1;
		return 0;
	}
	return check_int(v, path, 0, ID_MAX, out, err);
}

static int field_string(const json_t *obj, const char *parent,
			const char *key, size_t max, const char **out,
			struct cm_error *err)
{
	char path[PATH_LEN];
	const json_t *v = member(obj, parent, key, path, err);

	return v ? check_string(v, path, max, out, err) : -1;
}

/* An optional member: absent and (when nullable) null give *out = NULL. */
static int field_opt_string(const json_t *obj, const char *parent,
			    const char *key, size_t max, const char **out,
			    struct cm_error *err)
{
	char path[PATH_LEN];
	const json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	join(path, parent, key);
	return check_string(v, path, max, out, err);
}

static int field_opt_number(const json_t *obj, const char *parent,
			    const char *key, double *out,
			    struct cm_error *err)
{
	char path[PATH_LEN];
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	join(path, parent, key);
	return check_number(v, path, out, err);
}

static int field_time(const json_t *obj, const char *key, char out[21],
		      struct cm_error *err)
{
	const char *s;

	if (field_string(obj, "", key, 64, &s, err) < 0)
		return -1;
	if (!svc_timestamp_valid(s, out))
		return cm_errorf(err, EINVAL,
				 "%s: '%.40s' is not a UTC time YYYY-MM-DDTHH:MM:SSZ",
				 key, s);
	return 0;
}

static const json_t *field_array(const json_t *obj, const char *key,
				 size_t max, struct cm_error *err)
{
	char path[PATH_LEN];
	const json_t *v = member(obj, "", key, path, err);

	if (!v)
		return NULL;
	if (!json_is_array(v)) {
		cm_errorf(err, EINVAL, "%s: expected an array", path);
		return NULL;
	}
	if (json_array_size(v) > max) {
		cm_errorf(err, EINVAL, "%s: more than %zu entries", path, max);
		return NULL;
	}
	return v;
}

static const json_t *field_object(const json_t *obj, const char *parent,
				  const char *key, struct cm_error *err)
{
	char path[PATH_LEN];
	const json_t *v = member(obj, parent, key, path, err);

	if (v && !json_is_object(v)) {
		cm_errorf(err, EINVAL, "%s: expected an object", path);
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

static int validate_identity(const json_t *doc, struct svc_result_ident *id,
			     struct cm_error *err)
{
	const char *P = "identity";
	const json_t *o = field_object(doc, "", P, err), *argv;
	size_t i;

	if (!o)
		return -1;
	if (field_id(o, P, "job", &id->job, err) < 0 ||
	    field_id(o, P, "step", &id->step, err) < 0)
		return -1;
	if ((id->job < 0) != (id->step < 0))
		return cm_errorf(err, EINVAL,
				 "identity.step: must be null exactly when identity.job is");
	if (field_string(o, P, "node", 255, &id->node, err) < 0 ||
	    field_string(o, P, "user", 64, &id->user, err) < 0 ||
	    field_string(o, P, "executable", STRING_MAX, &id->executable,
			 err) < 0 ||
	    field_opt_string(o, P, "exe_hash", 128, &id->exe_hash, err) < 0)
		return -1;
	{
		int64_t uid;

		if (field_int(o, P, "uid", 0, 4294967294LL, &uid, err) < 0)
			return -1;
		id->uid = (uint32_t)uid;
	}
	if (field_int(o, P, "ranks", 0, 1 << 24, &id->ranks, err) < 0 ||
	    field_int(o, P, "threads", 0, SVC_RESULT_THREADS_MAX,
		      &id->threads, err) < 0)
		return -1;
	id->app = strrchr(id->executable, '/');
	id->app = id->app ? id->app + 1 : id->executable;
	if (!*id->app)
		return cm_errorf(err, EINVAL,
				 "identity.executable: ends with '/'");
	argv = json_object_get(o, "argv");
	if (argv && !json_is_array(argv))
		return cm_errorf(err, EINVAL,
				 "identity.argv: expected an array");
	for (i = 0; argv && i < json_array_size(argv); i++) {
		if (!json_is_string(json_array_get(argv, i)))
			return cm_errorf(err, EINVAL,
					 "identity.argv[%zu]: expected a string",
					 i);
	}
	return 0;
}

static int validate_mode(const json_t *doc, struct svc_result_ident *id,
			 struct cm_error *err)
{
	static const char *const modes[] = {
		"off", "dynamic", "learned", "static",
	};
	size_t i;

	if (field_string(doc, "", "mode", 16, &id->mode, err) < 0)
		return -1;
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(id->mode, modes[i]) == 0)
			return 0;
	return cm_errorf(err, EINVAL,
			 "mode: '%s' is not one of off, dynamic, learned, static",
			 id->mode);
}

static int validate_topology(const json_t *doc, struct cm_error *err)
{
	const char *P = "topology";
	const json_t *o = field_object(doc, "", P, err), *dry;
	const char *s;

	if (!o)
		return -1;
	if (field_string(o, P, "cpuset", STRING_MAX, &s, err) < 0 ||
	    field_int(o, P, "pus", 1, SVC_RESULT_THREADS_MAX, NULL, err) < 0 ||
	    field_opt_string(o, P, "synthetic", STRING_MAX, &s, err) < 0)
		return -1;
	dry = json_object_get(o, "dry_run");
	if (dry && !json_is_boolean(dry))
		return cm_errorf(err, EINVAL,
				 "topology.dry_run: expected true or false");
	return 0;
}

static int validate_thread(const json_t *t, size_t i, struct cm_error *err)
{
	char P[PATH_LEN];
	const json_t *rank;
	int64_t x;

	snprintf(P, sizeof(P), "threads[%zu]", i);
	if (!json_is_object(t))
		return cm_errorf(err, EINVAL, "%s: expected an object", P);
	rank = json_object_get(t, "rank");
	if (rank && !json_is_null(rank) &&
	    field_int(t, P, "rank", 0, 1 << 24, &x, err) < 0)
		return -1;
	if (field_int(t, P, "index", 0, SVC_RESULT_THREADS_MAX, &x, err) < 0 ||
	    field_int(t, P, "tid", 0, 1LL << 31, &x, err) < 0)
		return -1;
	if (json_object_get(t, "pid") &&
	    field_int(t, P, "pid", 0, 1LL << 31, &x, err) < 0)
		return -1;
	return field_opt_number(t, P, "cpu_s", NULL, err);
}

static int validate_threads(const json_t *doc, struct svc_result_ident *id,
			    struct cm_error *err)
{
	const json_t *a = field_array(doc, "threads", SVC_RESULT_THREADS_MAX,
				      err);
	size_t i;

	if (!a)
		return -1;
	for (i = 0; i < json_array_size(a); i++)
		if (validate_thread(json_array_get(a, i), i, err) < 0)
			return -1;
	id->n_threads = json_array_size(a);
	return 0;
}

/* [i, j, w]: thread indices i < j < len(threads), w finite and >= 0. */
static int validate_edge(const json_t *e, size_t k, size_t n,
			 struct cm_error *err)
{
	char path[PATH_LEN];
	int64_t i, j;
	const json_t *w;

	if (!json_is_array(e) || json_array_size(e) != 3)
		return cm_errorf(err, EINVAL,
				 "edges[%zu]: expected [i, j, weight]", k);
	snprintf(path, sizeof(path), "edges[%zu][0]", k);
	if (check_int(json_array_get(e, 0), path, 0, (int64_t)n - 1, &i,
		      err) < 0)
		return -1;
	snprintf(path, sizeof(path), "edges[%zu][1]", k);
	if (check_int(json_array_get(e, 1), path, 0, (int64_t)n - 1, &j,
		      err) < 0)
		return -1;
	if (j <= i)
		return cm_errorf(err, EINVAL,
				 "edges[%zu][1]: %lld is not greater than i (%lld)",
				 k, (long long)j, (long long)i);
	w = json_array_get(e, 2);
	if (!json_is_number(w))
		return cm_errorf(err, EINVAL,
				 "edges[%zu][2]: weight is not a number", k);
	if (!isfinite(json_number_value(w)))
		return cm_errorf(err, EINVAL,
				 "edges[%zu][2]: weight is not finite", k);
	if (json_number_value(w) < 0)
		return cm_errorf(err, EINVAL,
				 "edges[%zu][2]: weight is negative", k);
	return 0;
}

static int validate_edges(const json_t *doc, struct svc_result_ident *id,
			  struct cm_error *err)
{
	const json_t *a = field_array(doc, "edges", SVC_RESULT_LIST_MAX, err);
	size_t k;

	if (!a)
		return -1;
	if (json_array_size(a) > 0 && id->n_threads < 2)
		return cm_errorf(err, EINVAL,
				 "edges: %zu edges but only %zu threads",
				 json_array_size(a), id->n_threads);
	for (k = 0; k < json_array_size(a); k++)
		if (validate_edge(json_array_get(a, k), k, id->n_threads,
				  err) < 0)
			return -1;
	id->n_edges = json_array_size(a);
	return 0;
}

static int validate_step_entry(const json_t *s, size_t k,
			       const struct svc_result_ident *id,
			       double *cost, struct cm_error *err)
{
	char P[PATH_LEN], path[PATH_LEN];
	const json_t *pus;
	const char *reason;
	size_t i;

	snprintf(P, sizeof(P), "timeline[%zu]", k);
	if (!json_is_object(s))
		return cm_errorf(err, EINVAL, "%s: expected an object", P);
	pus = member(s, P, "pu_of_thread", path, err);
	if (field_opt_number(s, P, "cost", cost, err) < 0 ||
	    field_opt_string(s, P, "reason", 64, &reason, err) < 0)
		return -1;
	{
		char tp[PATH_LEN];
		const json_t *t = member(s, P, "t", tp, err);

		if (!t || check_number(t, tp, NULL, err) < 0)
			return -1;
	}
	if (!pus)
		return -1;
	if (!json_is_array(pus))
		return cm_errorf(err, EINVAL, "%s: expected an array", path);
	if (json_array_size(pus) > id->n_threads)
		return cm_errorf(err, EINVAL,
				 "%s: %zu entries for %zu threads", path,
				 json_array_size(pus), id->n_threads);
	for (i = 0; i < json_array_size(pus); i++) {
		char ep[2 * PATH_LEN];

		snprintf(ep, sizeof(ep), "%s[%zu]", path, i);
		if (check_int(json_array_get(pus, i), ep, -1,
			      SVC_RESULT_THREADS_MAX * 64LL, NULL, err) < 0)
			return -1;
	}
	return 0;
}

static int validate_timeline(const json_t *doc, struct svc_result_ident *id,
			     struct cm_error *err)
{
	const json_t *a = field_array(doc, "timeline", SVC_RESULT_LIST_MAX,
				      err);
	size_t k;

	if (!a)
		return -1;
	id->final_cost = -1;
	for (k = 0; k < json_array_size(a); k++) {
		double cost = -1;

		if (validate_step_entry(json_array_get(a, k), k, id, &cost,
					err) < 0)
			return -1;
		id->final_cost = cost;
	}
	id->n_timeline = json_array_size(a);
	return 0;
}

static int validate_migration(const json_t *m, size_t k, size_t n,
			      struct cm_error *err)
{
	char P[PATH_LEN], path[PATH_LEN];
	const json_t *t;

	snprintf(P, sizeof(P), "migrations[%zu]", k);
	if (!json_is_object(m))
		return cm_errorf(err, EINVAL, "%s: expected an object", P);
	t = member(m, P, "t", path, err);
	if (!t || check_number(t, path, NULL, err) < 0)
		return -1;
	if (n == 0)
		return cm_errorf(err, EINVAL, "%s.thread: no threads", P);
	if (field_int(m, P, "thread", 0, (int64_t)n - 1, NULL, err) < 0 ||
	    field_int(m, P, "from", -1, SVC_RESULT_THREADS_MAX * 64LL, NULL,
		      err) < 0 ||
	    field_int(m, P, "to", 0, SVC_RESULT_THREADS_MAX * 64LL, NULL,
		      err) < 0)
		return -1;
	return 0;
}

static int validate_migrations(const json_t *doc,
			       struct svc_result_ident *id,
			       struct cm_error *err)
{
	const json_t *a = field_array(doc, "migrations", SVC_RESULT_LIST_MAX,
				      err);
	size_t k;

	if (!a)
		return -1;
	for (k = 0; k < json_array_size(a); k++)
		if (validate_migration(json_array_get(a, k), k, id->n_threads,
				       err) < 0)
			return -1;
	id->n_migrations = json_array_size(a);
	return 0;
}

/* Known counters must be non-negative numbers; others are ignored. */
static int validate_stats(const json_t *doc, struct cm_error *err)
{
	static const char *const keys[] = {
		"samples", "lost", "decoded", "faults", "agent_cpu_s",
		"mapping_ms", "pins", "intervals", "sample_period_us",
	};
	const json_t *o = field_object(doc, "", "stats", err);
	size_t i;

	if (!o)
		return -1;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (field_opt_number(o, "stats", keys[i], NULL, err) < 0)
			return -1;
	return 0;
}

static int validate_header(const json_t *doc, struct cm_error *err)
{
	char path[PATH_LEN];
	const json_t *v;

	if (!json_is_object(doc))
		return cm_errorf(err, EINVAL, "body: expected a JSON object");
	v = member(doc, "", "format", path, err);
	if (!v)
		return -1;
	if (!json_is_string(v) ||
	    strcmp(json_string_value(v), "commap-result") != 0)
		return cm_errorf(err, EINVAL,
				 "format: expected \"commap-result\"");
	v = member(doc, "", "version", path, err);
	if (!v)
		return -1;
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return cm_errorf(err, EINVAL,
				 "version: not supported (this service reads version 1)");
	return 0;
}

int svc_result_validate(const json_t *doc, struct svc_result_ident *id,
			struct cm_error *err)
{
	struct svc_result_ident tmp;

	memset(&tmp, 0, sizeof(tmp));
	if (validate_header(doc, err) < 0 ||
	    validate_identity(doc, &tmp, err) < 0 ||
	    validate_mode(doc, &tmp, err) < 0 ||
	    field_opt_string(doc, "", "backend", 32, &tmp.backend, err) < 0 ||
	    field_time(doc, "started_at", tmp.started_at, err) < 0 ||
	    field_time(doc, "ended_at", tmp.ended_at, err) < 0)
		return -1;
	if (strcmp(tmp.ended_at, tmp.started_at) < 0)
		return cm_errorf(err, EINVAL, "ended_at: before started_at");
	if (validate_topology(doc, err) < 0 ||
	    validate_threads(doc, &tmp, err) < 0 ||
	    validate_edges(doc, &tmp, err) < 0 ||
	    validate_timeline(doc, &tmp, err) < 0 ||
	    validate_migrations(doc, &tmp, err) < 0 ||
	    validate_stats(doc, err) < 0)
		return -1;
	if (id)
		*id = tmp;
	return 0;
}

int svc_result_parse(const void *body, size_t len, size_t max_len,
		     json_t **doc, struct svc_result_ident *id,
		     struct cm_error *err)
{
	json_error_t jerr;
	json_t *d;

	*doc = NULL;
	if (len > max_len)
		return cm_errorf(err, EINVAL,
				 "body: %zu bytes is more than max_body (%zu)",
				 len, max_len);
	if (len == 0)
		return cm_errorf(err, EINVAL, "body: empty");
	d = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!d)
		return cm_errorf(err, EINVAL,
				 "body: invalid JSON at line %d column %d: %s",
				 jerr.line, jerr.column, jerr.text);
	if (svc_result_validate(d, id, err) < 0) {
		json_decref(d);
		errno = EINVAL;
		return -1;
	}
	*doc = d;
	return 0;
}
