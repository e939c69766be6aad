/* test_matrix.c: the sparse symmetric matrix (lib/matrix.c). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "commap/matrix.h"
#include "commap/rand.h"
#include "tap.h"

/* Every row entry agrees with get(), mirrored rows agree, no column twice,
 * and the entry count matches nedges. */
static int matrix_consistent(const struct cm_matrix *m)
{
	int n = cm_matrix_nthreads(m);
	size_t half = 0;

	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(m, i, &e);

		for (int k = 0; k < len; k++) {
			if (e[k].col < 0 || e[k].col >= n || e[k].col == i)
				return 0;
			if (!(e[k].w > 0))
				return 0;
			if (cm_matrix_get(m, i, e[k].col) != e[k].w ||
			    cm_matrix_get(m, e[k].col, i) != e[k].w)
				return 0;
			for (int q = 0; q < k; q++)
				if (e[q].col == e[k].col)
					return 0;
			half++;
		}
	}
	return half == 2 * cm_matrix_nedges(m);
}

static void test_empty_and_one(void)
{
	struct cm_matrix *m = cm_matrix_new(0);
	const struct cm_matrix_entry *e;
	struct cm_matrix_entry top[2];

	ok(m != NULL, "n=0: created");
	is_int(cm_matrix_nthreads(m), 0, "n=0: nthreads");
	is_int(cm_matrix_nedges(m), 0, "n=0: no edges");
	is_double(cm_matrix_total(m), 0, 0, "n=0: total 0");
	is_double(cm_matrix_max(m), 0, 0, "n=0: max 0");
	is_int(cm_matrix_row(m, 0, &e), 0, "n=0: row 0 out of range is empty");
	errno = 0;
	ok(cm_matrix_add(m, 0, 1, 1) == -1 && errno == EINVAL,
	   "n=0: add is EINVAL");
	ok(cm_matrix_age(m, 0.5) == 0, "n=0: age ok");
	cm_matrix_normalize(m);
	is_double(cm_matrix_cosine(m, m), 0, 0, "n=0: cosine 0");
	ok(cm_matrix_resize(m, 3) == 0 && cm_matrix_nthreads(m) == 3,
	   "n=0: resize to 3");
	ok(cm_matrix_add(m, 0, 2, 1) == 0, "after resize: add works");
	cm_matrix_free(m);

	m = cm_matrix_new(1);
	is_int(cm_matrix_nthreads(m), 1, "n=1: nthreads");
	errno = 0;
	ok(cm_matrix_add(m, 0, 0, 1) == -1 && errno == EINVAL,
	   "n=1: diagonal add is EINVAL");
	is_double(cm_matrix_row_sum(m, 0), 0, 0, "n=1: row sum 0");
	is_int(cm_matrix_top_partners(m, 0, 2, top), 0, "n=1: no partners");
	cm_matrix_free(m);

	errno = 0;
	ok(cm_matrix_new(-1) == NULL && errno == EINVAL, "n=-1: EINVAL");
	cm_matrix_free(NULL);
	ok(1, "free(NULL) is a no-op");
}

