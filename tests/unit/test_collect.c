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
 * - keys: two processes sharing a memfd at different addresses
 *   communicate, two processes writing private copies at the same virtual
 *   address do not;
 * - an unprivileged collector gets EACCES/EPERM with a message.
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

#define BUF_WORDS (256 * 1024 / 8)
#define MAX_TIDS 16

/* Control page shared with a child (MAP_SHARED before fork). */
struct ctl {
	atomic_int tids[MAX_TIDS];	/* worker tids in creation order */
	atomic_int nworkers;
	atomic_int cmd;			/* CMD_*, reset to 0 when done */
};

enum { CMD_NONE = 0, CMD_THREAD, CMD_FORK };

static struct ctl *ctl;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- workloads (run in children, forever; the parent kills them) ----- */

/* The loops are what the sampled threads run: keep them free of sanitizer
 * instrumentation, whose shadow-memory accesses would be sampled instead
 * of the buffers (the collector itself stays instrumented). */
#if defined(__clang__) || defined(__GNUC__)
#define WORKLOAD __attribute__((noinline, no_sanitize_address, \
				no_sanitize("undefined")))
#else
#define WORKLOAD
#endif

WORKLOAD static void produce(volatile uint64_t *b, uint64_t v)
{
	for (size_t i = 0; i < BUF_WORDS; i++)
		b[i] = v + i;
}

WORKLOAD static uint64_t consume(volatile const uint64_t *b)
{
	uint64_t s = 0;

	for (size_t i = 0; i < BUF_WORDS; i++)
		s += b[i];
	return s;
}

struct role {
	volatile uint64_t *buf;
	int writer;
};

static void register_tid(void)
{
	int k = atomic_load(&ctl->nworkers);

	atomic_store(&ctl->tids[k], (int)syscall(SYS_gettid));
	atomic_store(&ctl->nworkers, k + 1);
}

static void *pair_thread(void *arg)
{
	struct role *r = arg;
	volatile uint64_t sink = 0;

	register_tid();
	for (uint64_t v = 0;; v++) {
		if (r->writer)
			produce(r->buf, v);
		else
			sink += consume(r->buf);
	}
	return NULL;
}

/* Start a thread and wait until it registered its tid. */
static void start_worker(void *(*fn)(void *), void *arg)
{
	int k = atomic_load(&ctl->nworkers);
	pthread_t th;

	if (pthread_create(&th, NULL, fn, arg))
		_exit(5);
	while (atomic_load(&ctl->nworkers) == k)
		sleep_ms(1);
}

/* A buffer in a mapping of its own (calloc may serve it from a heap the
 * child inherited, mapped long before). */
