/* wl_mpi_msg.c: MPI ranks on one node that talk by message passing.
 *
 *   wl-mpi-msg [--pattern P] [--bytes B] [--seconds S] [--iters N]
 *              [--nonblocking] [--threads T] [--report] [--stride K]
 *
 * Patterns over the R ranks of MPI_COMM_WORLD, one exchange per
 * iteration:
 *   ring      each rank sends B bytes to rank+1 and receives from rank-1
 *             (periodic; MPI_Sendrecv, or MPI_Isend/MPI_Irecv)
 *   pairs     ranks (0,1) (2,3) ... exchange B bytes both ways; with
 *             --stride K, rank r and r + K in each block of 2K ranks
 *             ((0,3) (1,4) (2,5) for K = 3): partners that block
 *             distribution puts on different nodes
 *   halo2d    a periodic 2D grid (MPI_Dims_create, MPI_Cart_create):
 *             B bytes to each of the 4 neighbours and from them
 *   alltoall  MPI_Alltoall of B bytes per pair
 *   bcast     MPI_Bcast of B bytes from rank 0
 *   reduce    MPI_Reduce of B bytes (as doubles) to rank 0
 * B is 64 B .. 4 MiB (default 64 KiB).  The run lasts S seconds (default
 * 3; every 32 iterations rank 0 says whether to go on, in one 4-byte
 * MPI_Bcast) or exactly N iterations (--iters).
 *
 * --threads T (hybrid): each rank runs an OpenMP team of T threads that
 * compute on private data between exchanges; only the master thread calls
 * MPI (MPI_THREAD_FUNNELED), so the communication is the master's.
 *
 * The workload keeps no count of its own: ground truth comes from
 * outside (libwlpmpi.so, Open MPI's pml monitoring).  --report prints, on
 * rank 0, "iters=N elapsed_s=S" at the end.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef WL_NO_MPI
int main(void)
{
	fputs("wl-mpi-msg: built without MPI (mpicc not found)\n", stderr);
	return 77;
}
#else
#include <mpi.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MSG_MIN 64L
#define MSG_MAX (4L * 1024 * 1024)
#define CHECK_EVERY 32

struct msg_opts {
	const char *pattern;
	long bytes;
	double seconds;
	long iters;
	int nonblocking;
	int threads;
	int report;
	int stride;
};

struct msg_peers {
	int n;
	int to[4], from[4];	/* send to to[k], receive from from[k] */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage_exit(int rank, const char *why)
{
	if (rank == 0)
		fprintf(stderr, "wl-mpi-msg: %s\nusage: wl-mpi-msg [--pattern "
			"ring|pairs|halo2d|alltoall|bcast|reduce] [--bytes "
			"64..4194304] [--seconds S] [--iters N] "
			"[--nonblocking] [--threads T] [--report] "
			"[--stride K]\n", why);
	MPI_Finalize();
	exit(2);
}

static long num_arg(int rank, const char *opt, const char *v, long lo,
		    long hi)
{
	char *end;
	long x;

	if (!v)
		usage_exit(rank, "an option lacks its value");
	x = strtol(v, &end, 10);
	if (*end || end == v || x < lo || x > hi) {
		if (rank == 0)
			fprintf(stderr, "wl-mpi-msg: %s %s: want %ld..%ld\n",
				opt, v, lo, hi);
		usage_exit(rank, "bad number");
	}
	return x;
}

static void parse(struct msg_opts *o, int argc, char **argv, int rank)
{
	*o = (struct msg_opts){ "ring", 65536, 3.0, 0, 0, 1, 0, 1 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--pattern") && v)
			o->pattern = argv[++i];
		else if (!strcmp(a, "--bytes"))
			o->bytes = num_arg(rank, a, v, MSG_MIN, MSG_MAX), i++;
		else if (!strcmp(a, "--seconds"))
			o->seconds = (double)num_arg(rank, a, v, 1, 3600), i++;
		else if (!strcmp(a, "--iters"))
			o->iters = num_arg(rank, a, v, 1, 1L << 40), i++;
		else if (!strcmp(a, "--threads"))
			o->threads = (int)num_arg(rank, a, v, 1, 256), i++;
		else if (!strcmp(a, "--nonblocking"))
			o->nonblocking = 1;
		else if (!strcmp(a, "--report"))
			o->report = 1;
		else if (!strcmp(a, "--stride"))
			o->stride = (int)num_arg(rank, a, v, 1, 1 << 20), i++;
		else
			usage_exit(rank, "unknown option");
	}
}

