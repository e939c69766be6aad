/* commap/matrix_io.h: reading and writing communication matrix files.
 *
 * Formats (docs/formats.md):
 *  - JSON, versioned:
 *      {"format": "commap-matrix", "version": 1, "threads": N,
 *       "edges": [[i, j, w], ...]}
 *    with 0 <= i < j < N, 0 <= w <= CM_MATRIX_WEIGHT_MAX; duplicate edges
 *    are summed (the sum under the same bound).
 *  - An agent result file ("format": "commap-result"): its "threads" array
 *    gives N and its "edges" the matrix.
 *  - CSV: a square matrix, one row per line, comma separated, optional
 *    trailing newline; '#' lines are comments.  Must be symmetric within a
 *    relative tolerance of 1e-6 (the mean of the two halves is used);
 *    the diagonal is ignored.
 * Readers reject malformed input with an error naming the line and field
 * (CSV) or the JSON path (e.g. "edges[3][2]: weight is negative").
 */
#ifndef COMMAP_MATRIX_IO_H
#define COMMAP_MATRIX_IO_H

#include <stddef.h>
#include <stdio.h>

#include "commap/error.h"
#include "commap/matrix.h"

enum cm_matrix_format {
	CM_MATRIX_FORMAT_AUTO = 0,
	CM_MATRIX_FORMAT_JSON,
	CM_MATRIX_FORMAT_CSV,
};

/* Largest number of threads a file may declare (guards allocations). */
#define CM_MATRIX_MAX_THREADS (1 << 20)

/* Largest weight a file may give an edge (and the largest sum of its
 * duplicates).  A matrix of CM_MATRIX_MAX_THREADS threads holds at most
 * 2^40 edges, so every sum of weights a mapper forms (times the few levels
 * of a topology) stays below 1e293: finite, and the searches' bounds keep
 * working.  Larger weights are refused, never rescaled: the file is wrong
 * and its author should hear it. */
#define CM_MATRIX_WEIGHT_MAX 1e280

/* Parse a buffer (not necessarily NUL-terminated).  AUTO detects by
 * content: JSON if the first non-blank byte is '{', CSV otherwise.
 * 0 on success with *out set, -1 with errno (EINVAL) and err. */
int cm_matrix_parse(const char *buf, size_t len, enum cm_matrix_format fmt,
		    struct cm_matrix **out, struct cm_error *err);
int cm_matrix_parse_json(const char *buf, size_t len, struct cm_matrix **out,
			 struct cm_error *err);
int cm_matrix_parse_csv(const char *buf, size_t len, struct cm_matrix **out,
			struct cm_error *err);

/* Read a file ("-" is standard input), detecting the format by content.
 * The error names the file. */
int cm_matrix_read_file(const char *path, struct cm_matrix **out,
			struct cm_error *err);

/* Write.  JSON: the commap-matrix object, edges sorted by (i, j), one line.
 * CSV: n lines of n values.  0 on success, -1 with errno. */
int cm_matrix_write_json(FILE *f, const struct cm_matrix *m);
int cm_matrix_write_csv(FILE *f, const struct cm_matrix *m);

/* The edges as a JSON array [[i, j, w], ...] sorted by (i, j), for
 * embedding in other documents (agent results).  Returns a new jansson
 * reference (json_t *) as void * so callers need not include jansson.h;
 * NULL on ENOMEM. */
void *cm_matrix_edges_to_json(const struct cm_matrix *m);

#endif
