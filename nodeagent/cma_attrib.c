/* cma_attrib.c: transfers between the tracker's threads (see
 * cma_attrib.h).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cma_attrib.h"
#include "grow.h"

struct cm_cma_attrib {
	const struct cm_tracker *tr;
	double bytes_per_unit;
	uint32_t *calls;	/* per tracker thread */
	int capthreads;
	int *best;		/* per tracker process: thread index + 1 of
				 * its most calling thread, 0 none */
	int capprocs;
	uint64_t last_decay;	/* record time */
	struct cm_cma_attrib_stats st;
};

struct cm_cma_attrib *cm_cma_attrib_new(const struct cm_tracker *t,
					double bytes_per_unit)
{
	struct cm_cma_attrib *a;

	if (!t) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->tr = t;
	a->bytes_per_unit = bytes_per_unit > 0 ? bytes_per_unit
			    : CM_CMA_BYTES_PER_UNIT;
	return a;
}

void cm_cma_attrib_free(struct cm_cma_attrib *a)
{
	if (!a)
		return;
	free(a->calls);
	free(a->best);
	free(a);
}

/* Room for the tracker's threads and processes as they are now. */
static int fit(struct cm_cma_attrib *a)
{
	if (cm_grow((void **)&a->calls, &a->capthreads,
		    cm_tracker_nthreads(a->tr), sizeof(*a->calls)) ||
	    cm_grow((void **)&a->best, &a->capprocs,
		    cm_tracker_nprocs(a->tr), sizeof(*a->best)))
		return -1;
	return 0;
}

/* Halve every count once per CM_CMA_DECAY_NS: "lately" is the last
 * seconds, so a rank whose MPI calls move to another thread follows. */
static void decay(struct cm_cma_attrib *a, uint64_t now)
{
	if (now - a->last_decay < CM_CMA_DECAY_NS && now >= a->last_decay)
		return;
	a->last_decay = now;
	for (int i = 0; i < a->capthreads; i++)
		a->calls[i] >>= 1;
}

/* The calling thread's count, and its process's best thread. */
static void count_call(struct cm_cma_attrib *a, int i, int proc)
{
	int b = a->best[proc] - 1;

	if (a->calls[i] < UINT32_MAX)
		a->calls[i]++;
	if (b < 0 || b == i || a->calls[i] > a->calls[b] ||
	    !cm_tracker_thread(a->tr, b)->alive)
		a->best[proc] = i + 1;
}

/* The caller's tracker index after the identity check; -1 dropped. */
static int caller(struct cm_cma_attrib *a, const struct cm_cma_transfer *x)
{
	int i = cm_tracker_find_thread(a->tr, (pid_t)x->tid);
	const struct cm_tracked_thread *th;

	if (i < 0) {
		if (cm_tracker_find_thread(a->tr, (pid_t)x->pid) >= 0)
			a->st.unknown_tid++;
		else
			a->st.foreign++;
		return -1;
	}
	th = cm_tracker_thread(a->tr, i);
	if (cm_tracker_proc(a->tr, th->proc)->pid != (pid_t)x->pid) {
		a->st.foreign++;
		return -1;
	}
	return i;
}

/* The peer process's thread for this transfer; -1 not ours. */
static int peer_thread(struct cm_cma_attrib *a, uint32_t peer)
{
	int m = cm_tracker_find_thread(a->tr, (pid_t)peer);
	const struct cm_tracked_thread *th;
	int b;

	if (m < 0)
		return -1;
	th = cm_tracker_thread(a->tr, m);
	if (th->tid != (pid_t)peer ||
	    cm_tracker_proc(a->tr, th->proc)->pid != (pid_t)peer)
		return -1;	/* a thread id, not a process */
	b = a->best[th->proc] - 1;
	if (b >= 0 && a->calls[b] > 0 && cm_tracker_thread(a->tr, b)->alive) {
		a->st.by_caller++;
		return b;
	}
	a->st.by_main++;
	return m;
}

int cm_cma_attrib_add(struct cm_cma_attrib *a,
		      const struct cm_cma_transfer *x, struct cm_matrix *m)
{
	int i, j, n;

	if (!a || !x || !m) {
		errno = EINVAL;
		return -1;
	}
	if (fit(a))
		return -1;
	decay(a, x->time);
	i = caller(a, x);
	if (i < 0)
		return 0;
	count_call(a, i, cm_tracker_thread(a->tr, i)->proc);
	j = peer_thread(a, x->peer);
	if (j < 0) {
		a->st.peer_unknown++;
		return 0;
	}
	if (j == i) {
		a->st.self++;
		return 0;
	}
	n = (i > j ? i : j) + 1;
	if (n > cm_matrix_nthreads(m) && cm_matrix_resize(m, n))
		return -1;
	if (cm_matrix_add(m, i, j, (double)x->bytes / a->bytes_per_unit))
		return -1;
	a->st.transfers++;
	a->st.bytes += x->bytes;
	return 1;
}

uint32_t cm_cma_attrib_calls(const struct cm_cma_attrib *a, int i)
{
	if (!a || i < 0 || i >= a->capthreads)
		return 0;
	return a->calls[i];
}

void cm_cma_attrib_stats(const struct cm_cma_attrib *a,
			 struct cm_cma_attrib_stats *st)
{
	if (a)
		*st = a->st;
	else
		memset(st, 0, sizeof(*st));
}
