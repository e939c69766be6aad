/* wl_progress.c: a workload that reports its progress every second, for
 * the detection budget benchmark (tests/bench/detect/run-budget.sh).
 *
 *   wl-progress [--threads N] [--seconds S] [--buffer-kib K]
 *
 * N threads (default 8) in producer/consumer pairs, each pair over a
 * buffer of its own (K KiB, default 256): the even thread writes every
 * word of it, the odd one reads every word, pass after pass, so sampled
 * addresses decode to shared data.  Every second of wall time the main
 * thread prints one line
 *
 *     t=<s> work=<passes so far> cpu_ns=<process CPU time so far>
 *
 * and after S seconds (default 60) the threads stop.  Two copies run side
 * by side, one under the agent and one not, compete alike for the CPUs:
 * the ratio of their CPU time per pass, per window and over the run, is
 * the agent's overhead, whatever else runs on the machine.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_THREADS 256

struct worker {
	uint64_t *buf;
	size_t words;
	int writer;
	_Atomic uint64_t passes;
	pthread_t th;
} __attribute__((aligned(64)));

static atomic_int stop;
static struct worker workers[MAX_THREADS];

static void *work(void *arg)
{
	struct worker *w = arg;
	volatile uint64_t *b = w->buf;
	uint64_t sum = 0, pass = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (w->writer)
			for (size_t i = 0; i < w->words; i++)
				b[i] = pass + i;
		else
			for (size_t i = 0; i < w->words; i++)
				sum += b[i];
		pass++;
		atomic_store_explicit(&w->passes, pass, memory_order_relaxed);
	}
	return (void *)(uintptr_t)sum;
}

static double now_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_args(int argc, char **argv, int *n, int *seconds,
		      size_t *kib)
{
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			fprintf(stderr, "wl-progress: %s needs a value\n",
				argv[i]);
			return -1;
		}
		if (!strcmp(argv[i], "--threads"))
			*n = atoi(v);
		else if (!strcmp(argv[i], "--seconds"))
			*seconds = atoi(v);
		else if (!strcmp(argv[i], "--buffer-kib"))
			*kib = (size_t)atol(v);
		else {
			fprintf(stderr, "wl-progress: unknown option %s\n",
				argv[i]);
			return -1;
		}
		i++;
	}
	if (*n < 2 || *n > MAX_THREADS || *n % 2 || *seconds < 1 ||
	    *kib < 4 || *kib > (1u << 20)) {
		fprintf(stderr, "wl-progress: --threads 2..%d even, "
			"--seconds >= 1, --buffer-kib 4..1048576\n",
			MAX_THREADS);
		return -1;
	}
	return 0;
}

static uint64_t total_passes(int n)
{
	uint64_t s = 0;

	for (int i = 0; i < n; i++)
		s += atomic_load(&workers[i].passes);
	return s;
}

int main(int argc, char **argv)
{
	int n = 8, seconds = 60;
	size_t kib = 256;
	double t0;

	if (parse_args(argc, argv, &n, &seconds, &kib))
		return 2;
	for (int i = 0; i < n; i += 2) {
		void *b = mmap(NULL, kib << 10, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (b == MAP_FAILED) {
			fprintf(stderr, "wl-progress: mmap: %s\n",
				strerror(errno));
			return 1;
		}
		memset(b, 0, kib << 10);
		for (int k = 0; k < 2; k++) {
			workers[i + k].buf = b;
			workers[i + k].words = (kib << 10) / sizeof(uint64_t);
			workers[i + k].writer = k == 0;
		}
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&workers[i].th, NULL, work, &workers[i])) {
			fprintf(stderr, "wl-progress: cannot start threads\n");
			return 1;
		}
	t0 = now_s(CLOCK_MONOTONIC);
	for (int s = 1; s <= seconds; s++) {
		struct timespec until;
		double at = t0 + s;

		until.tv_sec = (time_t)at;
		until.tv_nsec = (long)((at - (double)until.tv_sec) * 1e9);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until,
				       NULL) == EINTR)
			;
		printf("t=%d work=%llu cpu_ns=%.0f\n", s,
		       (unsigned long long)total_passes(n),
		       now_s(CLOCK_PROCESS_CPUTIME_ID) * 1e9);
		fflush(stdout);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(workers[i].th, NULL);
	return 0;
}
