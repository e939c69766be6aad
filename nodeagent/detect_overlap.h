/* detect_overlap.h: communication as the overlap of the threads' memory
 * access distributions.
 *
 * The sharer table (detect_table.h) turns samples into communication only
 * when two threads' samples hit one small block within a time window: with
 * more threads than CPUs and arrays of tens of MB that is rare, and most
 * samples are wasted.  Here every sample counts: each thread keeps aged
 * counts of the blocks it touches, p_i(b) = its share of samples in block b,
 * and the communication between threads i and j is the min-overlap of
 * their distributions,
 *
 *     O_ij = sum_b min(p_i(b), p_j(b))        (0: disjoint, 1: identical)
 *
 * after Diener et al., "Evaluating Thread Placement Based on Memory Access
 * Patterns for Multi-core Processors", §3.1: the sharing of a pair is the
 * accesses both make to the same memory; normalised per thread and taken
 * as the minimum, so a thread that samples more does not weigh more and a
 * block counts only as much as the lesser of the two uses it.
 *
 * Levels.  Blocks of 64 KiB (CM_OVERLAP_FINE_SHIFT) and 2 MiB
 * (CM_OVERLAP_COARSE_SHIFT), blended: O = (1 - w) O_fine + w O_coarse,
 * w = max(0, 1 - c / CM_OVERLAP_DENSE), c being the threads' fine
 * coverage (the share of their samples in 64 KiB blocks their thread
 * sampled twice or more; one figure for all pairs, or the weights would
 * be a structure of their own).  Small buffers are sampled
 * densely (c near 1, w 0) and told apart at 64 KiB;
 * arrays of tens of MB are sampled a few times per 64 KiB block (c near
 * 0), where two sharers' samples rarely meet and only 2 MiB blocks gather
 * enough of them.  A block never crosses a mapping boundary: the caller
 * passes the start of the address's mapping and it is part of the
 * block's identity.  Anonymous mappings side by side merge, though, so
 * private buffers can share a block: within a 64 KiB block each thread's
 * entry keeps the 4 KiB pages it touched, and a block does not count for
 * a pair that each touched CM_OVERLAP_APART_PAGES pages of it or more,
 * none in common; within a 2 MiB block it keeps the 64 KiB blocks it
 * touched, and the coarse level counts nothing for a pair whose common
 * 64 KiB blocks, summed over the 2 MiB blocks both touched, are fewer than
 * a quarter of what chance predicts for sharers (once chance predicts
 * CM_OVERLAP_APART_EXPECT).
 *
 * Bounded memory.  Per thread, two open-addressed tables of
 * CM_OVERLAP_FINE_SLOTS and CM_OVERLAP_COARSE_SLOTS entries (32 bytes
 * each: 80 KiB per thread), allocated at the thread's first access, for at
 * most CM_OVERLAP_MAX_THREADS threads (later ones are counted in
 * stats.threads_over, not tracked).  A block that finds its probe window
 * full replaces the entry with the smallest count there (evictions); the
 * thread's total keeps the evicted mass, so p never sums above 1.
 *
 * Aging.  A sample at time t weighs 2^((t - t0) / half-life): older
 * samples count less, by a factor of 2 per CM_OVERLAP_HALF_LIFE_NS, with
 * no pass over the tables; the weights are rescaled now and then.
 *
 * Phases.  At each compute, a thread whose samples since its last check
 * (at least CM_OVERLAP_MIN_FRESH) overlap its older samples less than
 * half as much as the two halves of those recent samples overlap each
 * other has moved to other memory (a
 * new phase): its older samples are forgotten at once (stats.moves)
 * rather than fading over the half-life.
 *
 * Into the matrix.  Every CM_OVERLAP_PERIOD_NS of sample time (at the
 * first access past it, so that a replay of the same accesses gives the
 * same result), O is computed and, if trusted, O_ij * (n_i + n_j) / 2 is
 * added to the matrix, n_i being thread i's samples since the last time:
 * weight in samples, like the sharer table's events.
 *
 * Trust: a label-permutation test.  Every thread's samples alternate
 * between two halves (A, B) with counts of their own; O^A and O^B are
 * computed from each half, and their off-diagonal Pearson correlation r
 * is compared with the correlation after shuffling the thread labels of
 * O^B (a Mantel test, CM_OVERLAP_PERMUTATIONS shuffles, a fixed seed):
 * the overlap is trusted only when r > 0 and no shuffle reaches it
 * (p < 1 / (1 + shuffles)).  Noise does not repeat between halves;
 * structure (pairs, groups, neighbours) does.  A flat overlap (everyone
 * alike, or nobody sharing) has no structure to repeat and adds nothing:
 * there is nothing to place by.  With fewer than CM_OVERLAP_TEST_THREADS
 * threads the test cannot decide and the overlap is trusted.  An
 * overlap where nearly every pair overlaps is everyone sharing
 * (all-to-all): every pair gets the mean (CM_OVERLAP_FLAT_*, stats.flat),
 * so the matrix shows homogeneous communication without noise in it; a
 * trusted one too while its pairs differ little (CM_OVERLAP_FLAT_CV:
 * threads sweeping many large buffers overlap most with those on the same
 * buffer at the moment, a structure of the moment, not of the run).
 *
 * Not thread-safe.  Functions return -1 with errno.
 */
