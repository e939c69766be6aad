/* commap/matrix_gen.h: synthetic communication patterns with known answers,
 * for tests and benchmarks.
 *
 * Patterns:
 *   stencil2d   threads on the most square r x c grid (r*c == n, r <= c),
 *               4 neighbours, non-periodic, weight 1
 *   stencil3d   the most cubic a x b x c grid, 6 neighbours, weight 1
 *   ring        i <-> i+1 mod n, weight 1
 *   pairs       (2k, 2k+1), weight 1 (odd n: the last thread is alone)
 *   clusters:K  consecutive groups of K threads, all-to-all inside, weight 1;
 *               plus a light background (weight 0.01) linking thread r
 *               of each group with thread r of the next (a ring of groups)
 *   all2all     every pair, weight 1
 *   random      sparse: each thread gets ~4 random partners, weights in
 *               [1, 10); uses the seed
 * With shuffle_seed != 0 the thread numbers are permuted (seeded), so the
 * structure is hidden from mappers that just follow thread order.
 */
#ifndef COMMAP_MATRIX_GEN_H
#define COMMAP_MATRIX_GEN_H

#include <stdint.h>

#include "commap/error.h"
#include "commap/matrix.h"

/* 0 on success, -1/EINVAL with err naming an unknown pattern or bad n. The
 * random pattern uses seed (0 allowed); shuffle_seed 0 means no shuffle. */
int cm_matrix_generate(const char *pattern, int n, uint64_t seed,
		       uint64_t shuffle_seed, struct cm_matrix **out,
		       struct cm_error *err);

#endif
