/* test_progress_guard.c: the progress guard's measures
 * (nodeagent/progress_guard.c): schedstat of a real thread, progress
 * between snapshots, the unpinned baseline, the verdict and the backoff;
 * and its judgements over a run (nodeagent/remap_decide.c, the code the
 * agent and the replay share): the way back of a mapping made in pieces,
 * a stacked mapping on a loaded machine. */
#include <config.h>

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "progress_guard.h"
#include "remap_decide.h"
#include "tap.h"

static void test_schedstat(void)
{
	double c0, w0, c1, w1;
	pid_t me = getpid();
	struct timespec t0, t;
	volatile unsigned long spin = 0;

	if (!ok(cm_guard_read_schedstat(NULL, me, me, &c0, &w0) == 0,
		"this thread's schedstat is read"))
		return;
	/* burn ~50 ms of CPU: the CPU time grows */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			spin += (unsigned long)i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1e3 +
		 (t.tv_nsec - t0.tv_nsec) / 1e6 < 50);
	ok(cm_guard_read_schedstat(NULL, me, me, &c1, &w1) == 0 &&
	   c1 - c0 >= 0.04 && w1 >= w0,
	   "after 50 ms of CPU: CPU time +%.3f s, wait not lower", c1 - c0);
	errno = 0;
	is_int(cm_guard_read_schedstat(NULL, me, 0x7ffffff0, &c1, &w1), -1,
	       "a thread that does not exist: -1");
	is_int(errno, ENOENT, "... ENOENT");
	is_int(cm_guard_read_schedstat("/nonexistent", me, me, &c1, &w1), -1,
	       "another proc root without it: -1");
}

static void test_progress(void)
{
	/* 4 threads over 1 s: one unread at the start, one gone */
	double c0[] = { 1.0, 2.0, -1, 5.0 }, w0[] = { 0.0, 0.5, -1, 1.0 };
	double c1[] = { 1.25, 2.25, 3.0, -1 }, w1[] = { 0.75, 1.25, 1, -1 };
	struct cm_progress p;

	ok(cm_guard_progress(4, c0, w0, c1, w1, 1.0, &p) == 0,
	   "progress computed");
	is_int(p.threads, 2, "only threads read in both count");
	is_double(p.cpu_rate, 0.5, 1e-9, "CPU rate 0.5 s/s");
	is_double(p.wait_share, 0.75, 1e-9, "wait share 0.75");
	is_int(p.busy, 2, "both wanted a CPU all the time: busy");
	errno = 0;
	is_int(cm_guard_progress(4, c0, w0, c1, w1, 0, &p), -1,
	       "no time elapsed: -1");
	is_int(errno, EINVAL, "... EINVAL");
	is_int(cm_guard_progress(0, NULL, NULL, NULL, NULL, 1, &p), 0,
	       "no thread: 0");
	is_double(p.wait_share, 0, 0, "... wait share 0");
}

static void test_verdict(void)
{
	struct cm_progress base, pinned, fair, before, same;
	char why[160];

	cm_guard_baseline(4, 2, &base);
	is_double(base.cpu_rate, 2, 0, "4 busy threads on 2 PUs: 2 s/s");
	is_double(base.wait_share, 0.5, 1e-12, "... waiting half the time");
	cm_guard_baseline(1, 2, &fair);
	is_double(fair.wait_share, 0, 0, "1 thread on 2 PUs: never waits");
	/* 4 busy threads stacked on one of the 2 PUs */
	pinned = (struct cm_progress){ .cpu_rate = 1.0, .wait_share = 0.75,
				       .threads = 4, .busy = 4 };
	is_int(cm_guard_worse(&base, &pinned, 1, why, sizeof(why)), 1,
	       "4 on one of 2 PUs against unpinned: worse");
	ok(strstr(why, "2.00 -> 1.00") != NULL, "... says by how much (%s)",
	   why);
	/* the same measure against a real window before with the same
	 * rates: not worse */
	before = pinned;
	is_int(cm_guard_worse(&before, &pinned, 0, why, sizeof(why)), 0,
	       "no change: kept");
	/* CPU fell, wait share did not rise: a phase of the program */
	before = (struct cm_progress){ .cpu_rate = 2.0, .wait_share = 0.1 };
	same = (struct cm_progress){ .cpu_rate = 1.0, .wait_share = 0.1 };
	is_int(cm_guard_worse(&before, &same, 0, why, sizeof(why)), 0,
	       "CPU down without more waiting: kept");
	/* waits rose, CPU did not fall: another job's burst */
	same = (struct cm_progress){ .cpu_rate = 1.9, .wait_share = 0.4 };
	is_int(cm_guard_worse(&before, &same, 0, why, sizeof(why)), 0,
	       "more waiting at the same CPU rate: kept");
	same = (struct cm_progress){ .cpu_rate = 1.5, .wait_share = 0.3 };
	is_int(cm_guard_worse(&before, &same, 0, why, sizeof(why)), 1,
	       "CPU -25%% and wait share +0.2 against a window before: "
	       "worse");
	is_int(cm_guard_worse(&before, &same, 1, why, sizeof(why)), 0,
	       "... within the baseline's larger margins: kept");
}