#ifndef COMMAP_NODEAGENT_DETECT_OVERLAP_H
#define COMMAP_NODEAGENT_DETECT_OVERLAP_H

#include <stddef.h>
#include <stdint.h>

#include "commap/matrix.h"

#define CM_OVERLAP_FINE_SHIFT 16	/* 64 KiB */
#define CM_OVERLAP_COARSE_SHIFT 21	/* 2 MiB */
#define CM_OVERLAP_FINE_SLOTS 2048u	/* per thread: 128 MiB at 64 KiB */
#define CM_OVERLAP_COARSE_SLOTS 512u	/* per thread: 1 GiB at 2 MiB */
#define CM_OVERLAP_PROBES 8
#define CM_OVERLAP_MAX_THREADS 1024
#define CM_OVERLAP_HALF_LIFE_NS 4000000000ull	/* 4 s */
#define CM_OVERLAP_PERIOD_NS 250000000ull	/* 250 ms */
/* Computes spaced by at least this much sample time per table slot they
 * scan: a slot cost 1.3-1.7 ns (measured, -O2: 12 threads 0.7 ms per
 * compute, 64 threads 16 ms), so a compute takes under 2% of the time
 * between two; 12 threads stay at the period, 64 compute every ~1.2 s. */
#define CM_OVERLAP_NS_PER_PROBE 100ull
/* cm_overlap_matrix's level for the blend of the two (what is added to
 * the matrix). */
#define CM_OVERLAP_BLEND 2
/* Fine coverage from which the fine level alone is used. */
#define CM_OVERLAP_DENSE 0.5
/* Common 64 KiB blocks chance predicts for sharers before the coarse
 * level can say that a pair works on neighbouring memory, not the same
 * (Poisson: sharers sampled evenly show at most one in 1.7% of pairs). */
#define CM_OVERLAP_APART_EXPECT 6.0
/* Threads from which the permutation test can reject: with fewer, too
 * many of the few relabellings keep a structure (4 threads in 2 pairs:
 * 8 of the 24), so it could never be significant. */
#define CM_OVERLAP_TEST_THREADS 6
#define CM_OVERLAP_PERMUTATIONS 19
/* An overlap the test does not trust is added as homogeneous sharing
 * (every pair its mean) when this share of the pairs overlap at all and
 * the mean is at least CM_OVERLAP_FLAT_MIN. */
