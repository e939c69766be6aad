/* app_identity.c: executable hash and argv shape (see app_identity.h). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_LIBCRYPTO
#include <openssl/evp.h>
#endif

#include "app_identity.h"

#define CHUNK_BYTES (256u << 10)

int cm_app_have_sha256(void)
{
#ifdef HAVE_LIBCRYPTO
	return 1;
#else
	return 0;
#endif
}

void cm_app_exe_meta(uint64_t size, int64_t mtime_s, const char *path,
		     char out[CM_EXE_HASH_MAX])
{
	char head[64];
	size_t hl, pl, room;

	snprintf(head, sizeof(head), "meta:%" PRIu64 ":%" PRId64 ":", size,
		 mtime_s);
	hl = strlen(head);
	pl = strlen(path);
	room = CM_EXE_HASH_MAX - 1 - hl;
	/* Keep the end of a long path: the file name tells most. */
	if (pl > room)
		path += pl - room;
	snprintf(out, CM_EXE_HASH_MAX, "%s%s", head, path);
}

#ifdef HAVE_LIBCRYPTO
/* SHA-256 of the open file fd into out as "sha256:<hex>".  0 or -1. */
static int sha256_fd(int fd, char out[CM_EXE_HASH_MAX])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char *buf = malloc(CHUNK_BYTES), md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int rc = -1;
	ssize_t n;

	if (!ctx || !buf || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		goto out;
	while ((n = read(fd, buf, CHUNK_BYTES)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || !EVP_DigestUpdate(ctx, buf, (size_t)n))
			goto out;
	}
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen != 32)
		goto out;
	memcpy(out, "sha256:", 7);
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
	rc = 0;
out:
	free(buf);
	EVP_MD_CTX_free(ctx);
	return rc;
}
#endif

static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static int cache_hit(const struct cm_exe_hash_cache *c, const struct stat *st)
{
	return c && c->valid && c->dev == st->st_dev && c->ino == st->st_ino &&
	       c->size == st->st_size && c->mtime_ns == mtime_ns(st);
}

static void cache_put(struct cm_exe_hash_cache *c, const struct stat *st,
		      const char *hash)
{
	if (!c)
		return;
	c->valid = 1;
	c->dev = st->st_dev;
	c->ino = st->st_ino;
	c->size = st->st_size;
	c->mtime_ns = mtime_ns(st);
	snprintf(c->hash, sizeof(c->hash), "%s", hash);
}

/* sha256 of fd when possible (regular, not too big, libcrypto). */
static int try_sha256(int fd, const struct stat *st, char *out)
{
#ifdef HAVE_LIBCRYPTO
	if (S_ISREG(st->st_mode) &&
	    (uint64_t)st->st_size <= CM_EXE_HASH_MAX_BYTES &&
	    sha256_fd(fd, out) == 0)
		return 0;
#else
	(void)fd, (void)st, (void)out;
#endif
	return -1;
}

int cm_app_exe_hash(const char *file, const char *display,
		    struct cm_exe_hash_cache *cache,
		    char out[CM_EXE_HASH_MAX], struct cm_error *err)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int kind = CM_EXE_HASH_META;

	if ((fd >= 0 ? fstat(fd, &st) : stat(file, &st)) < 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return cm_errorf(err, e, "%s: %s", file, strerror(e));
	}
	if (cache_hit(cache, &st)) {
		if (fd >= 0)
			close(fd);
		snprintf(out, CM_EXE_HASH_MAX, "%s", cache->hash);
		return strncmp(out, "sha256:", 7) == 0 ? CM_EXE_HASH_SHA256 :
							 CM_EXE_HASH_META;
	}
	if (fd >= 0 && try_sha256(fd, &st, out) == 0)
		kind = CM_EXE_HASH_SHA256;
	else
		cm_app_exe_meta((uint64_t)st.st_size,
				(int64_t)st.st_mtim.tv_sec,
				display ? display : file, out);
	if (fd >= 0)
		close(fd);
	cache_put(cache, &st, out);
	return kind;
}

/* ---- in the background ------------------------------------------- */

#ifdef HAVE_LIBCRYPTO
static void *hash_thread(void *arg)
{
	struct cm_exe_hash_job *j = arg;

	j->rc = sha256_fd(j->fd, j->hash);
	atomic_store(&j->done, 1);
	return NULL;
}
#endif

