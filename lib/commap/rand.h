/* commap/rand.h: a deterministic PRNG (splitmix64), so that seeded results
 * are the same on every C library. */
#ifndef COMMAP_RAND_H
#define COMMAP_RAND_H

#include <stdint.h>

uint64_t cm_rand_next(uint64_t *state);
/* Uniform integer in [0, bound); bound 0 gives 0. */
uint64_t cm_rand_below(uint64_t *state, uint64_t bound);
/* Fisher-Yates shuffle of perm[0..n-1]. */
void cm_rand_shuffle(uint64_t *state, int *perm, int n);

#endif
