/* upload_internal.h: what upload.c (one attempt, the delivery) and
 * spool.c (the spool, the flush) share; not for other callers (upload.h
 * is the interface).
 */
#ifndef COMMAP_NODEAGENT_UPLOAD_INTERNAL_H
#define COMMAP_NODEAGENT_UPLOAD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "upload.h"

/* What one attempt came to. */
enum upl_attempt {
	UPL_DELIVERED,
	UPL_TRANSIENT,	/* try again later */
	UPL_REJECTED,	/* the document itself was refused */
};

/* snprintf that reports truncation: 0, or -1 with ENAMETOOLONG (paths)
 * when out was too small (messages may ignore it: they are cut). */
int upl_bprintf(char *out, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* CLOCK_MONOTONIC in ms. */
int64_t upl_now_ms(void);

/* One upload of doc under id, bounded by o->timeout_ms; why gets a
 * one-line account of any failure (upload.c). */
enum upl_attempt upl_attempt(const struct cm_deliver_opts *o, const char *doc,
			     size_t len, const char *id, char *why,
			     size_t size);

/* ---- spool.c ------------------------------------------------------------ */

/* -1/ENAMETOOLONG with err when paths under the spool could be cut. */
int upl_spool_dir_too_long(const struct cm_deliver_opts *o,
			   struct cm_error *err);

/* spool_dir/ID.json into path. */
void upl_spool_path(const struct cm_deliver_opts *o, const char *id,
		    char *path, size_t size);

/* Keep doc as spool_dir/ID.json (created 0700, checked; room for it;
 * never replacing a different file): 0 or -1 with errno and err. */
int upl_spool_put(const struct cm_deliver_opts *o, const char *doc,
		  size_t len, const char *id, struct cm_error *err);

/* The service refused doc (why): keep it under rejected/, moving the
 * copy spooled before the attempt when spooled.  Always -1/EBADMSG with
 * err saying where it is kept (or why not). */
int upl_spool_reject(const struct cm_deliver_opts *o, const char *doc,
		     size_t len, const char *id, const char *why, int spooled,
		     struct cm_error *err);

/* cm_spool_flush, stopping at deadline (upl_now_ms; 0: never). */
int upl_flush_until(const struct cm_deliver_opts *opts, int max,
		    int64_t deadline, struct cm_error *err);

#endif
