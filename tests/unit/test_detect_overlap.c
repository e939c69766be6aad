/* test_detect_overlap.c: the overlap of access distributions
 * (nodeagent/detect_overlap.c).
 *
 * Known answers: identical distributions overlap 1, disjoint ones 0, half
 * shared 0.5; the same addresses in two mappings do not overlap; 64 KiB
 * blocks apart overlap at 2 MiB only; aging weighs recent samples more.
 * Then synthetic samplings with a known structure: 4 groups of 3 threads
 * and a 1D stencil over a 64 MiB array are trusted and recovered (cosine
 * >= 0.95 against the truth), private work gives no weight, and
 * structureless noise is rejected by the permutation test in most trials.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "commap/matrix.h"
#include "detect_overlap.h"
#include "detect_table.h"
#include "evidence.h"
#include "tap.h"

#define MS 1000000ull
#define KIB 1024ull
#define MIB (1024ull * 1024)

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Private memory of process 1 in the mapping at region. */
static void add(struct cm_overlap *ov, struct cm_matrix *m, int th,
		uint64_t region, uint64_t addr, uint64_t t)
{
	if (cm_overlap_add(ov, m, th, 1, 0, region, addr, t) < 0)
		ok(0, "cm_overlap_add failed");
}

static double fine(struct cm_overlap *ov, int i, int j)
{
	struct cm_matrix *o = cm_matrix_new(0);
	double v;

	cm_overlap_matrix(ov, 0, o);
	v = cm_matrix_get(o, i, j);
	cm_matrix_free(o);
	return v;
}

static void test_known(void)
{
	struct cm_overlap *ov = cm_overlap_new(0, 1000 * 1000 * MS);
	struct cm_matrix *m = cm_matrix_new(0), *o = cm_matrix_new(0);
	const uint64_t R = 0x10000000;

	/* 0 and 1 alike over blocks 0..3; 2 on blocks 2..5; 3 elsewhere */
	for (int k = 0; k < 400; k++) {
		uint64_t b = (uint64_t)(k % 4) * 64 * KIB;

		add(ov, m, 0, R, R + b, MS);
		add(ov, m, 1, R, R + b + 8, MS);
		add(ov, m, 2, R, R + b + 128 * KIB, MS);
		add(ov, m, 3, R, R + b + 32 * MIB, MS);
	}
	is_double(fine(ov, 0, 1), 1.0, 1e-6, "identical distributions: 1");
	is_double(fine(ov, 0, 2), 0.5, 1e-6, "half the blocks shared: 0.5");
	is_double(fine(ov, 0, 3), 0.0, 1e-9, "disjoint blocks: 0");
	cm_overlap_matrix(ov, 1, o);
	is_double(cm_matrix_get(o, 0, 2), 1.0, 1e-6,
		  "the same 2 MiB block at the coarse level: 1");
	cm_matrix_free(o);
	cm_overlap_free(ov);

	/* the same addresses in two mappings: no overlap */
	ov = cm_overlap_new(0, 1000 * 1000 * MS);
	for (int k = 0; k < 100; k++) {
		add(ov, m, 0, R, R + 4096, MS);
		add(ov, m, 1, R + 4096, R + 4096, MS);
	}
	is_double(fine(ov, 0, 1), 0.0, 1e-9,
		  "a block never spans two mappings");
	cm_overlap_free(ov);
	cm_matrix_free(m);
}

