/* test_rand.c: the seeded PRNG is deterministic and unbiased enough. */
#include <stdint.h>

#include "commap/rand.h"
#include "tap.h"

static void test_deterministic(void)
{
	uint64_t a = 42, b = 42, c = 43;
	int same = 1, differ = 0;

	for (int i = 0; i < 100; i++) {
		uint64_t x = cm_rand_next(&a), y = cm_rand_next(&b);

		same &= x == y;
		differ |= x != cm_rand_next(&c);
	}
	ok(same, "same seed gives the same sequence");
	ok(differ, "another seed gives another sequence");
}

static void test_below(void)
{
	uint64_t s = 1;
	int counts[6] = {0}, in_range = 1;

	for (int i = 0; i < 60000; i++) {
		uint64_t r = cm_rand_below(&s, 6);

		in_range &= r < 6;
		if (r < 6)
			counts[r]++;
	}
	ok(in_range, "cm_rand_below stays below its bound");
	for (int i = 0; i < 6; i++)
		ok(counts[i] > 9000 && counts[i] < 11000,
		   "value %d drawn %d times of 60000", i, counts[i]);
	is_int(cm_rand_below(&s, 0), 0, "bound 0 gives 0");
}

static void test_shuffle(void)
{
	int perm[50], seen[50] = {0}, moved = 0, all = 1;
	uint64_t s = 7;

	for (int i = 0; i < 50; i++)
		perm[i] = i;
	cm_rand_shuffle(&s, perm, 50);
	for (int i = 0; i < 50; i++) {
		seen[perm[i]]++;
		moved += perm[i] != i;
	}
	for (int i = 0; i < 50; i++)
		all &= seen[i] == 1;
	ok(all, "shuffle is a permutation");
	ok(moved > 25, "shuffle moves most elements (%d of 50)", moved);
}

/* cm_rand_below() as it was written first (two divisions per draw): the
 * same values must come out of the same states, rejections included. */
static uint64_t below_reference(uint64_t *state, uint64_t bound)
{
	uint64_t limit, r;

	if (bound == 0)
		return 0;
	limit = UINT64_MAX - UINT64_MAX % bound;
	do {
		r = cm_rand_next(state);
	} while (r >= limit);
	return r % bound;
}

/* Bounds with no rejection to speak of, powers of two (where the old
 * limit also rejected the last whole block) and 2^63 + 1, where about
 * half of the draws are rejected. */
static void test_below_reference(void)
{
	static const uint64_t bounds[] = {
		1, 2, 3, 7, 1000, 1u << 20, (uint64_t)1 << 32,
		((uint64_t)1 << 63) + 1, (uint64_t)1 << 63,
		UINT64_MAX / 3, UINT64_MAX - 1, UINT64_MAX
	};
	int same = 1;

	for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
		uint64_t s1 = 12345 + b, s2 = 12345 + b;

		for (int k = 0; k < 2000 && same; k++)
			same = cm_rand_below(&s1, bounds[b]) ==
			       below_reference(&s2, bounds[b]) && s1 == s2;
	}
	ok(same, "below: the same draws and rejections as two divisions");
}

int main(void)
{
	test_deterministic();
	test_below();
	test_below_reference();
	test_shuffle();
	return done_testing();
}
