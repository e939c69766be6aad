/* test_progress_guard.c: the progress guard's measures
 * (nodeagent/progress_guard.c): schedstat of a real thread, progress
 * between snapshots, the unpinned baseline, the verdict and the backoff. */
#include <config.h>

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "progress_guard.h"
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

int main(void)
{
	test_schedstat();
	test_progress();
	test_verdict();
	test_backoff();
	return done_testing();
}
