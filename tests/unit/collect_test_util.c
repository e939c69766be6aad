/* collect_test_util.c: what the collection tests share (test_collect.c,
 * test_collect_maps.c): workloads run in forked children (communicating
 * pairs, a commanded child that starts threads and processes), and
 * helpers that drain a collector for a wall or CPU time and check that
 * its counters add up.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
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

struct ctl *ctl;

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sleep_ms(int ms)
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

WORKLOAD void produce(volatile uint64_t *b, uint64_t v)
{
	for (size_t i = 0; i < BUF_WORDS; i++)
		b[i] = v + i;
}

WORKLOAD uint64_t consume(volatile const uint64_t *b)
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

void child_pairs(void)
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
void child_commands(void)
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

pid_t spawn(void (*fn)(void))
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

void command(int cmd)
{
	atomic_store(&ctl->cmd, cmd);
	for (int i = 0; i < 5000 && atomic_load(&ctl->cmd) != CMD_NONE; i++)
		sleep_ms(1);
}

void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* ---- helpers ----------------------------------------------------------- */

struct cm_collector *new_collector(struct cm_tracker *t, uint64_t period)
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
double run_for(struct cm_collector *c, struct cm_tracker *t,
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
void run_for_cpu(struct cm_collector *c, struct cm_tracker *t,
		 struct cm_matrix *m, const pid_t *pids, int n, double cpu,
		 double max_secs)
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