static void test_bad_args(void)
{
	struct cm_matrix *m = cm_matrix_new(4);
	static const struct {
		int i, j;
		double w;
		const char *what;
	} bad[] = {
		{ 1, 1, 1, "i == j" },
		{ -1, 2, 1, "negative index" },
		{ 0, 4, 1, "index == n" },
		{ 4, 0, 1, "row index == n" },
		{ 0, 1, -1, "negative weight" },
		{ 0, 1, -0.0 - 1e-300, "tiny negative weight" },
		{ 0, 1, NAN, "NaN weight" },
		{ 0, 1, INFINITY, "inf weight" },
		{ 0, 1, -INFINITY, "-inf weight" },
	};

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		errno = 0;
		ok(cm_matrix_add(m, bad[k].i, bad[k].j, bad[k].w) == -1 &&
		   errno == EINVAL, "add: %s -> EINVAL", bad[k].what);
		errno = 0;
		ok(cm_matrix_set(m, bad[k].i, bad[k].j, bad[k].w) == -1 &&
		   errno == EINVAL, "set: %s -> EINVAL", bad[k].what);
	}
	is_int(cm_matrix_nedges(m), 0, "bad args changed nothing");
	is_double(cm_matrix_get(m, 2, 2), 0, 0, "get diagonal is 0");
	is_double(cm_matrix_get(m, -1, 2), 0, 0, "get out of range is 0");
	is_double(cm_matrix_get(m, 1, 9), 0, 0, "get past n is 0");
	errno = 0;
	ok(cm_matrix_resize(m, 3) == -1 && errno == EINVAL,
	   "resize smaller is EINVAL");
	errno = 0;
	ok(cm_matrix_age(m, 1.5) == -1 && errno == EINVAL, "age 1.5 EINVAL");
	errno = 0;
	ok(cm_matrix_age(m, -0.1) == -1 && errno == EINVAL, "age <0 EINVAL");
	errno = 0;
	ok(cm_matrix_age(m, NAN) == -1 && errno == EINVAL, "age NaN EINVAL");
	cm_matrix_free(m);
}

static void test_basic(void)
{
	struct cm_matrix *m = cm_matrix_new(5);
	const struct cm_matrix_entry *e;
	int len;

	ok(cm_matrix_add(m, 0, 1, 2) == 0, "add (0,1) 2");
	ok(cm_matrix_add(m, 1, 0, 3) == 0, "add (1,0) 3");
	is_double(cm_matrix_get(m, 0, 1), 5, 0, "add sums both orders");
	is_double(cm_matrix_get(m, 1, 0), 5, 0, "symmetric");
	is_int(cm_matrix_nedges(m), 1, "one edge");
	ok(cm_matrix_add(m, 2, 3, 0) == 0, "add of 0 accepted");
	is_int(cm_matrix_nedges(m), 1, "add of 0 creates no edge");
	cm_matrix_set(m, 1, 4, 7);
	cm_matrix_set(m, 3, 1, 1);
	len = cm_matrix_row(m, 1, &e);
	is_int(len, 3, "row 1 has 3 entries");
	is_double(cm_matrix_row_sum(m, 1), 13, 0, "row sum 1");
	is_double(cm_matrix_row_sum(m, 2), 0, 0, "row sum of lone thread");
	is_double(cm_matrix_total(m), 13, 0, "total over i < j");
	is_double(cm_matrix_max(m), 7, 0, "max");
	ok(cm_matrix_set(m, 4, 1, 0) == 0, "set 0 removes");
	is_int(cm_matrix_nedges(m), 2, "edge removed");
	is_double(cm_matrix_get(m, 1, 4), 0, 0, "removed edge reads 0");
	is_int(cm_matrix_row(m, 4, &e), 0, "row 4 empty after removal");
	ok(cm_matrix_set(m, 2, 4, 0) == 0 && cm_matrix_nedges(m) == 2,
	   "set 0 on an absent edge is a no-op");
	ok(cm_matrix_set(m, 0, 1, 0.5) == 0 && cm_matrix_get(m, 1, 0) == 0.5,
	   "set overwrites");
	ok(matrix_consistent(m), "rows consistent");
	cm_matrix_free(m);
}

