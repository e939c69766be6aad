/* upload.c: delivering results to commap-service with a disk spool
 * (upload.h, docs/service.md "POST /v1/results").
 *
 * One attempt is: a munge credential (libmunge, after a quick probe of
 * munged's socket so a dead munged cannot stall us in libmunge's retry
 * loop), then one POST with libcurl bounded by what is left of timeout_ms.
 * The answer decides: 200/201 delivered; 401/403/408/429/5xx or no answer
 * at all: transient, spool and retry later; any other 4xx: the document is
 * bad, keep it under rejected/ for a human.
 */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/* What one attempt came to. */
enum attempt {
	ATTEMPT_DELIVERED,
	ATTEMPT_TRANSIENT,	/* try again later */
	ATTEMPT_REJECTED,	/* the document itself was refused */
};

#define ANSWER_MAX 4096		/* kept of the service's answer */
#define FLUSH_MIN_ATTEMPT_MS 100	/* less left: do not start one */

/* ---- small helpers ------------------------------------------------------- */

/* snprintf that reports truncation: 0, or -1 with ENAMETOOLONG (paths)
 * when out was too small (messages may ignore it: they are cut). */
static int bprintf(char *out, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bprintf(char *out, size_t size, const char *fmt, ...)
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

static size_t effective_spool_max(const struct cm_deliver_opts *o)
{
	return o->spool_max_bytes ? o->spool_max_bytes :
				    CM_SPOOL_MAX_BYTES_DEFAULT;
}

static int64_t now_ms(void)
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
		bprintf(out, size, "%s", e);
	else if (*body)
		bprintf(out, size, "%.200s", body);
	else
		bprintf(out, size, "(empty answer)");
	json_decref(j);
}
#endif

/* ---- the spool ----------------------------------------------------------- */

/* A spool others can write to would let them plant links that root's
 * agent follows, or read and forge results: it must be a real directory,
 * ours (root's under Slurm), writable by us only. */
static int check_dir(const char *dir, struct cm_error *err)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return cm_errorf(err, errno, "spool directory %s: %s", dir,
				 strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cm_errorf(err, ENOTDIR, "spool %s is not a directory "
				 "(a link?): refused", dir);
	if (st.st_uid != geteuid())
		return cm_errorf(err, EPERM, "spool directory %s is owned by "
				 "uid %u, not %u: refused", dir,
				 (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 022)
		return cm_errorf(err, EPERM, "spool directory %s is writable "
				 "by group or others (mode %04o; want 0700): "
				 "refused", dir, (unsigned)(st.st_mode & 07777));
	return 0;
}

static int ensure_dir(const char *dir, struct cm_error *err)
{
	if (mkdir(dir, 0700) == 0 || errno == EEXIST)
		return check_dir(dir, err);
	return cm_errorf(err, errno, "cannot create spool directory %s: %s",
			 dir, strerror(errno));
}

/* Sum of the sizes of the regular files in dir (not recursive); files
 * whose name starts with '.' (temporaries, the lock) do not count. */
static int dir_bytes(const char *dir, size_t *bytes, int *count,
		     int only_json)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (e->d_name[0] == '.')
			continue;
		if (only_json && (l < 6 || strcmp(e->d_name + l - 5, ".json")))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		*bytes += (size_t)st.st_size;
		if (count)
			(*count)++;
	}
	closedir(d);
	return 0;
}

static int spool_used(const char *spool, size_t *bytes)
{
	char rej[PATH_MAX];

	*bytes = 0;
	bprintf(rej, sizeof(rej), "%s/rejected", spool);
	if (dir_bytes(spool, bytes, NULL, 0) || dir_bytes(rej, bytes, NULL, 0))
		return -1;
	return 0;
}

