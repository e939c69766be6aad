/* place_nodes_answer.c: the service's rank matrix (place_nodes_answer.h). */
#include <math.h>
#include <stdio.h>

#include <jansson.h>

#include "place_nodes_answer.h"

/* Pair k's fields into i, j, w: 0, or -1 when malformed. */
static int pair_of(const json_t *p, int n, int *i, int *j, double *w)
{
	const json_t *a = json_array_get(p, 0), *b = json_array_get(p, 1);
	const json_t *c = json_array_get(p, 2);

	if (!json_is_array(p) || !json_is_integer(a) || !json_is_integer(b) ||
	    !json_is_number(c))
		return -1;
	if (json_integer_value(a) < 0 || json_integer_value(a) >= n ||
	    json_integer_value(b) < 0 || json_integer_value(b) >= n)
		return -1;
	*i = (int)json_integer_value(a);
	*j = (int)json_integer_value(b);
	*w = json_number_value(c);
	return isfinite(*w) && *w >= 0 ? 0 : -1;
}

struct cm_matrix *cm_place_nodes_answer(const char *text, int want,
					int *runs, char *why, size_t len)
{
	json_t *doc = json_loads(text, 0, NULL), *pairs, *p;
	struct cm_matrix *m = NULL;
	json_int_t n;
	size_t k;

	*runs = 0;
	pairs = json_object_get(doc, "pairs");
	n = json_integer_value(json_object_get(doc, "ranks"));
	if (!json_is_object(doc) || !json_is_array(pairs)) {
		snprintf(why, len, "the service's rank matrix is malformed");
		goto out;
	}
	if (n != want || want < 1) {
		snprintf(why, len, "the learned matrix has %lld ranks, the "
			 "step %d", (long long)n, want);
		goto out;
	}
	if (!(m = cm_matrix_new(want))) {
		snprintf(why, len, "out of memory");
		goto out;
	}
	json_array_foreach(pairs, k, p) {
		int i, j;
		double w;

		if (pair_of(p, want, &i, &j, &w) < 0 ||
		    (i != j && w > 0 && cm_matrix_add(m, i, j, w) < 0)) {
			snprintf(why, len, "the service's rank matrix has a "
				 "bad pair (%zu)", k);
			cm_matrix_free(m);
			m = NULL;
			goto out;
		}
	}
	*runs = (int)json_array_size(json_object_get(doc, "runs"));
out:
	json_decref(doc);
	return m;
}
