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
 */
#define _GNU_SOURCE
#include "wl_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The checksum only keeps the loops alive. */
static volatile uint64_t wl_sink;

struct wl_thread_arg {
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

/* --waves, --wave-ms, --exit-early (0: not given). */
struct wl_arrival {
	int waves, wave_ms, exit_early;
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

	*w = (struct wl_arrival){ 1, 0, 0 };
	for (int i = 1; i < *argc; i++) {
		const char *o = argv[i], *v = i + 1 < *argc ? argv[i + 1] : NULL;

		if (strcmp(o, "--waves") == 0)
			w->waves = arrival_value(o, v, 1, 1000), i++;
		else if (strcmp(o, "--wave-ms") == 0)
			w->wave_ms = arrival_value(o, v, 0, 600000), i++;
		else if (strcmp(o, "--exit-early") == 0)
			w->exit_early = arrival_value(o, v, 0, 1 << 20), i++;
		else
			argv[k++] = argv[i];
	}
	*argc = k;
	argv[k] = NULL;
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
	a->sum = wl_work(a->plan, a->opts, a->t, start);
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
	if (!arg || !id || !th || pthread_barrier_init(&go, NULL,
						       (unsigned)n)) {
		perror("wl-threads");
		return 1;
	}
	start = wl_now();
	for (int t = 0; t < n; t++)
		arg[t] = (struct wl_thread_arg){&p, t >= n - w.exit_early ?
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
	free(th);
	free(id);
	free(arg);
	return 0;
}