/* Point-to-point patterns: whom each rank sends to and receives from. */
static int peers_of(const char *pattern, int stride, int rank, int size,
		    struct msg_peers *p, MPI_Comm *cart)
{
	p->n = 0;
	if (!strcmp(pattern, "ring")) {
		p->to[0] = (rank + 1) % size;
		p->from[0] = (rank + size - 1) % size;
		p->n = 1;
	} else if (!strcmp(pattern, "pairs")) {
		int partner = (rank / stride) % 2 ? rank - stride :
			      rank + stride;

		if (partner < size) {
			p->to[0] = p->from[0] = partner;
			p->n = 1;
		}
	} else if (!strcmp(pattern, "halo2d")) {
		int dims[2] = { 0, 0 }, periods[2] = { 1, 1 }, me;

		MPI_Dims_create(size, 2, dims);
		MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, cart);
		MPI_Comm_rank(*cart, &me);
		for (int d = 0; d < 2; d++) {
			MPI_Cart_shift(*cart, d, 1, &p->from[2 * d],
				       &p->to[2 * d]);
			MPI_Cart_shift(*cart, d, -1, &p->from[2 * d + 1],
				       &p->to[2 * d + 1]);
		}
		p->n = 4;
	} else {
		return -1;
	}
	return 0;
}

static void p2p_blocking(const struct msg_peers *p, char *sbuf, char *rbuf,
			 long bytes, MPI_Comm comm)
{
	for (int k = 0; k < p->n; k++)
		MPI_Sendrecv(sbuf, (int)bytes, MPI_BYTE, p->to[k], k,
			     rbuf + (size_t)k * (size_t)bytes, (int)bytes,
			     MPI_BYTE, p->from[k], k, comm,
			     MPI_STATUS_IGNORE);
}

static void p2p_nonblocking(const struct msg_peers *p, char *sbuf,
			    char *rbuf, long bytes, MPI_Comm comm)
{
	MPI_Request req[8];
	MPI_Status st[8];	/* not MPI_STATUSES_IGNORE: gcc 12 takes
				 * that for an array of size 0 (MPICH) */

	for (int k = 0; k < p->n; k++)
		MPI_Irecv(rbuf + (size_t)k * (size_t)bytes, (int)bytes,
			  MPI_BYTE, p->from[k], k, comm, &req[k]);
	for (int k = 0; k < p->n; k++)
		MPI_Isend(sbuf, (int)bytes, MPI_BYTE, p->to[k], k, comm,
			  &req[p->n + k]);
	MPI_Waitall(2 * p->n, req, st);
}

static void collective(const char *pattern, char *sbuf, char *rbuf,
		       long bytes, int size)
{
	if (!strcmp(pattern, "alltoall"))
		MPI_Alltoall(sbuf, (int)(bytes), MPI_BYTE, rbuf, (int)bytes,
			     MPI_BYTE, MPI_COMM_WORLD);
	else if (!strcmp(pattern, "bcast"))
		MPI_Bcast(sbuf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
	else
		MPI_Reduce(sbuf, rbuf, (int)(bytes / 8), MPI_DOUBLE, MPI_SUM,
			   0, MPI_COMM_WORLD);
	(void)size;
}

/* Work of the OpenMP team between exchanges (hybrid): private data. */
static double team_compute(int threads)
{
	double s = 0;

#pragma omp parallel num_threads(threads) reduction(+:s)
	for (int i = 0; i < 20000; i++)
		s += (double)i * 1e-9;
	return s;
}

/* Go on?  Rank 0 decides from the clock, every CHECK_EVERY iterations. */
static int go_on(const struct msg_opts *o, long it, double t0, int rank)
{
	int more;

	if (o->iters)
		return it < o->iters;
	if (it % CHECK_EVERY)
		return 1;
	more = rank == 0 ? now_s() - t0 < o->seconds : 0;
	MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return more;
}

static volatile double wl_sink;

int main(int argc, char **argv)
{
	struct msg_opts o;
	struct msg_peers p;
	MPI_Comm cart = MPI_COMM_NULL;
	int rank, size, provided, coll;
	char *sbuf, *rbuf;
	double t0;
	long it = 0;

	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	parse(&o, argc, argv, rank);
	coll = !strcmp(o.pattern, "alltoall") || !strcmp(o.pattern, "bcast")
	       || !strcmp(o.pattern, "reduce");
	if (!coll && peers_of(o.pattern, o.stride, rank, size, &p, &cart))
		usage_exit(rank, "unknown pattern");
	sbuf = malloc((size_t)o.bytes * (size_t)size);
	rbuf = malloc((size_t)o.bytes * (size_t)(size > 4 ? size : 4));
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	memset(sbuf, rank + 1, (size_t)o.bytes * (size_t)size);
	memset(rbuf, 0, (size_t)o.bytes * (size_t)(size > 4 ? size : 4));
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now_s();
	while (go_on(&o, it, t0, rank)) {
		MPI_Comm comm = cart != MPI_COMM_NULL ? cart : MPI_COMM_WORLD;

		if (coll)
			collective(o.pattern, sbuf, rbuf, o.bytes, size);
		else if (o.nonblocking)
			p2p_nonblocking(&p, sbuf, rbuf, o.bytes, comm);
		else
			p2p_blocking(&p, sbuf, rbuf, o.bytes, comm);
		if (o.threads > 1)
			wl_sink += team_compute(o.threads);
		it++;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (o.report && rank == 0)
		printf("iters=%ld elapsed_s=%.3f\n", it, now_s() - t0);
	if (cart != MPI_COMM_NULL)
		MPI_Comm_free(&cart);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
#endif
