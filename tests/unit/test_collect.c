/* test_collect.c: the collection pipeline (nodeagent/collect.c) with real
 * perf events, real /proc and the real tracker.
 *
 * - options and backends: defaults, bad values, hw refused cleanly on a
 *   machine without a memory-sampling PMU, auto falls back to sample;
 * - 4 producer/consumer pairs (8 threads of a forked child, separate
 *   256 KiB buffers) sampled ~1.5 s: cosine with the ground truth >= 0.9
 *   and every thread's heaviest partner is its pair;
 * - attaching: threads that exist are attached, a thread created by an
 *   attached thread is covered by inheritance and not attached again (its
 *   sample rate is not doubled), a thread created before its creator was
 *   attached is found uncovered and attached late; set_period re-creates
 *   the sampler;
 * - identity: samples of a process the tracker does not know (foreign)
 *   and of threads not yet scanned are dropped before decoding, and the
 *   counters add up;
 * Shared mappings, unreadable maps and permissions: test_collect_maps.c;
 * workloads and helpers: collect_test_util.c.
 * Thresholds, not exact counts: the VM has 2 cores shared with other jobs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "tap.h"
#include "collect_test_util.h"

/* ---- tests --------------------------------------------------------------- */

static void test_options(void)
{
	struct cm_collect_opts o;
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_error e = { "" };
	struct cm_collect_stats st;
	struct cm_collector *c;
	enum cm_collect_backend b;

	cm_collect_opts_default(&o);
	is_int(o.period_ns, 1000000, "default period 1 ms");
	is_int(o.block_shift, 12, "default block 4 KiB");
	is_int(o.window_ns, 100000000, "default window 100 ms");
	ok(cm_collect_new(&o, NULL, &e) == NULL && errno == EINVAL,
	   "NULL tracker refused");
	o.block_shift = 5;
	ok(cm_collect_new(&o, t, &e) == NULL && errno == EINVAL &&
	   strstr(e.text, "block_shift"), "block_shift 5 refused: %s",
	   e.text);
	o.block_shift = 22;
	ok(cm_collect_new(&o, t, &e) == NULL && errno == EINVAL,
	   "block_shift 22 refused");
	cm_collect_opts_default(&o);
	o.code_before = 8;
	ok(cm_collect_new(&o, t, &e) == NULL && errno == EINVAL,
	   "code_before 8 refused");
	cm_collect_opts_default(&o);
	o.table_slots = 1000;
	ok(cm_collect_new(&o, t, &e) == NULL && errno == EINVAL,
	   "table slots not a power of two refused: %s", e.text);
	cm_collect_opts_default(&o);
	o.lookback = 17;
	ok(cm_collect_new(&o, t, &e) == NULL && errno == EINVAL,
	   "lookback 17 refused");
	cm_collect_opts_default(&o);
	o.period_ns = 1000;
	ok(cm_collect_new(&o, t, &e) == NULL && errno == EINVAL,
	   "period 1 us refused: %s", e.text);

	ok(cm_collect_backend_parse("hw", &b) == 0 && b == CM_COLLECT_HW,
	   "parse hw");
	ok(cm_collect_backend_parse("fault", &b) == 0 && b == CM_COLLECT_FAULT,
	   "parse fault");
	is_str(cm_collect_backend_name(CM_COLLECT_AUTO), "auto", "name");
	is_str(cm_collect_backend_name((enum cm_collect_backend)9), "?",
	       "name out of range");

	/* A sysfs without any PMU: hw refused with the probe's reason,
	 * auto falls back to sample. */
	cm_collect_opts_default(&o);
	o.backend = CM_COLLECT_HW;
	o.sysfs_root = "/nonexistent-sysfs";
	c = cm_collect_new(&o, t, &e);
	ok(!c && errno == ENOENT && strstr(e.text, "hw backend unusable"),
	   "hw without PMU: ENOENT: %s", e.text);
	o.backend = CM_COLLECT_AUTO;
	c = cm_collect_new(&o, t, &e);
	cm_collect_stats(c, &st);
	ok(c && st.backend == CM_COLLECT_SAMPLE, "auto falls back to sample");
	ok(cm_collect_drain(c, NULL, &e) == -1 && errno == EINVAL,
	   "drain into NULL matrix refused");
	ok(cm_collect_sync(c, &e) == 0, "sync with an empty tracker");
	is_int(cm_collect_thread_samples(c, 3), 0, "unknown thread: 0");
	is_str(cm_collect_last_problem(c), "", "no problem yet");
	cm_collect_free(c);
	cm_collect_free(NULL);
	cm_tracker_free(t);
}

