/* wl_pmpi.c: libwlpmpi.so, a PMPI library that counts the bytes each
 * rank sends to each other rank by point-to-point calls: ground truth for
 * the message-passing tests, from outside the agent, for any MPI library
 * (it is built against the one whose mpicc compiles it).
 *
 *   WL_PMPI_OUT=truth.json LD_PRELOAD=.../libwlpmpi.so mpirun ... app
 *
 * Counted: MPI_Send, MPI_Ssend, MPI_Rsend, MPI_Bsend, MPI_Isend,
 * MPI_Issend, MPI_Sendrecv (its send half), on any communicator (the
 * destination translated to its MPI_COMM_WORLD rank).  Collectives are not
 * counted (their messages are the library's own business: Open MPI's pml
 * monitoring sees them).  At MPI_Finalize rank 0 gathers the counts and
 * writes a commap-matrix (docs/formats.md) over the ranks: the weight of
 * (i, j) is the bytes i sent to j plus the bytes j sent to i.  The counts
 * live in one array of size ranks, allocated at MPI_Init.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef WL_NO_MPI
/* Built without mpicc: an empty library (the tests that preload it skip
 * without MPI). */
int wl_pmpi_absent;
#else
#include <mpi.h>

static uint64_t *sent;		/* [world rank]: bytes sent to it */
static int world_size, world_rank;
static MPI_Group world_group = MPI_GROUP_NULL;

static void counts_init(void)
{
	PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
	PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
	sent = calloc((size_t)world_size, sizeof(*sent));
}

int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);

	counts_init();
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int req, int *prov)
{
	int rc = PMPI_Init_thread(argc, argv, req, prov);

	counts_init();
	return rc;
}

/* count elements of type t to rank dest of comm. */
static void count(int cnt, MPI_Datatype t, int dest, MPI_Comm comm)
{
	MPI_Group g;
	int size = 0, w = MPI_UNDEFINED;

	if (!sent || dest < 0 || cnt <= 0)
		return;		/* MPI_PROC_NULL and friends */
	if (comm == MPI_COMM_WORLD) {
		w = dest;
	} else {
		PMPI_Comm_group(comm, &g);
		PMPI_Group_translate_ranks(g, 1, &dest, world_group, &w);
		PMPI_Group_free(&g);
	}
	PMPI_Type_size(t, &size);
	if (w >= 0 && w < world_size && size > 0)
		sent[w] += (uint64_t)cnt * (uint64_t)size;
}

int MPI_Send(const void *b, int c, MPI_Datatype t, int d, int tag,
	     MPI_Comm comm)
{
	count(c, t, d, comm);
	return PMPI_Send(b, c, t, d, tag, comm);
}

int MPI_Ssend(const void *b, int c, MPI_Datatype t, int d, int tag,
	      MPI_Comm comm)
{
	count(c, t, d, comm);
	return PMPI_Ssend(b, c, t, d, tag, comm);
}

int MPI_Rsend(const void *b, int c, MPI_Datatype t, int d, int tag,
	      MPI_Comm comm)
{
	count(c, t, d, comm);
	return PMPI_Rsend(b, c, t, d, tag, comm);
}

int MPI_Bsend(const void *b, int c, MPI_Datatype t, int d, int tag,
	      MPI_Comm comm)
{
	count(c, t, d, comm);
	return PMPI_Bsend(b, c, t, d, tag, comm);
}

int MPI_Isend(const void *b, int c, MPI_Datatype t, int d, int tag,
	      MPI_Comm comm, MPI_Request *r)
{
	count(c, t, d, comm);
	return PMPI_Isend(b, c, t, d, tag, comm, r);
}

int MPI_Issend(const void *b, int c, MPI_Datatype t, int d, int tag,
	       MPI_Comm comm, MPI_Request *r)
{
	count(c, t, d, comm);
	return PMPI_Issend(b, c, t, d, tag, comm, r);
}

int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int d, int stag,
		 void *rb, int rc, MPI_Datatype rt, int s, int rtag,
		 MPI_Comm comm, MPI_Status *status)
{
	count(sc, st, d, comm);
	return PMPI_Sendrecv(sb, sc, st, d, stag, rb, rc, rt, s, rtag, comm,
			     status);
}

static void write_truth(const char *path, const uint64_t *all, int n)
{
	FILE *f = fopen(path, "w");
	int first = 1;

	if (!f) {
		fprintf(stderr, "wlpmpi: cannot write %s\n", path);
		return;
	}
	fprintf(f, "{\"format\": \"commap-matrix\", \"version\": 1, "
		"\"threads\": %d, \"edges\": [", n);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			uint64_t w = all[(size_t)i * (size_t)n + (size_t)j] +
				     all[(size_t)j * (size_t)n + (size_t)i];

			if (!w)
				continue;
			fprintf(f, "%s[%d, %d, %llu]", first ? "" : ", ", i, j,
				(unsigned long long)w);
			first = 0;
		}
	fprintf(f, "]}\n");
	fclose(f);
}

int MPI_Finalize(void)
{
	const char *path = getenv("WL_PMPI_OUT");
	uint64_t *all = NULL;

	if (sent && path && *path) {
		if (world_rank == 0)
			all = calloc((size_t)world_size * (size_t)world_size,
				     sizeof(*all));
		PMPI_Gather(sent, world_size, MPI_UINT64_T, all, world_size,
			    MPI_UINT64_T, 0, MPI_COMM_WORLD);
		if (world_rank == 0 && all)
			write_truth(path, all, world_size);
	}
	free(all);
	free(sent);
	sent = NULL;
	if (world_group != MPI_GROUP_NULL)
		PMPI_Group_free(&world_group);
	return PMPI_Finalize();
}
#endif
