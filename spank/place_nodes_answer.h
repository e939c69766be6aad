/* place_nodes_answer.h: the service's rank matrix as commap-place-nodes
 * reads it (GET /v1/models/{app}/ranks, docs/service.md).  Pure, so the
 * fuzz target tests/fuzz/fuzz_rank_matrix.c runs it on any bytes. */
#ifndef COMMAP_PLACE_NODES_ANSWER_H
#define COMMAP_PLACE_NODES_ANSWER_H

#include <stddef.h>

#include "commap/matrix.h"

/* The matrix of want ranks from the answer text {"ranks": N, "pairs":
 * [[i, j, bytes], ...], "runs": [...]}: *runs the steps it averages.
 * NULL with why filled (len >= 1) when the text is not such an answer,
 * N differs from want, a pair names a rank outside 0..N-1 or bytes that
 * are not a finite number >= 0. */
struct cm_matrix *cm_place_nodes_answer(const char *text, int want,
					int *runs, char *why, size_t len);

#endif
