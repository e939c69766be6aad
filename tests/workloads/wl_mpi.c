/* wl_mpi.c: MPI and hybrid MPI+OpenMP workloads on one node.
 *
 * R ranks of T OpenMP threads each (--threads T, per rank) form
 * n = R x T workload threads, numbered rank-major: workload thread
 * g = rank * T + omp_get_thread_num().  The pattern is laid over all n,
 * and every edge buffer lives in one MPI-3 shared window
 * (MPI_Win_allocate_shared, rank 0 allocates it all, the others map it),
 * so threads of different ranks exchange through shared memory exactly as
 * threads of one rank do.  With T = 1 it is "MPI pairs over shared
 * memory"; with T > 1 the hybrid workload.
 *
 * Thread identity: Open MPI starts helper threads of its own in every
 * rank during MPI_Init, so OpenMP worker t of a rank is not creation index
 * t.  Each workload thread works its creation index out from
 * /proc/self/task (start time, tid order, as the agent does) and rank 0
 * writes it to --truth-map; the helper threads are not workload threads
 * and have no edges.
 */
#define _GNU_SOURCE
#include "wl_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef WL_NO_MPI
/* Built without mpicc: say so, and exit 77 (the automake "skip" code). */
int main(void)
{
	fputs("wl-mpi: built without MPI (mpicc not found)\n", stderr);
	return 77;
}
#else
#include <mpi.h>
#include <omp.h>

static volatile uint64_t wl_sink;

struct wl_window {
	char *base;
};

static void *wl_window_buffer(size_t k, size_t bytes, void *arg)
{
	struct wl_window *w = arg;

	return w->base + k * bytes;
}

static int wl_check_one_node(int size)
{
	MPI_Comm node;
	int nsize;

	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
			    MPI_INFO_NULL, &node);
	MPI_Comm_size(node, &nsize);
	MPI_Comm_free(&node);
	return nsize == size;
}

/* The window: rank 0 holds every buffer, the others map it. */
static MPI_Win wl_window_open(struct wl_window *w, size_t bytes, int rank)
{
	MPI_Aint size;
	int disp;
	MPI_Win win;
	void *base;

	MPI_Win_allocate_shared(rank == 0 ? (MPI_Aint)bytes : 0, 1,
				MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	MPI_Win_shared_query(win, 0, &size, &disp, &base);
	w->base = base;
	if (rank == 0)
		memset(base, 0, bytes);
	MPI_Barrier(MPI_COMM_WORLD);
	return win;
}

static void wl_record_ids(struct wl_ident *mine, int rank, int T)
{
#pragma omp parallel num_threads(T)
	{
		struct wl_ident *id = &mine[omp_get_thread_num()];

		id->rank = rank;
		id->pid = getpid();
		id->tid = wl_gettid();
#pragma omp barrier
		id->index = wl_creation_index(id->tid);
	}
}

static uint64_t wl_run(const struct wl_plan *p, const struct wl_opts *o,
		       int rank, int T, double start)
{
	uint64_t sum = 0;

#pragma omp parallel num_threads(T) reduction(+:sum)
	sum += wl_work(p, o, rank * T + omp_get_thread_num(), start);
	return sum;
}

int main(int argc, char **argv)
{
	struct wl_opts o;
	struct wl_plan p;
	struct wl_window w;
	struct wl_ident *mine, *all = NULL;
	MPI_Win win;
	int rank, size, provided, T, n, rc = 0;
	double start = 0, end;

	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	wl_parse(&o, argc, argv, "wl-mpi",
		 "  (--threads is per rank; ranks x threads workload threads"
		 ", rank-major)\n");
	if (!wl_check_one_node(size)) {
		if (rank == 0)
			fprintf(stderr, "wl-mpi: all ranks must share one "
				"node\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	T = o.threads;
	n = size * T;
	omp_set_dynamic(0);
	win = wl_window_open(&w, wl_plan_nbuffers(&o, n) * o.buffer_bytes,
			     rank);
	wl_plan_build(&p, &o, n, wl_window_buffer, &w);
	mine = calloc((size_t)T, sizeof(*mine));
	if (rank == 0)
		all = calloc((size_t)n, sizeof(*all));
	if (!mine || (rank == 0 && !all))
		MPI_Abort(MPI_COMM_WORLD, 1);
	wl_record_ids(mine, rank, T);

	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		start = wl_now();
	MPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	wl_sink = wl_run(&p, &o, rank, T, start);
	MPI_Barrier(MPI_COMM_WORLD);
	end = wl_now();

	/* Pass counts: each rank has those of its own threads. */
	for (int ph = 0; ph < p.nphases; ph++)
		MPI_Reduce(rank == 0 ? MPI_IN_PLACE : p.passes[ph],
			   p.passes[ph], p.nedges[ph], MPI_LONG, MPI_SUM, 0,
			   MPI_COMM_WORLD);
	MPI_Gather(mine, (int)(T * sizeof(*mine)), MPI_BYTE, all,
		   (int)(T * sizeof(*mine)), MPI_BYTE, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (o.report_time)
			wl_report_time(end - start);
		rc = wl_write_truth(&p, &o, all) ? 1 : 0;
	}
	wl_plan_free(&p, o.buffer_bytes, 0);
	free(all);
	free(mine);
	MPI_Win_free(&win);
	MPI_Finalize();
	return rc;
}
#endif