static void test_backoff(void)
{
	is_double(cm_guard_backoff_ms(1), CM_GUARD_BACKOFF_MS, 0,
		  "first undo: the base hold");
	is_double(cm_guard_backoff_ms(3), 4 * CM_GUARD_BACKOFF_MS, 0,
		  "third in a row: 4 times");
	is_double(cm_guard_backoff_ms(50), 256 * CM_GUARD_BACKOFF_MS, 0,
		  "bounded at 256 times");
}


#define MS 1000000ull

/* Every one of the n threads ran cpu and waited wait seconds more. */
static void advance(double *c, double *w, int n, double cpu, double wait)
{
	for (int i = 0; i < n; i++) {
		c[i] += cpu;
		w[i] += wait;
	}
}

/* A mapping applied at t_ms with the threads' times (c, w) then. */
static void apply_at(struct cm_decide_guard *g, uint64_t t_ms,
		     const double *c, const double *w, const int *leaving)
{
	memcpy(g->cpu_a, c, 4 * sizeof(double));
	memcpy(g->wait_a, w, 4 * sizeof(double));
	cm_decide_guard_applied(g, t_ms * MS, 4, leaving, 4);
}

/* The window before the next mapping starts at t_ms (an interval's end). */
static void mark_at(struct cm_decide_guard *g, uint64_t t_ms,
		    const double *c, const double *w)
{
	memcpy(g->cpu, c, 4 * sizeof(double));
	memcpy(g->wait, w, 4 * sizeof(double));
	g->snap_ns = t_ms * MS;
}

static int judge_at(struct cm_decide_guard *g, uint64_t t_ms,
		    const double *c, const double *w, int stacked, char *why)
{
	memcpy(g->cpu, c, 4 * sizeof(double));
	memcpy(g->wait, w, 4 * sizeof(double));
	return cm_decide_guard_judge(g, t_ms * MS, 4, stacked, 2, why, 160);
}

static int all_unpinned(const struct cm_decide_guard *g)
{
	for (int i = 0; i < g->nprev; i++)
		if (g->prev_os[i] != -1)
			return 0;
	return g->nprev == 4;
}

/* A static mapping of 4 busy threads onto PU 0 of 2 arrives in two
 * pieces (the threads appear in different scans): the first, PU 0 for
 * the main thread alone, is within the invariant and not judged; the
 * second stacks them.  Its undo returns to before the first piece. */