/* Random operations against a dense reference. */
static void test_against_dense(void)
{
	enum { N = 37, OPS = 20000 };
	double *ref = calloc(N * N, sizeof(*ref));
	struct cm_matrix *m = cm_matrix_new(N);
	uint64_t st = 42;
	int bad = 0;
	size_t edges = 0;
	double total = 0;

	for (int op = 0; op < OPS; op++) {
		int i = (int)cm_rand_below(&st, N);
		int j = (int)cm_rand_below(&st, N);
		int kind = (int)cm_rand_below(&st, 10);
		double w = (double)cm_rand_below(&st, 8);

		if (i == j)
			continue;
		if (kind < 6) {
			cm_matrix_add(m, i, j, w);
			ref[i * N + j] += w;
		} else if (kind < 9) {
			cm_matrix_set(m, i, j, 0);
			ref[i * N + j] = 0;
		} else {
			cm_matrix_set(m, i, j, w);
			ref[i * N + j] = w;
		}
		ref[j * N + i] = ref[i * N + j];
	}
	for (int i = 0; i < N; i++) {
		for (int j = 0; j < N; j++) {
			if (cm_matrix_get(m, i, j) != ref[i * N + j])
				bad++;
			if (i < j && ref[i * N + j] > 0) {
				edges++;
				total += ref[i * N + j];
			}
		}
	}
	is_int(bad, 0, "random add/set/remove matches dense reference");
	is_int(cm_matrix_nedges(m), edges, "edge count matches reference");
	is_double(cm_matrix_total(m), total, 1e-9, "total matches reference");
	ok(matrix_consistent(m), "rows consistent after 20000 random ops");

	struct cm_matrix *d = cm_matrix_dup(m);

	ok(d && matrix_consistent(d), "dup is consistent");
	is_double(cm_matrix_cosine(m, d), 1, 1e-12, "dup is identical");
	cm_matrix_set(d, 0, 1, 1000);
	ok(cm_matrix_get(m, 0, 1) == ref[1], "dup does not share storage");
	cm_matrix_free(d);
	cm_matrix_free(m);
	free(ref);
}

static void test_huge(void)
{
	struct cm_matrix *m = cm_matrix_new(4);

	cm_matrix_add(m, 0, 1, 1e300);
	cm_matrix_add(m, 0, 2, 1e308);
	cm_matrix_add(m, 0, 3, 1e308);
	cm_matrix_add(m, 1, 2, 1e308);
	is_double(cm_matrix_get(m, 0, 1), 1e300, 0, "1e300 stored exactly");
	errno = 0;
	ok(cm_matrix_add(m, 0, 2, 1e308) == -1 && errno == ERANGE,
	   "add overflowing to inf is ERANGE");
	is_double(cm_matrix_get(m, 0, 2), 1e308, 0,
		  "failed add leaves the edge unchanged");
	ok(isfinite(cm_matrix_row_sum(m, 0)) &&
	   cm_matrix_row_sum(m, 0) == DBL_MAX,
	   "row sum saturates at DBL_MAX instead of inf");
	ok(cm_matrix_total(m) == DBL_MAX, "total saturates at DBL_MAX");
	is_double(cm_matrix_cosine(m, m), 1, 1e-12,
		  "cosine of huge matrix with itself is 1 (no overflow)");
	struct cm_matrix *d = cm_matrix_dup(m);

	errno = 0;
	ok(cm_matrix_merge(d, m, 1) == -1 && errno == ERANGE,
	   "merge that would overflow is ERANGE");
	ok(cm_matrix_get(d, 0, 1) == 1e300,
	   "failed merge changed nothing");
	cm_matrix_normalize(m);
	is_double(cm_matrix_max(m), 1, 0, "normalize: max 1");
	is_double(cm_matrix_get(m, 0, 1), 1e-8, 1e-20, "normalize keeps ratio");
	ok(cm_matrix_row_sum(m, 0) < 3, "normalized row sum finite");
	cm_matrix_free(d);
	cm_matrix_free(m);

	/* Subnormal maximum: normalize must not divide by overflow. */
	m = cm_matrix_new(3);
	cm_matrix_set(m, 0, 1, 4e-320);
	cm_matrix_set(m, 1, 2, 2e-320);
	cm_matrix_normalize(m);
	is_double(cm_matrix_get(m, 0, 1), 1, 0, "subnormal normalize: max 1");
	is_double(cm_matrix_get(m, 1, 2), 0.5, 1e-3, "subnormal ratio kept");
	cm_matrix_free(m);
}

