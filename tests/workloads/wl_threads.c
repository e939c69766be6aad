/* wl_threads.c: the pthread workloads (one process, rank 0).
 *
 * Thread identity: the main thread is workload thread 0 and creation
 * index 0; it creates workers 1 .. N-1 in order, one at a time (each one
 * exists before the next is created), so workload thread t has creation
 * index t, then runs its own share as thread 0.  No other thread exists.
 *
 * Arrival and exit (options of this program only, read before the common
 * ones): --waves K --wave-ms MS creates workers 1 .. N-1 in K waves MS
 * apart (the main thread, workload thread 0, works once the last wave is
 * out; everyone runs until the common end), and --exit-early M makes the
 * last M workload threads stop at half the run (half the --seconds or
 * --passes).  Identities are unchanged: thread t is creation index t.
 *
 * --spin-barrier R: every R passes all threads meet at a barrier whose
 * waiters spin on a shared flag without `pause` (a fence, then eight
 * loads of the flag, like thread-MPI's waits), one of four flags in turn,
 * each on its own cache line of a heap block all threads read.  The
 * pattern's sharing is still the truth; the flags are noise every thread
 * shares.  The run ends at the first barrier past --seconds (or
 * --cpu-seconds of the last thread to arrive, or --passes).  Not with
 * --waves or --exit-early.
 */
#define _GNU_SOURCE
#include "wl_common.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The checksum only keeps the loops alive. */
static volatile uint64_t wl_sink;

/* --spin-barrier: the shared state, one cache line each. */
struct wl_spin_line {
	uint64_t v;
	char pad[64 - sizeof(uint64_t)];
};

struct wl_spin {
	struct wl_spin_line flag[4];	/* generation released */
	struct wl_spin_line arrived;	/* threads at the barrier */
	struct wl_spin_line stop;	/* 1: the run is over */
	int every;			/* passes between barriers; 0: off */
	int n;
};

struct wl_thread_arg {
	struct wl_spin *spin;
	const struct wl_plan *plan;
	const struct wl_opts *opts;
	pthread_barrier_t *go;
	struct wl_ident *id;
	int t;
	double *start;
	uint64_t sum;
	int no_barrier;		/* waves: start at the given time */
	double start_at;
};

/* --waves, --wave-ms, --exit-early, --spin-barrier (0: not given). */
struct wl_arrival {
	int waves, wave_ms, exit_early, spin_every;
};

static int arrival_value(const char *opt, const char *v, int lo, int hi)
{
	char *end;
	long x = v ? strtol(v, &end, 10) : 0;

	if (!v || *end || end == v || x < lo || x > hi) {
		fprintf(stderr, "wl-threads: %s: invalid value '%s' (want an "
			"integer in %d..%d)\n", opt, v ? v : "", lo, hi);
		exit(2);
	}
	return (int)x;
}

/* Take this program's own options out of argv (before wl_parse). */
static void arrival_parse(struct wl_arrival *w, int *argc, char **argv)
{
	int k = 1;

	*w = (struct wl_arrival){ 1, 0, 0, 0 };
	for (int i = 1; i < *argc; i++) {
		const char *o = argv[i], *v = i + 1 < *argc ? argv[i + 1] : NULL;

		if (strcmp(o, "--waves") == 0)
			w->waves = arrival_value(o, v, 1, 1000), i++;
		else if (strcmp(o, "--wave-ms") == 0)
			w->wave_ms = arrival_value(o, v, 0, 600000), i++;
		else if (strcmp(o, "--exit-early") == 0)
			w->exit_early = arrival_value(o, v, 0, 1 << 20), i++;
		else if (strcmp(o, "--spin-barrier") == 0)
			w->spin_every = arrival_value(o, v, 1, 1 << 20), i++;
		else
			argv[k++] = argv[i];
	}
	*argc = k;
	argv[k] = NULL;
	if (w->spin_every && (w->waves > 1 || w->exit_early)) {
		fprintf(stderr, "wl-threads: --spin-barrier: not with --waves "
			"or --exit-early (every thread must reach every "
			"barrier)\n");
		exit(2);
	}
}

/* Wait until flag reaches gen: no `pause`, no system call but a yield
 * every 64 K checks (a busy machine with more threads than cores must
 * still run the last one to arrive). */
static void spin_wait(const uint64_t *flag, uint64_t gen)
{
	for (unsigned k = 1;; k++) {
		for (int u = 0; u < 8; u++) {
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (__atomic_load_n(flag, __ATOMIC_RELAXED) >= gen)
				return;
		}
		if ((k & 0xffffu) == 0)
			sched_yield();
	}
}

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Barrier gen (1, 2, ...); the last to arrive decides whether the run
 * is over, so that every thread leaves after the same barrier.  Returns
 * 1 when it is. */