int cm_spool_count(const struct cm_deliver_opts *opts, size_t *bytes)
{
	size_t b = 0;
	int n = 0;

	if (!opts || !opts->spool_dir) {
		errno = EINVAL;
		return -1;
	}
	if (dir_bytes(opts->spool_dir, &b, &n, 1))
		return -1;
	if (bytes)
		*bytes = b;
	return n;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Is the file at path exactly doc[0..len-1]? */
static int same_content(const char *path, const char *doc, size_t len)
{
	FILE *f = fopen(path, "rb");
	char buf[8192];
	size_t off = 0, r;
	int same = 1;

	if (!f)
		return 0;
	while (same && (r = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (off + r > len || memcmp(buf, doc + off, r))
			same = 0;
		off += r;
	}
	fclose(f);
	return same && off == len;
}

/* Write doc to dir/name atomically (tmp file, fsync, link) without ever
 * replacing an existing file: an existing identical file is success, a
 * different one EEXIST. */
static int write_new_file(const char *dir, const char *name, const char *doc,
			  size_t len, struct cm_error *err)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int fd, rc = -1, e;

	bprintf(dst, sizeof(dst), "%s/%s", dir, name);
	bprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%ld", dir, name, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		return cm_errorf(err, errno, "cannot write %s: %s", tmp,
				 strerror(errno));
	if (write_all(fd, doc, len) || fsync(fd)) {
		e = errno;
		cm_errorf(err, e, "cannot write %s: %s", tmp, strerror(e));
		close(fd);
		goto out;
	}
	if (close(fd)) {
		cm_errorf(err, errno, "cannot write %s: %s", tmp,
			  strerror(errno));
		goto out;
	}
	if (link(tmp, dst) == 0) {
		rc = 0;
	} else if (errno == EEXIST && same_content(dst, doc, len)) {
		rc = 0;
	} else if (errno == EEXIST) {
		cm_errorf(err, EEXIST, "%s already holds a different result; "
			  "not overwritten", dst);
	} else {
		cm_errorf(err, errno, "cannot create %s: %s", dst,
			  strerror(errno));
	}
out:
	e = errno;
	unlink(tmp);
	errno = e;
	return rc;
}

/* Refuse (ENOSPC) if len more bytes would exceed the spool's bound. */
static int spool_check_room(const struct cm_deliver_opts *o, size_t len,
			    const char *id, struct cm_error *err)
{
	size_t used, max = effective_spool_max(o);

	if (spool_used(o->spool_dir, &used))
		return cm_errorf(err, errno, "cannot read spool %s: %s",
				 o->spool_dir, strerror(errno));
	if (used + len > max)
		return cm_errorf(err, ENOSPC, "spool %s is full (%zu of %zu "
				 "bytes used, result %s is %zu bytes): result "
				 "NOT spooled", o->spool_dir, used, max, id,
				 len);
	return 0;
}

static int spool_put(const struct cm_deliver_opts *o, const char *doc,
		     size_t len, const char *id, struct cm_error *err)
{
	char name[CM_UPLOAD_ID_MAX + 8], dst[PATH_MAX];

	bprintf(name, sizeof(name), "%s.json", id);
	bprintf(dst, sizeof(dst), "%s/%s", o->spool_dir, name);
	if (ensure_dir(o->spool_dir, err))
		return -1;
	/* The same result spooled before (an agent retry): already there. */
	if (same_content(dst, doc, len))
		return 0;
	if (spool_check_room(o, len, id, err))
		return -1;
	return write_new_file(o->spool_dir, name, doc, len, err);
}

