/* svc_model_merge.c: the pure part of learned models (svc_models.h): the
 * key of a result and the aggregation of a run into a model.
 *
 * Thread identities are (rank, creation index within its process); the
 * model's threads are the sorted union of identities seen, and edges are
 * sparse triples over that list, so a merge is a sort and a merge-join:
 * O(E log E), no dense matrix even at thousands of threads.
 *
 * This file folds runs into a model; the other parts are listed in
 * svc_model_internal.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"
#include "svc_model_internal.h"
#include "svc_models.h"

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

/* A thread whose total weight in the model is below this fraction of the
 * mean communicating thread's says nothing about where it should run: an
 * idle main thread that first touched its workers' buffers, or was
 * sampled once on their data.  Its edges are not kept, so the learned
 * mapping (the agent maps every identity with an edge) leaves it to the
 * scheduler instead of giving it a PU, a ninth thread on eight PUs.
 * Measured (docs/PERFORMANCE.md, "Learned mappings"): a thread that
 * communicates weighs at least 0.57 of the mean, what a thread gets from
 * noise alone (its edges outside its pair) at most 0.07 of it. */
#define NEGLIGIBLE_SHARE 0.10

/* Drop the edges of negligible threads (above) from the merged edges. */
static int drop_negligible(struct merge *m)
{
	double *total = calloc(m->nu ? m->nu : 1, sizeof(*total));
	double sum = 0, least;
	size_t k, n = 0, kept = 0;

	if (!total)
		return -1;
	for (k = 0; k < m->ne; k++) {
		total[m->e[k].a] += m->e[k].w;
		total[m->e[k].b] += m->e[k].w;
	}
	for (k = 0; k < m->nu; k++)
		if (total[k] > 0) {
			sum += total[k];
			n++;
		}
	least = n ? NEGLIGIBLE_SHARE * sum / (double)n : 0;
	for (k = 0; k < m->ne; k++)
		if (total[m->e[k].a] >= least && total[m->e[k].b] >= least)
			m->e[kept++] = m->e[k];
	m->ne = kept;
	free(total);
	return 0;
}

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
		m->keep[svc_union_index(m->u, m->nu, &m->run.id[k])] = 0;
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
			long nk = m->keep[svc_union_index(m->u, m->nu,
						      &m->run.id[k])];

			if (nk >= 0 && m->r->pu[k] != INT64_MIN)
				out->pu[nk] = (long)m->r->pu[k];
		}
	} else {		/* the model's, re-aligned */
		for (k = 0; k < m->old.n; k++) {
			long nk = m->keep[svc_union_index(m->u, m->nu,
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
	svc_side_free(&m->old);
	svc_side_free(&m->run);
	free(m->u);
	free(m->keep);
	free(m->e);
}

static int merge_matrices(struct merge *m, struct cm_error *err)
{
	if (!(m->u = svc_ident_union(&m->old, &m->run, &m->nu)))
		return cm_errorf(err, ENOMEM, "model: out of memory");
	if (svc_side_edges(m->r->e, m->r->ne, "result", &m->run, m->u, m->nu, 1,
		       err) < 0 ||
	    (m->light && svc_side_edges(m->model->e, m->model->ne, "model",
				    &m->old, m->u, m->nu, 0, err) < 0))
		return -1;
	m->stability = m->light ? svc_model_cosine(&m->old, &m->run) : -1;
	m->e = svc_model_blend(&m->old, &m->run, m->light ? SVC_MODEL_ALPHA : 1,
		     &m->ne);
	if (!m->e || drop_negligible(m) < 0 || choose_threads(m) < 0)
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

	if (svc_result_idents(r, &m.run, &tpr, err) < 0 ||
	    !(key = svc_model_key_from(r->head, &m.run, tpr, err)))
		goto out;
	if (a->light && (svc_model_key_check(json_object_get(a->light, "key"), key,
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
	if (svc_model_idents(model, &s, err) < 0) {
		svc_side_free(&s);
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

	if (svc_run_from_json(result, &r, err) < 0)
		return NULL;
	if ((!model || acc_load(&a, model, err) == 0) &&
	    acc_fold(&a, &r, result_id, now, err) == 0)
		doc = acc_doc(&a, err);
	acc_clear(&a);
	svc_run_free(&r);
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
	if (svc_run_read(text, len, r, err) < 0) {
		free(r);
		return NULL;
	}
	return (struct svc_model_run *)r;
}

json_t *svc_model_run_key(const struct svc_model_run *run,
			  struct cm_error *err)
{
	return svc_run_key((const struct run *)run, err);
}

void svc_model_run_free(struct svc_model_run *run)
{
	if (run)
		svc_run_free((struct run *)run);
	free(run);
}
