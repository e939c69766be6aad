/* map_incremental.c: place new threads without moving the placed ones.
 *
 * The node agent maps a running program.  When threads start to
 * communicate late (a second process, an OpenMP team, MPI helper
 * threads), recomputing everyone's placement from scratch moves threads
 * that were well placed: the new mapping is only as good as the noisy
 * recent matrix, and a placement of the same cost can come out in another
 * grouping that no relabelling undoes.  Here the placed threads are fixed
 * and the new ones go, one at a time, where they cost least given what is
 * already placed: the greedy step of LHMapping §3.3 restricted to the new
 * threads.  Whether a complete remap is worth its migrations is the
 * caller's decision (nodeagent/remap_policy.h).
 *
 * Order: the new thread with the most communication with placed threads
 * first (it has the most to lose), ties by total communication, then by
 * index; so a new pair's first thread settles and its partner follows it.
 * PU: lowest added cost (sum of weight x distance to placed partners);
 * ties by load, then by crowding (closeness to the PUs in use: threads
 * spread over cores and caches before doubling up, as cm_map does), then
 * by index.  Load limit: 1 thread per PU, or ceil(n / npus) when n > npus
 * (with oversubscribe); PUs holding more fixed threads than that take no
 * new one.
 */
#include <errno.h>
#include <stdlib.h>

#include "commap/mapping.h"

struct incr {
	const struct cm_topo *topo;
	const struct cm_matrix *m;
	int n, npus, cap, maxdist;
	int *pu;	/* the mapping being completed */
	int *load;	/* threads per PU */
};

/* Communication of thread t with placed threads. */
static double placed_weight(const struct incr *in, int t)
{
	const struct cm_matrix_entry *row;
	int cnt = cm_matrix_row(in->m, t, &row);
	double w = 0;

	for (int e = 0; e < cnt; e++)
		if (row[e].col < in->n && in->pu[row[e].col] >= 0)
			w += row[e].w;
	return w;
}

/* The unplaced thread to place next; -1 when none is left. */
static int next_thread(const struct incr *in)
{
	int best = -1;
	double bw = -1, bs = -1;

	for (int t = 0; t < in->n; t++) {
		double w, s;

		if (in->pu[t] >= 0)
			continue;
		w = placed_weight(in, t);
		s = cm_matrix_row_sum(in->m, t);
		if (w > bw || (w == bw && s > bs)) {
			best = t;
			bw = w;
			bs = s;
		}
	}
	return best;
}

/* Cost thread t adds on PU p. */
static double added_cost(const struct incr *in, int t, int p)
{
	const struct cm_matrix_entry *row;
	int cnt = cm_matrix_row(in->m, t, &row);
	double c = 0;

	for (int e = 0; e < cnt; e++) {
		int q = row[e].col < in->n ? in->pu[row[e].col] : -1;

		if (q >= 0)
			c += row[e].w * cm_topo_distance(in->topo, p, q);
	}
	return c;
}

/* How close PU p is to the PUs in use (higher: more crowded). */
static long crowding(const struct incr *in, int p)
{
	long c = 0;

	for (int q = 0; q < in->npus; q++)
		if (in->load[q] > 0)
			c += (long)in->load[q] *
			     (in->maxdist - cm_topo_distance(in->topo, p, q));
	return c;
}

static int best_pu(const struct incr *in, int t)
{
	int best = -1;
	double bc = 0;
	long bcrowd = 0;

	for (int p = 0; p < in->npus; p++) {
		double c;
		long crowd;

		if (in->load[p] >= in->cap)
			continue;
		c = added_cost(in, t, p);
		crowd = crowding(in, p);
		if (best < 0 || c < bc ||
		    (c == bc && (in->load[p] < in->load[best] ||
				 (in->load[p] == in->load[best] &&
				  crowd < bcrowd)))) {
			best = p;
			bc = c;
			bcrowd = crowd;
		}
	}
	return best;
}

/* An upper bound of the distance between two PUs: the root's. */
static int max_distance(const struct cm_topo *topo)
{
	return cm_level_weight(cm_topo_node(topo, 0)->kind);
}

static int check_args(const struct cm_topo *topo, const struct cm_matrix *m,
		      int n, const int *pu, int oversubscribe,
		      struct cm_error *err)
{
	int npus;

	if (!topo || !m || n < 0 || (n > 0 && !pu))
		return cm_errorf(err, EINVAL, "incremental mapping: bad "
				 "argument");
	if (cm_matrix_nthreads(m) < n)
		return cm_errorf(err, EINVAL, "incremental mapping: %d "
				 "threads but the matrix has %d", n,
				 cm_matrix_nthreads(m));
	npus = cm_topo_npus(topo);
	if (n > npus && !oversubscribe)
		return cm_errorf(err, ENOSPC, "%d threads but only %d PUs; "
				 "oversubscription is disabled", n, npus);
	for (int t = 0; t < n; t++)
		if (pu[t] < -1 || pu[t] >= npus)
			return cm_errorf(err, EINVAL, "incremental mapping: "
					 "thread %d on PU index %d (want -1 "
					 "or 0..%d)", t, pu[t], npus - 1);
	return 0;
}

int cm_map_incremental(const struct cm_topo *topo, const struct cm_matrix *m,
		       int n, int *pu_of_thread, int oversubscribe,
		       struct cm_error *err)
{
	struct incr in = { .topo = topo, .m = m, .n = n,
			   .pu = pu_of_thread };
	int placed = 0, t;

	if (check_args(topo, m, n, pu_of_thread, oversubscribe, err) < 0)
		return -1;
	in.npus = cm_topo_npus(topo);
	in.cap = n <= in.npus ? 1 : (n + in.npus - 1) / in.npus;
	in.maxdist = max_distance(topo);
	in.load = calloc((size_t)in.npus, sizeof(int));
	if (!in.load)
		return cm_errorf(err, ENOMEM, "out of memory");
	for (t = 0; t < n; t++)
		if (pu_of_thread[t] >= 0)
			in.load[pu_of_thread[t]]++;
	/* Room always exists: the free capacity, npus * cap minus at most
	 * the fixed threads, is at least the number of new threads. */
	while ((t = next_thread(&in)) >= 0) {
		int p = best_pu(&in, t);

		pu_of_thread[t] = p;
		in.load[p]++;
		placed++;
	}
	free(in.load);
	return placed;
}
