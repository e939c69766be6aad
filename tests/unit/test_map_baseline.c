/* test_map_baseline.c: compact, scatter, roundrobin and random placements
 * (lib/map_baseline.c), checked PU by PU. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/mapping.h"
#include "tap.h"
#include "map_test_util.h"

/* Map n threads (zero matrix) with alg; -1 on failure. */
static int run(const struct cm_topo *t, int n, enum cm_map_algorithm alg,
	       int oversubscribe, uint64_t seed, int *map)
{
	struct cm_map_options opts = {
		.algorithm = alg, .seed = seed, .oversubscribe = oversubscribe,
	};
	struct cm_matrix *m = cm_matrix_new(n);
	struct cm_error err = { "" };
	int rv = cm_map_baseline(t, m, &opts, map, &err);

	if (rv == 0 && cm_map_validate(t, n, map, oversubscribe, &err) < 0) {
		diag("invalid %s mapping: %s", cm_map_algorithm_name(alg),
		     err.text);
		rv = -1;
	}
	cm_matrix_free(m);
	return rv;
}

static int same(const int *a, const int *b, int n)
{
	return memcmp(a, b, sizeof(int) * (size_t)n) == 0;
}

static void show(const char *what, const int *map, int n)
{
	char buf[512];
	size_t len = 0;

	for (int i = 0; i < n && len < sizeof(buf) - 8; i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%d ", map[i]);
	diag("  %s: %s", what, buf);
}

/* One row: a full placement on a topology, PU index by PU index. */
struct bcase {
	const char *spec, *cpulist;
	enum cm_map_algorithm alg;
	int n, oversubscribe;
	int want[16];
	const char *what;
};

static void test_placements(void)
{
	static const struct bcase cases[] = {
		{ "pack:2 core:2 pu:2", NULL, CM_MAP_COMPACT, 8, 0,
		  { 0, 1, 2, 3, 4, 5, 6, 7 }, "compact: tree order" },
		{ "pack:2 core:2 pu:2", NULL, CM_MAP_SCATTER, 8, 0,
		  { 0, 4, 2, 6, 1, 5, 3, 7 },
		  "scatter: packages, then cores, SMT last" },
		{ "pack:2 core:2 pu:2", NULL, CM_MAP_ROUNDROBIN, 8, 0,
		  { 0, 2, 4, 6, 1, 3, 5, 7 }, "roundrobin: cores in order" },
		{ "pack:2 core:2 pu:2", NULL, CM_MAP_SCATTER, 3, 0,
		  { 0, 4, 2 }, "scatter, n < npus: prefix of the order" },
		{ "pack:2 core:2 pu:2", NULL, CM_MAP_ROUNDROBIN, 3, 0,
		  { 0, 2, 4 }, "roundrobin, n < npus" },
		{ "pack:2 core:2 pu:2", NULL, CM_MAP_COMPACT, 1, 0,
		  { 0 }, "compact, one thread" },
		{ "pack:2 core:2 pu:2", NULL, CM_MAP_SCATTER, 1, 0,
		  { 0 }, "scatter, one thread" },
		/* 12 on 8: cm_map_capacity gives PUs 0, 2, 4, 6 two each. */
		{ "pack:2 core:2 pu:2", NULL, CM_MAP_COMPACT, 12, 1,
		  { 0, 0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7 },
		  "compact oversubscribed: PU by PU up to its capacity" },
		{ "pack:2 core:2 pu:2", NULL, CM_MAP_SCATTER, 12, 1,
		  { 0, 4, 2, 6, 1, 5, 3, 7, 0, 4, 2, 6 },
		  "scatter oversubscribed: second pass over the order" },
		{ "pack:2 core:2 pu:2", NULL, CM_MAP_ROUNDROBIN, 12, 1,
		  { 0, 2, 4, 6, 1, 3, 5, 7, 0, 2, 4, 6 },
		  "roundrobin oversubscribed" },
		/* Holes: PU 0 alone in its core, 1-2 its package's other
		 * core, 3-4 the only core of package 1. */
		{ "pack:2 core:2 pu:2", "0,2,3,6,7", CM_MAP_COMPACT, 5, 0,
		  { 0, 1, 2, 3, 4 }, "compact with holes" },
		{ "pack:2 core:2 pu:2", "0,2,3,6,7", CM_MAP_SCATTER, 5, 0,
		  { 0, 3, 1, 4, 2 },
		  "scatter with holes: lone core, other package, SMT last" },
		{ "pack:2 core:2 pu:2", "0,2,3,6,7", CM_MAP_ROUNDROBIN, 5, 0,
		  { 0, 1, 3, 2, 4 }, "roundrobin with holes" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bcase *c = &cases[i];
		struct cm_topo *t = map_test_topo(c->spec, c->cpulist);
		int map[16];

		if (!ok(t && run(t, c->n, c->alg, c->oversubscribe, 0,
				 map) == 0 && same(map, c->want, c->n),
			"%s", c->what) && t)
			show("got", map, c->n);
		cm_topo_free(t);
	}
}

/* 128 PUs: 2 packages x 2 NUMA x 2 L3 x 8 cores x 2 PUs; PU p is on core
 * p / 2, L3 p / 16, NUMA p / 32, package p / 64. */
static void test_big_machine(void)
{
	static const int spread8[8] = { 0, 64, 32, 96, 16, 80, 48, 112 };
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	int map[128], ok_compact = 1, ok_rr = 1, cores = 1, seen[128] = { 0 };

	run(t, 128, CM_MAP_COMPACT, 0, 0, map);
	for (int i = 0; i < 128; i++)
		ok_compact &= map[i] == i;
	ok(ok_compact, "compact: identity on 128 PUs");

	run(t, 128, CM_MAP_SCATTER, 0, 0, map);
	if (!ok(same(map, spread8, 8),
		"scatter: packages, NUMA nodes, L3s alternate first"))
		show("got", map, 8);
	is_int(map[8], 2, "scatter: 9th thread on the next core of L3 0");
	for (int i = 0; i < 64; i++) {
		cores &= map[i] % 2 == 0;
		seen[map[i] / 2]++;
	}
	for (int c = 0; c < 64; c++)
		cores &= seen[c] == 1;
	ok(cores, "scatter: first 64 threads on 64 different cores");
	is_int(map[64], 1, "scatter: 65th thread is the first SMT sibling");

	run(t, 128, CM_MAP_ROUNDROBIN, 0, 0, map);
	for (int i = 0; i < 64; i++)
		ok_rr &= map[i] == 2 * i && map[64 + i] == 2 * i + 1;
	ok(ok_rr, "roundrobin: even PUs (one per core) in order, then odd");
	cm_topo_free(t);
}

static void test_random(void)
{
	struct cm_topo *t = map_test_topo("pack:2 numa:2 l3:2 core:8 pu:2", NULL);
	int a[128], b[128], c[128], seen[128] = { 0 }, perm = 1;
	int over[200], load[128] = { 0 }, balanced = 1;

	ok(run(t, 128, CM_MAP_RANDOM, 0, 42, a) == 0, "random, n = npus");
	for (int i = 0; i < 128; i++)
		seen[a[i]]++;
	for (int p = 0; p < 128; p++)
		perm &= seen[p] == 1;
	ok(perm, "random: a permutation of the PUs");
	run(t, 128, CM_MAP_RANDOM, 0, 42, b);
	run(t, 128, CM_MAP_RANDOM, 0, 43, c);
	ok(same(a, b, 128), "random: same seed, same mapping");
	ok(!same(a, c, 128), "random: other seed, other mapping");
	run(t, 10, CM_MAP_RANDOM, 0, 42, b);
	ok(same(a, b, 10), "random: n < npus is a prefix of the same shuffle");
	ok(run(t, 200, CM_MAP_RANDOM, 1, 5, over) == 0,
	   "random oversubscribed: 200 threads on 128 PUs");
	for (int i = 0; i < 200; i++)
		load[over[i]]++;
	for (int p = 0; p < 128; p++)
		balanced &= load[p] == 1 || load[p] == 2;
	ok(balanced, "random oversubscribed: every PU holds 1 or 2");
	cm_topo_free(t);
}

static void test_errors(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);
	struct cm_matrix *m = cm_matrix_new(9), *none = cm_matrix_new(0);
	struct cm_map_options opts = { .algorithm = CM_MAP_SCATTER };
	struct cm_error err = { "" };
	int map[9] = { -5 };

	errno = 0;
	ok(cm_map_baseline(t, m, &opts, map, &err) == -1 && errno == ENOSPC &&
	   strstr(err.text, "9") && strstr(err.text, "8"),
	   "9 threads on 8 PUs without oversubscribe: ENOSPC naming both");
	diag("  %s", err.text);
	opts.algorithm = CM_MAP_GREEDY;
	ok(cm_map_baseline(t, m, &opts, map, &err) == -1 && errno == EINVAL &&
	   strstr(err.text, "greedy"), "greedy is not a baseline");
	ok(cm_map_baseline(t, m, NULL, map, &err) == -1 && errno == EINVAL,
	   "NULL options rejected");
	opts.algorithm = CM_MAP_COMPACT;
	ok(cm_map_baseline(t, none, &opts, map, &err) == 0 && map[0] == -5,
	   "no threads: success, mapping untouched");
	ok(cm_map_baseline(NULL, m, &opts, map, &err) == -1 && errno == EINVAL,
	   "no topology");
	cm_matrix_free(m);
	cm_matrix_free(none);
	cm_topo_free(t);
}

int main(void)
{
	test_placements();
	test_big_machine();
	test_random();
	test_errors();
	return done_testing();
}