static void test_aging(void)
{
	struct cm_overlap *ov = cm_overlap_new(4000 * MS, 1000 * 1000 * MS);
	struct cm_matrix *m = cm_matrix_new(0);
	const uint64_t R = 0x20000000;

	/* thread 0: 100 samples on A at t=0, 100 on B two half-lives later;
	 * thread 1: B only.  p0(B) = 4 / 5. */
	for (int k = 0; k < 100; k++)
		add(ov, m, 0, R, R, 1);
	for (int k = 0; k < 100; k++) {
		add(ov, m, 0, R, R + MIB, 1 + 8000 * MS);
		add(ov, m, 1, R, R + MIB, 1 + 8000 * MS);
	}
	is_double(fine(ov, 0, 1), 0.8, 1e-4,
		  "two half-lives: recent samples weigh 4x");
	/* far past 64 half-lives: the weights are rescaled, shares kept */
	for (int k = 0; k < 100; k++) {
		add(ov, m, 0, R, R + 2 * MIB, 400000 * MS);
		add(ov, m, 1, R, R + 2 * MIB, 400000 * MS);
	}
	ok(fine(ov, 0, 1) > 0.99, "after a rescale the old samples are gone "
	   "(%.4f)", fine(ov, 0, 1));
	cm_overlap_free(ov);
	cm_matrix_free(m);
}

static void test_bounded(void)
{
	struct cm_overlap *ov = cm_overlap_new(0, 0);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_overlap_stats st;
	size_t bytes;

	for (uint64_t k = 0; k < 20000; k++)
		add(ov, m, 0, 0, k * 64 * KIB, MS);
	bytes = cm_overlap_bytes(ov);
	for (uint64_t k = 0; k < 20000; k++)
		add(ov, m, 0, 0, (k + 20000) * 64 * KIB, MS);
	cm_overlap_stats(ov, &st);
	ok(cm_overlap_bytes(ov) == bytes && bytes < 96 * KIB,
	   "40,000 blocks in a fixed table (%zu bytes)", bytes);
	ok(st.evictions > 0, "full probe windows evict (%llu)",
	   (unsigned long long)st.evictions);
	ok(cm_overlap_add(ov, m, CM_OVERLAP_MAX_THREADS, 0, 0, 0, 0, MS) == 0,
	   "a thread past the limit is ignored");
	cm_overlap_stats(ov, &st);
	is_int(st.threads_over, 1, "... and counted");
	ok(cm_overlap_add(ov, m, -1, 0, 0, 0, 0, MS) < 0, "negative thread: "
	   "EINVAL");
	cm_overlap_free(ov);
	cm_matrix_free(m);
}

/* Cosine of the matrix over threads 0..n-1 against truth t[i][j]. */
static double cosine(const struct cm_matrix *m, const double *t, int n)
{
	double ab = 0, aa = 0, bb = 0;

	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			double a = cm_matrix_get(m, i, j), b = t[i * n + j];

			ab += a * b;
			aa += a * a;
			bb += b * b;
		}
	return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

/* 12 threads in 4 groups of 3, each group on its 256 KiB buffer. */
static void test_groups(void)
{
	struct cm_overlap *ov = cm_overlap_new(0, 0);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_overlap_stats st;
	double t[144] = { 0 };
	uint64_t now = MS;

	for (int s = 0; s < 300; s++, now += 5 * MS)
		for (int i = 0; i < 12; i++)
			add(ov, m, i, 0x40000000,
			    0x40000000 + (uint64_t)(i / 3) * MIB +
			    rnd() % (256 * KIB), now);
	cm_overlap_flush(ov, m);
	for (int i = 0; i < 12; i++)
		for (int j = 0; j < 12; j++)
			t[i * 12 + j] = i != j && i / 3 == j / 3;
	cm_overlap_stats(ov, &st);
	ok(st.trusted >= 1 && st.trusted == st.computes,
	   "groups: every compute trusted (%llu of %llu, r %.3f)",
	   (unsigned long long)st.trusted, (unsigned long long)st.computes,
	   st.last_r);
	ok(cosine(m, t, 12) >= 0.95, "groups: cosine %.4f >= 0.95",
	   cosine(m, t, 12));
	ok(cm_overlap_structure_clear(&st, 0.9),
	   "groups: a clear structure (r %.3f >= 0.9)", st.last_r);
	ok(cm_matrix_get(m, 0, 3) == 0, "groups: nothing between groups "
	   "(%.4f)", cm_matrix_get(m, 0, 3));
	is_int(st.moves, 0, "groups: no thread taken for a moving one");
	cm_overlap_free(ov);
	cm_matrix_free(m);
}

