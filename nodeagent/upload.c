/* upload.c: delivering results to commap-service (upload.h,
 * docs/service.md "POST /v1/results"); the spool is in spool.c.
 *
 * One attempt is: a munge credential (libmunge, after a quick probe of
 * munged's socket so a dead munged cannot stall us in libmunge's retry
 * loop), then one POST with libcurl bounded by what is left of timeout_ms.
 * The answer decides: 200/201 delivered; 401/403/408/429/5xx or no answer
 * at all: transient, spool and retry later; any other 4xx: the document is
 * bad, keep it under rejected/ for a human.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#if defined(HAVE_CURL) && defined(HAVE_MUNGE)
#define CM_UPLOAD_NET 1
#include <curl/curl.h>
#include <munge.h>
#endif

#include "upload.h"
#include "upload_internal.h"

#define ANSWER_MAX 4096		/* kept of the service's answer */

/* ---- small helpers ------------------------------------------------------- */

int upl_bprintf(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

#ifdef CM_UPLOAD_NET
static long effective_timeout(const struct cm_deliver_opts *o)
{
	return o->timeout_ms > 0 ? o->timeout_ms :
				   CM_DELIVER_TIMEOUT_MS_DEFAULT;
}
#endif

int64_t upl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cm_upload_id_valid(const char *s)
{
	size_t n = 0;

	if (!s || !*s || *s == '.')
		return 0;
	for (; s[n]; n++) {
		char c = s[n];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == ':' || c == '-'))
			return 0;
		if (n >= CM_UPLOAD_ID_MAX - 1)
			return 0;
	}
	return 1;
}

void cm_upload_id_make(const char *doc, size_t len, char out[CM_UPLOAD_ID_MAX])
{
	uint64_t h = 14695981039346656037ULL;	/* FNV-1a 64 */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)doc[i];
		h *= 1099511628211ULL;
	}
	snprintf(out, CM_UPLOAD_ID_MAX, "r-%016" PRIx64 "-%zx", h, len);
}

#ifdef CM_UPLOAD_NET
/* The first line of the service's answer that says what is wrong: its
 * {"error": "..."} if it has one, else the start of the body. */
static void answer_reason(const char *body, char *out, size_t size)
{
	json_t *j = json_loads(body, 0, NULL);
	const char *e = j ? json_string_value(json_object_get(j, "error")) :
			    NULL;

	if (e)
		upl_bprintf(out, size, "%s", e);
	else if (*body)
		upl_bprintf(out, size, "%.200s", body);
	else
		upl_bprintf(out, size, "(empty answer)");
	json_decref(j);
}
#endif

/* ---- one HTTP attempt ---------------------------------------------------- */

#ifdef CM_UPLOAD_NET

struct answer {
	char buf[ANSWER_MAX];
	size_t len;
};

static size_t answer_write(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n, room = sizeof(a->buf) - 1 - a->len;

	memcpy(a->buf + a->len, p, len < room ? len : room);
	a->len += len < room ? len : room;
	a->buf[a->len] = '\0';
	return len;
}

/* A connect() to munged's socket, so that a dead munged fails at once
 * instead of in libmunge's retry loop (which can take seconds). */
static int munged_alive(munge_ctx_t ctx, char *why, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *path = NULL;
	int fd, rc;

	if (munge_ctx_get(ctx, MUNGE_OPT_SOCKET, &path) != EMUNGE_SUCCESS ||
	    !path || strlen(path) >= sizeof(sa.sun_path))
		return 1;	/* cannot tell: let libmunge try */
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (rc)
		upl_bprintf(why, size, "munged is not reachable at %s: %s", path,
			 strerror(errno));
	close(fd);
	return rc == 0;
}

/* A fresh credential (malloc'ed) or NULL with why filled. */
static char *munge_credential(const struct cm_deliver_opts *o, char *why,
			      size_t size)
{
	munge_ctx_t ctx = munge_ctx_create();
	munge_err_t e;
	char *cred = NULL;

	if (!ctx) {
		upl_bprintf(why, size, "munge: out of memory");
		return NULL;
	}
	if (o->munge_socket &&
	    munge_ctx_set(ctx, MUNGE_OPT_SOCKET, o->munge_socket) !=
		    EMUNGE_SUCCESS) {
		upl_bprintf(why, size, "munge: bad socket %s", o->munge_socket);
		goto out;
	}
	if (!munged_alive(ctx, why, size))
		goto out;
	e = munge_encode(&cred, ctx, NULL, 0);
	if (e != EMUNGE_SUCCESS) {
		upl_bprintf(why, size, "munge_encode failed: %s",
			 munge_ctx_strerror(ctx));
		free(cred);
		cred = NULL;
	}
out:
	munge_ctx_destroy(ctx);
	return cred;
}

static enum upl_attempt classify(long code)
{
	if (code == 200 || code == 201)
		return UPL_DELIVERED;
	if (code >= 400 && code < 500 && code != 401 && code != 403 &&
	    code != 408 && code != 429)
		return UPL_REJECTED;
	return UPL_TRANSIENT;
}

