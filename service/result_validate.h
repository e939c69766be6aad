/* result_validate.h: parse and validate an uploaded agent result
 * (commap-result version 1, docs/result-format.md).
 *
 * Pure functions: no I/O, no global state, so the service, its unit tests
 * and the fuzz target (tests/fuzz/fuzz_result_upload.c) share them.  Every
 * error names the offending field as a path, e.g.
 * "edges[3][2]: weight is negative".
 *
 * The service's upload path uses svc_result_check: one pass of a strict
 * JSON parser (as strict as jansson with JSON_REJECT_DUPLICATES) into an
 * arena, then the validation, without building jansson values; the body
 * is then stored as received.  svc_result_parse and svc_result_validate
 * run the same parser and validator for callers that want a json_t.
 */
#ifndef COMMAP_RESULT_VALIDATE_H
#define COMMAP_RESULT_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "commap/error.h"

/* Limits on one document, far above a real node (a few hundred threads). */
#define SVC_RESULT_THREADS_MAX 65536
#define SVC_RESULT_LIST_MAX (1 << 22)	/* edges, timeline, migrations */
/* rank_traffic: ranks below 2^20, at most 2^20 pairs from one node. */
#define SVC_TRAFFIC_RANK_MAX (1 << 20)
#define SVC_TRAFFIC_PAIRS_MAX (1 << 20)

/* The indexed fields of a valid result.  Strings point into the document
 * and live as long as it does. */
struct svc_result_ident {
	int64_t job;		/* -1: null (outside Slurm) */
	int64_t step;		/* -1: null */
	const char *cluster;	/* Slurm's ClusterName; "" when absent */
	const char *node;
	const char *user;
	uint32_t uid;
	const char *executable;
	const char *app;	/* the executable's last path component */
	const char *exe_hash;	/* NULL when null */
	const char *mode;
	const char *backend;	/* NULL when absent */
	char started_at[21];	/* "YYYY-MM-DDTHH:MM:SSZ", sub-seconds cut */
	char ended_at[21];
	int64_t ranks;
	int64_t threads;	/* identity.threads */
	size_t n_threads;	/* entries in threads[] */
	size_t n_edges;
	size_t n_timeline;
	size_t n_migrations;	/* moves of placed threads (from >= 0) */
	double final_cost;	/* cost of the last timeline entry, or -1 */
	/* What the agent did, read where present and of the right type
	 * (never a reason to refuse a result): the service's metrics. */
	size_t n_warnings;	/* warnings[] lines */
	const char *not_pinned;	/* why nothing was pinned, or NULL */
	int64_t guard_checked, guard_undone;
	size_t n_forced;	/* timeline entries marked forced */
	int dry_run;		/* topology.dry_run */
};

/* A body parsed by svc_result_check: the strings of its ident. */
struct svc_result_parsed;

/* Parse len bytes of JSON (at most max_len) and validate them without
 * jansson.  On success *parsed holds the parse (svc_result_parsed_free
 * it; id's strings point into it) and the body, unchanged, is a valid
 * JSON text that jansson reads back; on failure *parsed is NULL and err
 * says "body: ..." or "PATH: ...". */
int svc_result_check(const void *body, size_t len, size_t max_len,
		     struct svc_result_parsed **parsed,
		     struct svc_result_ident *id, struct cm_error *err);
void svc_result_parsed_free(struct svc_result_parsed *parsed);

/* Validate a parsed document.  0 on success (id filled when not NULL);
 * -1 with EINVAL and "PATH: problem" in err. */
int svc_result_validate(const json_t *doc, struct svc_result_ident *id,
			struct cm_error *err);

/* Parse len bytes of JSON (at most max_len) and validate them.  On success
 * *doc holds the document (json_decref it) and id is filled; on failure
 * *doc is NULL and err says "body: ..." or "PATH: ...". */
int svc_result_parse(const void *body, size_t len, size_t max_len,
		     json_t **doc, struct svc_result_ident *id,
		     struct cm_error *err);

/* Are two stored or uploaded documents the same result?  Equal bytes, or
 * equal canonical forms (compact, sorted keys: key order and spacing do
 * not matter).  1 same, 0 different, -1 (ENOMEM or unparsable). */
int svc_result_same(const char *a, size_t a_len, const char *b,
		    size_t b_len);

/* 1 if s is "YYYY-MM-DDTHH:MM:SS[.frac]Z" with fields in range; when out
 * is not NULL it receives the 20-character form without the fraction. */
int svc_timestamp_valid(const char *s, char out[21]);

#endif
