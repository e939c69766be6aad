/* test_evidence.c: the run-length rule of the evidence seam
 * (nodeagent/evidence.c, evidence.h "Runs").
 *
 * A thread re-reading the line of its previous reference counts once;
 * anything else it touches in between breaks the run, stack references do
 * not; another thread's reference still meets the runner; a run longer
 * than the table's window counts again; two threads in one slot never
 * lose references.  Then the situation the rule is for: pairs exchanging
 * buffers while every thread spins on shared flags without `pause` — the
 * pairs must outweigh the flags; and thread-MPI's waits, each thread on
 * its own flag in one shared page: a waited-on line is no evidence, while
 * homogeneous sharing of a small region, where lines repeat by chance,
 * stays even.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "commap/matrix.h"
#include "detect_overlap.h"
#include "detect_table.h"
#include "evidence.h"
#include "tap.h"

#define MS 1000000ull
#define US 1000ull

struct seam {
	struct cm_detect_table *t;
	struct cm_overlap *ov;
	struct cm_matrix *m;
	struct cm_evidence_counts *n;	/* large: on the heap */
};

static void seam_open(struct seam *s, uint64_t window_ns)
{
	struct cm_detect_config cfg = { 4096, 1u << 12, window_ns };

	s->t = cm_detect_table_new(&cfg, NULL);
	s->ov = cm_overlap_new(0, 0);
	s->m = cm_matrix_new(0);
	s->n = calloc(1, sizeof(*s->n));
	if (!s->t || !s->ov || !s->m || !s->n)
		abort();
}

static void seam_close(struct seam *s)
{
	cm_detect_table_free(s->t);
	cm_overlap_free(s->ov);
	cm_matrix_free(s->m);
	free(s->n);
}

/* Thread i touches addr of process 1 (class cls) at t; the events. */
static int touch(struct seam *s, int i, uint64_t addr, int cls, uint64_t t)
{
	struct cm_block_key k;

	cm_block_key_private(&k, 1, addr);
	return cm_evidence_add(s->t, s->ov, s->m, i, &k, 0x10000, cls, t,
			       s->n);
}

static uint64_t table_accesses(const struct seam *s)
{
	struct cm_detect_stats ds;

	cm_detect_stats(s->t, &ds);
	return ds.accesses;
}

/* One thread hammering one line: one reference entered, the rest
 * counted as run references; all counted per class. */
static void test_one_run(void)
{
	struct seam s;

	seam_open(&s, 0);
	for (int k = 0; k < 100; k++)
		touch(&s, 0, 0x20040 + (uint64_t)(k % 8) * 8, CM_REF_DATA,
		      MS + (uint64_t)k * US);
	ok(table_accesses(&s) == 1 && s.n->run_refs == 99 &&
	   s.n->refs[CM_REF_DATA] == 100,
	   "a run on one line: 1 entered, 99 run references (%llu, %llu)",
	   (unsigned long long)table_accesses(&s),
	   (unsigned long long)s.n->run_refs);
	seam_close(&s);
}

/* Another line in between breaks the run (the next line of the same
 * 4 KiB block too); a stack reference does not; the same address in
 * another process is another line. */
static void test_breaks(void)
{
	struct cm_block_key key;
	struct seam s;
	uint64_t t = MS;

	seam_open(&s, 0);
	for (int k = 0; k < 10; k++) {
		touch(&s, 0, 0x20000, CM_REF_DATA, t += US);
		touch(&s, 0, 0x20040, CM_REF_READONLY, t += US);
	}
	ok(table_accesses(&s) == 20 && s.n->run_refs == 0,
	   "alternating lines: every reference entered (%llu)",
	   (unsigned long long)table_accesses(&s));
	for (int k = 0; k < 10; k++) {
		touch(&s, 0, 0x30000, CM_REF_DATA, t += US);
		touch(&s, 0, 0x7f000, CM_REF_STACK, t += US);
	}
	ok(table_accesses(&s) == 21 && s.n->run_refs == 9 &&
	   s.n->refs[CM_REF_STACK] == 10,
	   "stack references in between: still one run (%llu, %llu)",
	   (unsigned long long)table_accesses(&s),
	   (unsigned long long)s.n->run_refs);
	cm_block_key_private(&key, 2, 0x30000);
	cm_evidence_add(s.t, s.ov, s.m, 0, &key, 0x10000, CM_REF_DATA, t += US,
			s.n);
	ok(table_accesses(&s) == 22, "the same address in another process: "
	   "a new run");
	cm_evidence_forget_runs(s.n);
	touch(&s, 0, 0x20000, CM_REF_DATA, t += US);
	touch(&s, 0, 0x20000, CM_REF_DATA, t += US);
	cm_evidence_forget_runs(s.n);
	touch(&s, 0, 0x20000, CM_REF_DATA, t += US);
	ok(table_accesses(&s) == 24 && s.n->run_refs == 10,
	   "forgotten runs: the next reference is entered");
	seam_close(&s);
}