static void test_zero_matrix(void)
{
	struct cm_matrix *z = cm_matrix_new(6), *o = cm_matrix_new(6);
	struct cm_matrix_entry top[3];

	cm_matrix_set(o, 0, 5, 1);
	is_double(cm_matrix_total(z), 0, 0, "zero matrix: total");
	cm_matrix_normalize(z);
	is_int(cm_matrix_nedges(z), 0, "zero matrix: normalize no-op");
	is_double(cm_matrix_cosine(z, o), 0, 0, "cosine with zero is 0");
	is_double(cm_matrix_cosine(o, z), 0, 0, "cosine with zero is 0 (rev)");
	is_int(cm_matrix_top_partners(z, 3, 3, top), 0, "zero: no partners");
	cm_matrix_free(z);
	cm_matrix_free(o);
}

static void test_age(void)
{
	struct cm_matrix *m = cm_matrix_new(4);
	int rounds = 0;

	cm_matrix_set(m, 0, 1, 1000);
	cm_matrix_set(m, 2, 3, 1e-3);
	cm_matrix_set(m, 1, 2, 4);
	ok(cm_matrix_age(m, 0.75) == 0, "age 0.75");
	is_double(cm_matrix_get(m, 0, 1), 750, 1e-12, "aged by alpha");
	is_double(cm_matrix_get(m, 2, 1), 3, 1e-12, "aged symmetric");
	is_int(cm_matrix_nedges(m), 3, "no edge dropped yet");
	ok(cm_matrix_age(m, 1) == 0 && cm_matrix_get(m, 0, 1) == 750,
	   "alpha 1 changes nothing");
	/* Keep (0,1) alive, let the others decay: they must disappear. */
	while (cm_matrix_nedges(m) > 1 && rounds < 1000) {
		cm_matrix_age(m, 0.5);
		cm_matrix_add(m, 0, 1, 1000);
		rounds++;
	}
	is_int(cm_matrix_nedges(m), 1, "aging drops decayed edges");
	ok(rounds < 100, "dropped after %d rounds (bounded)", rounds);
	ok(cm_matrix_get(m, 0, 1) > 0, "live edge kept");
	ok(matrix_consistent(m), "rows consistent after aging");
	ok(cm_matrix_age(m, 0) == 0 && cm_matrix_nedges(m) == 0,
	   "alpha 0 clears the matrix");

	/* Aging must drop many edges of one row without skipping any. */
	struct cm_matrix *s = cm_matrix_new(50);

	for (int j = 1; j < 50; j++)
		cm_matrix_set(s, 0, j, j == 25 ? 1e12 : 1e-3);
	cm_matrix_age(s, 0.5);
	is_int(cm_matrix_nedges(s), 1, "age drops all tiny edges of a row");
	ok(matrix_consistent(s), "consistent after mass drop");
	cm_matrix_free(s);
	cm_matrix_free(m);
}

static void test_merge(void)
{
	struct cm_matrix *a = cm_matrix_new(3), *b = cm_matrix_new(6);

	cm_matrix_set(a, 0, 1, 1);
	cm_matrix_set(b, 0, 1, 2);
	cm_matrix_set(b, 4, 5, 3);
	ok(cm_matrix_merge(a, b, 0.5) == 0, "merge");
	is_int(cm_matrix_nthreads(a), 6, "merge grows dst to src size");
	is_double(cm_matrix_get(a, 0, 1), 2, 0, "merged weight 1 + 0.5*2");
	is_double(cm_matrix_get(a, 5, 4), 1.5, 0, "new edge merged");
	ok(cm_matrix_merge(b, a, 1) == 0 && cm_matrix_nthreads(b) == 6,
	   "merge into larger keeps size");
	errno = 0;
	ok(cm_matrix_merge(a, b, -1) == -1 && errno == EINVAL,
	   "negative scale EINVAL");
	errno = 0;
	ok(cm_matrix_merge(a, b, NAN) == -1 && errno == EINVAL,
	   "NaN scale EINVAL");
	ok(cm_matrix_merge(a, b, 0) == 0 && cm_matrix_get(a, 0, 1) == 2,
	   "scale 0 adds nothing");
	ok(matrix_consistent(a) && matrix_consistent(b), "consistent");
	cm_matrix_free(a);
	cm_matrix_free(b);
}

