/* user_file.c: read a file a user named, with that user's rights
 * (see user_file.h). */
#define _GNU_SOURCE
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "user_file.h"

/* What the child reports before the content: the step that failed (0:
 * none) and its errno. */
enum { STEP_OK, STEP_IDENTITY, STEP_OPEN, STEP_NOT_REGULAR, STEP_TOO_BIG,
       STEP_READ };

struct report {
	int32_t step;
	int32_t err;
};

void cm_user_file_name(const char *path, char *out, size_t size)
{
	size_t k = 0;

	for (; path[k] && k + 1 < size; k++) {
		unsigned char c = (unsigned char)path[k];

		out[k] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	if (size)
		out[k] = '\0';
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int take_identity(const struct cm_user_cred *cred)
{
	if (cred->uid == (uid_t)-1)
		return 0;
	if (setgroups((size_t)cred->ngroups, cred->groups) < 0 ||
	    setgid(cred->gid) < 0 || setuid(cred->uid) < 0)
		return -1;
	/* setuid to a non-root uid drops every capability; check anyway */
	if (cred->uid != 0 && setuid(0) == 0)
		return errno = EPERM, -1;
	return 0;
}

static void __attribute__((noreturn))
child_fail(int fd, int step, int e)
{
	struct report r = { step, e };

	(void)write_all(fd, &r, sizeof(r));
	_exit(1);
}

/* The child: the identity first, then a non-blocking open (a FIFO must not
 * block it), a regular file only, the content up to max. */
static void __attribute__((noreturn))
child_read(int out, const char *path, const struct cm_user_cred *cred,
	   size_t max)
{
	struct report ok = { STEP_OK, 0 };
	struct stat st;
	char chunk[65536];
	size_t total = 0;
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (take_identity(cred) < 0)
		child_fail(out, STEP_IDENTITY, errno);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		child_fail(out, STEP_OPEN, errno);
	if (fstat(fd, &st) < 0)
		child_fail(out, STEP_OPEN, errno);
	if (!S_ISREG(st.st_mode))
		child_fail(out, STEP_NOT_REGULAR, EINVAL);
	if ((unsigned long long)st.st_size > max)
		child_fail(out, STEP_TOO_BIG, EFBIG);
	if (write_all(out, &ok, sizeof(ok)) < 0)
		_exit(1);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			_exit(2);
		if (n == 0)
			_exit(0);
		/* A file growing past the cap while read: the parent sees
		 * more than max bytes and refuses it. */
		total += (size_t)n;
		if (write_all(out, chunk, (size_t)n) < 0 || total > max)
			_exit(total > max ? 3 : 1);
	}
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct reading {
	char *buf;
	size_t len, cap, max;
	int timed_out, too_big;
};

static int grow(struct reading *r, size_t want)
{
	size_t cap = r->cap ? r->cap : 65536;
	char *p;

	while (cap < want)
		cap *= 2;
	if (cap <= r->cap)
		return 0;
	p = realloc(r->buf, cap);
	if (!p)
		return -1;
	r->buf = p;
	r->cap = cap;
	return 0;
}

/* Everything the child writes, until end of file or the deadline. */
static int drain_pipe(int fd, struct reading *r, long long deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0)
			return r->timed_out = 1, 0;
		if (poll(&p, 1, (int)(left > INT_MAX ? INT_MAX : left)) < 0 &&
		    errno != EINTR)
			return -1;
		if (!p.revents)
			continue;
		if (grow(r, r->len + 65536 + 1) < 0)
			return -1;
		n = read(fd, r->buf + r->len, 65536);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? -1 : 0;
		r->len += (size_t)n;
		if (r->len > r->max + sizeof(struct report))
			return r->too_big = 1, 0;
	}
}

