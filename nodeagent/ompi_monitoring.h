/* ompi_monitoring.h: the bytes MPI ranks sent each other, as Open MPI's
 * pml monitoring component counted them.
 *
 * With the MCA variables pml_monitoring_enable=2 (application messages
 * apart from the library's own), pml_monitoring_enable_output=3 and
 * pml_monitoring_filename=DIR/prof, every rank writes DIR/prof.R.prof at
 * MPI_Finalize (R its rank in MPI_COMM_WORLD).  Its "E" lines are the
 * application's point-to-point messages:
 *
 *   E<TAB>SRC<TAB>DST<TAB>N bytes<TAB>M msgs sent[<TAB>histogram]
 *
 * The other lines (internal "I" messages, one-sided "S"/"R", collectives
 * "C", per-communicator "D"/"O2A"/... and comments) are left out.  The
 * files are the user's: they are read with the job's rights, each at most
 * CM_OMPI_MON_FILE_MAX bytes, and a malformed one is a problem named in
 * the result, never a failure.
 */
#ifndef COMMAP_OMPI_MONITORING_H
#define COMMAP_OMPI_MONITORING_H

#include <stddef.h>
#include <stdint.h>

#include "commap/error.h"

/* Ranks are below 2^20 (as the service accepts them). */
#define CM_OMPI_MON_RANK_MAX (1 << 20)
/* One file: a line of about 200 bytes per peer with its histogram. */
#define CM_OMPI_MON_FILE_MAX ((size_t)16 << 20)
/* Pairs kept for one node: 64 ranks each sending to 4096, about 7 MB
 * of the node's result, well inside the service's default 16 MiB body. */
#define CM_OMPI_MON_PAIRS_MAX (1 << 18)

struct cm_rank_pair {
	int src, dst;
	uint64_t bytes, messages;
};

/* What one node's ranks sent: ranks[] the ranks whose files were read,
 * pairs[] (src one of them) in file order, one entry per (src, dst). */
struct cm_rank_traffic {
	int *ranks;
	int nranks, ranks_cap;
	struct cm_rank_pair *pairs;
	int npairs, pairs_cap;
};

void cm_rank_traffic_free(struct cm_rank_traffic *t);

/* Parse the text of rank's file (len bytes, need not end in NUL) and add
 * its E lines to t (rank added to t->ranks).  A line naming another
 * source rank, a destination outside 0..CM_OMPI_MON_RANK_MAX-1, or counts
 * that are not decimal integers are an error naming the line; the same
 * destination twice is summed.  0, or -1 with errno/err (EINVAL, E2BIG
 * beyond CM_OMPI_MON_PAIRS_MAX pairs, ENOMEM); on error t is as before. */
int cm_ompi_mon_parse(const char *text, size_t len, int rank,
		      struct cm_rank_traffic *t, struct cm_error *err);

struct cm_user_cred;

/* Read DIR/prof.R.prof for each of ranks[0..n-1] (duplicates and negative
 * ranks ignored) with cred's rights and parse them into t.  A missing file
 * is no rank of Open MPI (nothing added); every other problem is one line
 * passed to problem(arg, line) and the file is left out.  The whole read
 * stops after timeout_ms.  Returns the files read. */
int cm_ompi_mon_collect(const char *dir, const int *ranks, int n,
			const struct cm_user_cred *cred, int timeout_ms,
			struct cm_rank_traffic *t,
			void (*problem)(void *arg, const char *line),
			void *arg);

/* Remove DIR's plain files and then DIR (the per-step directory of the
 * monitoring files), never following a link.  0 or -1 with errno. */
int cm_ompi_mon_remove_dir(const char *dir);

#endif
