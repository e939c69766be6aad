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

int main(void)
{
	test_deterministic();
	test_below();
	test_shuffle();
	return done_testing();
}