static int spin_barrier(struct wl_spin *s, const struct wl_opts *o,
			uint64_t gen, double start)
{
	uint64_t *flag = &s->flag[gen % 4].v;

	if (__atomic_add_fetch(&s->arrived.v, 1, __ATOMIC_ACQ_REL) ==
	    (uint64_t)s->n) {
		int timed = o->seconds > 0 || o->cpu_seconds > 0;
		int over = (o->seconds > 0 && wl_now() - start >= o->seconds) ||
			   (o->cpu_seconds > 0 &&
			    thread_cpu() >= o->cpu_seconds) ||
			   (!timed && (long)gen * s->every >= o->passes);

		__atomic_store_n(&s->arrived.v, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->stop.v, (uint64_t)over, __ATOMIC_RELAXED);
		__atomic_store_n(flag, gen, __ATOMIC_RELEASE);
	} else {
		spin_wait(flag, gen);
	}
	return (int)__atomic_load_n(&s->stop.v, __ATOMIC_ACQUIRE);
}

/* The pattern R passes at a time, a spinning barrier after each. */
static uint64_t spin_work(const struct wl_thread_arg *a, double start)
{
	struct wl_opts round = *a->opts;
	uint64_t sum = 0, gen = 0;

	round.seconds = 0;
	round.cpu_seconds = 0;
	round.passes = a->spin->every;
	do
		sum += wl_work(a->plan, &round, a->t, start);
	while (!spin_barrier(a->spin, a->opts, ++gen, start));
	return sum;
}

static void *wl_thread_main(void *v)
{
	struct wl_thread_arg *a = v;
	double start;

	a->id->rank = 0;
	a->id->index = a->t;
	a->id->pid = getpid();
	a->id->tid = wl_gettid();
	/* Everyone leaves the barrier within microseconds and stamps its
	 * own start: no shared variable is read after it (the agent would
	 * count a sampled read of one as communication). */
	if (a->no_barrier) {
		start = a->start_at;
	} else {
		pthread_barrier_wait(a->go);
		start = wl_now();
	}
	if (a->t == 0)
		*a->start = start;
	a->sum = a->spin->every ? spin_work(a, start) :
		 wl_work(a->plan, a->opts, a->t, start);
	return NULL;
}

int main(int argc, char **argv)
{
	struct wl_opts o;
	struct wl_plan p;
	struct wl_thread_arg *arg;
	struct wl_ident *id;
	pthread_t *th;
	pthread_barrier_t go;
	double start = 0, end;
	uint64_t sum = 0;
	struct wl_arrival w;
	struct wl_opts early;
	struct wl_spin *spin;
	int n;

	arrival_parse(&w, &argc, argv);
	wl_parse(&o, argc, argv, "wl-threads", NULL);
	early = o;
	early.seconds = o.seconds / 2;
	early.cpu_seconds = o.cpu_seconds / 2;
	early.passes = o.passes / 2;
	n = o.threads;
	wl_plan_build(&p, &o, n, NULL, NULL);
	arg = calloc((size_t)n, sizeof(*arg));
	id = calloc((size_t)n, sizeof(*id));
	th = calloc((size_t)n, sizeof(*th));
	/* aligned_alloc wants a multiple of the alignment. */
	spin = aligned_alloc(64, (sizeof(*spin) + 63) & ~(size_t)63);
	if (spin) {
		memset(spin, 0, sizeof(*spin));
		spin->every = w.spin_every;
		spin->n = n;
	}
	if (!arg || !id || !th || !spin || pthread_barrier_init(&go, NULL,
						       (unsigned)n)) {
		perror("wl-threads");
		return 1;
	}
	start = wl_now();
	for (int t = 0; t < n; t++)
		arg[t] = (struct wl_thread_arg){spin, &p,
						t >= n - w.exit_early ?
						&early : &o, &go, &id[t], t,
						&start, 0, w.waves > 1, start};
	for (int t = 1; t < n; t++) {
		/* wave k of K: workers (k - 1) * per + 1 .. k * per */
		int per = (n - 1 + w.waves - 1) / w.waves;

		if (w.waves > 1 && t > 1 && (t - 1) % per == 0)
			usleep((useconds_t)w.wave_ms * 1000u);
		if (pthread_create(&th[t], NULL, wl_thread_main, &arg[t])) {
			perror("pthread_create");
			return 1;
		}
	}
	wl_thread_main(&arg[0]);
	for (int t = 1; t < n; t++)
		pthread_join(th[t], NULL);
	end = wl_now();
	for (int t = 0; t < n; t++)
		sum += arg[t].sum;
	if (o.report_time)
		wl_report_time(end - start);
	if (wl_write_truth(&p, &o, id))
		return 1;
	wl_sink = sum;
	pthread_barrier_destroy(&go);
	wl_plan_free(&p, o.buffer_bytes, 1);
	free(spin);
	free(th);
	free(id);
	free(arg);
	return 0;
}
