/* matching.h (internal): maximum-weight perfect matching on a complete
 * graph with an even number of vertices and weights >= 0, used by the SPCD
 * §IV-B mapper (lib/map_matching.c).
 *
 * The graph is given sparsely: the listed edges carry their weight, every
 * pair not listed weighs 0.  Because the graph is complete and no weight is
 * negative, a maximum-weight matching of the listed edges, completed by
 * pairing the vertices it leaves single in index order, is a maximum-weight
 * perfect matching of the complete graph; that is how it is computed.
 *
 * Not installed; no public contract beyond this library.
 */
#ifndef COMMAP_MATCHING_H
#define COMMAP_MATCHING_H

#include <stddef.h>

/* An undirected edge u -- v of weight w (u != v, 0 <= w < inf). */
struct cm_match_edge {
	int u;
	int v;
	double w;
};

/* Exact: Edmonds' primal-dual blossom algorithm, O(n^3) worst case (in
 * practice about O(n * (n + nedges))).  Weights are quantised to integers
 * (the largest to 2^40) so that the dual updates are exact: the result is
 * optimal to within n/2 * max_w * 2^-40 (weights below that are 0).  A
 * pair listed twice counts with the sum of its weights.  Writes the
 * partner of every vertex to mate[n].  0 on success; -1/EINVAL for an odd
 * or negative n, a bad vertex index, a self loop, a negative or
 * non-finite weight; -1/ENOMEM. */
int cm_matching_perfect(int n, const struct cm_match_edge *edges,
			size_t nedges, int *mate);

/* Approximate, for graphs too large for the exact algorithm: greedy
 * (heaviest edge first, ties by vertex indices; at least half the optimum),
 * then passes of two local improvements until none helps: length-3
 * augmenting paths between vertices greedy left in weight-0 pairs, and
 * 2-opt exchanges between matched pairs joined by a listed edge.  About
 * O(nedges log nedges + passes * nedges * deg).  Same contract and errors
 * as cm_matching_perfect. */
int cm_matching_perfect_greedy(int n, const struct cm_match_edge *edges,
			       size_t nedges, int *mate);

/* Dense convenience for tests and small graphs: w is row-major n x n,
 * symmetric, the diagonal ignored; exact.  Same errors (EINVAL also for an
 * asymmetric w). */
int cm_matching_perfect_dense(int n, const double *w, int *mate);

/* Weight of a perfect matching under the dense matrix w (n x n). */
double cm_matching_weight_dense(int n, const double *w, const int *mate);

/* SPCD §IV-B grouping (map_matching.c): repeated maximum-weight perfect
 * matching of threads, pairs, pairs of pairs ... (groups weighted by SPCD
 * eq. (1)), flattened depth first into order[n], every group consecutive,
 * ready for cm_map_place() (map_groups.h).  0, or -1/ENOMEM. */
struct cm_matrix;
int cm_map_matching_order(const struct cm_matrix *m, int *order);

#endif
