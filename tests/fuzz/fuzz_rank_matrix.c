/* fuzz_rank_matrix.c: both readers of rank matrices across nodes on
 * arbitrary bytes: the service's fold of stored node results into an
 * application's matrix (svc_model_ranks_build, service/svc_model_ranks.c)
 * and commap-place-nodes' reader of the service's answer
 * (cm_place_nodes_answer, spank/place_nodes_answer.c).
 *
 * Invariants: the service's fold of any array of documents either says
 * why there is none, or answers 1..SVC_RANKS_MAX ranks, pairs i < j < N
 * with bytes >= 0 and 1..SVC_RANKS_RUNS_MAX steps whose bytes between
 * nodes are at most their bytes in all; the reader either says why or
 * returns a matrix of exactly the ranks asked for, with finite weights
 * >= 0, and an accepted answer of the service's own is read back with
 * its pairs.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_input.h"
#include "place_nodes_answer.h"
#include "svc_model_ranks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_answer(const json_t *a)
{
	json_int_t n = json_integer_value(json_object_get(a, "ranks"));
	const json_t *p, *runs = json_object_get(a, "runs");
	size_t k;

	fuzz_require(n >= 1 && n <= SVC_RANKS_MAX, "ranks in range");
	json_array_foreach(json_object_get(a, "pairs"), k, p) {
		json_int_t i = json_integer_value(json_array_get(p, 0));
		json_int_t j = json_integer_value(json_array_get(p, 1));

		fuzz_require(i >= 0 && i < j && j < n, "pair i < j < N");
		fuzz_require(json_integer_value(json_array_get(p, 2)) >= 0,
			     "bytes >= 0");
	}
	fuzz_require(json_array_size(runs) >= 1 &&
		     json_array_size(runs) <= SVC_RANKS_RUNS_MAX,
		     "1..8 steps averaged");
	json_array_foreach(runs, k, p)
		fuzz_require(json_integer_value(json_object_get(p,
			"bytes_between_nodes")) <= json_integer_value(
			json_object_get(p, "bytes_total")),
			"bytes between nodes <= bytes in all");
}

static void check_reader(const char *text, int want)
{
	char why[128] = "";
	int runs;
	struct cm_matrix *m = cm_place_nodes_answer(text, want, &runs, why,
						    sizeof(why));

	if (!m) {
		fuzz_require(why[0] != '\0', "refused silently");
		return;
	}
	fuzz_require(cm_matrix_nthreads(m) == want, "as many ranks as asked");
	for (int i = 0; i < want; i++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(m, i, &e);

		for (int x = 0; x < len; x++)
			fuzz_require(isfinite(e[x].w) && e[x].w >= 0,
				     "finite weights >= 0");
	}
	cm_matrix_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	json_t *docs = json_loads(text, JSON_DECODE_ANY, NULL), *a;
	struct svc_ranks_query q = { 0 };
	struct cm_error err = { "" };

	/* the input as the service's answer, for a few step sizes */
	for (int want = 1; want <= 8; want *= 2)
		check_reader(text, want);
	if (json_is_array(docs)) {
		q.ranks = size % 3 == 0 ? 0 : (int)(size % 7);
		a = svc_model_ranks_build(docs, &q, &err);
		if (!a) {
			fuzz_require(err.text[0] != '\0', "no matrix, no reason");
		} else {
			char *again;
			int n = (int)json_integer_value(json_object_get(a,
								"ranks"));

			check_answer(a);
			again = json_dumps(a, JSON_COMPACT);
			fuzz_require(again != NULL, "answer dumps");
			if (n <= 64) {
				int runs;
				char why[128];
				struct cm_matrix *m = cm_place_nodes_answer(
					again, n, &runs, why, sizeof(why));

				fuzz_require(m != NULL, "the service's answer "
					     "is read back");
				cm_matrix_free(m);
			}
			free(again);
			json_decref(a);
		}
	}
	json_decref(docs);
	free(text);
	return 0;
}