#define CM_OVERLAP_FLAT_PAIRS 0.75
#define CM_OVERLAP_FLAT_MIN 0.02
/* ... and so is a trusted one whose pairs' overlaps vary by at most this
 * coefficient of variation (all-to-all over 64 MiB buffers: 0.66-0.98;
 * neighbours or pairs with a little sharing by all: 1.1 and more). */
#define CM_OVERLAP_FLAT_CV 1.0
/* Samples since the last compute needed to tell that a thread moved. */
#define CM_OVERLAP_MIN_FRESH 16
/* Pages of a 64 KiB block each of two threads must have touched for
 * "no page in common" to mean they do not share it. */
#define CM_OVERLAP_APART_PAGES 4

struct cm_overlap_stats {
	uint64_t accesses;	/* cm_overlap_add calls that counted */
	uint64_t evictions;	/* blocks replaced in a full probe window */
	uint64_t threads_over;	/* accesses of threads past the limit */
	uint64_t computes;	/* overlap matrices computed */
	uint64_t trusted;	/* ... passed the permutation test */
	uint64_t coarse;	/* ... taking more than half from the coarse
				 * level (w > 0.5) */
	uint64_t flat;		/* ... added as homogeneous
				 * sharing (CM_OVERLAP_FLAT_*) */
	uint64_t moves;		/* threads that left their memory: their
				 * older samples forgotten */
	double weight;		/* total weight added to matrices */
	double last_r;		/* correlation of the halves, last compute */
	int last_beaten;	/* shuffles that reached it, last compute */
	int last_threads;	/* threads compared, last compute */
};

struct cm_overlap;

/* New estimator with the constants above; half_life_ns and period_ns 0
 * take the defaults.  NULL/ENOMEM. */
struct cm_overlap *cm_overlap_new(uint64_t half_life_ns, uint64_t period_ns);
void cm_overlap_free(struct cm_overlap *ov);

/* Thread `thread` (>= 0) touched the block holding byte addr of the
 * memory (space, inode) in the mapping starting at region (0 for shared
 * file memory, keyed by file offset) at time now_ns.  When now_ns is
 * past the next compute time, the overlap of the samples so far is
 * computed first and added to m (growing it).  0, -1/EINVAL (bad
 * arguments), -1/ENOMEM (m cannot grow). */
int cm_overlap_add(struct cm_overlap *ov, struct cm_matrix *m, int thread,
		   uint64_t space, uint64_t inode, uint64_t region,
		   uint64_t addr, uint64_t now_ns);

/* Compute now and add to m (tests, the end of a replay).  The number of
 * threads compared (>= 0) or -1/ENOMEM. */
int cm_overlap_flush(struct cm_overlap *ov, struct cm_matrix *m);

/* The overlap matrix of the samples so far at a level (0 fine, 1 coarse,
 * CM_OVERLAP_BLEND both as computes add them), without the test and without touching anything: out (n x n, grown) gets
 * O_ij.  0 or -1/EINVAL, ENOMEM. */
int cm_overlap_matrix(struct cm_overlap *ov, int level, struct cm_matrix *out);

/* Permutation test of the halves at a level: sets *r and *beaten
 * (shuffles reaching r); 1 trusted, 0 not, -1/ENOMEM. */
int cm_overlap_test(struct cm_overlap *ov, int level, double *r,
		    int *beaten);

/* Forget every count (a phase change); the statistics stay. */
void cm_overlap_clear(struct cm_overlap *ov);

void cm_overlap_stats(const struct cm_overlap *ov, struct cm_overlap_stats *st);

/* Whether the last compute found a clear structure: trusted by the
 * permutation test over at least CM_OVERLAP_TEST_THREADS threads, its
 * halves correlated by min_r or more (more samples would add little). */
int cm_overlap_structure_clear(const struct cm_overlap_stats *st,
			       double min_r);

/* Bytes held now. */
size_t cm_overlap_bytes(const struct cm_overlap *ov);

#endif