/* Keep a refused document as rejected/ID.json with the reason beside it. */
static int reject_put(const struct cm_deliver_opts *o, const char *doc,
		      size_t len, const char *id, const char *why,
		      char *where, size_t wsize, struct cm_error *err)
{
	char dir[PATH_MAX], epath[PATH_MAX], name[CM_UPLOAD_ID_MAX + 8];

	bprintf(dir, sizeof(dir), "%s/rejected", o->spool_dir);
	bprintf(where, wsize, "%s/%s.json", dir, id);
	if (ensure_dir(o->spool_dir, err) || ensure_dir(dir, err))
		return -1;
	if (!same_content(where, doc, len) &&
	    spool_check_room(o, len + strlen(why) + 1, id, err))
		return -1;
	bprintf(name, sizeof(name), "%s.json", id);
	if (write_new_file(dir, name, doc, len, err))
		return -1;
	bprintf(name, sizeof(name), "%s.error", id);
	bprintf(epath, sizeof(epath), "%s/%s", dir, name);
	unlink(epath);	/* the newest reason wins */
	return write_new_file(dir, name, why, strlen(why), err);
}

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
		bprintf(why, size, "munged is not reachable at %s: %s", path,
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
		bprintf(why, size, "munge: out of memory");
		return NULL;
	}
	if (o->munge_socket &&
	    munge_ctx_set(ctx, MUNGE_OPT_SOCKET, o->munge_socket) !=
		    EMUNGE_SUCCESS) {
		bprintf(why, size, "munge: bad socket %s", o->munge_socket);
		goto out;
	}
	if (!munged_alive(ctx, why, size))
		goto out;
	e = munge_encode(&cred, ctx, NULL, 0);
	if (e != EMUNGE_SUCCESS) {
		bprintf(why, size, "munge_encode failed: %s",
			 munge_ctx_strerror(ctx));
		free(cred);
		cred = NULL;
	}
out:
	munge_ctx_destroy(ctx);
	return cred;
}

static enum attempt classify(long code)
{
	if (code == 200 || code == 201)
		return ATTEMPT_DELIVERED;
	if (code >= 400 && code < 500 && code != 401 && code != 403 &&
	    code != 408 && code != 429)
		return ATTEMPT_REJECTED;
	return ATTEMPT_TRANSIENT;
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
	bprintf(line, sizeof(line), "X-Munge-Credential: %s", cred);
	if (!(t = curl_slist_append(h, line)))
		goto fail;
	h = t;
	bprintf(line, sizeof(line), "X-Commap-Upload-Id: %s", id);
	if (!(t = curl_slist_append(h, line)))
		goto fail;
	return t;
fail:
	curl_slist_free_all(h);
	return NULL;
}