static int reap(pid_t child, int kill_it)
{
	int status = 0;

	if (kill_it)
		kill(child, SIGKILL);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

static int too_big(const char *name, size_t max, struct cm_error *err)
{
	if (max >= (1u << 20))
		return cm_errorf(err, EFBIG, "%s: larger than %zu MiB", name,
				 max >> 20);
	return cm_errorf(err, EFBIG, "%s: larger than %zu bytes", name, max);
}

static int explain(const char *name, const struct report *rep,
		   const struct cm_user_cred *cred, size_t max,
		   struct cm_error *err)
{
	switch (rep->step) {
	case STEP_IDENTITY:
		return cm_errorf(err, EPERM, "%s: cannot take the job's "
				 "identity (uid %u) to read it: %s", name,
				 (unsigned)cred->uid, strerror(rep->err));
	case STEP_OPEN:
		/* One message for a missing and an unreadable file: the
		 * reader learns nothing it could not see itself. */
		return cm_errorf(err, EACCES, "%s: no such file, or not "
				 "readable by the job's user", name);
	case STEP_NOT_REGULAR:
		return cm_errorf(err, EINVAL, "%s: not a regular file", name);
	case STEP_TOO_BIG:
		return too_big(name, max, err);
	}
	return cm_errorf(err, EIO, "%s: read error", name);
}

/* The parent's side once the child runs: header, content, checks. */
static int collect(int fd, pid_t child, const char *name,
		   const struct cm_user_cred *cred, size_t max,
		   int timeout_ms, char **buf, size_t *len,
		   struct cm_error *err)
{
	struct reading r = { .max = max };
	struct report rep;
	int rc = drain_pipe(fd, &r, now_ms() + timeout_ms);
	int status = reap(child, rc < 0 || r.timed_out || r.too_big);

	if (rc < 0 || (!r.timed_out && !r.too_big && r.len < sizeof(rep))) {
		free(r.buf);
		return rc < 0 ? cm_errorf(err, ENOMEM, "%s: out of memory",
					  name) :
				cm_errorf(err, EIO, "%s: the reader ended "
					  "early", name);
	}
	if (r.timed_out || r.too_big) {
		free(r.buf);
		return r.too_big ? too_big(name, max, err) :
				   cm_errorf(err, ETIMEDOUT, "%s: not read "
					     "within %d ms", name, timeout_ms);
	}
	memcpy(&rep, r.buf, sizeof(rep));
	if (rep.step != STEP_OK || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		free(r.buf);
		if (rep.step == STEP_OK)
			rep.step = WIFEXITED(status) &&
				   WEXITSTATUS(status) == 3 ? STEP_TOO_BIG :
							       STEP_READ;
		return explain(name, &rep, cred, max, err);
	}
	r.len -= sizeof(rep);
	memmove(r.buf, r.buf + sizeof(rep), r.len);
	r.buf[r.len] = '\0';
	*buf = r.buf;
	*len = r.len;
	return 0;
}

int cm_user_file_read(const char *path, const char *dir,
		      const struct cm_user_cred *cred, size_t max,
		      int timeout_ms, char **buf, size_t *len,
		      struct cm_error *err)
{
	char full[PATH_MAX], name[256];
	int p[2], rc;
	pid_t child;

	*buf = NULL;
	*len = 0;
	cm_user_file_name(path, name, sizeof(name));
	if (path[0] != '/' && dir && dir[0] == '/') {
		if ((size_t)snprintf(full, sizeof(full), "%s/%s", dir, path) >=
		    sizeof(full))
			return cm_errorf(err, ENAMETOOLONG, "%s: path too long",
					 name);
		path = full;
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		return cm_errorf(err, errno, "%s: pipe: %s", name,
				 strerror(errno));
	child = fork();
	if (child < 0) {
		close(p[0]);
		close(p[1]);
		return cm_errorf(err, errno, "%s: fork: %s", name,
				 strerror(errno));
	}
	if (child == 0) {
		close(p[0]);
		child_read(p[1], path, cred, max);
	}
	close(p[1]);
	rc = collect(p[0], child, name, cred, max, timeout_ms, buf, len, err);
	close(p[0]);
	return rc;
}
