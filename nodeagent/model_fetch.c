/* model_fetch.c: fetching and reading a learned model (model_fetch.h). */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model_fetch.h"

/* ---- the request ---------------------------------------------------- */

static int unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

/* Append "&name=" + value percent-encoded; 0 or -1 when out is full. */
static int add_param(char *out, size_t len, size_t *n, const char *name,
		     const char *value)
{
	int w = snprintf(out + *n, len - *n, "%s%s=", *n && out[*n - 1] !=
			 '?' ? "&" : "", name);

	if (w < 0 || (size_t)w >= len - *n)
		return -1;
	*n += (size_t)w;
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		if (*n + 4 > len)
			return -1;
		if (unreserved(*p))
			out[(*n)++] = (char)*p;
		else
			*n += (size_t)snprintf(out + *n, 4, "%%%02X", *p);
	}
	out[*n] = '\0';
	return 0;
}

int cm_model_query(const struct cm_model_key *k, char *out, size_t len)
{
	char num[32];
	size_t n = 0;
	int bad;

	if (len < 16) {
		errno = ENAMETOOLONG;
		return -1;
	}
	n = (size_t)snprintf(out, len, "/v1/models?");
	snprintf(num, sizeof(num), "%d", k->ranks > 0 ? k->ranks : 1);
	bad = add_param(out, len, &n, "exe_hash", k->exe_hash) ||
	      add_param(out, len, &n, "ranks", num) ||
	      add_param(out, len, &n, "argv_shape", k->argv_shape);
	if (!bad && k->threads_per_rank > 0) {
		snprintf(num, sizeof(num), "%d", k->threads_per_rank);
		bad = add_param(out, len, &n, "threads_per_rank", num);
	}
	if (!bad && k->uid >= 0) {
		snprintf(num, sizeof(num), "%lld", k->uid);
		bad = add_param(out, len, &n, "uid", num);
	}
	if (bad) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* ---- the document --------------------------------------------------- */

void cm_model_free(struct cm_model *m)
{
	free(m->rank);
	free(m->index);
	cm_matrix_free(m->m);
	free(m->last_os);
	free(m->cpuset);
	free(m->synthetic);
	memset(m, 0, sizeof(*m));
}

static int int_in(json_t *v, long long min, long long max, long long *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max)
		return -1;
	*out = json_integer_value(v);
	return 0;
}

static int parse_threads(json_t *a, struct cm_model *m, struct cm_error *err)
{
	size_t n = json_array_size(a);

	if (!json_is_array(a) || n > (1u << 20))
		return cm_errorf(err, EINVAL, "model: threads: not an array");
	m->n = (int)n;
	m->rank = malloc((n ? n : 1) * sizeof(int));
	m->index = malloc((n ? n : 1) * sizeof(int));
	if (!m->rank || !m->index)
		return cm_errorf(err, ENOMEM, "out of memory");
	for (size_t k = 0; k < n; k++) {
		json_t *t = json_array_get(a, k);
		long long r, i;

		if (int_in(json_object_get(t, "rank"), 0, 1 << 30, &r) ||
		    int_in(json_object_get(t, "index"), 0, 1 << 30, &i))
			return cm_errorf(err, EINVAL, "model: threads[%zu]: "
					 "want {\"rank\": R, \"index\": I}", k);
		m->rank[k] = (int)r;
		m->index[k] = (int)i;
	}
	return 0;
}

static int parse_edges(json_t *a, struct cm_model *m, struct cm_error *err)
{
	m->m = cm_matrix_new(m->n);
	if (!m->m)
		return cm_errorf(err, ENOMEM, "out of memory");
	if (!json_is_array(a))
		return cm_errorf(err, EINVAL, "model: edges: not an array");
	for (size_t k = 0; k < json_array_size(a); k++) {
		json_t *e = json_array_get(a, k);
		long long i, j;
		double w = json_number_value(json_array_get(e, 2));

		if (json_array_size(e) != 3 ||
		    int_in(json_array_get(e, 0), 0, m->n - 1, &i) ||
		    int_in(json_array_get(e, 1), 0, m->n - 1, &j) || i == j ||
		    !json_is_number(json_array_get(e, 2)) || !(w >= 0) ||
		    w > 1e300)
			return cm_errorf(err, EINVAL, "model: edges[%zu]: want "
					 "[i, j, w] with i != j < %d, w >= 0",
					 k, m->n);
		cm_matrix_add(m->m, (int)i, (int)j, w);
	}
	return 0;
}

