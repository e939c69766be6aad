/* fuzz_check.h: shared invariant checks for the matrix fuzz targets.
 *
 * A parsed matrix must be internally consistent, and writing it out and
 * reading it back must give the same matrix: a violation aborts, which
 * libFuzzer and the standalone driver report as a crash.
 */
#ifndef COMMAP_FUZZ_CHECK_H
#define COMMAP_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commap/matrix.h"
#include "commap/matrix_io.h"
#include "fuzz_input.h"

/* A violation aborts (fuzz_input.h). */
#define fuzz_check fuzz_require

static inline int fuzz_same_matrix(const struct cm_matrix *a,
				   const struct cm_matrix *b)
{
	int n = cm_matrix_nthreads(a);

	if (n != cm_matrix_nthreads(b) ||
	    cm_matrix_nedges(a) != cm_matrix_nedges(b))
		return 0;
	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(a, i, &e);

		for (int k = 0; k < len; k++) {
			if (!(e[k].w > 0) || e[k].col == i ||
			    cm_matrix_get(b, i, e[k].col) != e[k].w ||
			    cm_matrix_get(a, e[k].col, i) != e[k].w)
				return 0;
		}
	}
	return 1;
}

/* Write m with fn, parse it back with fmt, and compare. */
static inline void fuzz_round_trip(const struct cm_matrix *m,
				   int (*fn)(FILE *, const struct cm_matrix *),
				   enum cm_matrix_format fmt)
{
	struct cm_matrix *back = NULL;
	struct cm_error err = { "" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	/* A dense CSV of a huge declared size would be n^2 text. */
	if (fn == cm_matrix_write_csv && cm_matrix_nthreads(m) > 512)
		return;
	f = open_memstream(&buf, &len);
	fuzz_check(f && fn(f, m) == 0, "writer failed");
	fclose(f);
	fuzz_check(cm_matrix_parse(buf, len, fmt, &back, &err) == 0 ||
		   (fmt == CM_MATRIX_FORMAT_CSV &&
		    cm_matrix_nthreads(m) == 0),
		   "written matrix does not parse back");
	fuzz_check(!back || fuzz_same_matrix(m, back),
		   "round trip changed the matrix");
	cm_matrix_free(back);
	free(buf);
}

#endif
