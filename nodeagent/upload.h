/* upload.h: delivering a step's result to the central service, with a disk
 * spool so that nothing is lost when the service is down or slow.
 *
 * The request is POST {service_url}/v1/results with the result document as
 * the body (Content-Type: application/json), a fresh munge credential made
 * by the calling process (the agent: root under Slurm) in
 * X-Munge-Credential, and X-Commap-Upload-Id: upload_id.  The service is
 * idempotent on (job, step, node) and on the upload id, so resending a
 * result that was in fact stored answers "duplicate" and counts as
 * delivered (docs/service.md).
 *
 * Spool layout (spool_dir, created 0700 if missing):
 *   ID.json             a result waiting for delivery, or being delivered
 *                       right now (mode 0600): written and synced before
 *                       the upload starts, so a deliverer killed during it
 *                       (SIGKILL, the OOM killer) leaves the result for the
 *                       next flush; written as .ID.json.tmp.PID then
 *                       linked, so a crash never leaves a half-written
 *                       spool file
 *   rejected/ID.json    a result the service refused with a 4xx: the
 *   rejected/ID.error   document is bad (or conflicts with a stored one);
 *                       it is kept with the service's answer for a human
 *   .lock               flock()ed by cm_spool_flush so two agents on one
 *                       node do not send the same files at once
 *
 * Nothing is dropped silently: when the spool is full the new result is
 * refused (-1, ENOSPC, the message says so) and no spooled file is touched.
 *
 * Built with libcurl and libmunge when configure finds them; otherwise
 * every delivery spools (1, with a message saying why).
 */
#ifndef COMMAP_UPLOAD_H
#define COMMAP_UPLOAD_H

#include <stddef.h>
#include <time.h>

#include "commap/error.h"

#define CM_DELIVER_TIMEOUT_MS_DEFAULT 2000L
#define CM_SPOOL_MAX_BYTES_DEFAULT ((size_t)256 << 20)	/* 256 MiB */
/* An upload id: 1-128 of A-Za-z0-9._:- (the service's rule), plus NUL. */
#define CM_UPLOAD_ID_MAX 129

struct cm_deliver_opts {
	/* "http://host:port" (a trailing '/' is allowed); NULL or "" means
	 * no service: results are only spooled. */
	const char *service_url;
	/* Where undelivered results wait; NULL means no spool (a failed
	 * upload is then an error, -1). */
	const char *spool_dir;
	/* Upper bound of one attempt (munge + connect + send + answer);
	 * <= 0 means CM_DELIVER_TIMEOUT_MS_DEFAULT. */
	long timeout_ms;
	/* Largest total size of the spool (pending + rejected files);
	 * 0 means CM_SPOOL_MAX_BYTES_DEFAULT. */
	size_t spool_max_bytes;
	/* munged's socket; NULL means munge's default. */
	const char *munge_socket;
};

/* Outcomes of cm_result_deliver (besides -1). */
enum cm_deliver_status {
	CM_DELIVER_UPLOADED = 0,	/* 201 stored or 200 duplicate */
	CM_DELIVER_SPOOLED = 1,		/* kept in the spool for a retry */
};

/* Deliver one result document doc[0..len-1] under upload_id (a valid id,
 * stable for this result: use cm_upload_id_make if the caller has none).
 *
 * With a spool, the document is put there first (when there is room) and
 * removed once the service has it, moved to rejected/ if refused.
 * Returns CM_DELIVER_UPLOADED; or CM_DELIVER_SPOOLED when the service
 * could not take it now (unreachable, slower than timeout_ms, 5xx, 401/403,
 * munge failed, built without libcurl/libmunge, no service_url), with err
 * saying why and where the file is; or -1 with errno and err:
 *   EBADMSG  the service refused the document (4xx other than 401/403);
 *            it is kept as spool_dir/rejected/ID.json (+ ID.error) when
 *            there is a spool, and err names the service's reason;
 *   ENOSPC   the upload failed and the spool is full: the result was not
 *            spooled (nothing else was touched);
 *   EINVAL   bad arguments (NULL doc, len 0, invalid upload_id);
 *   other    the upload failed and the spool file could not be written.
 * After a successful upload, what is left of timeout_ms is spent sending
 * older spooled results (as cm_spool_flush, oldest first), so the spool
 * drains with the next results and no separate retry process is needed.
 * Never takes much longer than timeout_ms (munge encode + HTTP attempts,
 * plus the local spool write). */
