/* result_read.c: the entry points of the upload validator
 * (result_validate.h): a body's size, its parse and checks, the same
 * checks on a jansson tree, and whether two stored bodies are the same
 * result. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/placement_check.h"
#include "result_validate.h"
#include "result_validate_internal.h"

/* ---- entry points -------------------------------------------------------*/

static int body_size_ok(size_t len, size_t max_len, struct cm_error *err)
{
	if (len > max_len)
		return cm_errorf(err, EINVAL,
				 "body: %zu bytes is more than max_body (%zu)",
				 len, max_len);
	if (len == 0)
		return cm_errorf(err, EINVAL, "body: empty");
	return 0;
}

int svc_result_check(const void *body, size_t len, size_t max_len,
		     struct svc_result_parsed **parsed,
		     struct svc_result_ident *id, struct cm_error *err)
{
	struct svc_result_parsed *pr;

	*parsed = NULL;
	if (body_size_ok(len, max_len, err) < 0)
		return -1;
	pr = svc_result_parse_text(body, len, 0, err);
	if (!pr)
		return -1;
	if (svc_result_validate_doc(pr->root, id, err) < 0 ||
	    cm_placement_check_result(body, len, err) < 0) {
		svc_result_parsed_free(pr);
		errno = EINVAL;
		return -1;
	}
	*parsed = pr;
	return 0;
}

/* Point id's strings into doc (valid: every member is there). */
static void ident_from_tree(const json_t *doc, struct svc_result_ident *id)
{
	const json_t *o = json_object_get(doc, "identity");

	id->cluster = json_string_value(json_object_get(doc, "cluster"));
	if (!id->cluster)
		id->cluster = "";
	id->node = json_string_value(json_object_get(o, "node"));
	id->user = json_string_value(json_object_get(o, "user"));
	id->executable = json_string_value(json_object_get(o, "executable"));
	id->exe_hash = json_string_value(json_object_get(o, "exe_hash"));
	id->app = strrchr(id->executable, '/');
	id->app = id->app ? id->app + 1 : id->executable;
	id->mode = json_string_value(json_object_get(doc, "mode"));
	id->backend = json_string_value(json_object_get(doc, "backend"));
	id->not_pinned = json_string_value(json_object_get(doc,
							   "not_pinned"));
}

int svc_result_validate(const json_t *doc, struct svc_result_ident *id,
			struct cm_error *err)
{
	struct svc_result_parsed *pr;
	char *text;
	int rc;

	/* The tree as text through the same parser and validator; NUL is
	 * allowed here so that a string holding one is named below. */
	text = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return cm_errorf(err, ENOMEM, "body: cannot serialise");
	pr = svc_result_parse_text(text, strlen(text), 1, err);
	free(text);
	if (!pr)
		return -1;
	rc = svc_result_validate_doc(pr->root, id, err);
	svc_result_parsed_free(pr);
	if (rc < 0) {
		errno = EINVAL;
		return -1;
	}
	if (id)
		ident_from_tree(doc, id);
	return 0;
}

int svc_result_parse(const void *body, size_t len, size_t max_len,
		     json_t **doc, struct svc_result_ident *id,
		     struct cm_error *err)
{
	struct svc_result_parsed *pr;
	struct svc_result_ident tmp;
	json_error_t jerr;
	json_t *d;

	*doc = NULL;
	if (svc_result_check(body, len, max_len, &pr, &tmp, err) < 0)
		return -1;
	svc_result_parsed_free(pr);
	d = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!d)
		return cm_errorf(err, EINVAL,
				 "body: invalid JSON at line %d column %d: %s",
				 jerr.line, jerr.column, jerr.text);
	if (id) {
		*id = tmp;
		ident_from_tree(d, id);
	}
	*doc = d;
	return 0;
}

static char *canonical(const char *text, size_t len)
{
	json_t *d = json_loadb(text, len, 0, NULL);
	char *c = d ? json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(d);
	return c;
}

int svc_result_same(const char *a, size_t a_len, const char *b,
		    size_t b_len)
{
	char *ca, *cb;
	int rc;

	if (a_len == b_len && memcmp(a, b, a_len) == 0)
		return 1;
	ca = canonical(a, a_len);
	cb = ca ? canonical(b, b_len) : NULL;
	rc = ca && cb ? strcmp(ca, cb) == 0 : -1;
	free(ca);
	free(cb);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}
