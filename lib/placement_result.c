/* placement_result.c: the placement invariant over an agent result's
 * timeline (commap/placement_check.h), for the result validator and
 * `commap run`. */
#include <errno.h>
#include <stdlib.h>

#include <jansson.h>

#include "commap/placement_check.h"

/* The integers of a pu_of_thread array (non-integers as -1). */
static int *pus_of(const json_t *a, int *n)
{
	size_t k, len = json_array_size(a);
	int *pu = malloc(sizeof(int) * (len ? len : 1));

	for (k = 0; pu && k < len; k++) {
		const json_t *v = json_array_get(a, k);
		json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;

		pu[k] = x >= 0 && x < 1 << 30 ? (int)x : -1;
	}
	*n = (int)len;
	return pu;
}

static int check_entry(const json_t *e, size_t k, int npus,
		       struct cm_error *err)
{
	const json_t *a = json_object_get(e, "pu_of_thread");
	const json_t *live = json_object_get(e, "threads_live");
	struct cm_error why;
	int n, rc, *pu;

	if (!json_is_array(a) || json_is_true(json_object_get(e, "forced")))
		return 0;
	pu = pus_of(a, &n);
	if (!pu)
		return cm_errorf(err, ENOMEM, "out of memory");
	rc = cm_placement_check(npus, json_is_integer(live) ?
				(int)json_integer_value(live) : 0, n, pu,
				&why);
	free(pu);
	if (rc < 0 && errno == EDOM)
		return cm_errorf(err, EDOM, "timeline[%zu].pu_of_thread: %s",
				 k, why.text);
	return 0;
}

int cm_placement_check_result(const char *text, size_t len,
			      struct cm_error *err)
{
	json_t *doc = json_loadb(text, len, 0, NULL);
	const json_t *tl, *pus;
	int rc = 0;

	if (!json_is_object(doc)) {
		json_decref(doc);
		return cm_errorf(err, EINVAL, "not a JSON object");
	}
	tl = json_object_get(doc, "timeline");
	pus = json_object_get(json_object_get(doc, "topology"), "pus");
	if (json_is_integer(pus) && json_integer_value(pus) > 0 &&
	    json_integer_value(pus) < 1 << 24)
		for (size_t k = 0; rc == 0 && k < json_array_size(tl); k++)
			rc = check_entry(json_array_get(tl, k), k,
					 (int)json_integer_value(pus), err);
	json_decref(doc);
	return rc;
}