static double weakest_pair(const struct cm_matrix *m, const int *idx)
{
	double w = -1;

	for (int p = 0; p < 4; p++) {
		double x = cm_matrix_get(m, idx[2 * p], idx[2 * p + 1]);

		if (w < 0 || x < w)
			w = x;
	}
	return w;
}

static void test_pairs(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_matrix *m = cm_matrix_new(0), *truth = cm_matrix_new(0);
	struct cm_collect_stats st;
	struct cm_error e = { "" };
	struct cm_collector *c;
	int idx[8], good = 1, n;
	double spent, t0, wall;
	pid_t pid = spawn(child_pairs);

	for (int i = 0; i < 5000 && atomic_load(&ctl->nworkers) < 8; i++)
		sleep_ms(1);
	ok(cm_tracker_add_root(t, pid, 0, &e) == 0, "tracker: add child");
	cm_tracker_scan(t);
	/* 250 us as in the measurement: more samples per block in
	 * the window on a loaded VM. */
	c = new_collector(t, 250000);
	n = cm_collect_sync(c, &e);
	is_int(n, 9, "first sync attaches the 9 existing threads one by one");
	if (n < 0)
		diag("sync: %s", e.text);
	is_int(cm_collect_sync(c, &e), 0, "second sync attaches nothing");
	for (int k = 0; k < 8; k++)
		idx[k] = cm_tracker_find_thread(t, atomic_load(&ctl->tids[k]));
	/* At least 1 s, then until every pair has a few events (at most
	 * 3 s): the VM's load varies. */
	t0 = now_s();
	spent = run_for(c, t, m, 1.0, 0);
	while (now_s() - t0 < 3.0 && weakest_pair(m, idx) < 10)
		spent += run_for(c, t, m, 0.25, 0);
	wall = now_s() - t0;
	reap(pid);
	t0 = cpu_s();
	cm_collect_drain(c, m, &e);
	spent += cpu_s() - t0;
	cm_collect_stats(c, &st);

	cm_matrix_resize(truth, cm_matrix_nthreads(m) > 9 ?
			 cm_matrix_nthreads(m) : 9);
	for (int p = 0; p < 4; p++)
		if (idx[2 * p] >= 0 && idx[2 * p + 1] >= 0)
			cm_matrix_add(truth, idx[2 * p], idx[2 * p + 1], 1);
	for (int k = 0; k < 8; k++) {
		struct cm_matrix_entry top;

		if (idx[k] < 0 || cm_matrix_top_partners(m, idx[k], 1, &top)
		    != 1 || top.col != idx[k ^ 1])
			good = 0;
	}
	diag("pairs: %llu samples in %.2f s (%.0f/s), %.1f%% decoded, "
	     "%llu events, %llu lost; agent %.2f us/sample",
	     (unsigned long long)st.samples, wall,
	     (double)st.samples / wall,
	     100.0 * (double)st.decoded / (double)(st.ours ? st.ours : 1),
	     (unsigned long long)st.events, (unsigned long long)st.lost,
	     1e6 * spent / (double)(st.samples ? st.samples : 1));
	diag("cosine with the 4 pairs: %.4f; code reads %llu, maps loads "
	     "%llu", cm_matrix_cosine(m, truth),
	     (unsigned long long)st.code_reads,
	     (unsigned long long)st.maps_loads);
	ok(st.samples >= 300, "enough samples (%llu)",
	   (unsigned long long)st.samples);
	ok(st.decoded * 10 >= st.ours * 9, "at least 90%% decoded");
	if (!ok(cm_matrix_cosine(m, truth) >= 0.9, "cosine with ground "
		"truth >= 0.9 (%.4f)", cm_matrix_cosine(m, truth)))
		for (int k = 0; k < 8; k++)
			for (int j = k + 1; j < 8; j++)
				diag("w(%d,%d) = %.0f", k, j,
				     cm_matrix_get(m, idx[k], idx[j]));
	ok(good, "every thread's heaviest partner is its pair");
	is_int(st.attached, 9, "stats: 9 attached");
	is_int(st.inherited, 0, "stats: none inherited");
	is_int(st.tasks, 9, "sampler has 9 tasks");
	ok(st.code_reads < 200 && st.code_reads * 10 < st.samples,
	   "code read once per IP, not per sample (%llu)",
	   (unsigned long long)st.code_reads);
	is_int(st.foreign, 0, "no foreign samples");
	check_stats_add_up(&st, "pairs");
	for (int k = 0; k < 8; k++)
		ok(cm_collect_thread_samples(c, idx[k]) > 0,
		   "worker %d has samples", k);
	cm_collect_free(c);
	cm_matrix_free(m);
	cm_matrix_free(truth);
	cm_tracker_free(t);
}