/* Two threads alternating on one line (a hot counter): each one's run
 * goes on, and the other still meets it in the sharer table. */
static void test_true_sharing(void)
{
	struct seam s;
	int ev = 0;

	seam_open(&s, 0);
	for (int k = 0; k < 50; k++)
		for (int i = 0; i < 2; i++)
			ev += touch(&s, i, 0x40000, CM_REF_DATA,
				    MS + (uint64_t)(2 * k + i) * US);
	ok(ev == 1 && cm_matrix_get(s.m, 0, 1) == 1.0,
	   "a hot line of two threads: their sharing found (%d event)", ev);
	seam_close(&s);
}

/* A run longer than the window counts again, once per window; the line
 * is waited on: another thread's reference to it is no evidence. */
static void test_window(void)
{
	struct seam s;
	uint64_t first;

	seam_open(&s, 10 * MS);
	for (uint64_t t = 0; t <= 100 * MS; t += 100 * US)
		touch(&s, 0, 0x50000, CM_REF_DATA, MS + t);
	first = table_accesses(&s);
	ok(first >= 9 && first <= 11,
	   "100 ms on one line, 10 ms window: counted about once per window "
	   "(%llu)", (unsigned long long)first);
	ok(touch(&s, 1, 0x50000, CM_REF_DATA, 101 * MS + 50 * US) == 0 &&
	   s.n->spin_refs == first,
	   "another thread on the waited-on line: no event, counted (%llu)",
	   (unsigned long long)s.n->spin_refs);
	seam_close(&s);
}

/* Threads 0 and CM_EVIDENCE_RUN_SLOTS share a slot: they break each
 * other's runs, so both are counted every time, never less. */
static void test_slots(void)
{
	struct seam s;
	int far = CM_EVIDENCE_RUN_SLOTS;

	seam_open(&s, 0);
	for (int k = 0; k < 10; k++) {
		touch(&s, 0, 0x60000, CM_REF_DATA, MS + (uint64_t)k * US);
		touch(&s, far, 0x60000, CM_REF_DATA, MS + (uint64_t)k * US);
	}
	ok(table_accesses(&s) == 20 && s.n->run_refs == 0,
	   "two threads in one slot: every reference entered (%llu)",
	   (unsigned long long)table_accesses(&s));
	errno = 0;
	ok(touch(&s, -1, 0x60000, CM_REF_DATA, 2 * MS) < 0 && errno == EINVAL,
	   "a negative thread: EINVAL");
	seam_close(&s);
}

/* 8 threads in 4 pairs; each round a thread reads four lines of its
 * own 4 KiB buffer and four of its partner's, then spins on one of four
 * flags (shared by all) for `spin` samples.  forget: every reference
 * taken alone (the runs forgotten before each: no run-length rule).
 * Returns the weight within pairs over all weight. */
static double pairs_share(int spin, int forget, uint64_t *runs)
{
	struct seam s;
	double in = 0, all = 0;
	uint64_t t = MS;

	seam_open(&s, 100 * MS);
	for (int round = 0; round < 200; round++)
		for (int i = 0; i < 8; i++) {
			uint64_t mine = 0x100000 + (uint64_t)(i / 2) * 0x10000 +
					(uint64_t)(i % 2) * 0x1000;

			for (int l = 0; l < 4; l++) {
				uint64_t off = (uint64_t)((round * 4 + l) % 64)
					       * 64;

				touch(&s, i, mine + off, CM_REF_DATA,
				      t += 10 * US);
				touch(&s, i, (mine ^ 0x1000) + off,
				      CM_REF_DATA, t += 10 * US);
			}
			for (int k = 0; k < spin; k++) {
				if (forget)
					cm_evidence_forget_runs(s.n);
				touch(&s, i, 0x900040 + (uint64_t)(round % 4) *
				      0x1000, CM_REF_DATA, t += 10 * US);
			}
		}
	for (int a = 0; a < 8; a++)
		for (int b = a + 1; b < 8; b++) {
			double w = cm_matrix_get(s.m, a, b);

			all += w;
			if (a / 2 == b / 2)
				in += w;
		}
	*runs = s.n->run_refs;
	seam_close(&s);
	return all > 0 ? in / all : 0;
}

