/* test_map_validate.c: mapping validation and algorithm names
 * (lib/map_validate.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/mapping.h"
#include "tap.h"
#include "map_test_util.h"

static void test_names(void)
{
	static const char *const names[] = {
		"auto", "greedy", "matching", "exact", "compact", "scatter",
		"roundrobin", "random",
	};
	struct cm_error err = { "" };
	enum cm_map_algorithm alg;
	int roundtrip = 1;

	is_int(CM_MAP_ALGORITHM_COUNT, 8, "eight algorithms");
	for (int i = 0; i < CM_MAP_ALGORITHM_COUNT; i++) {
		roundtrip &= strcmp(cm_map_algorithm_name(i), names[i]) == 0;
		roundtrip &= cm_map_algorithm_parse(names[i], &alg,
						    &err) == 0 && (int)alg == i;
	}
	ok(roundtrip, "every name parses to its enum and back");
	ok(cm_map_algorithm_name(CM_MAP_ALGORITHM_COUNT) == NULL,
	   "name of an out-of-range value is NULL");
	ok(cm_map_algorithm_name((enum cm_map_algorithm)-1) == NULL,
	   "name of a negative value is NULL");
}

static void test_parse_errors(void)
{
	static const char *const bad[] = {
		"", "Auto", "greedy ", "scotch", "round-robin", "exactly",
	};
	struct cm_error err = { "" };
	enum cm_map_algorithm alg = CM_MAP_EXACT;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		err.text[0] = '\0';
		ok(cm_map_algorithm_parse(bad[i], &alg, &err) == -1 &&
		   errno == EINVAL && strstr(err.text, "roundrobin") &&
		   strstr(err.text, "auto"),
		   "'%s' rejected, error lists the valid names", bad[i]);
	}
	is_int(alg, CM_MAP_EXACT, "output untouched on error");
	ok(strstr(err.text, "'exactly'") != NULL, "error names the input");
	ok(cm_map_algorithm_parse(NULL, &alg, &err) == -1 && errno == EINVAL,
	   "NULL name rejected");
	ok(cm_map_algorithm_parse("random", &alg, NULL) == 0 &&
	   alg == CM_MAP_RANDOM, "NULL error buffer allowed");
}

/* One row: a mapping on "pack:2 core:2 pu:2" (8 PUs) and the verdict. */
struct vcase {
	int n;
	int map[20];
	int oversubscribe;
	int valid;
	const char *needle;	/* in the error text */
	const char *what;
};

static void test_validate_table(void)
{
	static const struct vcase cases[] = {
		{ 0, { 0 }, 0, 1, NULL, "no threads" },
		{ 1, { 7 }, 0, 1, NULL, "one thread on the last PU" },
		{ 8, { 7, 6, 5, 4, 3, 2, 1, 0 }, 0, 1, NULL, "n == npus" },
		{ 3, { 0, 2, 4 }, 0, 1, NULL, "n < npus, distinct" },
		{ 3, { 0, 2, 4 }, 1, 1, NULL, "oversubscribe allowed, unused" },
		{ 3, { 0, 2, 0 }, 0, 0, "thread 2", "two threads on PU 0" },
		{ 3, { 0, 2, 0 }, 1, 0, "thread 2",
		  "n < npus: one per PU even with oversubscribe" },
		{ 2, { 0, 8 }, 0, 0, "thread 1", "PU index == npus" },
		{ 2, { -1, 0 }, 0, 0, "thread 0", "negative PU index" },
		{ 9, { 0, 1, 2, 3, 4, 5, 6, 7, 0 }, 0, 0, "9 threads",
		  "n > npus without oversubscribe" },
		{ 9, { 0, 1, 2, 3, 4, 5, 6, 7, 0 }, 1, 1, NULL,
		  "n > npus, balanced" },
		{ 9, { 0, 1, 2, 3, 4, 5, 6, 7, 5 }, 1, 1, NULL,
		  "n > npus, extra thread anywhere" },
		{ 12, { 0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7 }, 1, 1, NULL,
		  "12 on 8: four PUs with two" },
		{ 9, { 0, 0, 0, 1, 2, 3, 4, 5, 6 }, 1, 0, "thread 2",
		  "three on one PU while ceil is 2" },
		{ 10, { 0, 0, 1, 1, 2, 2, 3, 3, 4, 5 }, 1, 0, "PU 6",
		  "an empty PU while floor is 1" },
	};
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", NULL);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct vcase *c = &cases[i];
		struct cm_error err = { "" };
		int rv;

		errno = 0;
		rv = cm_map_validate(t, c->n, c->map, c->oversubscribe, &err);
		if (c->valid) {
			ok(rv == 0, "valid: %s", c->what);
			if (rv)
				diag("  %s", err.text);
		} else {
			ok(rv == -1 && errno == EINVAL &&
			   strstr(err.text, c->needle),
			   "invalid: %s", c->what);
			diag("  %s", err.text);
		}
	}
	ok(cm_map_validate(t, 2, NULL, 0, NULL) == -1 && errno == EINVAL,
	   "NULL mapping with threads");
	ok(cm_map_validate(t, -1, NULL, 0, NULL) == -1 && errno == EINVAL,
	   "negative thread count");
	ok(cm_map_validate(t, 0, NULL, 0, NULL) == 0, "NULL mapping, n = 0");
	ok(cm_map_validate(NULL, 0, NULL, 0, NULL) == -1, "no topology");
	cm_topo_free(t);
}

/* Holes: indices are PU indices of the restricted topology (5 PUs). */
static void test_validate_holes(void)
{
	struct cm_topo *t = map_test_topo("pack:2 core:2 pu:2", "0,2,3,6,7");
	int map5[5] = { 4, 3, 2, 1, 0 }, map6[6] = { 0, 1, 2, 3, 4, 4 };
	int out[2] = { 0, 5 };

	if (!ok(t != NULL, "restricted topology loads"))
		return;
	ok(cm_map_validate(t, 5, map5, 0, NULL) == 0, "all 5 allowed PUs");
	ok(cm_map_validate(t, 2, out, 0, NULL) == -1,
	   "index 5 is out of the restricted range");
	ok(cm_map_validate(t, 6, map6, 1, NULL) == 0, "6 on 5, balanced");
	cm_topo_free(t);
}

int main(void)
{
	test_names();
	test_parse_errors();
	test_validate_table();
	test_validate_holes();
	return done_testing();
}
