/* test_matrix_gen.c: synthetic patterns (lib/matrix_gen.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/matrix.h"
#include "commap/matrix_gen.h"
#include "tap.h"

static struct cm_matrix *gen(const char *pat, int n, uint64_t seed,
			     uint64_t shuffle)
{
	struct cm_matrix *m = NULL;
	struct cm_error err = { "" };

	if (cm_matrix_generate(pat, n, seed, shuffle, &m, &err) < 0)
		diag("generate %s %d: %s", pat, n, err.text);
	return m;
}

/* Number of threads with each degree 0..maxdeg (others counted in the
 * last bucket). */
static void degree_hist(const struct cm_matrix *m, int *hist, int maxdeg)
{
	memset(hist, 0, (size_t)(maxdeg + 1) * sizeof(*hist));
	for (int i = 0; i < cm_matrix_nthreads(m); i++) {
		const struct cm_matrix_entry *e;
		int d = cm_matrix_row(m, i, &e);

		hist[d > maxdeg ? maxdeg : d]++;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorted multiset of (degree, row sum) pairs encoded as doubles. */
static double *row_signature(const struct cm_matrix *m)
{
	int n = cm_matrix_nthreads(m);
	double *s = malloc((size_t)(n ? n : 1) * sizeof(*s));

	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *e;
		int d = cm_matrix_row(m, i, &e);

		s[i] = d * 1e6 + cm_matrix_row_sum(m, i);
	}
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	return s;
}

static int same_matrix(const struct cm_matrix *a, const struct cm_matrix *b)
{
	int n = cm_matrix_nthreads(a);

	if (n != cm_matrix_nthreads(b) ||
	    cm_matrix_nedges(a) != cm_matrix_nedges(b))
		return 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (cm_matrix_get(a, i, j) != cm_matrix_get(b, i, j))
				return 0;
	return 1;
}

static void test_structure(void)
{
	struct cm_matrix *m;
	int h[8];

	/* 12 = 3 x 4 grid: 4 corners (deg 2), 6 edge cells (3), 2 inner. */
	m = gen("stencil2d", 12, 0, 0);
	is_int(cm_matrix_nedges(m), 3 * 3 + 2 * 4, "stencil2d 12: 3x4 edges");
	degree_hist(m, h, 7);
	ok(h[2] == 4 && h[3] == 6 && h[4] == 2, "stencil2d 12: degrees");
	ok(cm_matrix_get(m, 0, 4) == 1 && cm_matrix_get(m, 3, 4) == 0,
	   "stencil2d 12: rows of 4 (r <= c), non-periodic");
	cm_matrix_free(m);
	m = gen("stencil2d", 7, 0, 0);
	is_int(cm_matrix_nedges(m), 6, "stencil2d prime n: a 1 x n line");
	cm_matrix_free(m);
	m = gen("stencil2d", 64, 0, 0);
	is_int(cm_matrix_nedges(m), 2 * 8 * 7, "stencil2d 64: 8x8");
	cm_matrix_free(m);

	/* 64 = 4 x 4 x 4: 3 * 16 * 3 edges, 8 corners of degree 3. */
	m = gen("stencil3d", 64, 0, 0);
	is_int(cm_matrix_nedges(m), 3 * 16 * 3, "stencil3d 64: 4x4x4 edges");
	degree_hist(m, h, 7);
	ok(h[3] == 8 && h[6] == 8, "stencil3d 64: 8 corners, 8 inner");
	cm_matrix_free(m);
	m = gen("stencil3d", 12, 0, 0);	/* 2 x 2 x 3 */
	is_int(cm_matrix_nedges(m), 4 * 2 + 6 * 1 + 6 * 1,
	       "stencil3d 12: 2x2x3 edges");
	cm_matrix_free(m);

	m = gen("ring", 10, 0, 0);
	degree_hist(m, h, 7);
	ok(cm_matrix_nedges(m) == 10 && h[2] == 10, "ring 10: degree 2");
	ok(cm_matrix_get(m, 9, 0) == 1, "ring wraps around");
	cm_matrix_free(m);
	m = gen("ring", 2, 0, 0);
	ok(cm_matrix_nedges(m) == 1 && cm_matrix_get(m, 0, 1) == 1,
	   "ring 2: one edge of weight 1");
	cm_matrix_free(m);

	m = gen("pairs", 7, 0, 0);
	degree_hist(m, h, 7);
	ok(cm_matrix_nedges(m) == 3 && h[1] == 6 && h[0] == 1,
	   "pairs 7: 3 pairs, last alone");
	ok(cm_matrix_get(m, 4, 5) == 1 && cm_matrix_get(m, 5, 6) == 0,
	   "pairs are (2k, 2k+1)");
	cm_matrix_free(m);

	m = gen("clusters:4", 16, 0, 0);
	is_int(cm_matrix_nedges(m), 24 + 16,
	       "clusters:4 16: 24 heavy edges + a ring of 4 x 4 light ones");
	is_double(cm_matrix_get(m, 0, 3), 1, 0, "inside a group: 1");
	is_double(cm_matrix_get(m, 4, 7), 1, 0, "inside group 1: 1");
	is_double(cm_matrix_get(m, 1, 5), 0.01, 0,
		  "thread r of group 0 to thread r of group 1: 0.01");
	is_double(cm_matrix_get(m, 12, 0), 0.01, 0,
		  "the last group wraps to the first");
	is_double(cm_matrix_get(m, 3, 4), 0, 0, "no other cross-group link");
	is_double(cm_matrix_get(m, 0, 8), 0, 0, "no link two groups away");
	is_double(cm_matrix_total(m), 24 + 16 * 0.01, 1e-12,
		  "clusters total: 24 heavy + 16 light");
	degree_hist(m, h, 7);
	is_int(h[5], 16, "clusters: 3 mates and 2 ring neighbours each");
	cm_matrix_free(m);
	m = gen("clusters:4", 10, 0, 0);
	ok(m && cm_matrix_get(m, 8, 9) == 1 && cm_matrix_get(m, 4, 8) == 0.01 &&
	   cm_matrix_get(m, 8, 0) == 0.01 && cm_matrix_get(m, 7, 8) == 0,
	   "clusters: last group smaller, linked on both sides");
	cm_matrix_free(m);
	m = gen("clusters:4", 8, 0, 0);
	is_int(cm_matrix_nedges(m), 12 + 4,
	       "clusters: two groups are linked once, not twice");
	cm_matrix_free(m);
	m = gen("clusters:5", 5, 0, 0);
	is_int(cm_matrix_nedges(m), 10, "clusters: one group, no background");
	cm_matrix_free(m);

	m = gen("all2all", 9, 0, 0);
	is_int(cm_matrix_nedges(m), 36, "all2all 9: 36 edges");
	cm_matrix_free(m);

	m = gen("random", 200, 5, 0);
	{
		double mn = 1e9, mx = 0;

		for (int i = 0; i < 200; i++) {
			const struct cm_matrix_entry *e;
			int d = cm_matrix_row(m, i, &e);

			for (int k = 0; k < d; k++) {
				mn = e[k].w < mn ? e[k].w : mn;
				mx = e[k].w > mx ? e[k].w : mx;
			}
		}
		ok(mn >= 1 && mx < 10, "random weights in [1, 10)");
		ok(cm_matrix_nedges(m) > 300 && cm_matrix_nedges(m) <= 400,
		   "random: about 2 edges per thread (%zu)",
		   cm_matrix_nedges(m));
	}
	cm_matrix_free(m);
}

static void test_small_n(void)
{
	static const char *const pats[] = {
		"stencil2d", "stencil3d", "ring", "pairs", "clusters:1",
		"all2all", "random",
	};

	for (size_t p = 0; p < sizeof(pats) / sizeof(pats[0]); p++) {
		for (int n = 0; n <= 2; n++) {
			struct cm_matrix *m = gen(pats[p], n, 1, 3);

			ok(m && cm_matrix_nthreads(m) == n &&
			   cm_matrix_nedges(m) <= (size_t)(n == 2),
			   "%s n=%d: generated, at most %d edge", pats[p], n,
			   n == 2);
			cm_matrix_free(m);
		}
	}
}

static void test_shuffle_and_determinism(void)
{
	static const char *const pats[] = {
		"stencil2d", "stencil3d", "clusters:8", "random", "pairs",
	};

	for (size_t p = 0; p < sizeof(pats) / sizeof(pats[0]); p++) {
		struct cm_matrix *a = gen(pats[p], 48, 9, 0);
		struct cm_matrix *s = gen(pats[p], 48, 9, 7);
		struct cm_matrix *s2 = gen(pats[p], 48, 9, 7);
		struct cm_matrix *t = gen(pats[p], 48, 9, 8);
		double *sa = row_signature(a), *ss = row_signature(s);
		int same = 1;

		for (int i = 0; i < 48; i++)
			same &= sa[i] == ss[i];
		ok(same && cm_matrix_nedges(a) == cm_matrix_nedges(s),
		   "%s: shuffle keeps degree/row-sum multiset", pats[p]);
		is_double(cm_matrix_total(s), cm_matrix_total(a), 1e-9,
			  "shuffle keeps total");
		ok(!same_matrix(a, s), "%s: shuffle changes numbering",
		   pats[p]);
		ok(same_matrix(s, s2), "%s: same seeds, same matrix", pats[p]);
		ok(!same_matrix(s, t), "%s: other shuffle seed differs",
		   pats[p]);
		free(sa);
		free(ss);
		cm_matrix_free(a);
		cm_matrix_free(s);
		cm_matrix_free(s2);
		cm_matrix_free(t);
	}
	struct cm_matrix *r1 = gen("random", 64, 1, 0);
	struct cm_matrix *r2 = gen("random", 64, 2, 0);
	struct cm_matrix *r0 = gen("random", 64, 0, 0);

	ok(!same_matrix(r1, r2), "random: seed changes the matrix");
	ok(r0 && cm_matrix_nedges(r0) > 0, "random: seed 0 allowed");
	cm_matrix_free(r0);
	cm_matrix_free(r1);
	cm_matrix_free(r2);
}

static void test_errors(void)
{
	static const struct {
		const char *pat;
		int n;
		const char *frag;
	} bad[] = {
		{ "bogus", 8, "unknown pattern 'bogus'" },
		{ "", 8, "unknown pattern ''" },
		{ "ringo", 8, "unknown pattern 'ringo'" },
		{ "ring:3", 8, "'ring' takes no parameter" },
		{ "clusters", 8, "needs a group size" },
		{ "clusters:", 8, "needs a group size" },
		{ "clusters:0", 8, "clusters:0: group size K" },
		{ "clusters:-2", 8, "clusters:-2: group size K" },
		{ "clusters:4x", 8, "clusters:4x: group size K" },
		{ "clusters:9", 8, "larger than the 8 threads" },
		{ "ring", -1, "bad number of threads -1" },
		{ "ring", (1 << 20) + 1, "bad number of threads 1048577" },
		{ "all2all", 100000, "would need" },
		{ "all2all", 10000, "would need 49995000 edges" },
	};

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct cm_matrix *m = NULL;
		struct cm_error err = { "" };
		int rc;

		errno = 0;
		rc = cm_matrix_generate(bad[k].pat, bad[k].n, 0, 0, &m, &err);
		ok(rc == -1 && errno == EINVAL && m == NULL &&
		   strstr(err.text, bad[k].frag),
		   "'%s' n=%d rejected: %s", bad[k].pat, bad[k].n, err.text);
	}
	struct cm_matrix *m = NULL;

	ok(cm_matrix_generate("nope", 4, 0, 0, &m, NULL) == -1 && !m,
	   "NULL err allowed on error");
	ok(cm_matrix_generate("ring", 4, 0, 0, &m, NULL) == 0 && m,
	   "NULL err allowed on success");
	cm_matrix_free(m);
}

int main(void)
{
	test_structure();
	test_small_n();
	test_shuffle_and_determinism();
	test_errors();
	return done_testing();
}
