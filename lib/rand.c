/* rand.c: splitmix64 (Steele, Lea, Flood 2014) and helpers. */
#include "commap/rand.h"

/* The bodies, inlined into cm_rand_shuffle(): the mapper's coarsening
 * shuffles every level of every multilevel split, and a call per draw
 * was about a third of a shuffle's instructions (same values). */
static inline uint64_t rand_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t rand_below(uint64_t *state, uint64_t bound)
{
	uint64_t r, v;

	if (bound == 0)
		return 0;
	/* Rejection sampling, no modulo bias: r is drawn again when it is at
	 * least UINT64_MAX - UINT64_MAX % bound.  Said with r's own block of
	 * bound values, which starts at r - r % bound: when that start is
	 * above UINT64_MAX - bound (the same draws are rejected; worked out
	 * for every case, a bound dividing 2^64 included), so one 64-bit
	 * division per draw instead of two (shuffles of the mapper). */
	do {
		r = rand_next(state);
		v = r % bound;
	} while (r - v > UINT64_MAX - bound);
	return v;
}

uint64_t cm_rand_next(uint64_t *state)
{
	return rand_next(state);
}

uint64_t cm_rand_below(uint64_t *state, uint64_t bound)
{
	return rand_below(state, bound);
}

void cm_rand_shuffle(uint64_t *state, int *perm, int n)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)rand_below(state, (uint64_t)i + 1);
		int t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
}