/* 8 threads, each its 8 MiB slice of a 64 MiB array, a tenth of its
 * samples in the neighbours' boundary planes (512 KiB). */
static void test_stencil(void)
{
	struct cm_overlap *ov = cm_overlap_new(0, 0);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_overlap_stats st;
	const uint64_t R = 0x7f0000000000ull, slice = 8 * MIB;
	double t[64] = { 0 };
	uint64_t now = MS;

	for (int s = 0; s < 400; s++, now += 5 * MS)
		for (int i = 0; i < 8; i++) {
			uint64_t a = R + (uint64_t)i * slice + rnd() % slice;
			uint64_t r = rnd() % 20;

			if (r == 0 && i > 0)	/* last plane of the left one */
				a = R + (uint64_t)i * slice - 1 -
				    rnd() % (512 * KIB);
			else if (r == 1 && i < 7)	/* first of the right */
				a = R + (uint64_t)(i + 1) * slice +
				    rnd() % (512 * KIB);
			add(ov, m, i, R, a, now);
		}
	cm_overlap_flush(ov, m);
	for (int i = 0; i + 1 < 8; i++)
		t[i * 8 + i + 1] = t[(i + 1) * 8 + i] = 1;
	cm_overlap_stats(ov, &st);
	ok(st.trusted >= 1 && st.last_beaten == 0 && st.last_r > 0,
	   "stencil: trusted once there are samples (%llu of %llu, last r "
	   "%.3f)", (unsigned long long)st.trusted,
	   (unsigned long long)st.computes, st.last_r);
	ok(cosine(m, t, 8) >= 0.95, "stencil, 64 MiB: cosine %.4f >= 0.95",
	   cosine(m, t, 8));
	is_int(st.moves, 0, "stencil: no thread taken for a moving one");
	cm_overlap_free(ov);
	cm_matrix_free(m);
}

/* wl-threads' stencil at 64 MiB: 8 threads on a 2 x 4 grid, each edge a
 * 64 MiB buffer its two threads sweep, sampled thinly (120 samples a
 * thread over its 2 or 3 buffers: two sharers rarely meet in a 64 KiB
 * block).  The fine level alone is mostly noise; the blend finds the 10
 * edges. */
static void test_sparse_buffers(void)
{
	static const int edge[10][2] = { { 0, 1 }, { 0, 2 }, { 1, 3 },
		{ 2, 3 }, { 2, 4 }, { 3, 5 }, { 4, 5 }, { 4, 6 }, { 5, 7 },
		{ 6, 7 } };
	struct cm_overlap *ov = cm_overlap_new(0, 0);
	struct cm_matrix *m = cm_matrix_new(0), *o = cm_matrix_new(0);
	struct cm_overlap_stats st;
	const uint64_t R = 0x7e0000000000ull;
	double t[64] = { 0 };
	uint64_t now = MS;

	for (int s = 0; s < 120; s++, now += 10 * MS)
		for (int i = 0; i < 8; i++) {
			int mine[3], n = 0, e;

			for (e = 0; e < 10; e++)
				if (edge[e][0] == i || edge[e][1] == i)
					mine[n++] = e;
			e = mine[rnd() % (uint64_t)n];
			/* one mapping per buffer, as mmap gives them */
			add(ov, m, i, R + (uint64_t)e * 80 * MIB,
			    R + (uint64_t)e * 80 * MIB + rnd() % (64 * MIB),
			    now);
		}
	cm_overlap_flush(ov, m);
	for (int e = 0; e < 10; e++) {
		t[edge[e][0] * 8 + edge[e][1]] = 1;
		t[edge[e][1] * 8 + edge[e][0]] = 1;
	}
	cm_overlap_stats(ov, &st);
	cm_overlap_matrix(ov, 0, o);
	diag("64 MiB buffers: fine level alone cosine %.4f", cosine(o, t, 8));
	ok(st.coarse > 0 && st.trusted + 1 >= st.computes,
	   "64 MiB buffers: the coarse level weighs in (%llu of %llu "
	   "computes), all but the first trusted (%llu)",
	   (unsigned long long)st.coarse, (unsigned long long)st.computes,
	   (unsigned long long)st.trusted);
	ok(cosine(m, t, 8) >= 0.95, "64 MiB buffers: cosine %.4f >= 0.95",
	   cosine(m, t, 8));
	cm_matrix_free(o);
	cm_matrix_free(m);
	cm_overlap_free(ov);
}