/* POST the document; why gets a one-line account of any failure. */
static enum attempt http_post(const struct cm_deliver_opts *o,
			      const char *doc, size_t len, const char *id,
			      char *why, size_t size)
{
	int64_t start = now_ms(), left;
	long timeout = effective_timeout(o), code = 0;
	char url[2048], *cred;
	size_t ul = strlen(o->service_url);
	struct curl_slist *hdr = NULL;
	struct answer ans = { .len = 0 };
	enum attempt rc = ATTEMPT_TRANSIENT;
	CURL *c;
	CURLcode cc;

	while (ul && o->service_url[ul - 1] == '/')
		ul--;
	bprintf(url, sizeof(url), "%.*s/v1/results", (int)ul, o->service_url);
	cred = munge_credential(o, why, size);
	if (!cred)
		return ATTEMPT_TRANSIENT;
	left = timeout - (now_ms() - start);
	if (left <= 0) {
		bprintf(why, size, "munge took longer than %ld ms", timeout);
		goto out;
	}
	c = curl_easy_init();
	hdr = upload_headers(cred, id);
	if (!c || !hdr) {
		bprintf(why, size, "libcurl: out of memory");
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
		bprintf(why, size, "%s: %s", url, curl_easy_strerror(cc));
		goto out;
	}
	rc = classify(code);
	if (rc != ATTEMPT_DELIVERED) {
		char reason[512];

		answer_reason(ans.buf, reason, sizeof(reason));
		bprintf(why, size, "%s answered %ld: %s", url, code, reason);
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
	int64_t start = now_ms(), left;
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
	if (bprintf(url, sizeof(url), "%.*s%s", (int)ul, o->service_url,
		    path) < 0)
		return cm_errorf(err, ENAMETOOLONG, "request URL too long");
	cred = given_cred ? NULL : munge_credential(o, why, sizeof(why));
	if (!given_cred && !cred)
		return cm_errorf(err, EIO, "%s", why);
	left = timeout - (now_ms() - start);
	bprintf(line, sizeof(line), "X-Munge-Credential: %s",
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

static enum attempt http_post(const struct cm_deliver_opts *o,
			      const char *doc, size_t len, const char *id,
			      char *why, size_t size)
{
	(void)o, (void)doc, (void)len, (void)id;
	bprintf(why, size, "built without libcurl or libmunge: results "
		 "are only spooled");
	return ATTEMPT_TRANSIENT;
}

#endif

static enum attempt attempt_upload(const struct cm_deliver_opts *o,
				   const char *doc, size_t len,
				   const char *id, char *why, size_t size)
{
	if (!o->service_url || !*o->service_url) {
		bprintf(why, size, "no service configured");
		return ATTEMPT_TRANSIENT;
	}
	return http_post(o, doc, len, id, why, size);
}

/* Paths under the spool are the directory plus at most "/rejected/",
 * an id and a suffix: with this check none of them is ever cut. */
static int spool_dir_too_long(const struct cm_deliver_opts *o,
			      struct cm_error *err)
{
	if (o->spool_dir && strlen(o->spool_dir) >= PATH_MAX - 256)
		return cm_errorf(err, ENAMETOOLONG, "spool directory name "
				 "is too long");
	return 0;
}

static int flush_until(const struct cm_deliver_opts *opts, int max,
		       int64_t deadline, struct cm_error *err);
static int flush_reject(const struct cm_deliver_opts *o, const char *path,
			const char *id, const char *why);

/* ---- public -------------------------------------------------------------- */

/* Where a result waits in the spool (spool_dir/ID.json). */
static void spool_path(const struct cm_deliver_opts *o, const char *id,
		       char *path, size_t size)
{
	bprintf(path, size, "%s/%s.json", o->spool_dir, id);
}

/* The attempt was refused: keep the document under rejected/ with the
 * reason, moving the copy spooled before the attempt if there is one. */
static int deliver_rejected(const struct cm_deliver_opts *o, const char *doc,
			    size_t len, const char *id, const char *why,
			    int spooled, struct cm_error *err)
{
	char where[PATH_MAX], path[PATH_MAX];
	struct cm_error e2;

	if (spooled) {
		spool_path(o, id, path, sizeof(path));
		if (flush_reject(o, path, id, why) == 0)
			return cm_errorf(err, EBADMSG, "result %s refused (%s); "
					 "kept as %s/rejected/%s.json", id, why,
					 o->spool_dir, id);
		return cm_errorf(err, EBADMSG, "result %s refused (%s) and "
				 "left in %s: it could not be moved to "
				 "rejected/", id, why, path);
	}
	if (reject_put(o, doc, len, id, why, where, sizeof(where), &e2))
		return cm_errorf(err, EBADMSG, "result %s refused (%s) and NOT "
				 "kept: %s", id, why, e2.text);
	return cm_errorf(err, EBADMSG, "result %s refused (%s); kept as %s",
			 id, why, where);
}

int cm_result_deliver(const struct cm_deliver_opts *opts, const char *doc,
		      size_t len, const char *upload_id, struct cm_error *err)
{
	int64_t start = now_ms(), timeout = opts && opts->timeout_ms > 0 ?
			opts->timeout_ms : CM_DELIVER_TIMEOUT_MS_DEFAULT;
	char why[768], path[PATH_MAX];
	struct cm_error e2, espool = { .text = "" };
	enum attempt a;
	int spooled = 0, espool_errno = EIO;

	if (!opts || !doc || !len)
		return cm_errorf(err, EINVAL, "deliver: no document");
	if (!cm_upload_id_valid(upload_id))
		return cm_errorf(err, EINVAL, "deliver: invalid upload id '%s' "
				 "(1-128 of A-Za-z0-9._:-)",
				 upload_id ? upload_id : "(null)");
	if (spool_dir_too_long(opts, err))
		return -1;
	/* Spooled (and synced) before the attempt: an agent killed while it
	 * waits on the service (SIGKILL, the OOM killer, a watchdog) leaves
	 * the result for the next delivery on the node to send.  A spool
	 * that cannot take it now only matters if the upload fails too. */
	if (opts->spool_dir) {
		spooled = spool_put(opts, doc, len, upload_id, &espool) == 0;
		espool_errno = spooled ? 0 : errno;
	}
	a = attempt_upload(opts, doc, len, upload_id, why, sizeof(why));
	if (a == ATTEMPT_DELIVERED) {
		if (spooled) {
			spool_path(opts, upload_id, path, sizeof(path));
			unlink(path);
		}
		/* The service is back: spend what is left of this call's
		 * time on older spooled results (nothing waits for a
		 * separate retry daemon). */
		if (opts->spool_dir)
			flush_until(opts, 0, start + timeout, &e2);
		return CM_DELIVER_UPLOADED;
	}
	if (!opts->spool_dir)
		return cm_errorf(err, a == ATTEMPT_REJECTED ? EBADMSG : EIO,
				 "result %s not delivered (no spool): %s",
				 upload_id, why);
	if (a == ATTEMPT_REJECTED)
		return deliver_rejected(opts, doc, len, upload_id, why,
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

/* ---- flushing the spool -------------------------------------------------- */

struct spooled {
	char name[CM_UPLOAD_ID_MAX + 8];
	struct timespec mtime;
};

static int spooled_cmp(const void *pa, const void *pb)
{
	const struct spooled *a = pa, *b = pb;

	if (a->mtime.tv_sec != b->mtime.tv_sec)
		return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
	if (a->mtime.tv_nsec != b->mtime.tv_nsec)
		return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The name is ID.json with a valid ID: fills id. */
static int spool_name_id(const char *name, char id[CM_UPLOAD_ID_MAX])
{
	size_t l = strlen(name);

	if (l < 6 || l - 5 >= CM_UPLOAD_ID_MAX || strcmp(name + l - 5, ".json"))
		return 0;
	memcpy(id, name, l - 5);
	id[l - 5] = '\0';
	return cm_upload_id_valid(id);
}

/* The pending files, oldest first, in *out (malloc'ed); count returned. */
static int spool_list(const char *spool, struct spooled **out,
		      struct cm_error *err)
{
	DIR *d = opendir(spool);
	struct spooled *v = NULL, *t;
	struct dirent *e;
	struct stat st;
	char id[CM_UPLOAD_ID_MAX];
	int n = 0, cap = 0;

	*out = NULL;
	if (!d && errno == ENOENT)
		return 0;
	if (!d)
		return cm_errorf(err, errno, "cannot read spool %s: %s", spool,
				 strerror(errno));
	while ((e = readdir(d))) {
		if (!spool_name_id(e->d_name, id) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			t = realloc(v, (size_t)cap * sizeof(*v));
			if (!t) {
				free(v);
				closedir(d);
				return cm_errorf(err, ENOMEM, "out of memory");
			}
			v = t;
		}
		bprintf(v[n].name, sizeof(v[n].name), "%s", e->d_name);
		v[n].mtime = st.st_mtim;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, (size_t)n, sizeof(*v), spooled_cmp);
	*out = v;
	return n;
}

static int read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	size_t r;

	if (!f)
		return -1;
	if (fstat(fileno(f), &st) || st.st_size <= 0) {
		fclose(f);
		errno = EINVAL;
		return -1;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		fclose(f);
		return -1;
	}
	r = fread(*buf, 1, (size_t)st.st_size, f);
	fclose(f);
	(*buf)[r] = '\0';
	*len = r;
	return 0;
}

/* Move a refused spool file to rejected/ with its reason: 0, or -1 when
 * it stays pending (retried later: nothing lost). */
static int flush_reject(const struct cm_deliver_opts *o, const char *path,
			const char *id, const char *why)
{
	char dir[PATH_MAX], dst[PATH_MAX], err_name[CM_UPLOAD_ID_MAX + 8];
	struct cm_error e;

	bprintf(dir, sizeof(dir), "%s/rejected", o->spool_dir);
	if (ensure_dir(dir, &e))
		return -1;
	bprintf(dst, sizeof(dst), "%s/%s.json", dir, id);
	bprintf(err_name, sizeof(err_name), "%s.error", id);
	if (link(path, dst) && errno != EEXIST)
		return -1;
	bprintf(dst, sizeof(dst), "%s/%s", dir, err_name);
	unlink(dst);
	if (write_new_file(dir, err_name, why, strlen(why), &e))
		return -1;
	unlink(path);
	return 0;
}

/* Hold the spool's lock (non-blocking): fd, or -1 if another holds it. */
static int spool_lock(const char *spool)
{
	char path[PATH_MAX];
	int fd;

	bprintf(path, sizeof(path), "%s/.lock", spool);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The time left before deadline (0: none) as an attempt's timeout in
 * *o; 0 when too little is left to try. */
static int budget_left(struct cm_deliver_opts *o, int64_t deadline)
{
	int64_t left;

	if (!deadline)
		return 1;
	left = deadline - now_ms();
	if (left < FLUSH_MIN_ATTEMPT_MS)
		return 0;
	o->timeout_ms = (long)left;
	return 1;
}

/* cm_spool_flush, stopping at deadline (CLOCK_MONOTONIC ms; 0: never). */
static int flush_until(const struct cm_deliver_opts *opts, int max,
		       int64_t deadline, struct cm_error *err)
{
	struct cm_deliver_opts o = *opts;
	struct spooled *v;
	char path[PATH_MAX], id[CM_UPLOAD_ID_MAX], why[768], *doc;
	int n, i, lock, sent = 0;
	size_t len;

	n = spool_list(opts->spool_dir, &v, err);
	if (n <= 0)
		return n;
	lock = spool_lock(opts->spool_dir);
	if (lock < 0) {
		free(v);
		return 0;	/* another agent is flushing */
	}
	for (i = 0; i < n && (max <= 0 || sent < max) &&
		    budget_left(&o, deadline); i++) {
		enum attempt a;

		bprintf(path, sizeof(path), "%s/%s", opts->spool_dir,
			 v[i].name);
		if (!spool_name_id(v[i].name, id) ||
		    read_file(path, &doc, &len))
			continue;	/* gone meanwhile */
		a = attempt_upload(&o, doc, len, id, why, sizeof(why));
		free(doc);
		if (a == ATTEMPT_DELIVERED) {
			unlink(path);
			sent++;
		} else if (a == ATTEMPT_REJECTED) {
			flush_reject(opts, path, id, why);
			cm_errorf(err, EBADMSG, "spooled result %s refused, "
				  "moved to %s/rejected/: %s", id,
				  opts->spool_dir, why);
		} else {
			cm_errorf(err, EAGAIN, "flush stopped, %d result(s) "
				  "left: %s", n - i, why);
			break;
		}
	}
	close(lock);
	free(v);
	return sent;
}

int cm_spool_flush(const struct cm_deliver_opts *opts, int max,
		   struct cm_error *err)
{
	cm_error_clear(err);
	if (!opts || !opts->spool_dir)
		return cm_errorf(err, EINVAL, "flush: no spool directory");
	if (spool_dir_too_long(opts, err))
		return -1;
	return flush_until(opts, max, 0, err);
}

int cm_spool_stale(const struct cm_deliver_opts *opts, int min_age_s,
		   time_t *oldest)
{
	struct spooled *v;
	time_t now = time(NULL);
	int n, stale = 0;

	if (!opts || !opts->spool_dir) {
		errno = EINVAL;
		return -1;
	}
	n = spool_list(opts->spool_dir, &v, NULL);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (now - v[i].mtime.tv_sec < min_age_s)
			continue;
		if (!stale && oldest)
			*oldest = v[i].mtime.tv_sec;	/* sorted, oldest first */
		stale++;
	}
	free(v);
	return stale;
}
