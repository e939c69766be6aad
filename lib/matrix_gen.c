/* matrix_gen.c: synthetic communication patterns (commap/matrix_gen.h).
 *
 * Choices the header leaves open, fixed here so results are reproducible:
 *  - stencil2d: r is the largest divisor of n with r * r <= n, c = n / r;
 *    thread t sits at (t / c, t % c).  A prime n gives a 1 x n line.
 *  - stencil3d: a is the largest divisor of n with a^3 <= n, then b x c is
 *    the most square split of n / a (b <= c); thread t sits at
 *    (t / (b c), (t / c) % b, t % c).
 *  - clusters:K: groups [gK, gK + K) (the last one may be smaller),
 *    1 <= K <= n; all-to-all weight 1 inside a group.  The background
 *    (weight 0.01) links thread r of group g with thread r of group g + 1
 *    (the last group wraps to group 0): the groups form a ring of light
 *    links, as in a code whose subdomains exchange a little with their
 *    neighbours.  It keeps the matrix sparse (about n (K + 1) / 2 edges),
 *    so clusters measure mapping speed on sparse input like the others.
 *  - random: for each thread i, two draws of a partner j; a draw equal to
 *    i or to an existing edge is skipped, otherwise (i, j) gets a weight
 *    uniform in [1, 10).  Average degree is about 4.
 *  - Patterns whose edge count would exceed GEN_MAX_EDGES are refused
 *    (all2all grows as n^2: at most n = 8192).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "commap/matrix_gen.h"
#include "commap/matrix_io.h"
#include "commap/rand.h"

#define GEN_MAX_EDGES ((size_t)1 << 25)
#define BACKGROUND_WEIGHT 0.01

/* Largest divisor d of n with d^k <= n (k = 2 or 3); 1 for n <= 1. */
static int largest_root_divisor(int n, int k)
{
	int best = 1;

	for (long long d = 1; d * d * (k == 3 ? d : 1) <= n; d++) {
		if (n % d == 0)
			best = (int)d;
	}
	return best;
}

static int gen_stencil2d(struct cm_matrix *m, int n)
{
	int r = largest_root_divisor(n, 2), c = n ? n / r : 0;

	for (int y = 0; y < r; y++) {
		for (int x = 0; x < c; x++) {
			int t = y * c + x;

			if (x + 1 < c && cm_matrix_set(m, t, t + 1, 1) < 0)
				return -1;
			if (y + 1 < r && cm_matrix_set(m, t, t + c, 1) < 0)
				return -1;
		}
	}
	return 0;
}

static int gen_stencil3d(struct cm_matrix *m, int n)
{
	int a = largest_root_divisor(n, 3);
	int b = largest_root_divisor(n ? n / a : 0, 2);
	int c = n ? n / a / b : 0;

	for (int t = 0; t < n; t++) {
		int x = t / (b * c), y = (t / c) % b, z = t % c;

		if (z + 1 < c && cm_matrix_set(m, t, t + 1, 1) < 0)
			return -1;
		if (y + 1 < b && cm_matrix_set(m, t, t + c, 1) < 0)
			return -1;
		if (x + 1 < a && cm_matrix_set(m, t, t + b * c, 1) < 0)
			return -1;
	}
	return 0;
}

static int gen_ring(struct cm_matrix *m, int n)
{
	/* set, not add: with n == 2 both directions are the same edge. */
	for (int i = 0; n > 1 && i < n; i++) {
		if (cm_matrix_set(m, i, (i + 1) % n, 1) < 0)
			return -1;
	}
	return 0;
}

static int gen_pairs(struct cm_matrix *m, int n)
{
	for (int i = 0; i + 1 < n; i += 2) {
		if (cm_matrix_set(m, i, i + 1, 1) < 0)
			return -1;
	}
	return 0;
}

static int gen_cluster_block(struct cm_matrix *m, int first, int end)
{
	for (int i = first; i < end; i++)
		for (int j = i + 1; j < end; j++)
			if (cm_matrix_set(m, i, j, 1) < 0)
				return -1;
	return 0;
}

static int gen_clusters(struct cm_matrix *m, int n, int k)
{
	int ngroups = (n + k - 1) / k;

	for (int g = 0; g < ngroups; g++) {
		int first = g * k, end = first + k < n ? first + k : n;
		int next = g + 1 < ngroups ? (g + 1) * k : 0;

		if (gen_cluster_block(m, first, end) < 0)
			return -1;
		if (ngroups < 2)
			continue;
		/* Set, not add: with two groups, g -> g + 1 and the wrap
		 * name the same pairs. */
		for (int r = 0; r < end - first && next + r < n; r++)
			if (next + r != first + r &&
			    cm_matrix_set(m, first + r, next + r,
					  BACKGROUND_WEIGHT) < 0)
				return -1;
	}
	return 0;
}

static int gen_all2all(struct cm_matrix *m, int n)
{
	for (int i = 0; i < n; i++) {
		for (int j = i + 1; j < n; j++) {
			if (cm_matrix_set(m, i, j, 1) < 0)
				return -1;
		}
	}
	return 0;
}

static int gen_random(struct cm_matrix *m, int n, uint64_t seed)
{
	uint64_t st = seed;

	for (int i = 0; i < n; i++) {
		for (int d = 0; d < 2; d++) {
			int j = (int)cm_rand_below(&st, (uint64_t)n);
			/* 53 random bits: a double uniform in [0, 1). */
			double u = (double)(cm_rand_next(&st) >> 11) *
				   0x1.0p-53;

			if (j == i || cm_matrix_get(m, i, j) > 0)
				continue;
			if (cm_matrix_set(m, i, j, 1 + 9 * u) < 0)
				return -1;
		}
	}
	return 0;
}

