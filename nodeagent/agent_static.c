/* agent_static.c: reading the file of --mode static:FILE (see agent.h).
 *
 * The file is the user's: it is read with the job's rights (user_file.h)
 * and, when it is not a mapping or a matrix, the error says so without
 * quoting it (the parsers quote what they could not read; the result is
 * shown to the user, and the file could be anything the user names). */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent.h"
#include "commap/matrix_io.h"
#include "user_file.h"

static struct cm_user_cred reader = { .uid = (uid_t)-1 };
static const char *reader_dir;

void agent_static_set_reader(const struct cm_user_cred *cred,
			     const char *dir)
{
	reader = *cred;
	reader_dir = dir;
}

/* A JSON object with "pu_of_thread" and no "edges" is a mapping.
 * 1 mapping read, 0 not a mapping file, -1 a malformed mapping. */
static int load_mapping(const char *buf, size_t len, const char *name,
			struct agent_static *out, struct cm_error *err)
{
	json_error_t jerr;
	json_t *doc = json_loadb(buf, len, 0, &jerr), *pus;
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
				 "non-empty array of OS PU numbers", name);
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
					 "expected an OS PU number", name, i);
		}
		out->os_pu[i] = (int)json_integer_value(v);
	}
	out->n = (int)n;
	json_decref(doc);
	return 1;
}

/* The parser's message without what it quotes: only the line, if any. */
static int not_a_matrix(const char *name, const char *why,
			struct cm_error *err)
{
	const char *l = strstr(why, "line ");
	int line = 0;

	if (strstr(why, "above the limit"))
		return cm_errorf(err, EINVAL, "%s: a weight is above the limit "
				 "of %g", name, CM_MATRIX_WEIGHT_MAX);
	if (l)
		sscanf(l, "line %d", &line);
	if (line > 0)
		return cm_errorf(err, EINVAL, "%s: not a commap matrix or "
				 "mapping (line %d)", name, line);
	return cm_errorf(err, EINVAL, "%s: not a commap matrix or mapping",
			 name);
}

int agent_static_load(const char *path, struct agent_static *out,
		      struct cm_error *err)
{
	char name[256], *buf;
	size_t len;
	struct cm_error perr;
	int rc;

	memset(out, 0, sizeof(*out));
	cm_user_file_name(path, name, sizeof(name));
	if (cm_user_file_read(path, reader_dir, &reader, CM_USER_FILE_MAX,
			      CM_USER_FILE_TIMEOUT_MS, &buf, &len, err) < 0)
		return -1;
	rc = load_mapping(buf, len, name, out, err);
	if (rc == 0 && cm_matrix_parse(buf, len, CM_MATRIX_FORMAT_AUTO,
				       &out->matrix, &perr) < 0)
		rc = not_a_matrix(name, perr.text, err);
	else if (rc == 0)
		out->n = cm_matrix_nthreads(out->matrix);
	free(buf);
	return rc < 0 ? -1 : 0;
}

void agent_static_free(struct agent_static *s)
{
	free(s->os_pu);
	cm_matrix_free(s->matrix);
	memset(s, 0, sizeof(*s));
}
