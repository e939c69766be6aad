/* test_placement.c: the placement invariant's checker
 * (lib/placement_check.c), the repair that enforces it and the rule that
 * pins nothing where nothing can be gained (nodeagent/placement.c). */
#include <config.h>

#include <errno.h>
#include <string.h>

#include "commap/matrix.h"
#include "commap/placement_check.h"
#include "commap/topology.h"
#include "placement.h"
#include "tap.h"

static void test_cap(void)
{
	is_int(cm_placement_cap(4, 4), 1, "4 threads on 4 PUs: 1 per PU");
	is_int(cm_placement_cap(5, 4), 2, "5 on 4: 2");
	is_int(cm_placement_cap(8, 4), 2, "8 on 4: 2");
	is_int(cm_placement_cap(9, 4), 3, "9 on 4: 3");
	is_int(cm_placement_cap(0, 4), 1, "no thread: 1");
	is_int(cm_placement_cap(3, 0), 1, "no PU: 1");
}

static void test_check(void)
{
	struct cm_error err;
	int spread[] = { 0, 1, 2, -1 };
	int doubled[] = { 7, 7, 9, 11, 12, 10, 8, 5, -1, 13, 0, 4, 1, 6, 2, 3 };
	int over[] = { 0, 0, 0, 1, 1 };
	int fair[] = { 0, 0, 1, 1, 2 };

	is_int(cm_placement_check(4, 4, 4, spread, &err), 0,
	       "one per PU, one unpinned: holds");
	errno = 0;
	is_int(cm_placement_check(16, 16, 16, doubled, &err), -1,
	       "two threads on PU 7 of 16 with 16 threads: broken");
	is_int(errno, EDOM, "... EDOM");
	ok(strstr(err.text, "PU 7") && strstr(err.text, "threads 0 and 1"),
	   "... the message names the PU and the threads (%s)", err.text);
	is_int(cm_placement_check(3, 5, 5, fair, &err), 0,
	       "5 threads on 3 PUs, at most 2 per PU: holds");
	is_int(cm_placement_check(3, 5, 5, over, &err), -1,
	       "3 on one PU with 5 threads on 3 PUs: broken");
	is_int(cm_placement_check(2, 2, 2, fair, &err), -1,
	       "live count below the pinned ones: the pinned count rules");
	is_int(cm_placement_check(4, 6, 4, (int[]){ 0, 0, 1, 2 }, &err), 0,
	       "6 live threads on 4 PUs (2 unpinned): 2 on a PU is fair");
	is_int(cm_placement_check(4, 4, 2, (int[]){ -2, 0 }, &err), -1,
	       "a PU below -1: error");
	is_int(errno, EINVAL, "... EINVAL");
	is_int(cm_placement_check(0, 1, 1, spread, &err), -1, "no PU: EINVAL");
	is_int(cm_placement_check(4, 0, 0, NULL, &err), 0, "nothing: holds");
}

static void test_repair(void)
{
	struct cm_topo *topo;
	struct cm_error err;
	int alive[] = { 1, 1, 1, 1, 0, 1 };
	int cur[] = { 0, -1, 2, -1, 1, -1 };
	int target[] = { 0, 0, 2, 3, 1, -1 };
	int moved;

	if (cm_topo_load_synthetic(&topo, "pack:2 core:2 pu:2", &err) < 0)
		return (void)ok(0, "topology: %s", err.text);
	/* 8 PUs, 5 live threads: 1 per PU. Thread 1 was sent onto thread
	 * 0's PU 0: it moves (not 0, which was there), to PU 1 (its core
	 * sibling, the nearest free PU: exited thread 4's PU is free). */
	moved = cm_place_repair(topo, 6, alive, cur, target);
	is_int(moved, 1, "one thread moved");
	is_int(target[0], 0, "the thread already there stays");
	is_int(target[1], 1, "the newcomer goes to the nearest free PU");
	is_int(target[4], -1, "the exited thread leaves its PU");
	is_int(cm_placement_check(8, 5, 6, target, &err), 0,
	       "the result holds the invariant");

	/* exits lower the cap: 2 on a PU with 3 live threads on 8 PUs */
	int alive2[] = { 1, 1, 1 }, cur2[] = { 4, 4, 5 }, t2[] = { 4, 4, 5 };

	is_int(cm_place_repair(topo, 3, alive2, cur2, t2), 1,
	       "two placed threads sharing a PU: one moves");
	ok(t2[1] != 4 && t2[1] != 5 && t2[0] == 4,
	   "... the higher-numbered to a free PU (%d)", t2[1]);
	int bad[] = { 9 };

	errno = 0;
	is_int(cm_place_repair(topo, 1, alive2, cur2, bad), -1,
	       "PU index out of range: error");
	is_int(errno, EINVAL, "... EINVAL");
	cm_topo_free(topo);
}