/* Relabel thread t as perm[t] with a seeded permutation. */
static struct cm_matrix *shuffled(const struct cm_matrix *m, uint64_t seed)
{
	int n = cm_matrix_nthreads(m);
	int *perm = malloc((n ? (size_t)n : 1) * sizeof(*perm));
	struct cm_matrix *s = cm_matrix_new(n);
	uint64_t st = seed;

	if (!perm || !s)
		goto fail;
	for (int i = 0; i < n; i++)
		perm[i] = i;
	cm_rand_shuffle(&st, perm, n);
	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(m, i, &e);

		for (int k = 0; k < len; k++) {
			if (e[k].col > i &&
			    cm_matrix_set(s, perm[i], perm[e[k].col],
					  e[k].w) < 0)
				goto fail;
		}
	}
	free(perm);
	return s;
fail:
	free(perm);
	cm_matrix_free(s);
	return NULL;
}

/* Parse the K of "clusters:K" (1 <= K <= max(n, 1)). */
static int parse_group_size(const char *s, int n, int *k,
			    struct cm_error *err)
{
	char *end;
	long v;

	if (!*s)
		return cm_errorf(err, EINVAL,
				 "pattern 'clusters' needs a group size: "
				 "clusters:K");
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v < 1 || v > INT_MAX)
		return cm_errorf(err, EINVAL,
				 "clusters:%s: group size K must be a "
				 "positive integer", s);
	if (n > 0 && v > n)
		return cm_errorf(err, EINVAL,
				 "clusters:%s: group size K is larger than "
				 "the %d threads", s, n);
	*k = (int)v;
	return 0;
}

enum pattern {
	PAT_STENCIL2D, PAT_STENCIL3D, PAT_RING, PAT_PAIRS, PAT_CLUSTERS,
	PAT_ALL2ALL, PAT_RANDOM,
};

static const char *const pattern_names[] = {
	[PAT_STENCIL2D] = "stencil2d", [PAT_STENCIL3D] = "stencil3d",
	[PAT_RING] = "ring", [PAT_PAIRS] = "pairs",
	[PAT_CLUSTERS] = "clusters", [PAT_ALL2ALL] = "all2all",
	[PAT_RANDOM] = "random",
};

/* The pattern named by spec ("name" or "clusters:K"); K in *k. */
static int parse_pattern(const char *spec, int n, enum pattern *p, int *k,
			 struct cm_error *err)
{
	size_t len = strcspn(spec, ":");

	for (int i = 0; i <= PAT_RANDOM; i++) {
		if (strlen(pattern_names[i]) != len ||
		    strncmp(spec, pattern_names[i], len) != 0)
			continue;
		*p = (enum pattern)i;
		if (i == PAT_CLUSTERS)
			return parse_group_size(spec[len] ? spec + len + 1 :
						spec + len, n, k, err);
		if (spec[len])
			return cm_errorf(err, EINVAL,
					 "pattern '%s' takes no parameter",
					 pattern_names[i]);
		return 0;
	}
	return cm_errorf(err, EINVAL,
			 "unknown pattern '%s' (known: stencil2d, stencil3d, "
			 "ring, pairs, clusters:K, all2all, random)", spec);
}

/* Refuse patterns that would not fit in memory. */
static int check_size(enum pattern p, int n, int k, struct cm_error *err)
{
	size_t edges = (size_t)n * 3;	/* sparse patterns */

	if (p == PAT_ALL2ALL)
		edges = (size_t)n * (size_t)(n > 0 ? n - 1 : 0) / 2;
	else if (p == PAT_CLUSTERS)
		edges = (size_t)n * ((size_t)k + 1) / 2;
	if (edges > GEN_MAX_EDGES)
		return cm_errorf(err, EINVAL,
				 "pattern '%s' with n = %d would need %zu "
				 "edges (at most %zu)", pattern_names[p], n,
				 edges, GEN_MAX_EDGES);
	return 0;
}

static int generate(struct cm_matrix *m, enum pattern p, int n, int k,
		    uint64_t seed)
{
	switch (p) {
	case PAT_STENCIL2D:
		return gen_stencil2d(m, n);
	case PAT_STENCIL3D:
		return gen_stencil3d(m, n);
	case PAT_RING:
		return gen_ring(m, n);
	case PAT_PAIRS:
		return gen_pairs(m, n);
	case PAT_CLUSTERS:
		return gen_clusters(m, n, k);
	case PAT_ALL2ALL:
		return gen_all2all(m, n);
	case PAT_RANDOM:
		return gen_random(m, n, seed);
	}
	return errno = EINVAL, -1;
}

int cm_matrix_generate(const char *pattern, int n, uint64_t seed,
		       uint64_t shuffle_seed, struct cm_matrix **out,
		       struct cm_error *err)
{
	struct cm_matrix *m, *s;
	enum pattern p = PAT_RING;
	int k = 1;

	if (!pattern)
		return cm_errorf(err, EINVAL, "no pattern given");
	if (n < 0 || n > CM_MATRIX_MAX_THREADS)
		return cm_errorf(err, EINVAL,
				 "bad number of threads %d (0 to %d)", n,
				 CM_MATRIX_MAX_THREADS);
	if (parse_pattern(pattern, n, &p, &k, err) < 0 ||
	    check_size(p, n, k, err) < 0)
		return -1;
	m = cm_matrix_new(n);
	if (!m || generate(m, p, n, k, seed) < 0)
		goto nomem;
	if (shuffle_seed) {
		s = shuffled(m, shuffle_seed);
		cm_matrix_free(m);
		m = s;
		if (!m)
			goto nomem;
	}
	*out = m;
	return 0;
nomem:
	cm_matrix_free(m);
	return cm_errorf(err, ENOMEM, "out of memory generating '%s'",
			 pattern);
}