/* Private buffers side by side in one mapping, their boundaries inside
 * 2 MiB blocks: neighbours in memory share the boundary blocks but no
 * 64 KiB block of them.  Once their samples can tell (within a second
 * here), the coarse level holds nothing for them and no more weight is
 * added; before, the first compute (25 samples a thread over 48 blocks
 * of 64 KiB, taken mostly at 2 MiB) may add a little. */
static void test_coarse_apart(void)
{
	struct cm_overlap *ov = cm_overlap_new(0, 0);
	struct cm_matrix *o = cm_matrix_new(0), *m = cm_matrix_new(0);
	const uint64_t R = 0x7d0000000000ull, size = 3 * MIB;
	uint64_t now = MS;
	double early = 0;

	for (int s = 0; s < 200; s++, now += 10 * MS) {
		for (int i = 0; i < 8; i++)
			add(ov, m, i, R, R + MIB + (uint64_t)i * size +
			    rnd() % size, now);
		if (s == 99)
			early = cm_matrix_total(m);
	}
	cm_overlap_matrix(ov, 1, o);
	ok(cm_matrix_get(o, 0, 1) == 0 && cm_matrix_get(o, 3, 4) == 0,
	   "private neighbours in one mapping: nothing at 2 MiB (%.3f, %.3f)",
	   cm_matrix_get(o, 0, 1), cm_matrix_get(o, 3, 4));
	cm_overlap_flush(ov, m);
	ok(cm_matrix_total(m) == early && early < 10,
	   "... no weight added after the first second (%.3f, then %.3f)",
	   early, cm_matrix_total(m));
	cm_matrix_free(o);
	cm_matrix_free(m);
	cm_overlap_free(ov);
}

/* Each thread on its own buffer: no weight at all. */
static void test_private(void)
{
	struct cm_overlap *ov = cm_overlap_new(0, 0);
	struct cm_matrix *m = cm_matrix_new(0);

	for (int s = 0; s < 300; s++)
		for (int i = 0; i < 8; i++)
			add(ov, m, i, 0x50000000, 0x50000000 +
			    (uint64_t)i * 4 * MIB + rnd() % (4 * MIB),
			    MS + (uint64_t)s * 10 * MS);
	cm_overlap_flush(ov, m);
	ok(cm_matrix_total(m) == 0, "private buffers: no weight (%.3f)",
	   cm_matrix_total(m));
	cm_overlap_free(ov);
	cm_matrix_free(m);
}

/* Everybody samples one 16 MiB buffer at random: no structure to
 * repeat between the halves, so the test rejects it in most trials, and
 * what it rejects is added as homogeneous sharing: every pair alike. */
static void test_noise(void)
{
	int trusted = 0, trials = 40, flat = 0, alike = 0, clear = 0;

	for (int k = 0; k < trials; k++) {
		struct cm_overlap *ov = cm_overlap_new(0, 0);
		struct cm_matrix *m = cm_matrix_new(0);
		struct cm_overlap_stats st;

		for (int s = 0; s < 60; s++)
			for (int i = 0; i < 8; i++)
				add(ov, m, i, 0x60000000, 0x60000000 +
				    rnd() % (16 * MIB), MS);
		cm_overlap_flush(ov, m);
		cm_overlap_stats(ov, &st);
		trusted += st.trusted > 0;
		clear += cm_overlap_structure_clear(&st, 0.9);
		if (st.flat > 0 && !st.trusted) {
			double lo = cm_matrix_get(m, 0, 1), hi = lo;

			flat++;
			for (int i = 0; i < 8; i++)
				for (int j = i + 1; j < 8; j++) {
					double v = cm_matrix_get(m, i, j);

					lo = v < lo ? v : lo;
					hi = v > hi ? v : hi;
				}
			alike += lo > 0 && hi - lo < 1e-9 * hi;
		}
		cm_overlap_free(ov);
		cm_matrix_free(m);
	}
	ok(trusted <= trials / 8, "noise: trusted in %d of %d trials (the "
	   "test's level is 1 in 20)", trusted, trials);
	ok(clear <= trusted, "noise: a clear structure in %d trials", clear);
	ok(flat >= trials - trials / 8 && alike == flat,
	   "one buffer shared by all: homogeneous in %d of %d trials, every "
	   "pair alike in %d", flat, trials, alike);
}

