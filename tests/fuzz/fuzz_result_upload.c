/* fuzz_result_upload.c: the service's upload parser and validator
 * (service/result_validate.c) on arbitrary bytes.
 *
 * Invariants: a refused body gets a message naming a field or the body
 * ("PATH: problem"); an accepted one has every edge inside its thread
 * array with i < j and a finite weight >= 0, and its canonical form (what
 * the service stores) is accepted again with the same indexed fields.
 * The service's own parser (svc_result_check, which stores the body as
 * received) refuses exactly the bodies jansson refuses, and agrees with
 * svc_result_parse on the verdict and the message.  One exception: a raw
 * NUL byte is never valid JSON (RFC 8259: not whitespace, and control
 * characters must be escaped in strings), but jansson 2.14 skips one
 * right after a number ("[1\0]" loads as [1]); the service refuses every
 * body holding one, and the target checks that instead.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"

#define FUZZ_MAX_BODY (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz invariant violated: %s\n", what);
		abort();
	}
}

static void check_edges(const json_t *doc, size_t n)
{
	const json_t *e;
	size_t k;

	json_array_foreach(json_object_get(doc, "edges"), k, e) {
		json_int_t i = json_integer_value(json_array_get(e, 0));
		json_int_t j = json_integer_value(json_array_get(e, 1));
		double w = json_number_value(json_array_get(e, 2));

		check(i >= 0 && i < j && (size_t)j < n, "edge indices");
		check(isfinite(w) && w >= 0, "edge weight");
	}
}

static void check_round_trip(const json_t *doc,
			     const struct svc_result_ident *id)
{
	struct svc_result_ident id2;
	struct cm_error e = { "" };
	char *canon = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	json_t *doc2 = NULL;

	check(canon != NULL, "canonical dump");
	check(svc_result_parse(canon, strlen(canon), SIZE_MAX, &doc2, &id2,
			       &e) == 0, "canonical form accepted again");
	check(id2.job == id->job && id2.step == id->step &&
	      id2.uid == id->uid && id2.n_threads == id->n_threads &&
	      id2.n_edges == id->n_edges &&
	      strcmp(id2.node, id->node) == 0 &&
	      strcmp(id2.started_at, id->started_at) == 0,
	      "same indexed fields after the round trip");
	json_decref(doc2);
	free(canon);
}

/* svc_result_check refuses what jansson refuses and agrees with
 * svc_result_parse (rc and message). */
static void check_parsers_agree(const uint8_t *data, size_t size, int rc,
				const struct cm_error *e)
{
	struct svc_result_parsed *pr = NULL;
	struct svc_result_ident id;
	struct cm_error e2 = { "" };
	json_t *j;
	int rc2 = svc_result_check(data, size, FUZZ_MAX_BODY, &pr, &id, &e2);

	check(rc2 == rc, "svc_result_check and svc_result_parse agree");
	check(rc < 0 || strcmp(e->text, e2.text) == 0 ||
	      strncmp(e2.text, "body: invalid JSON", 18) == 0,
	      "the same message");
	svc_result_parsed_free(pr);
	if (size == 0 || size > FUZZ_MAX_BODY)
		return;
	if (memchr(data, '\0', size)) {
		check(rc2 < 0 && strncmp(e2.text, "body: invalid JSON", 18) == 0,
		      "a body with a NUL byte is refused as invalid JSON");
		return;
	}
	j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES,
		       NULL);
	check((j != NULL) == (strncmp(e2.text, "body: invalid JSON", 18) != 0),
	      "the parser refuses exactly what jansson refuses");
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct svc_result_ident id;
	struct cm_error e = { "" };
	json_t *doc = NULL;
	int rc = svc_result_parse(data, size, FUZZ_MAX_BODY, &doc, &id, &e);

	check_parsers_agree(data, size, rc, &e);
	if (rc < 0) {
		check(doc == NULL, "no document on failure");
		check(strstr(e.text, ": ") != NULL,
		      "the message names a field or the body");
		return 0;
	}
	check(id.n_threads == json_array_size(json_object_get(doc,
							      "threads")),
	      "thread count");
	check(id.job >= -1 && id.step >= -1 && id.app && *id.app, "identity");
	check_edges(doc, id.n_threads);
	check_round_trip(doc, &id);
	json_decref(doc);
	return 0;
}
