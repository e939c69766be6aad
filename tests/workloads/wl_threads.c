/* wl_threads.c: the pthread workloads (one process, rank 0).
 *
 * Thread identity: the main thread is workload thread 0 and creation
 * index 0; it creates workers 1 .. N-1 in order, one at a time (each one
 * exists before the next is created), so workload thread t has creation
 * index t, then runs its own share as thread 0.  No other thread exists.
 */
#define _GNU_SOURCE
#include "wl_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
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
};

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
	pthread_barrier_wait(a->go);
	start = wl_now();
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
	int n;

	wl_parse(&o, argc, argv, "wl-threads", NULL);
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
	for (int t = 0; t < n; t++)
		arg[t] = (struct wl_thread_arg){&p, &o, &go, &id[t], t,
						&start, 0};
	for (int t = 1; t < n; t++)
		if (pthread_create(&th[t], NULL, wl_thread_main, &arg[t])) {
			perror("pthread_create");
			return 1;
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