/* Start the thread for a large regular file: 0 started, -1 not. */
static int start_thread(struct cm_exe_hash_job *j, int fd,
			const struct stat *st, const char *display)
{
#ifdef HAVE_LIBCRYPTO
	if (!S_ISREG(st->st_mode) ||
	    (uint64_t)st->st_size <= CM_EXE_HASH_INLINE_BYTES ||
	    (uint64_t)st->st_size > CM_EXE_HASH_MAX_BYTES)
		return -1;
	memset(j, 0, sizeof(*j));
	j->fd = fd;
	j->dev = st->st_dev;
	j->ino = st->st_ino;
	j->size = st->st_size;
	j->mtime_ns = mtime_ns(st);
	snprintf(j->display, sizeof(j->display), "%s", display);
	atomic_init(&j->done, 0);
	if (pthread_create(&j->thread, NULL, hash_thread, j) != 0)
		return -1;
	j->running = 1;
	return 0;
#else
	(void)j, (void)fd, (void)st, (void)display;
	return -1;
#endif
}

int cm_app_exe_hash_start(struct cm_exe_hash_job *j, const char *file,
			  const char *display,
			  struct cm_exe_hash_cache *cache,
			  char out[CM_EXE_HASH_MAX], struct cm_error *err)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	struct stat st;

	j->running = 0;
	if (fd >= 0 && fstat(fd, &st) == 0 && !cache_hit(cache, &st) &&
	    start_thread(j, fd, &st, display ? display : file) == 0)
		return 0;
	if (fd >= 0)
		close(fd);
	/* Small, cached, unreadable or not hashable: at once. */
	return cm_app_exe_hash(file, display, cache, out, err) < 0 ? -1 : 1;
}

int cm_app_exe_hash_finish(struct cm_exe_hash_job *j, int wait,
			   struct cm_exe_hash_cache *cache,
			   char out[CM_EXE_HASH_MAX])
{
	struct stat st;

	if (!j->running)
		return 1;
	if (!wait && !atomic_load(&j->done))
		return 0;
	pthread_join(j->thread, NULL);
	j->running = 0;
	close(j->fd);
	if (j->rc == 0)
		snprintf(out, CM_EXE_HASH_MAX, "%s", j->hash);
	else
		cm_app_exe_meta((uint64_t)j->size,
				(int64_t)(j->mtime_ns / 1000000000), j->display,
				out);
	memset(&st, 0, sizeof(st));
	st.st_dev = j->dev;
	st.st_ino = j->ino;
	st.st_size = j->size;
	st.st_mtim.tv_sec = (time_t)(j->mtime_ns / 1000000000);
	st.st_mtim.tv_nsec = (long)(j->mtime_ns % 1000000000);
	cache_put(cache, &st, out);
	return 1;
}

/* ---- Slurm's tasks per node ---------------------------------------- */

static int parse_count(const char **p, long max)
{
	char *end;
	long v;

	if (**p < '0' || **p > '9')
		return -1;
	v = strtol(*p, &end, 10);
	if (v < 0 || v > max)
		return -1;
	*p = end;
	return (int)v;
}

int cm_app_tasks_on_node(const char *tpn, int nodeid)
{
	const char *p = tpn;
	long node = 0;
	int found = -1;

	if (!p || nodeid < 0)
		return -1;
	/* The whole string must parse, whichever node is asked for. */
	for (;;) {
		int count = parse_count(&p, 1 << 20), times = 1;

		if (count < 0)
			return -1;
		if (p[0] == '(') {
			if (p[1] != 'x')
				return -1;
			p += 2;
			times = parse_count(&p, 1 << 24);
			if (times < 1 || *p++ != ')')
				return -1;
		}
		if (found < 0 && nodeid < node + times)
			found = count;
		node += times;
		if (*p == '\0')
			return found;
		if (*p++ != ',')
			return -1;
	}
}

/* Append s to out (used bytes *n, size len), digit runs as one '#' when
 * squash; cut at len - 1. */
static void append(char *out, size_t len, size_t *n, const char *s,
		   int squash)
{
	for (; *s && *n + 1 < len; s++) {
		int digit = *s >= '0' && *s <= '9';

		if (squash && digit) {
			out[(*n)++] = '#';
			while (s[1] >= '0' && s[1] <= '9')
				s++;
			continue;
		}
		out[(*n)++] = *s;
	}
	out[*n] = '\0';
}

static const char *base_name(const char *p)
{
	const char *slash = p ? strrchr(p, '/') : NULL;

	return slash ? slash + 1 : p ? p : "";
}

void cm_app_argv_shape(int argc, char *const argv[], const char *exe,
		       char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	append(out, len, &n, base_name(argc > 0 ? argv[0] : exe), 0);
	for (int i = 1; i < argc; i++) {
		append(out, len, &n, " ", 0);
		append(out, len, &n, argv[i], 1);
	}
}