int cm_result_deliver(const struct cm_deliver_opts *opts, const char *doc,
		      size_t len, const char *upload_id, struct cm_error *err);

/* Retry spooled results, oldest first (by modification time, then name),
 * at most max of them (max <= 0: all).  Each delivered file is removed; a
 * refused one (4xx) moves to rejected/ and the flush goes on; the first
 * transient failure (service down, slow, 5xx) stops the flush, so a flush
 * against a dead service costs one timeout.  If another process holds the
 * spool's lock, returns 0 at once.
 * Returns the number delivered (>= 0); -1 with errno and err if the spool
 * cannot be read.  err (if not NULL) also receives the reason a flush
 * stopped early, or the last rejection, even when the return is >= 0. */
int cm_spool_flush(const struct cm_deliver_opts *opts, int max,
		   struct cm_error *err);

/* Number of results waiting in the spool (not counting rejected/), and
 * their total size in *bytes if not NULL.  -1 with errno if the spool
 * cannot be read; 0 if spool_dir does not exist. */
int cm_spool_count(const struct cm_deliver_opts *opts, size_t *bytes);

/* Results waiting in the spool whose file is at least min_age_s seconds
 * old (a delivery in flight wrote its own seconds ago), with the oldest
 * one's modification time in *oldest if not NULL: what earlier deliveries
 * left behind (killed during the upload, or the service unreachable).
 * -1 with errno if the spool cannot be read; 0 if it does not exist. */
int cm_spool_stale(const struct cm_deliver_opts *opts, int min_age_s,
		   time_t *oldest);

/* A stable upload id for a document: "r-" + a 64-bit FNV-1a hash of the
 * content in hex + "-" + the length in hex, so resending the same result
 * gives the same id.  out must hold CM_UPLOAD_ID_MAX bytes. */
void cm_upload_id_make(const char *doc, size_t len,
		       char out[CM_UPLOAD_ID_MAX]);

/* 1 if s is a valid upload id (1-128 of A-Za-z0-9._:-, not starting with
 * '.'), else 0. */
int cm_upload_id_valid(const char *s);

/* GET {service_url}{path} (path starts with '/', query already
 * percent-encoded) with a munge credential: cred if not NULL (made
 * beforehand with cm_service_credential, used once: the service refuses
 * a replay), else a fresh one; bounded by opts->timeout_ms (munge +
 * connect + answer).  Used by the agent to fetch a learned model
 * (model_fetch.h).  0 with *code the HTTP status and *body the answer
 * (malloc'ed, NUL-terminated, at most CM_SERVICE_GET_MAX bytes); -1 with
 * errno/err: EINVAL no service, EIO unreachable or munge failed,
 * ETIMEDOUT, EFBIG answer too large, ENOSYS built without
 * libcurl/libmunge. */
#define CM_SERVICE_GET_MAX ((size_t)16 << 20)
int cm_service_get(const struct cm_deliver_opts *opts, const char *path,
		   const char *cred, long *code, char **body,
		   struct cm_error *err);

/* A munge credential made now (malloc'ed), so that a request on a time-
 * critical path does not wait for munged; NULL with errno/err. */
char *cm_service_credential(const struct cm_deliver_opts *opts,
			    struct cm_error *err);

/* Initialise libcurl (and the TLS library under it) now rather than on
 * the first request: tens of ms on a loaded node, which the agent keeps
 * out of the time between a thread's creation and its learned pin.
 * Call once, before any thread of the caller exists. */
void cm_service_prepare(void);

#endif
