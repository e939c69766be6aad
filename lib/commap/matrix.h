/* commap/matrix.h: sparse symmetric communication matrix.
 *
 * Threads are numbered 0..n-1.  An edge (i, j), i != j, has a weight > 0;
 * the matrix is symmetric (w(i,j) == w(j,i)); the diagonal is ignored.
 * Memory is O(edges + threads).  Adding to an edge is amortised O(1).
 */
#ifndef COMMAP_MATRIX_H
#define COMMAP_MATRIX_H

#include <stddef.h>

struct cm_matrix;

/* One neighbour in a row. */
struct cm_matrix_entry {
	int col;
	double w;
};

/* New zero matrix over n threads (n >= 0).  NULL with errno on error. */
struct cm_matrix *cm_matrix_new(int n);
void cm_matrix_free(struct cm_matrix *m);
struct cm_matrix *cm_matrix_dup(const struct cm_matrix *m);

int cm_matrix_nthreads(const struct cm_matrix *m);
/* Number of edges with i < j. */
size_t cm_matrix_nedges(const struct cm_matrix *m);

/* Grow to n threads (new threads have no edges).  -1/EINVAL if n is smaller
 * than the current size. */
int cm_matrix_resize(struct cm_matrix *m, int n);

/* w(i,j) += w and w(j,i) += w.  -1/EINVAL for i == j, an index out of range,
 * or a weight that is negative, NaN or infinite. */
int cm_matrix_add(struct cm_matrix *m, int i, int j, double w);
/* Set w(i,j) = w(j,i) = w (0 removes the edge).  Same errors. */
int cm_matrix_set(struct cm_matrix *m, int i, int j, double w);
/* w(i,j); 0 for absent edges, i == j or bad indices. */
double cm_matrix_get(const struct cm_matrix *m, int i, int j);

/* Neighbours of i: *out points into the matrix (valid until the next
 * change); returns their number. Order is unspecified. */
int cm_matrix_row(const struct cm_matrix *m, int i,
		  const struct cm_matrix_entry **out);

/* Sum of the weights of row i; total = sum over i < j. */
double cm_matrix_row_sum(const struct cm_matrix *m, int i);
double cm_matrix_total(const struct cm_matrix *m);
double cm_matrix_max(const struct cm_matrix *m);

/* Multiply every weight by alpha (0 <= alpha <= 1); edges that fall below
 * a tiny fraction of the largest weight are dropped so memory stays bounded
 * (LHMapping §3.4.1 aging). -1/EINVAL on a bad alpha. */
int cm_matrix_age(struct cm_matrix *m, double alpha);
/* dst += scale * src; dst grows to src's size if smaller. */
int cm_matrix_merge(struct cm_matrix *dst, const struct cm_matrix *src,
		    double scale);
/* Scale so that the largest weight is 1 (no-op on a zero matrix). */
void cm_matrix_normalize(struct cm_matrix *m);

/* The k heaviest partners of i, heaviest first (ties: lower index first).
 * Writes up to k entries to out and returns how many. */
int cm_matrix_top_partners(const struct cm_matrix *m, int i, int k,
			   struct cm_matrix_entry *out);

/* Cosine similarity of two matrices as vectors over pairs i < j (0 if one
 * is zero); the smaller one is treated as padded with zeros. */
double cm_matrix_cosine(const struct cm_matrix *a, const struct cm_matrix *b);

#endif