static struct curl_slist *upload_headers(const char *cred, const char *id)
{
	struct curl_slist *h = NULL, *t;
	char line[2048];
	/* 100-continue whatever the size: a refusal (over max_body) then
	 * comes before the body is sent, so it reaches us as a 400 to keep
	 * under rejected/ instead of a connection reset (the service closing
	 * on unread data) that would be retried until the spool gives up. */
	const char *fixed[] = { "Content-Type: application/json",
				"Expect: 100-continue" };
	size_t i;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		t = curl_slist_append(h, fixed[i]);
		if (!t)
			goto fail;
		h = t;
	}
	upl_bprintf(line, sizeof(line), "X-Munge-Credential: %s", cred);
	if (!(t = curl_slist_append(h, line)))
		goto fail;
	h = t;
	upl_bprintf(line, sizeof(line), "X-Commap-Upload-Id: %s", id);
	if (!(t = curl_slist_append(h, line)))
		goto fail;
	return t;
fail:
	curl_slist_free_all(h);
	return NULL;
}

/* POST the document; why gets a one-line account of any failure. */
static enum upl_attempt http_post(const struct cm_deliver_opts *o,
			      const char *doc, size_t len, const char *id,
			      char *why, size_t size)
{
	int64_t start = upl_now_ms(), left;
	long timeout = effective_timeout(o), code = 0;
	char url[2048], *cred;
	size_t ul = strlen(o->service_url);
	struct curl_slist *hdr = NULL;
	struct answer ans = { .len = 0 };
	enum upl_attempt rc = UPL_TRANSIENT;
	CURL *c;
	CURLcode cc;

	while (ul && o->service_url[ul - 1] == '/')
		ul--;
	upl_bprintf(url, sizeof(url), "%.*s/v1/results", (int)ul, o->service_url);
	cred = munge_credential(o, why, size);
	if (!cred)
		return UPL_TRANSIENT;
	left = timeout - (upl_now_ms() - start);
	if (left <= 0) {
		upl_bprintf(why, size, "munge took longer than %ld ms", timeout);
		goto out;
	}
	c = curl_easy_init();
	hdr = upload_headers(cred, id);
	if (!c || !hdr) {
		upl_bprintf(why, size, "libcurl: out of memory");
		if (c)
			curl_easy_cleanup(c);
		goto out;
	}
	ans.buf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");	/* the cluster network */
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, doc);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, answer_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &ans);
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	if (cc != CURLE_OK) {
		upl_bprintf(why, size, "%s: %s", url, curl_easy_strerror(cc));
		goto out;
	}
	rc = classify(code);
	if (rc != UPL_DELIVERED) {
		char reason[512];

		answer_reason(ans.buf, reason, sizeof(reason));
		upl_bprintf(why, size, "%s answered %ld: %s", url, code, reason);
	}
out:
	curl_slist_free_all(hdr);
	free(cred);
	return rc;
}

/* GET {service_url}{path} with a fresh credential (upload.h).  The
 * answer is kept whole up to CM_SERVICE_GET_MAX bytes. */
struct get_answer {
	char *buf;
	size_t len;
	int too_big;
};

static size_t get_write(char *p, size_t size, size_t n, void *arg)
{
	struct get_answer *a = arg;
	size_t len = size * n;
	char *t;

	if (a->len + len > CM_SERVICE_GET_MAX) {
		a->too_big = 1;
		return 0;
	}
	t = realloc(a->buf, a->len + len + 1);
	if (!t)
		return 0;
	a->buf = t;
	memcpy(a->buf + a->len, p, len);
	a->len += len;
	a->buf[a->len] = '\0';
	return len;
}

