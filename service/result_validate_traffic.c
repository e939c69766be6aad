/* result_validate_traffic.c: the checks of a result's "rank_traffic"
 * (docs/result-format.md), the bytes the node's MPI ranks sent to every
 * rank as the MPI library counted them:
 *
 *   "rank_traffic": {"source": "ompi-monitoring", "ranks": [R, ...],
 *                    "pairs": [[src, dst, bytes, messages], ...]}
 *
 * Optional (absent: nothing known).  Ranks are distinct integers below
 * 2^20; every pair's src is one of them, dst below 2^20, bytes and
 * messages integers >= 0, and (src, dst) appears once.  The pairs are at
 * most ranks x 2^20 and SVC_TRAFFIC_PAIRS_MAX in all: the union over a
 * job's nodes is its rank matrix across nodes, read back without further
 * checks. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"
#include "result_validate_internal.h"

static int is(const struct jv *v, enum jv_type t)
{
	return v && v->type == t;
}

static const struct jv *get(const struct jv *obj, const char *key)
{
	size_t n = strlen(key);

	if (!is(obj, JV_OBJECT))
		return NULL;
	for (const struct jv *v = obj->u.kids.first; v; v = v->next)
		if (v->key_len == n && memcmp(v->key, key, n) == 0)
			return v;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* An integer in [0, hi) or -1. */
static int64_t int_below(const struct jv *v, int64_t hi)
{
	return is(v, JV_INTEGER) && v->u.i >= 0 && v->u.i < hi ? v->u.i : -1;
}

/* ranks: distinct; sorted copy in *out (n entries). */
static int check_ranks(const struct jv *a, uint64_t **out,
		       struct cm_error *err)
{
	size_t n = a->u.kids.n, i = 0;
	uint64_t *r;

	if (n > SVC_RESULT_THREADS_MAX)
		return cm_errorf(err, EINVAL, "rank_traffic.ranks: more than "
				 "%d entries", SVC_RESULT_THREADS_MAX);
	r = malloc((n ? n : 1) * sizeof(*r));
	if (!r)
		return cm_errorf(err, ENOMEM, "rank_traffic: out of memory");
	for (const struct jv *v = a->u.kids.first; v; v = v->next, i++) {
		int64_t x = int_below(v, SVC_TRAFFIC_RANK_MAX);

		if (x < 0) {
			free(r);
			return cm_errorf(err, EINVAL, "rank_traffic.ranks[%zu]: "
					 "expected a rank in [0, %d)", i,
					 SVC_TRAFFIC_RANK_MAX);
		}
		r[i] = (uint64_t)x;
	}
	qsort(r, n, sizeof(*r), cmp_u64);
	for (i = 1; i < n; i++)
		if (r[i] == r[i - 1]) {
			unsigned long long twice = r[i];

			free(r);
			return cm_errorf(err, EINVAL, "rank_traffic.ranks: rank "
					 "%llu twice", twice);
		}
	*out = r;
	return 0;
}

/* [src, dst, bytes, messages] into *key (src << 20 | dst). */
static int check_pair(const struct jv *p, size_t k, const uint64_t *ranks,
		      size_t nranks, uint64_t *key, struct cm_error *err)
{
	const struct jv *v[4];
	int64_t src, dst;
	uint64_t s;

	if (!is(p, JV_ARRAY) || p->u.kids.n != 4)
		return cm_errorf(err, EINVAL, "rank_traffic.pairs[%zu]: "
				 "expected [src, dst, bytes, messages]", k);
	v[0] = p->u.kids.first;
	for (int i = 1; i < 4; i++)
		v[i] = v[i - 1]->next;
	src = int_below(v[0], SVC_TRAFFIC_RANK_MAX);
	dst = int_below(v[1], SVC_TRAFFIC_RANK_MAX);
	s = (uint64_t)src;
	if (src < 0 || !bsearch(&s, ranks, nranks, sizeof(*ranks), cmp_u64))
		return cm_errorf(err, EINVAL, "rank_traffic.pairs[%zu][0]: "
				 "not one of rank_traffic.ranks", k);
	if (dst < 0)
		return cm_errorf(err, EINVAL, "rank_traffic.pairs[%zu][1]: "
				 "expected a rank in [0, %d)", k,
				 SVC_TRAFFIC_RANK_MAX);
	for (int i = 2; i < 4; i++)
		if (int_below(v[i], INT64_MAX) < 0)
			return cm_errorf(err, EINVAL, "rank_traffic.pairs[%zu]"
					 "[%d]: expected an integer >= 0", k, i);
	*key = s << 20 | (uint64_t)dst;
	return 0;
}

static int check_pairs(const struct jv *a, const uint64_t *ranks,
		       size_t nranks, struct cm_error *err)
{
	size_t n = a->u.kids.n, k = 0;
	uint64_t *keys;
	int rc = 0;

	if (n > SVC_TRAFFIC_PAIRS_MAX || n > nranks * SVC_TRAFFIC_RANK_MAX)
		return cm_errorf(err, EINVAL, "rank_traffic.pairs: %zu pairs "
				 "for %zu ranks (at most ranks x %d, %d in all)",
				 n, nranks, SVC_TRAFFIC_RANK_MAX,
				 SVC_TRAFFIC_PAIRS_MAX);
	keys = malloc((n ? n : 1) * sizeof(*keys));
	if (!keys)
		return cm_errorf(err, ENOMEM, "rank_traffic: out of memory");
	for (const struct jv *p = a->u.kids.first; p && rc == 0;
	     p = p->next, k++)
		rc = check_pair(p, k, ranks, nranks, &keys[k], err);
	if (rc == 0) {
		qsort(keys, n, sizeof(*keys), cmp_u64);
		for (k = 1; k < n && rc == 0; k++)
			if (keys[k] == keys[k - 1])
				rc = cm_errorf(err, EINVAL, "rank_traffic.pairs:"
					       " (%llu, %llu) twice",
					       (unsigned long long)(keys[k] >> 20),
					       (unsigned long long)(keys[k] &
					       (SVC_TRAFFIC_RANK_MAX - 1)));
	}
	free(keys);
	return rc;
}

int svc_result_validate_traffic(const struct jv *doc, struct cm_error *err)
{
	const struct jv *t = get(doc, "rank_traffic"), *src, *ranks, *pairs;
	uint64_t *sorted = NULL;
	int rc;

	if (!t)
		return 0;
	if (!is(t, JV_OBJECT))
		return cm_errorf(err, EINVAL, "rank_traffic: expected an "
				 "object");
	src = get(t, "source");
	if (!is(src, JV_STRING) || src->u.str.len == 0 ||
	    src->u.str.len > 32 || src->has_nul)
		return cm_errorf(err, EINVAL, "rank_traffic.source: expected a "
				 "name of 1 to 32 bytes (ompi-monitoring)");
	ranks = get(t, "ranks");
	pairs = get(t, "pairs");
	if (!is(ranks, JV_ARRAY))
		return cm_errorf(err, EINVAL, "rank_traffic.ranks: expected an "
				 "array of ranks");
	if (!is(pairs, JV_ARRAY))
		return cm_errorf(err, EINVAL, "rank_traffic.pairs: expected an "
				 "array of [src, dst, bytes, messages]");
	if (check_ranks(ranks, &sorted, err) < 0)
		return -1;
	rc = check_pairs(pairs, sorted, ranks->u.kids.n, err);
	free(sorted);
	return rc;
}
