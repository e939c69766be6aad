/* svc_web_matrix.c: a result's communication matrix as a file,
 * /results/{id}/matrix.json (commap-matrix, docs/formats.md) and
 * /results/{id}/matrix.csv, written by lib/matrix_io from the stored
 * document: what `commap map --matrix` reads back.  The result is loaded
 * as its page would be (the owner and admins; 403/404 as there). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commap/matrix_io.h"
#include "svc_log.h"
#include "svc_web.h"
#include "svc_web_internal.h"

/* A CSV matrix has n * n cells: past this many threads (about 25 MB of
 * text) only the JSON edge list, which grows with the edges, is served. */
#define CSV_THREADS_MAX 2048

static const char *suffix_of(const char *rest)
{
	const char *s = strchr(rest, '/');

	return s && (!strcmp(s, "/matrix.json") || !strcmp(s, "/matrix.csv")) ?
	       s + 8 : NULL;
}

int svc_web_matrix_path(const char *rest)
{
	return suffix_of(rest) != NULL;
}

/* The document's matrix, parsed by the library as an agent result. */
static struct cm_matrix *matrix_of(const json_t *doc, struct cm_error *e)
{
	char *text = json_dumps(doc, JSON_COMPACT);
	struct cm_matrix *m = NULL;

	if (!text) {
		cm_errorf(e, ENOMEM, "out of memory");
		return NULL;
	}
	if (cm_matrix_parse_json(text, strlen(text), &m, e) < 0)
		m = NULL;
	free(text);
	return m;
}

static int write_matrix(const struct cm_matrix *m, int csv, char **buf,
			size_t *len)
{
	FILE *f = open_memstream(buf, len);
	int rc;

	if (!f)
		return -1;
	rc = csv ? cm_matrix_write_csv(f, m) : cm_matrix_write_json(f, m);
	if (fclose(f) != 0 || rc < 0) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	return 0;
}

void svc_web_matrix(const struct svc_api *api,
		    const struct svc_api_request *rq, const char *rest,
		    struct svc_api_response *rs)
{
	const char *suffix = suffix_of(rest);
	struct cm_error e = { "" };
	struct cm_matrix *m;
	char id[24];
	json_t *row;
	int csv = suffix && !strcmp(suffix, "csv");

	snprintf(id, sizeof(id), "%.*s", (int)(strchr(rest, '/') - rest),
		 rest);
	row = svc_web_load_job(api, rq, 0, id, rs);
	if (!row)
		return;
	m = matrix_of(json_object_get(row, "document"), &e);
	json_decref(row);
	if (!m) {
		svc_log(SVC_LOG_ERROR, "result %s: matrix: %s", id, e.text);
		svc_web_error(rs, 500, "result %s: its matrix could not be "
			      "read: %s", id, e.text);
		return;
	}
	if (csv && cm_matrix_nthreads(m) > CSV_THREADS_MAX) {
		svc_web_error(rs, 413, "result %s: %d threads make a CSV of "
			      "%d x %d cells; matrix.json lists the edges", id,
			      cm_matrix_nthreads(m), cm_matrix_nthreads(m),
			      cm_matrix_nthreads(m));
	} else if (write_matrix(m, csv, &rs->body, &rs->body_len) < 0) {
		svc_web_error(rs, 500, "out of memory");
	} else {
		rs->status = 200;
		rs->content_type = csv ? "text/csv; charset=utf-8" :
				   "application/json";
	}
	cm_matrix_free(m);
}
