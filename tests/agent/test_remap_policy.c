/* test_remap_policy.c: the adaptive interval (LHMapping §3.4.2), the
 * partner filter (SPCD §IV-A), the cost-gain threshold and the decision. */
#include <config.h>

#include "commap/matrix.h"
#include "remap_policy.h"
#include "tap.h"

static void test_interval(void)
{
	is_int(cm_remap_next_interval(200, 0), 250, "stable: +50 ms");
	is_int(cm_remap_next_interval(200, 1), 150, "changed: -50 ms");
	is_int(cm_remap_next_interval(50, 1), 50, "never below 50 ms");
	is_int(cm_remap_next_interval(75, 1), 50, "clamped to 50 ms");
	is_int(cm_remap_next_interval(1000, 0), 1000, "never above 1 s");
	is_int(cm_remap_next_interval(980, 0), 1000, "clamped to 1 s");
	is_int(cm_remap_next_interval(10, 0), 60, "from below the range");

	int t = CM_REMAP_INTERVAL_MS_START;

	for (int i = 0; i < 100; i++)
		t = cm_remap_next_interval(t, 0);
	is_int(t, 1000, "a stable pattern settles at 1 s");
	for (int i = 0; i < 100; i++)
		t = cm_remap_next_interval(t, 1);
	is_int(t, 50, "a changing pattern settles at 50 ms");
}

static void test_partners(void)
{
	struct cm_matrix *m = cm_matrix_new(6);
	int p[8], before[8];

	cm_matrix_add(m, 0, 1, 10);
	cm_matrix_add(m, 2, 3, 5);
	cm_matrix_add(m, 0, 2, 1);
	cm_matrix_add(m, 4, 5, 2);
	cm_matrix_add(m, 4, 3, 2);	/* tie for 4: lower index wins */
	cm_remap_partners(m, 8, p);
	is_int(p[0], 1, "0's partner is 1");
	is_int(p[1], 0, "1's partner is 0");
	is_int(p[2], 3, "2's partner is 3 (5 > 1)");
	is_int(p[4], 3, "tie broken by the lower index");
	is_int(p[6], -1, "beyond the matrix: no partner");
	is_int(cm_remap_partners_changed(p, 8, p, 8), 0, "same: 0 changed");
	for (int i = 0; i < 8; i++)
		before[i] = p[i];
	/* Phase change: 0 now talks to 2 more than to 1 (SPCD §V-B). */
	cm_matrix_add(m, 0, 2, 50);
	cm_remap_partners(m, 8, p);
	is_int(cm_remap_partners_changed(before, 8, p, 8), 2,
	       "0 and 2 changed partner");
	is_int(cm_remap_partners_changed(before, 3, p, 6), 5,
	       "threads beyond the old list count when they have a partner");
	is_int(cm_remap_partners_changed(NULL, 0, p, 0), 0, "empty");
	cm_remap_partners(NULL, 3, p);
	ok(p[0] == -1 && p[2] == -1, "no matrix: no partners");
	cm_matrix_free(m);
}

static void test_worth(void)
{
	ok(cm_remap_worth(100, 90, 0.05), "10%% better than a 5%% threshold");
	ok(!cm_remap_worth(100, 96, 0.05), "4%% better: not worth it");
	ok(!cm_remap_worth(100, 95, 0.05), "exactly 5%%: not worth it");
	ok(!cm_remap_worth(100, 120, 0.05), "worse: never");
	ok(!cm_remap_worth(0, 0, 0.05), "zero cost: nothing to gain");
	ok(!cm_remap_worth(-1, 0, 0.05), "unknown current cost: no");
	ok(cm_remap_worth(1, 0.5, 0), "threshold 0: any gain");
	ok(!cm_remap_worth(1, 0, 1), "threshold 1: never");
}

static void test_decide(void)
{
	struct cm_remap_input in = { .interval_ms = 200,
				     .partner_threshold = 2 };
	struct cm_remap_decision d;

	cm_remap_decide(&in, &d);
	ok(!d.compute && d.next_interval_ms == 250, "no communication: "
	   "nothing, interval grows (%s)", d.reason);
	in.comm_total = 1;
	in.partners_changed = 2;
	cm_remap_decide(&in, &d);
	ok(!d.compute && !d.pattern_changed,
	   "one stray event moves nobody (%s)", d.reason);
	in.partners_changed = 0;
	in.comm_total = 10;
	cm_remap_decide(&in, &d);
	ok(d.compute, "first communication: initial mapping (%s)", d.reason);
	in.have_mapping = 1;
	in.partners_changed = 1;
	cm_remap_decide(&in, &d);
	ok(!d.compute && !d.pattern_changed && d.next_interval_ms == 250,
	   "one partner changed is below SPCD's threshold (%s)", d.reason);
	in.partners_changed = 2;
	cm_remap_decide(&in, &d);
	ok(d.compute && d.pattern_changed && d.next_interval_ms == 150,
	   "two changed: remap, interval shrinks (%s)", d.reason);
	in.partners_changed = 0;
	in.unplaced = 3;
	cm_remap_decide(&in, &d);
	ok(d.compute && !d.pattern_changed, "new threads: map them (%s)",
	   d.reason);
	in.partner_threshold = 0;
	in.unplaced = 0;
	in.partners_changed = 2;
	cm_remap_decide(&in, &d);
	ok(d.pattern_changed, "threshold 0 means SPCD's default 2");
}

int main(void)
{
	test_interval();
	test_partners();
	test_worth();
	test_decide();
	return done_testing();
}