/* wl-threads' all-to-all at 64 MiB: 8 threads, a buffer per pair, each
 * thread sweeping its 7 buffers in order at its own speed (a pass of
 * 448 MiB in 6-8 s), sampled every 70 ms (as thinly as 8 threads on a
 * busy 2-CPU node at the default budget: 140 samples a thread in 10 s).  At any moment the threads on
 * the same buffer overlap most, a structure that repeats between the
 * halves; over the run every pair shares alike: homogeneous. */
static void test_all2all_sweeps(void)
{
	struct cm_overlap *ov = cm_overlap_new(0, 0);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_overlap_stats st;
	const uint64_t R = 0x500000000000ull, B = 64 * MIB;
	double t[64], lo = -1, hi = 0;
	uint64_t now = MS;

	for (int i = 0; i < 64; i++)
		t[i] = i / 8 != i % 8;
	for (int s = 0; s < 143; s++, now += 70 * MS)
		for (int i = 0; i < 8; i++) {
			double pass = (double)s / (86 + 4 * i), at;
			int b, j, lo_t, hi_t;
			uint64_t buf;

			at = (pass - floor(pass)) * 7;
			b = (int)at;
			j = b < i ? b : b + 1;	/* the b-th partner */
			lo_t = i < j ? i : j;
			hi_t = i < j ? j : i;
			buf = R + (uint64_t)(lo_t * 8 + hi_t) * 2 * B;
			add(ov, m, i, buf, buf + (uint64_t)((at - b) * (double)B) +
			    rnd() % (1 * MIB), now);
		}
	cm_overlap_flush(ov, m);
	cm_overlap_stats(ov, &st);
	for (int i = 0; i < 8; i++)
		for (int j = i + 1; j < 8; j++) {
			double v = cm_matrix_get(m, i, j);

			lo = lo < 0 || v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
	ok(st.flat > 0 && st.trusted > 0,
	   "all-to-all sweeps: homogeneous in %llu computes (%llu trusted)",
	   (unsigned long long)st.flat, (unsigned long long)st.trusted);
	ok(cosine(m, t, 8) >= 0.95 && lo > 0,
	   "all-to-all sweeps: cosine %.4f >= 0.95, every pair %.1f-%.1f",
	   cosine(m, t, 8), lo, hi);
	cm_overlap_free(ov);
	cm_matrix_free(m);
}

/* 8 threads in pairs (0,1), (2,3), ... for 8 s, then (1,2), (3,4), ...,
 * (7,0): one second later the new partners are the overlap, not after
 * several half-lives. */
static void test_phases(void)
{
	struct cm_overlap *ov = cm_overlap_new(0, 0);
	struct cm_matrix *m = cm_matrix_new(0), *o = cm_matrix_new(0);
	struct cm_overlap_stats st;
	uint64_t now = MS;

	for (; now < 10000 * MS; now += 4 * MS)
		for (int i = 0; i < 8; i++) {
			int pair = now < 8000 * MS ? i / 2 : ((i + 7) % 8) / 2;

			add(ov, m, i, 0x70000000, 0x70000000 +
			    (uint64_t)pair * MIB + (now < 8000 * MS ? 0 :
						    32 * MIB) +
			    rnd() % (256 * KIB), now);
		}
	cm_overlap_stats(ov, &st);
	cm_overlap_matrix(ov, 0, o);
	ok(st.moves >= 8, "phases: every thread seen moving (%llu)",
	   (unsigned long long)st.moves);
	ok(cm_matrix_get(o, 1, 2) > 0.9 && cm_matrix_get(o, 0, 1) < 0.1,
	   "phases: the new partners only (%.3f, old %.3f)",
	   cm_matrix_get(o, 1, 2), cm_matrix_get(o, 0, 1));
	cm_matrix_free(o);
	cm_matrix_free(m);
	cm_overlap_free(ov);
}

/* The seam: stack references counted only, read-only ones into the
 * sharer table only, writable data into both. */
static void test_evidence(void)
{
	struct cm_detect_config cfg = { 4096, 1024, 0 };
	struct cm_detect_table *t = cm_detect_table_new(&cfg, NULL);
	struct cm_overlap *ov = cm_overlap_new(0, 0);
	struct cm_matrix *m = cm_matrix_new(0), *o = cm_matrix_new(0);
	static struct cm_evidence_counts n;	/* zero; large */
	struct cm_detect_stats ds;
	struct cm_overlap_stats os;
	struct cm_block_key k;
	int ev = 0;

	cm_block_key_private(&k, 1, 0x1000);
	for (int i = 0; i < 2; i++)
		ev += cm_evidence_add(t, ov, m, i, &k, 0x1000, CM_REF_STACK,
				      MS, &n);
	cm_detect_stats(t, &ds);
	ok(ev == 0 && ds.accesses == 0 && n.refs[CM_REF_STACK] == 2,
	   "stack: counted, not in the table");
	cm_block_key_private(&k, 1, 0x2000);
	for (int i = 0; i < 2; i++)
		ev += cm_evidence_add(t, ov, m, i, &k, 0x2000,
				      CM_REF_READONLY, MS, &n);
	cm_overlap_stats(ov, &os);
	ok(ev == 1 && os.accesses == 0 && n.refs[CM_REF_READONLY] == 2,
	   "read-only: a table event, not in the overlap");
	cm_block_key_private(&k, 1, 0x3000);
	for (int i = 0; i < 2; i++)
		ev += cm_evidence_add(t, ov, m, i, &k, 0x3000, CM_REF_DATA, MS,
				      &n);
	cm_overlap_stats(ov, &os);
	cm_overlap_matrix(ov, 0, o);
	ok(ev == 2 && os.accesses == 2 && cm_matrix_get(o, 0, 1) == 1.0,
	   "data: the table and the overlap");
	ok(cm_evidence_add(t, ov, m, 0, &k, 0, CM_REF_NCLASSES, MS, &n) < 0,
	   "an unknown class: EINVAL");
	cm_matrix_free(o);
	cm_matrix_free(m);
	cm_overlap_free(ov);
	cm_detect_table_free(t);
}

/* The compute runs by itself every period of sample time. */
static void test_cadence(void)
{
	struct cm_overlap *ov = cm_overlap_new(0, 1000 * MS);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_overlap_stats st;

	for (uint64_t t = 0; t < 3500; t += 10)
		for (int i = 0; i < 2; i++)
			add(ov, m, i, 0, 0x1000 + (t % 7) * 64 * KIB,
			    MS + t * MS);
	cm_overlap_stats(ov, &st);
	is_int(st.computes, 3, "3.5 s of samples: 3 computes");
	ok(cm_matrix_get(m, 0, 1) > 0, "two threads alike: weight added "
	   "(%.1f)", cm_matrix_get(m, 0, 1));
	cm_overlap_clear(ov);
	is_double(fine(ov, 0, 1), 0.0, 1e-12, "clear forgets the counts");
	cm_overlap_free(ov);
	cm_matrix_free(m);
}

int main(void)
{
	test_known();
	test_aging();
	test_bounded();
	test_groups();
	test_stencil();
	test_private();
	test_sparse_buffers();
	test_coarse_apart();
	test_noise();
	test_all2all_sweeps();
	test_phases();
	test_evidence();
	test_cadence();
	return done_testing();
}
