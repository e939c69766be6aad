/* svc_model_sparse.c: thread identities and sparse edges over the union
 * of two identity lists: sorting, the union, edges re-indexed onto it,
 * cosine similarity and blending. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"
#include "svc_model_internal.h"
#include "svc_models.h"

int svc_ident_cmp(const void *x, const void *y)
{
	const struct ident *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	return 0;
}

int svc_wedge_cmp(const void *x, const void *y)
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
void svc_sort_unless_sorted(void *base, size_t n, size_t size,
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

void svc_side_free(struct side *s)
{
	free(s->id);
	free(s->e);
	memset(s, 0, sizeof(*s));
}

/* ---- sparse matrices over the identity union ----------------------------- */

int svc_model_idents(const json_t *model, struct side *s,
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
struct ident *svc_ident_union(const struct side *x, const struct side *y,
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
	svc_sort_unless_sorted(t, x->n, sizeof(*t), svc_ident_cmp);
	svc_sort_unless_sorted(t + x->n, y->n, sizeof(*t), svc_ident_cmp);
	while (i < x->n || j < y->n) {
		const struct ident *c;

		if (j == y->n || (i < x->n &&
				  svc_ident_cmp(&t[i], &t[x->n + j]) <= 0))
			c = &t[i++];
		else
			c = &t[x->n + j++];
		if (m == 0 || svc_ident_cmp(&u[m - 1], c) != 0)
			u[m++] = *c;
	}
	free(t);
	*n = m;
	return u;
}

size_t svc_union_index(const struct ident *u, size_t n,
		       const struct ident *id)
{
	const struct ident *p = bsearch(id, u, n, sizeof(*u), svc_ident_cmp);

	return (size_t)(p - u);	/* always found: u is a superset */
}

/* Read raw edges (over s's thread positions) into s->e over union
 * indices, sorted, duplicates summed; normalise to a maximum of 1 when
 * normalise. */
int svc_side_edges(const struct raw_edge *re, size_t ne, const char *what,
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
		at[k] = svc_union_index(u, nu, &s->id[k]);
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
	svc_sort_unless_sorted(s->e, ne, sizeof(*s->e), svc_wedge_cmp);
	for (k = 0; k < ne; k++) {
		if (m && svc_wedge_cmp(&s->e[m - 1], &s->e[k]) == 0)
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
double svc_model_cosine(const struct side *x, const struct side *y)
{
	double dot = 0, nx = 0, ny = 0;
	size_t i = 0, j = 0;

	while (i < x->ne || j < y->ne) {
		int c = i >= x->ne ? 1 : j >= y->ne ? -1 :
			svc_wedge_cmp(&x->e[i], &y->e[j]);

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
struct wedge *svc_model_blend(const struct side *old, const struct side *run,
			      double alpha, size_t *n)
{
	struct wedge *out = calloc(old->ne + run->ne + 1, sizeof(*out));
	size_t i = 0, j = 0, m = 0;

	if (!out)
		return NULL;
	while (i < old->ne || j < run->ne) {
		int c = i >= old->ne ? 1 : j >= run->ne ? -1 :
			svc_wedge_cmp(&old->e[i], &run->e[j]);
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