void cm_service_prepare(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

char *cm_service_credential(const struct cm_deliver_opts *o,
			    struct cm_error *err)
{
	char why[1024];
	char *cred = munge_credential(o, why, sizeof(why));

	if (!cred)
		cm_errorf(err, EIO, "%s", why);
	return cred;
}

int cm_service_get(const struct cm_deliver_opts *o, const char *path,
		   const char *given_cred, long *code, char **body,
		   struct cm_error *err)
{
	int64_t start = upl_now_ms(), left;
	long timeout = effective_timeout(o);
	char url[4096], why[1024], line[2048], *cred;
	size_t ul;
	struct curl_slist *hdr = NULL;
	struct get_answer ans = { 0 };
	CURL *c = NULL;
	CURLcode cc;
	int rv = -1;

	*code = 0;
	*body = NULL;
	if (!o || !o->service_url || !*o->service_url || !path)
		return cm_errorf(err, EINVAL, "no service configured");
	ul = strlen(o->service_url);
	while (ul && o->service_url[ul - 1] == '/')
		ul--;
	if (upl_bprintf(url, sizeof(url), "%.*s%s", (int)ul, o->service_url,
		    path) < 0)
		return cm_errorf(err, ENAMETOOLONG, "request URL too long");
	cred = given_cred ? NULL : munge_credential(o, why, sizeof(why));
	if (!given_cred && !cred)
		return cm_errorf(err, EIO, "%s", why);
	left = timeout - (upl_now_ms() - start);
	upl_bprintf(line, sizeof(line), "X-Munge-Credential: %s",
		given_cred ? given_cred : cred);
	free(cred);
	if (left <= 0) {
		cm_errorf(err, ETIMEDOUT, "munge took longer than %ld ms",
			  timeout);
		goto out;
	}
	c = curl_easy_init();
	hdr = curl_slist_append(NULL, line);
	if (!c || !hdr) {
		cm_errorf(err, ENOMEM, "libcurl: out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, get_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &ans);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		cm_errorf(err, ans.too_big ? EFBIG : EIO, "%.*s: %s", (int)ul,
			  o->service_url, ans.too_big ? "answer too large" :
			  curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
	*body = ans.buf ? ans.buf : strdup("");
	ans.buf = NULL;
	rv = *body ? 0 : cm_errorf(err, ENOMEM, "out of memory");
out:
	if (c)
		curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	free(ans.buf);
	return rv;
}

#else	/* spool only */

void cm_service_prepare(void)
{
}

char *cm_service_credential(const struct cm_deliver_opts *o,
			    struct cm_error *err)
{
	(void)o;
	cm_errorf(err, ENOSYS, "built without libcurl or libmunge");
	return NULL;
}

int cm_service_get(const struct cm_deliver_opts *o, const char *path,
		   const char *cred, long *code, char **body,
		   struct cm_error *err)
{
	(void)o, (void)path, (void)cred;
	*code = 0;
	*body = NULL;
	return cm_errorf(err, ENOSYS, "built without libcurl or libmunge");
}

static enum upl_attempt http_post(const struct cm_deliver_opts *o,
			      const char *doc, size_t len, const char *id,
			      char *why, size_t size)
{
	(void)o, (void)doc, (void)len, (void)id;
	upl_bprintf(why, size, "built without libcurl or libmunge: results "
		 "are only spooled");
	return UPL_TRANSIENT;
}

#endif

enum upl_attempt upl_attempt(const struct cm_deliver_opts *o,
				   const char *doc, size_t len,
				   const char *id, char *why, size_t size)
{
	if (!o->service_url || !*o->service_url) {
		upl_bprintf(why, size, "no service configured");
		return UPL_TRANSIENT;
	}
	return http_post(o, doc, len, id, why, size);
}

/* ---- public -------------------------------------------------------------- */

int cm_result_deliver(const struct cm_deliver_opts *opts, const char *doc,
		      size_t len, const char *upload_id, struct cm_error *err)
{
	int64_t start = upl_now_ms(), timeout = opts && opts->timeout_ms > 0 ?
			opts->timeout_ms : CM_DELIVER_TIMEOUT_MS_DEFAULT;
	char why[768], path[PATH_MAX];
	struct cm_error e2, espool = { .text = "" };
	enum upl_attempt a;
	int spooled = 0, espool_errno = EIO;

	if (!opts || !doc || !len)
		return cm_errorf(err, EINVAL, "deliver: no document");
	if (!cm_upload_id_valid(upload_id))
		return cm_errorf(err, EINVAL, "deliver: invalid upload id '%s' "
				 "(1-128 of A-Za-z0-9._:-)",
				 upload_id ? upload_id : "(null)");
	if (upl_spool_dir_too_long(opts, err))
		return -1;
	/* Spooled (and synced) before the attempt: an agent killed while it
	 * waits on the service (SIGKILL, the OOM killer, a watchdog) leaves
	 * the result for the next delivery on the node to send.  A spool
	 * that cannot take it now only matters if the upload fails too. */
	if (opts->spool_dir) {
		spooled = upl_spool_put(opts, doc, len, upload_id, &espool) == 0;
		espool_errno = spooled ? 0 : errno;
	}
	a = upl_attempt(opts, doc, len, upload_id, why, sizeof(why));
	if (a == UPL_DELIVERED) {
		if (spooled) {
			upl_spool_path(opts, upload_id, path, sizeof(path));
			unlink(path);
		}
		/* The service is back: spend what is left of this call's
		 * time on older spooled results (nothing waits for a
		 * separate retry daemon). */
		if (opts->spool_dir)
			upl_flush_until(opts, 0, start + timeout, &e2);
		return CM_DELIVER_UPLOADED;
	}
	if (!opts->spool_dir)
		return cm_errorf(err, a == UPL_REJECTED ? EBADMSG : EIO,
				 "result %s not delivered (no spool): %s",
				 upload_id, why);
	if (a == UPL_REJECTED)
		return upl_spool_reject(opts, doc, len, upload_id, why,
					spooled, err);
	if (!spooled) {
		cm_errorf(err, espool_errno, "result %s not delivered (%s) "
			  "and %s", upload_id, why, espool.text);
		return -1;
	}
	cm_errorf(err, 0, "result %s spooled in %s: %s", upload_id,
		  opts->spool_dir, why);
	return CM_DELIVER_SPOOLED;
}
