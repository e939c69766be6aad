/* fuzz_model.c: the agent's reader of learned models (cm_model_parse in
 * nodeagent/model_fetch.c), which parses what the service answers.
 *
 * Invariants: a refused document leaves the model empty and says why; an
 * accepted one has one (rank, index) per identity, a matrix over exactly
 * those identities with finite non-negative weights, and a last mapping
 * that is absent or has one entry per identity, each -1 or a PU number.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "model_fetch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_model(const struct cm_model *m)
{
	fuzz_require(m->n >= 0 && m->rank && m->index && m->m,
		     "identities and matrix present");
	fuzz_require(cm_matrix_nthreads(m->m) == m->n,
		     "the matrix is over the identities");
	for (int k = 0; k < m->n; k++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(m->m, k, &e);

		fuzz_require(m->rank[k] >= 0 && m->index[k] >= 0,
			     "identity fields non-negative");
		for (int x = 0; x < len; x++)
			fuzz_require(e[x].col >= 0 && e[x].col < m->n &&
				     e[x].col != k && isfinite(e[x].w) &&
				     e[x].w >= 0, "edge in range");
		if (m->last_os)
			fuzz_require(m->last_os[k] >= -1,
				     "last mapping entries are PUs or -1");
	}
	fuzz_require(m->runs >= 0 && m->threads_per_rank >= 0 && m->id >= 0,
		     "counts non-negative");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	struct cm_model m;
	struct cm_error err = { "" };

	if (cm_model_parse(text, &m, &err) < 0) {
		fuzz_require(err.text[0] != '\0', "refused silently");
		fuzz_require(m.n == 0 && !m.rank && !m.index && !m.m &&
			     !m.last_os && !m.cpuset && !m.synthetic,
			     "a refused model is left empty");
	} else {
		check_model(&m);
		cm_model_free(&m);
	}
	free(text);
	return 0;
}