static void test_worth(void)
{
	struct cm_topo *flat, *two;
	struct cm_error err;
	struct cm_matrix *m = cm_matrix_new(4);
	char why[256];
	int pu[] = { 0, 1, 2, 3 }, split[] = { 0, 2, 1, 3 };

	if (cm_topo_load_synthetic(&flat, "pack:1 core:16 pu:1", &err) < 0 ||
	    cm_topo_load_synthetic(&two, "pack:2 core:2 pu:2", &err) < 0 ||
	    !m)
		return (void)ok(0, "setup: %s", err.text);
	cm_matrix_add(m, 0, 1, 100);
	cm_matrix_add(m, 2, 3, 100);
	is_int(cm_place_worth_pinning(flat, 4, m, pu, 0.05, why, sizeof(why)),
	       0, "a flat 16-core machine: nothing to gain");
	ok(strncmp(why, "equidistant", 11) == 0, "... equidistant (%s)", why);
	is_int(cm_place_worth_pinning(flat, 17, m, pu, 0.05, why,
				      sizeof(why)), 1,
	       "more threads than PUs there: sharing a PU can gain");
	is_int(cm_place_worth_pinning(two, 4, m, pu, 0.05, why, sizeof(why)),
	       1, "pairs on SMT siblings of 8 PUs: worth pinning");
	is_int(cm_place_worth_pinning(two, 4, m, split, 0.05, why,
				      sizeof(why)), 0,
	       "pairs split across packages: no better than unpinned");
	ok(strncmp(why, "little-gain", 11) == 0, "... little-gain (%s)", why);
	ok(cm_topo_restrict(two, "0-1", &err) == 0 &&
	   cm_place_worth_pinning(two, 2, NULL, NULL, 0.05, why,
				  sizeof(why)) == 0,
	   "a cpuset of two SMT siblings for two threads: equidistant");
	cm_matrix_free(m);
	cm_topo_free(flat);
	cm_topo_free(two);
}

/* The check over a result's timeline, as the validator and commap run
 * use it. */
static void test_result(void)
{
	struct cm_error err;
	const char *ok_doc = "{\"topology\": {\"pus\": 4}, \"timeline\": ["
		"{\"t\": 0.2, \"pu_of_thread\": [0, 1, -1]},"
		"{\"t\": 0.4, \"pu_of_thread\": [0, 0, 1, 2, 3],"
		" \"threads_live\": 5},"
		"{\"t\": 0.6, \"pu_of_thread\": [1, 1, 1, 1], \"forced\": true}"
		"]}";
	const char *bad_doc = "{\"topology\": {\"pus\": 16}, \"timeline\": ["
		"{\"t\": 0.2, \"pu_of_thread\": [0, 1]},"
		"{\"t\": 1.0, \"pu_of_thread\": [7, 7, 9, -1],"
		" \"threads_live\": 4}]}";

	is_int(cm_placement_check_result(ok_doc, strlen(ok_doc), &err), 0,
	       "one per PU; 2 on a PU with 5 live on 4; a forced entry: holds");
	errno = 0;
	is_int(cm_placement_check_result(bad_doc, strlen(bad_doc), &err), -1,
	       "two threads on PU 7 of 16: broken");
	is_int(errno, EDOM, "... EDOM");
	ok(strncmp(err.text, "timeline[1].pu_of_thread: PU 7", 30) == 0,
	   "... the message names the entry and the PU (%s)", err.text);
	is_int(cm_placement_check_result("[1]", 3, &err), -1,
	       "not an object: -1");
	is_int(errno, EINVAL, "... EINVAL");
	is_int(cm_placement_check_result("{\"timeline\": 3}", 15, &err), 0,
	       "malformed timeline: left to the validator");
}

int main(void)
{
	test_result();
	test_cap();
	test_check();
	test_repair();
	test_worth();
	return done_testing();
}