static void *fresh_buffer(void)
{
	void *b = mmap(NULL, BUF_WORDS * 8, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (b == MAP_FAILED)
		_exit(4);
	return b;
}

static void child_pairs(void)
{
	static struct role roles[8];

	for (int p = 0; p < 4; p++) {
		uint64_t *b = fresh_buffer();

		roles[2 * p] = (struct role){ b, 1 };
		roles[2 * p + 1] = (struct role){ b, 0 };
	}
	for (int k = 0; k < 8; k++)
		start_worker(pair_thread, &roles[k]);
	for (;;)
		pause();
}

static void *spin_thread(void *arg)
{
	volatile uint64_t *b = arg;

	register_tid();
	for (uint64_t v = 0;; v++)
		produce(b, v);
	return NULL;
}

/* Main thread idles and obeys commands; one spinning worker from the
 * start, more on CMD_THREAD, a spinning child process on CMD_FORK. */
static void child_commands(void)
{
	start_worker(spin_thread, fresh_buffer());
	for (;;) {
		int cmd = atomic_load(&ctl->cmd);

		if (cmd == CMD_THREAD) {
			start_worker(spin_thread, fresh_buffer());
		} else if (cmd == CMD_FORK) {
			pid_t g = fork();

			if (g == 0) {
				volatile uint64_t *b = calloc(BUF_WORDS, 8);

				alarm(20);
				for (uint64_t v = 0;; v++)
					produce(b, v);
			}
			atomic_store(&ctl->tids[MAX_TIDS - 1], (int)g);
		}
		if (cmd != CMD_NONE)
			atomic_store(&ctl->cmd, CMD_NONE);
		sleep_ms(2);
	}
}

static pid_t spawn(void (*fn)(void))
{
	pid_t pid;

	memset(ctl, 0, sizeof(*ctl));
	pid = fork();
	if (pid == 0) {
		alarm(30);	/* never outlive a crashed test */
		fn();
		_exit(0);
	}
	return pid;
}

static void command(int cmd)
{
	atomic_store(&ctl->cmd, cmd);
	for (int i = 0; i < 5000 && atomic_load(&ctl->cmd) != CMD_NONE; i++)
		sleep_ms(1);
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* ---- helpers ----------------------------------------------------------- */

static struct cm_collector *new_collector(struct cm_tracker *t,
					  uint64_t period)
{
	struct cm_collect_opts o;
	struct cm_error e = { "" };
	struct cm_collector *c;

	cm_collect_opts_default(&o);
	o.period_ns = period;
	c = cm_collect_new(&o, t, &e);
	if (!c)
		diag("cm_collect_new: %s", e.text);
	return c;
}

/* Drain every 50 ms for secs; rescan and sync if asked.  Returns the
 * agent CPU seconds spent draining. */
static double run_for(struct cm_collector *c, struct cm_tracker *t,
		      struct cm_matrix *m, double secs, int resync)
{
	double end = now_s() + secs, spent = 0;
	struct cm_error e = { "" };

	while (now_s() < end) {
		double t0;

		sleep_ms(50);
		t0 = cpu_s();
		if (cm_collect_drain(c, m, &e) < 0)
			diag("drain: %s", e.text);
		spent += cpu_s() - t0;
		if (resync) {
			cm_tracker_scan(t);
			if (cm_collect_sync(c, &e) < 0)
				diag("sync: %s", e.text);
		}
	}
	return spent;
}

/* CPU seconds (user + system) a process has used, from /proc/PID/stat;
 * -1 when it cannot be read. */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* fields 14 and 15, counted from field 3 after the ") " */
	if (!p || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
		   "%llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Like run_for, but until every one of the n processes has used cpu
 * seconds of CPU (or max_secs of wall time passed): on a loaded machine a
 * fixed wall time can leave the workload with too little CPU for any
 * evidence, and the test would measure the load, not the detection. */
static void run_for_cpu(struct cm_collector *c, struct cm_tracker *t,
			struct cm_matrix *m, const pid_t *pids, int n,
			double cpu, double max_secs)
{
	double end = now_s() + max_secs;

	for (;;) {
		double least = cpu;

		for (int k = 0; k < n; k++) {
			double used = proc_cpu_s(pids[k]);

			if (used >= 0 && used < least)
				least = used;
		}
		if (least >= cpu || now_s() >= end)
			break;
		run_for(c, t, m, 0.2, 0);
	}
}

static void check_stats_add_up(const struct cm_collect_stats *st,
			       const char *what)
{
	uint64_t fails = 0;

	for (int r = 0; r < CM_DECODE_NREASONS; r++)
		fails += st->decode_fail[r];
	ok(st->foreign + st->unknown_tid + st->ours == st->samples,
	   "%s: foreign + unknown + ours == samples (%llu)", what,
	   (unsigned long long)st->samples);
	ok(st->decoded + fails + st->code_read_fail == st->ours,
	   "%s: decoded + failures == ours (%llu + %llu + %llu)", what,
	   (unsigned long long)st->decoded, (unsigned long long)fails,
	   (unsigned long long)st->code_read_fail);
	/* repeats: decoded, dropped before the table (spin on a line);
	 * run_refs: a run's continuation, kept from the table */
	ok(st->accesses + st->refs.refs[CM_REF_STACK] + st->repeats +
	   st->refs.run_refs >= st->decoded &&
	   st->accesses <= 2 * st->decoded,
	   "%s: one or two table accesses per decoded sample", what);
	ok(st->events == st->table.events && st->accesses ==
	   st->table.accesses, "%s: table counters agree", what);
}

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

/* ---- shared mappings ------------------------------------------------------ */

static volatile uint64_t *priv_buf;	/* same address in every child */
static int shm_fd;

static void child_shm_writer(void)
{
	volatile uint64_t *s = mmap(NULL, BUF_WORDS * 8,
				    PROT_READ | PROT_WRITE, MAP_SHARED,
				    shm_fd, 0);

	for (uint64_t v = 0;; v++) {
		produce(s, v);
		produce(priv_buf, v);
	}
}

static void child_shm_reader(void)
{
	/* Shift the address where the segment lands. */
	void *pad = mmap(NULL, 3 * BUF_WORDS * 8, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	volatile uint64_t *s = mmap(NULL, BUF_WORDS * 8, PROT_READ,
				    MAP_SHARED, shm_fd, 0);
	volatile uint64_t sink = 0;

	(void)pad;
	atomic_store(&ctl->tids[1], (int)(uintptr_t)s != 0);
	for (;;)
		sink += consume(s);
}

static void child_private_writer(void)
{
	for (uint64_t v = 0;; v++)
		produce(priv_buf, v);
}

static void test_shared_mapping(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_collect_stats st;
	struct cm_error e = { "" };
	struct cm_collector *c;
	pid_t p[3];
	int i[3];
	double w_shared, w_priv;

	shm_fd = memfd_create("commap-test", 0);
	priv_buf = mmap(NULL, BUF_WORDS * 8, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shm_fd < 0 || ftruncate(shm_fd, BUF_WORDS * 8) ||
	    priv_buf == MAP_FAILED) {
		ok(0, "memfd and buffers");
		return;
	}
	p[0] = spawn(child_shm_writer);
	p[1] = spawn(child_shm_reader);
	p[2] = spawn(child_private_writer);
	for (int k = 0; k < 3; k++)
		cm_tracker_add_root(t, p[k], k, &e);
	cm_tracker_scan(t);
	c = new_collector(t, CM_PERF_DEFAULT_PERIOD_NS);
	is_int(cm_collect_sync(c, &e), 3, "three processes attached");
	run_for_cpu(c, t, m, p, 2, 0.6, 30);
	for (int k = 0; k < 3; k++) {
		i[k] = cm_tracker_find_thread(t, p[k]);
		reap(p[k]);
	}
	cm_collect_drain(c, m, &e);
	cm_collect_stats(c, &st);
	w_shared = cm_matrix_get(m, i[0], i[1]);
	w_priv = cm_matrix_get(m, i[0], i[2]);
	diag("memfd writer-reader %.0f, private same-address %.0f, "
	     "reader-private %.0f; shared refs %llu of %llu",
	     w_shared, w_priv, cm_matrix_get(m, i[1], i[2]),
	     (unsigned long long)st.shared_refs,
	     (unsigned long long)st.accesses);
	ok(w_shared >= 10, "processes sharing a memfd at different "
	   "addresses communicate (%.0f)", w_shared);
	ok(w_priv * 10 <= w_shared, "private copies at the same address do "
	   "not (%.0f)", w_priv);
	ok(st.shared_refs > 0, "shared references keyed by the mapping");
	check_stats_add_up(&st, "shm");
	close(shm_fd);
	munmap((void *)priv_buf, BUF_WORDS * 8);
	cm_collect_free(c);
	cm_matrix_free(m);
	cm_tracker_free(t);
}

/* Maps unreadable (here: a proc root without the process): samples are
 * counted and dropped, the problem is described once. */
static void test_unreadable_maps(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_collect_opts o;
	struct cm_collect_stats st;
	struct cm_error e = { "" };
	struct cm_collector *c;
	pid_t pid = spawn(child_commands);

	for (int i = 0; i < 5000 && atomic_load(&ctl->nworkers) < 1; i++)
		sleep_ms(1);
	cm_tracker_add_root(t, pid, 0, &e);
	cm_tracker_scan(t);
	cm_collect_opts_default(&o);
	o.proc_root = "/nonexistent-proc";
	c = cm_collect_new(&o, t, &e);
	is_int(cm_collect_sync(c, &e), 2, "attached (perf needs no proc)");
	run_for(c, t, m, 0.3, 0);
	reap(pid);
	cm_collect_drain(c, m, &e);
	cm_collect_stats(c, &st);
	ok(st.ours > 0 && st.code_read_fail == st.ours && st.decoded == 0,
	   "every sample counted as a code read failure (%llu)",
	   (unsigned long long)st.code_read_fail);
	ok(strstr(cm_collect_last_problem(c), "/nonexistent-proc") != NULL,
	   "problem names the file: %s", cm_collect_last_problem(c));
	ok(st.maps_loads <= 10, "maps retried at most once per drain (%llu)",
	   (unsigned long long)st.maps_loads);
	is_int(cm_matrix_total(m), 0, "no events");
	cm_collect_free(c);
	cm_matrix_free(m);
	cm_tracker_free(t);
}

static void test_permission(void)
{
	int fds[2], status;
	char msg[CM_ERROR_TEXT_MAX + 16] = "";
	pid_t pid;

	if (geteuid() != 0 || pipe(fds)) {
		ok(1, "# SKIP not root: permission test needs setuid");
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
		struct cm_error e = { "" };
		struct cm_collector *c;
		int r, code = 3;

		close(fds[0]);
		cm_tracker_add_root(t, getppid(), 0, &e);
		cm_tracker_scan(t);
		if (setgid(65534) || setuid(65534))
			_exit(2);
		c = new_collector(t, CM_PERF_DEFAULT_PERIOD_NS);
		r = c ? cm_collect_sync(c, &e) : -1;
		if (r == -1 && (errno == EACCES || errno == EPERM))
			code = 0;
		if (write(fds[1], e.text, strlen(e.text)) < 0)
			code = 4;
		_exit(code);
	}
	close(fds[1]);
	if (read(fds[0], msg, sizeof(msg) - 1) < 0)
		msg[0] = '\0';
	close(fds[0]);
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "unprivileged sync on a root process: EACCES/EPERM");
	ok(strstr(msg, "perf_event_paranoid") != NULL,
	   "message names perf_event_paranoid: %s", msg);
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
	test_shared_mapping();
	test_unreadable_maps();
	test_permission();
	return done_testing();
}
