/* agent_static.c: reading the file of --mode static:FILE (see agent.h). */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent.h"
#include "commap/matrix_io.h"

/* A JSON object with "pu_of_thread" and no "edges" is a mapping.
 * 1 mapping read, 0 not a mapping file, -1 a malformed mapping. */
static int load_mapping(const char *path, struct agent_static *out,
			struct cm_error *err)
{
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr), *pus;
	size_t n;

	if (!doc)
		return 0;
	pus = json_object_get(doc, "pu_of_thread");
	if (!json_is_object(doc) || !pus || json_object_get(doc, "edges")) {
		json_decref(doc);
		return 0;
	}
	n = json_is_array(pus) ? json_array_size(pus) : 0;
	if (n == 0 || n > CM_MATRIX_MAX_THREADS) {
		json_decref(doc);
		return cm_errorf(err, EINVAL, "%s: pu_of_thread: expected a "
				 "non-empty array of OS PU numbers", path);
	}
	out->os_pu = malloc(n * sizeof(int));
	if (!out->os_pu) {
		json_decref(doc);
		return cm_errorf(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(pus, i);

		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 65535) {
			json_decref(doc);
			free(out->os_pu);
			out->os_pu = NULL;
			return cm_errorf(err, EINVAL, "%s: pu_of_thread[%zu]: "
					 "expected an OS PU number", path, i);
		}
		out->os_pu[i] = (int)json_integer_value(v);
	}
	out->n = (int)n;
	json_decref(doc);
	return 1;
}

int agent_static_load(const char *path, struct agent_static *out,
		      struct cm_error *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = load_mapping(path, out, err);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	if (cm_matrix_read_file(path, &out->matrix, err) < 0)
		return -1;
	out->n = cm_matrix_nthreads(out->matrix);
	return 0;
}

void agent_static_free(struct agent_static *s)
{
	free(s->os_pu);
	cm_matrix_free(s->matrix);
	memset(s, 0, sizeof(*s));
}
