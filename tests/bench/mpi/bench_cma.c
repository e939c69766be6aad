/* bench_cma.c: what CMA tracing (nodeagent/cma_trace.h) costs the thread
 * that makes the calls.
 *
 *   bench-cma [--calls N] [--bytes "64 4096 65536 1048576"] [--reps R]
 *
 * For each size, this process copies from a child N times with
 * process_vm_readv, timed in its own CPU time (user + system: the
 * tracepoints' work is done in the caller's system call), with no tracer,
 * then with the tracer open (drained every 1,024 calls, as the agent's
 * loop would from another thread), alternately, R times each.  Prints a
 * Markdown row per size: the median CPU time per call without and with
 * tracing, the difference, the ratio, and the reader's CPU time per call.
 * Run as root.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cma_trace.h"

#define MAX_BYTES (4u << 20)
#define MAX_REPS 64

static char remote[MAX_BYTES], local[MAX_BYTES];

static double cpu_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* CPU seconds per call of n reads of b bytes; *read_s the tracer's. */
static double run(pid_t child, size_t b, long n, struct cm_cma_tracer *t,
		  double *read_s)
{
	struct iovec l = { local, b }, r = { remote, b };
	double t0 = cpu_s(CLOCK_THREAD_CPUTIME_ID), rd = 0, t1;

	for (long i = 0; i < n; i++) {
		if (process_vm_readv(child, &l, 1, &r, 1, 0) != (ssize_t)b) {
			perror("process_vm_readv");
			exit(1);
		}
		if (t && (i & 1023) == 1023) {
			double a = cpu_s(CLOCK_THREAD_CPUTIME_ID);

			cm_cma_tracer_read(t, NULL, NULL);
			rd += cpu_s(CLOCK_THREAD_CPUTIME_ID) - a;
		}
	}
	if (t) {
		double a = cpu_s(CLOCK_THREAD_CPUTIME_ID);

		cm_cma_tracer_read(t, NULL, NULL);
		rd += cpu_s(CLOCK_THREAD_CPUTIME_ID) - a;
	}
	t1 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
	*read_s = rd / (double)n;
	return (t1 - t0 - rd) / (double)n;
}

int main(int argc, char **argv)
{
	const char *sizes = "64 4096 65536 1048576";
	long calls = 200000;
	int reps = 5;
	pid_t child;
	char *s, *tok, *save = NULL;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--calls"))
			calls = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--bytes"))
			sizes = argv[i + 1];
		else if (!strcmp(argv[i], "--reps"))
			reps = atoi(argv[i + 1]);
	}
	if (calls < 1 || reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "bench-cma: bad --calls or --reps\n");
		return 2;
	}
	memset(remote, 1, sizeof(remote));
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	printf("| bytes | calls | CPU µs/call, off | on | added µs | ratio | "
	       "reader µs/call |\n|---|---|---|---|---|---|---|\n");
	s = strdup(sizes);
	for (tok = strtok_r(s, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		size_t b = (size_t)atol(tok);
		double off[MAX_REPS], on[MAX_REPS], rd[MAX_REPS], x;
		long n = b >= 65536 ? calls / 10 : calls;

		if (b < 1 || b > MAX_BYTES)
			continue;
		for (int k = 0; k < reps; k++) {
			struct cm_error err;
			struct cm_cma_tracer *t = cm_cma_tracer_new(NULL, &err);

			if (!t) {
				fprintf(stderr, "bench-cma: %s\n", err.text);
				kill(child, SIGKILL);
				return 1;
			}
			on[k] = run(child, b, n, t, &rd[k]);
			cm_cma_tracer_free(t);
			off[k] = run(child, b, n, NULL, &x);
		}
		x = median(off, reps);
		printf("| %zu | %ld | %.3f | %.3f | %.3f | %.3f | %.3f |\n", b,
		       n, x * 1e6, median(on, reps) * 1e6,
		       (median(on, reps) - x) * 1e6, median(on, reps) / x,
		       median(rd, reps) * 1e6);
	}
	free(s);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}