static void test_spin_flags(void)
{
	uint64_t runs_quiet, runs_spin, runs_each;
	double quiet = pairs_share(0, 0, &runs_quiet);
	double spin = pairs_share(20, 0, &runs_spin);
	double each = pairs_share(20, 1, &runs_each);

	ok(quiet > 0.9 && runs_quiet == 0,
	   "pairs alone: the weight within pairs (%.3f), no runs", quiet);
	ok(each < 0.3, "spinning on shared flags, every sample counted: the "
	   "flags drown the pairs (%.3f)", each);
	ok(spin > 0.5, "the same with runs: most weight within pairs (%.3f)",
	   spin);
	ok(runs_spin == 8 * 200 * 19,
	   "each spin collapsed into one reference (%llu run references)",
	   (unsigned long long)runs_spin);
}

/* 8 threads in 4 pairs, as thread-MPI waits: each round a thread touches
 * one line of its pair's buffer, then waits `waits` times, each wait a
 * private reference and then 5 reads of its own flag, every thread's flag
 * on its own line of one shared 4 KiB block.  Returns the weight within
 * pairs over all weight; *spins the references on waited-on lines. */
static double flags_share(int waits, uint64_t *spins)
{
	struct seam s;
	double in = 0, all = 0;
	uint64_t t = MS;

	seam_open(&s, 100 * MS);
	for (int round = 0; round < 200; round++)
		for (int i = 0; i < 8; i++) {
			uint64_t pair = 0x200000 + (uint64_t)(i / 2) * 0x10000;
			uint64_t own = 0x400000 + (uint64_t)i * 0x10000;

			touch(&s, i, pair + (uint64_t)((2 * round + i % 2) %
						       64) * 64,
			      CM_REF_DATA, t += 10 * US);
			for (int w = 0; w < waits; w++) {
				touch(&s, i, own + (uint64_t)((round * waits +
							w) % 64) * 64,
				      CM_REF_DATA, t += 10 * US);
				for (int k = 0; k < 5; k++)
					touch(&s, i, 0x800000 +
					      (uint64_t)i * 64, CM_REF_DATA,
					      t += 10 * US);
			}
		}
	for (int a = 0; a < 8; a++)
		for (int b = a + 1; b < 8; b++) {
			double w = cm_matrix_get(s.m, a, b);

			all += w;
			if (a / 2 == b / 2)
				in += w;
		}
	*spins = s.n->spin_refs;
	seam_close(&s);
	return all > 0 ? in / all : 0;
}

/* Counted once per wait, per-thread flags in one block still made every
 * waiting thread a partner of every other: once a flag's line is waited
 * on, it is no evidence, and its block is seen by line. */
static void test_wait_flags(void)
{
	uint64_t spins0, spins3;
	double quiet = flags_share(0, &spins0);
	double waits = flags_share(3, &spins3);

	ok(quiet > 0.99 && spins0 == 0,
	   "pairs without waits: within pairs %.3f", quiet);
	ok(waits > 0.9, "three waits per round on per-thread flags of one "
	   "block: the pairs still dominate (%.3f within pairs)", waits);
	ok(spins3 == 8 * (200 * 3 - 1),
	   "every wait after each thread's first left out (%llu)",
	   (unsigned long long)spins3);
}

/* Homogeneous sharing: 8 threads reading and writing random lines of
 * one 16 KiB region.  A thread's two references in a row on one line
 * happen by chance here (1 in 256) and mark lines; the rule must not
 * erase the sharing: every pair found, about evenly. */
static void test_homogeneous(void)
{
	struct seam s;
	double lo = 1e300, hi = 0;
	uint64_t t = MS, x = 12345;

	seam_open(&s, 100 * MS);
	for (int round = 0; round < 400; round++)
		for (int i = 0; i < 8; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			touch(&s, i, 0x1000000 + (x >> 33) % 256 * 64,
			      CM_REF_DATA, t += 10 * US);
		}
	for (int a = 0; a < 8; a++)
		for (int b = a + 1; b < 8; b++) {
			double w = cm_matrix_get(s.m, a, b);

			lo = w < lo ? w : lo;
			hi = w > hi ? w : hi;
		}
	ok(s.n->spin_refs > 0, "chance repeats marked lines (%llu "
	   "references on them)", (unsigned long long)s.n->spin_refs);
	ok(lo > 0 && lo >= 0.5 * hi, "all pairs over one shared region: "
	   "every pair, evenly (weight %.0f to %.0f)", lo, hi);
	seam_close(&s);
}

int main(void)
{
	test_one_run();
	test_breaks();
	test_true_sharing();
	test_window();
	test_slots();
	test_spin_flags();
	test_wait_flags();
	test_homogeneous();
	return done_testing();
}