static void test_pieces(void)
{
	struct cm_decide_guard g = { 0 };
	double c[4] = { 0 }, w[4] = { 0 };
	const int none[4] = { -1, -1, -1, -1 }, first[4] = { 0, -1, -1, -1 };
	char why[160] = "";

	if (!ok(cm_decide_guard_grow(&g, 4) == 0, "guard: room for 4"))
		return;
	apply_at(&g, 1000, c, w, none);		/* no window before */
	advance(c, w, 4, 0.15, 0.15);		/* 300 ms, 2 PUs shared */
	is_int(judge_at(&g, 1300, c, w, 0, why), -1,
	       "first piece, within the invariant: not judged");
	advance(c, w, 4, 0.155, 0.155);		/* 310 ms before */
	apply_at(&g, 1610, c, w, first);
	ok(g.have_before, "second piece: a window before it");
	advance(c, w, 4, 0.075, 0.225);		/* 300 ms on one PU */
	ok(judge_at(&g, 1910, c, w, 1, why) == 1,
	   "4 threads on one of 2 PUs: undone (%s)", why);
	ok(all_unpinned(&g), "the way back: unpinned, as before the first "
	   "piece (not the first piece itself)");
	cm_decide_guard_undone(&g, 1910 * MS);
	/* after the undo, the next mapping's way back is where it starts */
	advance(c, w, 4, 0.2, 0.2);
	apply_at(&g, 6000, c, w, first);
	ok(g.nprev == 4 && g.prev_os[0] == 0 && g.prev_os[1] == -1,
	   "after an undo: the way back is the placement left");
	cm_decide_guard_free(&g);
}

/* A mapping judged good becomes the way back from the next one. */
static void test_kept_is_way_back(void)
{
	struct cm_decide_guard g = { 0 };
	double c[4] = { 0 }, w[4] = { 0 };
	const int none[4] = { -1, -1, -1, -1 }, a[4] = { 0, 1, 0, 1 };
	char why[160] = "";

	if (!ok(cm_decide_guard_grow(&g, 4) == 0, "guard: room for 4"))
		return;
	mark_at(&g, 500, c, w);
	advance(c, w, 4, 0.25, 0.25);
	apply_at(&g, 1000, c, w, none);
	advance(c, w, 4, 0.15, 0.15);
	ok(judge_at(&g, 1300, c, w, 0, why) == 0,
	   "a mapping that changes nothing: kept (%s)", why);
	advance(c, w, 4, 0.15, 0.15);
	apply_at(&g, 1600, c, w, a);
	ok(g.nprev == 4 && memcmp(g.prev_os, a, sizeof(a)) == 0,
	   "the next mapping returns to the one kept");
	cm_decide_guard_free(&g);
}

/* A loaded machine: the step's threads already wait nearly all the
 * time before the mapping, so stacking them cannot raise the wait share
 * by the measured margin; stacked beyond the invariant, the mapping is
 * also held against the unpinned model, and undone. */
static void test_stacked_loaded(void)
{
	struct cm_decide_guard g = { 0 };
	double c[4] = { 0 }, w[4] = { 0 };
	const int none[4] = { -1, -1, -1, -1 };
	char why[160] = "";

	if (!ok(cm_decide_guard_grow(&g, 4) == 0, "guard: room for 4"))
		return;
	mark_at(&g, 700, c, w);
	advance(c, w, 4, 0.015, 0.285);		/* 300 ms, 5% of a CPU */
	apply_at(&g, 1000, c, w, none);
	ok(g.have_before, "a window before it");
	advance(c, w, 4, 0.0075, 0.2925);	/* half that, stacked */
	ok(judge_at(&g, 1300, c, w, 1, why) == 1,
	   "stacked on a loaded machine: undone (%s)", why);
	ok(strstr(why, "unpinned") != NULL, "... against the unpinned "
	   "model");
	cm_decide_guard_undone(&g, 1300 * MS);
	/* the same measures, not stacked: the window before rules, kept */
	g.hold_until_ns = 0;
	mark_at(&g, 9700, c, w);
	advance(c, w, 4, 0.015, 0.285);
	apply_at(&g, 10000, c, w, none);
	advance(c, w, 4, 0.0075, 0.2925);
	ok(judge_at(&g, 10300, c, w, 0, why) == 0,
	   "the same within the invariant: kept (%s)", why);
	cm_decide_guard_free(&g);
}

int main(void)
{
	test_schedstat();
	test_progress();
	test_verdict();
	test_backoff();
	test_pieces();
	test_kept_is_way_back();
	test_stacked_loaded();
	return done_testing();
}