/* Samples per period of user CPU time of thread tid (1 when sampled
 * once, 2 when sampled twice). */
static double rate_of(const struct cm_collector *c, struct cm_tracker *t,
		      pid_t pid, pid_t tid, uint64_t s0, uint64_t u0,
		      uint64_t period)
{
	char path[128], buf[1024], *p;
	unsigned long long ut = 0;
	FILE *f;
	int i = cm_tracker_find_thread(t, tid);

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid,
		 (int)tid);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
			 "%*u %llu", &ut) != 1 || ut <= u0)
		return -1;
	return (double)(cm_collect_thread_samples(c, i) - s0) *
	       (double)period / ((double)(ut - u0) * 1e9 /
				 (double)sysconf(_SC_CLK_TCK));
}

static void test_inheritance(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_collect_stats st;
	struct cm_error e = { "" };
	struct cm_collector *c;
	pid_t pid = spawn(child_commands), w1, x, y;
	double r_w1, r_y, r_x, t0;
	int n;

	for (int i = 0; i < 5000 && atomic_load(&ctl->nworkers) < 1; i++)
		sleep_ms(1);
	cm_tracker_add_root(t, pid, 0, &e);
	cm_tracker_scan(t);
	/* x is created after the scan and before its creator (the main
	 * thread) is attached: inheritance does not cover it. */
	command(CMD_THREAD);
	c = new_collector(t, CM_PERF_DEFAULT_PERIOD_NS);
	is_int(cm_collect_sync(c, &e), 2, "main thread and w1 attached");
	/* y is created by the attached main thread: inherited. */
	command(CMD_THREAD);
	w1 = atomic_load(&ctl->tids[0]);
	x = atomic_load(&ctl->tids[1]);
	y = atomic_load(&ctl->tids[2]);
	is_int(cm_tracker_scan(t), 2, "tracker finds x and y");
	is_int(cm_collect_sync(c, &e), 0, "x and y not attached at once");
	cm_collect_stats(c, &st);
	is_int(st.inherited, 2, "both presumed inherited");
	run_for(c, t, m, 1.2, 1);
	cm_collect_stats(c, &st);
	is_int(st.late_attached, 1, "x found uncovered and attached late");
	is_int(st.confirmed, 1, "y confirmed covered by its samples");
	is_int(st.attached, 2, "no other direct attach");
	is_int(st.tasks, 3, "sampler tasks: main, w1, x");
	r_w1 = rate_of(c, t, pid, w1, 0, 0, CM_PERF_DEFAULT_PERIOD_NS);
	r_y = rate_of(c, t, pid, y, 0, 0, CM_PERF_DEFAULT_PERIOD_NS);
	diag("samples per period of user time: w1 %.2f, y (inherited) %.2f",
	     r_w1, r_y);
	ok(r_y > 0.3 && r_y < 1.5, "inherited y sampled once, not twice "
	   "(%.2f)", r_y);
	ok(r_w1 > 0.3 && r_w1 < 1.5, "attached w1 sampled once (%.2f)",
	   r_w1);
	{
		/* x after its late attach: sampled from now on. */
		uint64_t s0 = cm_collect_thread_samples(c,
				cm_tracker_find_thread(t, x));
		char path[128], buf[1024], *p;
		unsigned long long u0 = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat",
			 (int)pid, (int)x);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f) &&
		    (p = strrchr(buf, ')')))
			sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u "
			       "%*u %*u %llu", &u0);
		if (f)
			fclose(f);
		run_for(c, t, m, 0.5, 1);
		r_x = rate_of(c, t, pid, x, s0, u0,
			      CM_PERF_DEFAULT_PERIOD_NS);
		ok(r_x > 0.3 && r_x < 1.5, "x sampled once after its late "
		   "attach (%.2f)", r_x);
	}

	/* A new period: a new sampler with every live thread attached. */
	t0 = now_s();
	n = cm_collect_set_period(c, 2 * CM_PERF_DEFAULT_PERIOD_NS, m, &e);
	diag("set_period: %.2f ms for 4 threads", 1e3 * (now_s() - t0));
	ok(n == 0, "set_period 2 ms");
	cm_collect_stats(c, &st);
	is_int(st.samplers, 2, "a second sampler");
	is_int(st.tasks, 4, "it has the 4 live threads");
	is_int(st.period, 2 * CM_PERF_DEFAULT_PERIOD_NS, "period 2 ms");
	{
		uint64_t before = st.samples;

		run_for(c, t, m, 0.3, 1);
		cm_collect_stats(c, &st);
		ok(st.samples > before, "samples keep coming (%llu more)",
		   (unsigned long long)(st.samples - before));
	}
	ok(cm_collect_set_period(c, 0, m, &e) == -1 && errno == EINVAL,
	   "period 0 refused");
	reap(pid);
	cm_collect_free(c);
	cm_matrix_free(m);
	cm_tracker_free(t);
}

