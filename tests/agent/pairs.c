/* pairs.c: a small workload for the agent's tests: P producer/consumer
 * pairs of threads, each pair sharing its own 256 KiB buffer (the writer
 * fills it, the reader sums it), for MS milliseconds of wall time.  Threads are
 * created in order writer0, reader0, writer1, reader1, ... so the ground
 * truth is: thread 1+2k communicates with thread 2+2k (creation indices;
 * the main thread is 0).
 *
 *   pairs [-p PAIRS] [-t MS] [-c CPU_MS] [-x EXIT_STATUS] [-k SIGNAL]
 *
 * -c keeps running after MS until the process has used CPU_MS of CPU time
 * (at most 20 s more), so that a loaded machine stretches the run instead
 * of starving the agent of samples;
 * -x exits with that status; -k kills itself with that signal at the end
 * (tests of `commap run`'s exit status).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (256u << 10)
#define MAX_PAIRS 64

/* One page per pair, so that the pairs' control data never looks like
 * communication between pairs (4 KiB blocks in the agent's table). */
struct pair {
	volatile uint64_t *buf;
	volatile int stop;
	uint64_t sum;
} __attribute__((aligned(4096)));

static void *writer(void *arg)
{
	struct pair *p = arg;
	volatile uint64_t *buf = p->buf;
	uint64_t v = 1;

	while (!p->stop) {
		for (size_t i = 0; i < BUF_BYTES / 8; i += 8)
			buf[i] = v++;
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct pair *p = arg;
	volatile uint64_t *buf = p->buf;
	uint64_t s = 0;

	while (!p->stop) {
		for (size_t i = 0; i < BUF_BYTES / 8; i += 8)
			s += buf[i];
	}
	p->sum = s;
	return NULL;
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleep in 20 ms steps until the process used cpu s of CPU time or
 * max_wall s went by. */
static void wait_cpu(double cpu, double max_wall)
{
	struct timespec step = { 0, 20000000 };

	for (double w = 0; cpu_seconds() < cpu && w < max_wall; w += 0.02)
		nanosleep(&step, NULL);
}

static int arg_int(const char *s, int min, int max, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end || v < min || v > max) {
		fprintf(stderr, "pairs: bad %s '%s'\n", what, s);
		exit(2);
	}
	return (int)v;
}

int main(int argc, char *argv[])
{
	static struct pair pairs[MAX_PAIRS];
	pthread_t th[2 * MAX_PAIRS];
	double seconds = 1.0, cpu = 0;
	int npairs = 4, status = 0, sig = 0, c;
	struct timespec ts;

	while ((c = getopt(argc, argv, "p:t:c:x:k:")) != -1) {
		switch (c) {
		case 'p':
			npairs = arg_int(optarg, 1, MAX_PAIRS, "pairs");
			break;
		case 't':
			seconds = arg_int(optarg, 0, 3600000, "ms") / 1000.0;
			break;
		case 'c':
			cpu = arg_int(optarg, 0, 3600000, "cpu ms") / 1000.0;
			break;
		case 'x':
			status = arg_int(optarg, 0, 255, "exit status");
			break;
		case 'k':
			sig = arg_int(optarg, 1, 64, "signal");
			break;
		default:
			fprintf(stderr, "usage: pairs [-p PAIRS] [-t MS] "
				"[-c CPU_MS] [-x STATUS] [-k SIGNAL]\n");
			return 2;
		}
	}
	for (int i = 0; i < npairs; i++) {
		pairs[i].buf = aligned_alloc(4096, BUF_BYTES);
		if (!pairs[i].buf)
			return 1;
		memset((void *)pairs[i].buf, 0, BUF_BYTES);
		pthread_create(&th[2 * i], NULL, writer, &pairs[i]);
		pthread_create(&th[2 * i + 1], NULL, reader, &pairs[i]);
	}
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	wait_cpu(cpu, 20);
	for (int i = 0; i < npairs; i++)
		pairs[i].stop = 1;
	for (int i = 0; i < 2 * npairs; i++)
		pthread_join(th[i], NULL);
	if (sig) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	return status;
}