static void test_top_partners(void)
{
	struct cm_matrix *m = cm_matrix_new(8);
	struct cm_matrix_entry top[8];
	int got;

	cm_matrix_set(m, 3, 7, 5);
	cm_matrix_set(m, 3, 1, 2);
	cm_matrix_set(m, 3, 6, 5);	/* tie with 7: 6 first */
	cm_matrix_set(m, 3, 0, 9);
	cm_matrix_set(m, 3, 2, 2);	/* tie with 1: 1 first */
	got = cm_matrix_top_partners(m, 3, 8, top);
	is_int(got, 5, "all 5 partners when k > degree");
	ok(got == 5 && top[0].col == 0 && top[1].col == 6 &&
	   top[2].col == 7 && top[3].col == 1 && top[4].col == 2,
	   "order: heaviest first, ties lower index first");
	is_double(top[0].w, 9, 0, "weight reported");
	got = cm_matrix_top_partners(m, 3, 2, top);
	ok(got == 2 && top[0].col == 0 && top[1].col == 6, "k=2 truncates");
	is_int(cm_matrix_top_partners(m, 3, 0, top), 0, "k=0 gives none");
	is_int(cm_matrix_top_partners(m, 99, 3, top), 0, "bad row gives none");
	cm_matrix_free(m);
}

static void test_cosine(void)
{
	struct cm_matrix *a = cm_matrix_new(4), *b = cm_matrix_new(4);
	struct cm_matrix *c = cm_matrix_new(6);

	cm_matrix_set(a, 0, 1, 1);
	cm_matrix_set(a, 2, 3, 2);
	cm_matrix_set(b, 0, 1, 3);
	cm_matrix_set(b, 2, 3, 6);
	is_double(cm_matrix_cosine(a, b), 1, 1e-12, "proportional: 1");
	cm_matrix_set(c, 0, 2, 1);
	cm_matrix_set(c, 4, 5, 1);
	is_double(cm_matrix_cosine(a, c), 0, 0, "disjoint: 0");
	cm_matrix_set(c, 0, 1, 1);
	is_double(cm_matrix_cosine(a, c), 1 / (sqrt(5) * sqrt(3)), 1e-12,
		  "partial overlap, padded smaller matrix");
	is_double(cm_matrix_cosine(c, a), cm_matrix_cosine(a, c), 1e-15,
		  "cosine is symmetric");
	cm_matrix_free(a);
	cm_matrix_free(b);
	cm_matrix_free(c);
}

/* Many edges: the index grows and rows stay consistent. */
static void test_large(void)
{
	enum { N = 600 };
	struct cm_matrix *m = cm_matrix_new(N);
	size_t want = 0;

	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j += 3) {
			cm_matrix_add(m, i, j, 1);
			want++;
		}
	is_int(cm_matrix_nedges(m), want, "large: edge count");
	is_double(cm_matrix_total(m), (double)want, 0, "large: total");
	for (int i = 0; i < N; i += 2)
		for (int j = i + 1; j < N; j += 3)
			cm_matrix_set(m, i, j, 0);
	ok(matrix_consistent(m), "large: consistent after removing half");
	cm_matrix_free(m);
}

int main(void)
{
	test_empty_and_one();
	test_bad_args();
	test_basic();
	test_against_dense();
	test_huge();
	test_zero_matrix();
	test_age();
	test_merge();
	test_top_partners();
	test_cosine();
	test_large();
	return done_testing();
}
