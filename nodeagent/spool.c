/* spool.c: where results wait for delivery (upload.h: the spool's layout),
 * and the flush that sends them once the service takes uploads again.
 * The upload itself is upload.c's.
 */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "upload.h"
#include "upload_internal.h"

#define FLUSH_MIN_ATTEMPT_MS 100	/* less left: do not start one */

static int flush_reject(const struct cm_deliver_opts *o, const char *path,
			const char *id, const char *why);

static size_t effective_spool_max(const struct cm_deliver_opts *o)
{
	return o->spool_max_bytes ? o->spool_max_bytes :
				    CM_SPOOL_MAX_BYTES_DEFAULT;
}

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
	upl_bprintf(rej, sizeof(rej), "%s/rejected", spool);
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

	upl_bprintf(dst, sizeof(dst), "%s/%s", dir, name);
	upl_bprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%ld", dir, name, (long)getpid());
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

int upl_spool_put(const struct cm_deliver_opts *o, const char *doc,
		     size_t len, const char *id, struct cm_error *err)
{
	char name[CM_UPLOAD_ID_MAX + 8], dst[PATH_MAX];

	upl_bprintf(name, sizeof(name), "%s.json", id);
	upl_bprintf(dst, sizeof(dst), "%s/%s", o->spool_dir, name);
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

	upl_bprintf(dir, sizeof(dir), "%s/rejected", o->spool_dir);
	upl_bprintf(where, wsize, "%s/%s.json", dir, id);
	if (ensure_dir(o->spool_dir, err) || ensure_dir(dir, err))
		return -1;
	if (!same_content(where, doc, len) &&
	    spool_check_room(o, len + strlen(why) + 1, id, err))
		return -1;
	upl_bprintf(name, sizeof(name), "%s.json", id);
	if (write_new_file(dir, name, doc, len, err))
		return -1;
	upl_bprintf(name, sizeof(name), "%s.error", id);
	upl_bprintf(epath, sizeof(epath), "%s/%s", dir, name);
	unlink(epath);	/* the newest reason wins */
	return write_new_file(dir, name, why, strlen(why), err);
}

/* Paths under the spool are the directory plus at most "/rejected/",
 * an id and a suffix: with this check none of them is ever cut. */
int upl_spool_dir_too_long(const struct cm_deliver_opts *o,
			      struct cm_error *err)
{
	if (o->spool_dir && strlen(o->spool_dir) >= PATH_MAX - 256)
		return cm_errorf(err, ENAMETOOLONG, "spool directory name "
				 "is too long");
	return 0;
}

/* Where a result waits in the spool (spool_dir/ID.json). */
void upl_spool_path(const struct cm_deliver_opts *o, const char *id,
		       char *path, size_t size)
{
	upl_bprintf(path, size, "%s/%s.json", o->spool_dir, id);
}

/* The attempt was refused: keep the document under rejected/ with the
 * reason, moving the copy spooled before the attempt if there is one. */
int upl_spool_reject(const struct cm_deliver_opts *o, const char *doc,
			    size_t len, const char *id, const char *why,
			    int spooled, struct cm_error *err)
{
	char where[PATH_MAX], path[PATH_MAX];
	struct cm_error e2;

	if (spooled) {
		upl_spool_path(o, id, path, sizeof(path));
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
		upl_bprintf(v[n].name, sizeof(v[n].name), "%s", e->d_name);
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

	upl_bprintf(dir, sizeof(dir), "%s/rejected", o->spool_dir);
	if (ensure_dir(dir, &e))
		return -1;
	upl_bprintf(dst, sizeof(dst), "%s/%s.json", dir, id);
	upl_bprintf(err_name, sizeof(err_name), "%s.error", id);
	if (link(path, dst) && errno != EEXIST)
		return -1;
	upl_bprintf(dst, sizeof(dst), "%s/%s", dir, err_name);
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

	upl_bprintf(path, sizeof(path), "%s/.lock", spool);
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
	left = deadline - upl_now_ms();
	if (left < FLUSH_MIN_ATTEMPT_MS)
		return 0;
	o->timeout_ms = (long)left;
	return 1;
}

/* cm_spool_flush, stopping at deadline (CLOCK_MONOTONIC ms; 0: never). */
int upl_flush_until(const struct cm_deliver_opts *opts, int max,
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
		enum upl_attempt a;

		upl_bprintf(path, sizeof(path), "%s/%s", opts->spool_dir,
			 v[i].name);
		if (!spool_name_id(v[i].name, id) ||
		    read_file(path, &doc, &len))
			continue;	/* gone meanwhile */
		a = upl_attempt(&o, doc, len, id, why, sizeof(why));
		free(doc);
		if (a == UPL_DELIVERED) {
			unlink(path);
			sent++;
		} else if (a == UPL_REJECTED) {
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
	if (upl_spool_dir_too_long(opts, err))
		return -1;
	return upl_flush_until(opts, max, 0, err);
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
