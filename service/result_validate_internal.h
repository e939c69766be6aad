/* result_validate_internal.h (internal): what the three parts of the
 * upload validator share.
 *
 *  result_json.c      a strict JSON parser into an arena of nodes
 *  result_validate.c  the checks of a commap-result v1 document
 *  result_read.c      the entry points (result_validate.h)
 *  result_validate_traffic.c  the checks of rank_traffic */
#ifndef COMMAP_RESULT_VALIDATE_INTERNAL_H
#define COMMAP_RESULT_VALIDATE_INTERNAL_H

#include <stddef.h>

#include "commap/error.h"
#include "result_validate.h"

#define CHUNK_NODES 1024

enum jv_type {
	JV_NULL, JV_TRUE, JV_FALSE, JV_INTEGER, JV_REAL, JV_STRING, JV_ARRAY,
	JV_OBJECT,
};

/* One JSON value.  Children of arrays and objects are a list through next;
 * object members carry their key. */
struct jv {
	struct jv *next;
	const char *key;
	unsigned key_len;	/* keys never hold a NUL */
	unsigned char type;
	unsigned char has_nul;	/* a string decoded from \u0000 */
	union {
		long long i;
		double r;
		struct {
			const char *s;
			size_t len;
		} str;
		struct {
			struct jv *first;
			size_t n;
		} kids;
	} u;
};

struct jv_chunk {
	struct jv_chunk *next;
	struct jv node[CHUNK_NODES];
};

struct svc_result_parsed {
	char *text;		/* copy of the body, strings decoded in it */
	struct jv_chunk *chunks;
	size_t used;		/* nodes used in the first chunk */
	struct jv *root;
};

/* Parse a JSON text whose top level is an object or array, as jansson's
 * json_loadb does (from_tree: any top level, \u0000 allowed and named,
 * for svc_result_validate()'s json_t input); NULL with err on failure
 * (result_json.c). */
struct svc_result_parsed *svc_result_parse_text(const char *body,
						 size_t len, int from_tree,
						 struct cm_error *err);

/* Validate a parsed document; fills id (may be NULL).  0, or -1 with err
 * naming the field (result_validate.c). */
int svc_result_validate_doc(const struct jv *doc,
			    struct svc_result_ident *id, struct cm_error *err);

/* The optional rank_traffic of a document: 0, or -1 with err naming the
 * field (result_validate_traffic.c). */
int svc_result_validate_traffic(const struct jv *doc, struct cm_error *err);

#endif
