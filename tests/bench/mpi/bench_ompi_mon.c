/* bench_ompi_mon.c: what reading a node's Open MPI monitoring files costs
 * the agent at step end (nodeagent/ompi_monitoring.c, docs/PERFORMANCE.md
 * "Traffic between MPI ranks across nodes").
 *
 *   bench-ompi-mon RANKS PEERS [REPEATS]
 *
 * Writes RANKS files of PEERS application lines each (with Open MPI 4.1's
 * 64-bucket histograms) into a fresh directory, then reads them as the
 * agent does: one child per file with the job's rights (uid 65534 when
 * run as root, else ours), 5 s in all.  Prints one line per repeat:
 * files read, pairs kept, milliseconds. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ompi_monitoring.h"
#include "user_file.h"

static void problem(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "%s\n", line);
}

static int write_files(const char *dir, int ranks, int peers)
{
	char path[256];

	for (int r = 0; r < ranks; r++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/prof.%d.prof", dir, r);
		f = fopen(path, "w");
		if (!f)
			return -1;
		fputs("# POINT TO POINT\n", f);
		for (int d = 0; d < peers; d++) {
			fprintf(f, "E\t%d\t%d\t%d bytes\t%d msgs sent\t", r, d,
				65536 * (d + 1), d + 1);
			for (int h = 0; h < 64; h++)
				fputs(h < 63 ? "0," : "0\n", f);
		}
		fclose(f);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int ranks = argc > 2 ? atoi(argv[1]) : 0;
	int peers = argc > 2 ? atoi(argv[2]) : 0;
	int reps = argc > 3 ? atoi(argv[3]) : 3, *list;
	char dir[] = "/tmp/bench-ompi-mon.XXXXXX";
	struct cm_user_cred cred = { .uid = (uid_t)-1 };

	if (ranks < 1 || peers < 1 || reps < 1) {
		fputs("usage: bench-ompi-mon RANKS PEERS [REPEATS]\n", stderr);
		return 2;
	}
	if (geteuid() == 0)
		cred = (struct cm_user_cred){ .uid = 65534, .gid = 65534 };
	list = malloc(sizeof(int) * (size_t)ranks);
	if (!list || !mkdtemp(dir) || chmod(dir, 0755) < 0 ||
	    write_files(dir, ranks, peers) < 0) {
		perror("bench-ompi-mon");
		return 1;
	}
	for (int r = 0; r < ranks; r++)
		list[r] = r;
	for (int k = 0; k < reps; k++) {
		struct cm_rank_traffic t = { 0 };
		struct timespec a, b;
		int n;

		clock_gettime(CLOCK_MONOTONIC, &a);
		n = cm_ompi_mon_collect(dir, list, ranks, &cred, 5000, &t,
					problem, NULL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("ranks=%d peers=%d files=%d pairs=%d ms=%.1f\n", ranks,
		       peers, n, t.npairs, (double)(b.tv_sec - a.tv_sec) * 1e3 +
		       (double)(b.tv_nsec - a.tv_nsec) / 1e6);
		cm_rank_traffic_free(&t);
	}
	cm_ompi_mon_remove_dir(dir);
	free(list);
	return 0;
}