static char *str_or_null(json_t *v)
{
	return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

/* last_mapping.pu_of_thread, used only when it has one entry per
 * identity. */
static void parse_last_mapping(json_t *lm, struct cm_model *m)
{
	json_t *a = json_object_get(lm, "pu_of_thread");

	if (!json_is_array(a) || (int)json_array_size(a) != m->n || !m->n)
		return;
	m->last_os = malloc((size_t)m->n * sizeof(int));
	for (int k = 0; m->last_os && k < m->n; k++) {
		long long v;

		m->last_os[k] = int_in(json_array_get(a, (size_t)k), -1,
				       1 << 30, &v) ? -1 : (int)v;
	}
}

static int parse_doc(json_t *d, struct cm_model *m, struct cm_error *err)
{
	json_t *f = json_object_get(d, "format");
	long long v;

	if (!json_is_string(f) || strcmp(json_string_value(f), "commap-model"))
		return cm_errorf(err, EINVAL, "model: format is not "
				 "\"commap-model\"");
	if (int_in(json_object_get(d, "version"), 1, 1, &v))
		return cm_errorf(err, EINVAL, "model: unknown version");
	if (int_in(json_object_get(d, "id"), 0, INT64_MAX, &m->id))
		return cm_errorf(err, EINVAL, "model: id: not an integer");
	if (!int_in(json_object_get(d, "runs"), 0, 1 << 30, &v))
		m->runs = (int)v;
	if (!int_in(json_object_get(json_object_get(d, "key"),
				    "threads_per_rank"), 0, 1 << 30, &v))
		m->threads_per_rank = (int)v;
	if (parse_threads(json_object_get(d, "threads"), m, err) < 0 ||
	    parse_edges(json_object_get(d, "edges"), m, err) < 0)
		return -1;
	parse_last_mapping(json_object_get(d, "last_mapping"), m);
	m->cpuset = str_or_null(json_object_get(json_object_get(d, "topology"),
						"cpuset"));
	m->synthetic = str_or_null(json_object_get(
		json_object_get(d, "topology"), "synthetic"));
	return 0;
}

int cm_model_parse(const char *text, struct cm_model *out,
		   struct cm_error *err)
{
	json_error_t je;
	json_t *d = json_loads(text, 0, &je);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!d)
		return cm_errorf(err, EINVAL, "model: not JSON: %s (line %d)",
				 je.text, je.line);
	rc = parse_doc(d, out, err);
	json_decref(d);
	if (rc < 0) {
		cm_model_free(out);
		errno = EINVAL;
	}
	return rc;
}

/* ---- fetching --------------------------------------------------------- */

static void error_of(const char *body, char *out, size_t len)
{
	json_t *j = json_loads(body, 0, NULL);
	const char *e = json_string_value(json_object_get(j, "error"));

	snprintf(out, len, "%.300s", e ? e : body);
	json_decref(j);
}

int cm_model_fetch(const struct cm_deliver_opts *o,
		   const struct cm_model_key *k, const char *cred,
		   struct cm_model *out, struct cm_error *err)
{
	char path[4096], why[400];
	char *body = NULL;
	long code;
	int rc;

	memset(out, 0, sizeof(*out));
	if (cm_model_query(k, path, sizeof(path)) < 0)
		return cm_errorf(err, ENAMETOOLONG, "model query too long");
	if (cm_service_get(o, path, cred, &code, &body, err) < 0)
		return -1;
	if (code == 200) {
		rc = cm_model_parse(body, out, err) < 0 ? -1 : 1;
	} else {
		error_of(body, why, sizeof(why));
		rc = code == 404 ? 0 : -1;
		cm_errorf(err, code == 404 ? ENOENT : EIO, "%s%s", code == 404 ?
			  "" : "service answered: ", why);
		if (code != 404)
			snprintf(err->text + strlen(err->text),
				 sizeof(err->text) - strlen(err->text),
				 " (HTTP %ld)", code);
	}
	free(body);
	return rc;
}

/* ---- using it --------------------------------------------------------- */

int cm_model_find(const struct cm_model *m, int rank, int index)
{
	for (int k = 0; k < m->n; k++)
		if (m->rank[k] == rank && m->index[k] == index)
			return k;
	return -1;
}

double cm_model_distance(const struct cm_model *m, const struct cm_matrix *d,
			 const int *rank, const int *index, int n)
{
	struct cm_matrix *run = cm_matrix_new(m->n);
	struct cm_matrix *mod = cm_matrix_new(m->n);
	int *pos = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	char *seen = calloc((size_t)(m->n > 0 ? m->n : 1), 1);
	double cos = 0;

	if (!run || !mod || !pos || !seen)
		goto out;
	for (int i = 0; i < n; i++) {
		pos[i] = cm_model_find(m, rank[i], index[i]);
		if (pos[i] >= 0)
			seen[pos[i]] = 1;
	}
	for (int i = 0; i < n && i < cm_matrix_nthreads(d); i++) {
		const struct cm_matrix_entry *row;
		int cnt = cm_matrix_row(d, i, &row);

		for (int e = 0; e < cnt; e++)
			if (row[e].col > i && row[e].col < n && pos[i] >= 0 &&
			    pos[row[e].col] >= 0)
				cm_matrix_add(run, pos[i], pos[row[e].col],
					      row[e].w);
	}
	for (int i = 0; i < m->n; i++) {
		const struct cm_matrix_entry *row;
		int cnt = cm_matrix_row(m->m, i, &row);

		for (int e = 0; e < cnt; e++)
			if (row[e].col > i && seen[i] && seen[row[e].col])
				cm_matrix_add(mod, i, row[e].col, row[e].w);
	}
	cos = cm_matrix_cosine(run, mod);
out:
	cm_matrix_free(run);
	cm_matrix_free(mod);
	free(pos);
	free(seen);
	return cos > 1 ? 0 : cos > 0 ? 1 - cos : 1;
}