static void test_identity(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_collect_stats st;
	struct cm_error e = { "" };
	struct cm_collector *c;
	pid_t pid = spawn(child_commands), g;
	int n;

	for (int i = 0; i < 5000 && atomic_load(&ctl->nworkers) < 1; i++)
		sleep_ms(1);
	cm_tracker_add_root(t, pid, 0, &e);
	cm_tracker_scan(t);
	c = new_collector(t, CM_PERF_DEFAULT_PERIOD_NS);
	is_int(cm_collect_sync(c, &e), 2, "main and w1 attached");
	/* A grandchild process and a new thread, both inherited, that the
	 * tracker has not scanned yet. */
	command(CMD_FORK);
	command(CMD_THREAD);
	g = atomic_load(&ctl->tids[MAX_TIDS - 1]);
	run_for(c, t, m, 0.5, 0);
	cm_collect_stats(c, &st);
	ok(st.foreign > 0, "samples of the unscanned process: foreign "
	   "(%llu)", (unsigned long long)st.foreign);
	ok(st.unknown_tid > 0, "samples of the unscanned thread: unknown "
	   "(%llu)", (unsigned long long)st.unknown_tid);
	ok(st.ours > 0, "samples of w1: ours (%llu)",
	   (unsigned long long)st.ours);
	check_stats_add_up(&st, "identity");
	ok(st.ours == cm_collect_thread_samples(c, 0) +
	   cm_collect_thread_samples(c, 1), "dropped samples reach no "
	   "thread");

	/* Now scanned: the grandchild is a child of a sampled process,
	 * covered by inheritance. */
	n = cm_tracker_scan(t);
	ok(n == 2, "tracker finds the thread and the grandchild (%d)", n);
	is_int(cm_collect_sync(c, &e), 0, "nothing attached");
	{
		uint64_t foreign = st.foreign;

		run_for(c, t, m, 0.4, 1);
		cm_collect_stats(c, &st);
		ok(cm_collect_thread_samples(c, cm_tracker_find_thread(t, g))
		   > 0, "grandchild's samples now ours");
		ok(st.foreign - foreign < 5, "no more foreign samples (%llu)",
		   (unsigned long long)(st.foreign - foreign));
	}
	is_int(st.late_attached, 0, "no late attach");
	check_stats_add_up(&st, "identity after scan");

	/* A thread whose buffer is mapped after the maps were read: its
	 * addresses make the maps reload once, then resolve. */
	{
		uint64_t refreshes = st.maps_refreshes;
		pid_t z;

		command(CMD_THREAD);
		z = atomic_load(&ctl->tids[2]);
		cm_tracker_scan(t);
		cm_collect_sync(c, &e);
		run_for(c, t, m, 0.4, 1);
		cm_collect_stats(c, &st);
		ok(cm_collect_thread_samples(c, cm_tracker_find_thread(t, z))
		   > 0, "new thread z sampled");
		diag("z: loads %llu refreshes %llu unmapped %llu decoded %llu "
		     "ours %llu", (unsigned long long)st.maps_loads,
		     (unsigned long long)st.maps_refreshes,
		     (unsigned long long)st.unmapped,
		     (unsigned long long)st.decoded,
		     (unsigned long long)st.ours);
		ok(st.maps_refreshes > refreshes, "maps reloaded for the new "
		   "mapping (%llu)", (unsigned long long)st.maps_refreshes);
		ok(st.maps_refreshes < 50, "reloads bounded (once per drain "
		   "and process at most)");
		is_int(st.unmapped, 0, "every address resolved");
	}
	kill(g, SIGKILL);
	reap(pid);
	waitpid(g, NULL, WNOHANG);
	cm_collect_free(c);
	cm_matrix_free(m);
	cm_tracker_free(t);
}

int main(void)
{
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_error e = { "" };

	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED)
		return 1;
	test_options();
	cm_perf_config_default(&cfg);
	s = cm_perf_sampler_new(&cfg, &e);
	if (!s || cm_perf_sampler_attach(s, getpid(), &e)) {
		ok(1, "# SKIP perf sampling unavailable: %s", e.text);
		cm_perf_sampler_free(s);
		return done_testing();
	}
	cm_perf_sampler_free(s);
	test_pairs();
	test_inheritance();
	test_identity();
	return done_testing();
}
