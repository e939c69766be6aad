/* app_identity.h: what makes two runs "the same application" for learned
 * mappings (docs/service.md "Learned models", docs/agent.md).
 *
 *   exe_hash    "sha256:<64 hex>" of the executable's bytes; when they
 *               cannot be read (or commap was built without libcrypto),
 *               "meta:<size>:<mtime>:<path>", at most 128 bytes (a longer
 *               meta form keeps the last bytes of the path);
 *   argv_shape  basename(argv[0]) then each argument, joined by one space,
 *               every run of ASCII digits in the arguments replaced by one
 *               '#' ("./bin/app -n 16 --size 1024x768" ->
 *               "app -n # --size #x#").
 *
 * SHA-256 is OpenSSL's libcrypto (EVP), not hand-written: a digest is easy
 * to get subtly wrong and libcrypto is on every node already (libssl-dev
 * to build).  The file is read in 256 KiB chunks; a file larger than
 * CM_EXE_HASH_MAX_BYTES gets the meta form, so hashing stays bounded
 * (~1 s per GiB here).  A cache keyed by (dev, inode, size, mtime) makes a
 * second call for the same file free (one per run, however many ranks).
 *
 * The agent's loop must not stop for a large executable: with
 * cm_app_exe_hash_start a file up to CM_EXE_HASH_INLINE_BYTES (~16 ms)
 * is hashed at once, a larger one by a thread of its own while the loop
 * goes on (cm_app_exe_hash_finish tells when it is done).
 */
#ifndef COMMAP_APP_IDENTITY_H
#define COMMAP_APP_IDENTITY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"

#define CM_EXE_HASH_MAX 129		/* 128 bytes + NUL (validator's limit) */
#define CM_EXE_HASH_MAX_BYTES ((uint64_t)1 << 30)	/* 1 GiB */
#define CM_ARGV_SHAPE_MAX 1024		/* longer shapes are cut */
#define CM_EXE_HASH_INLINE_BYTES ((uint64_t)16 << 20)	/* 16 MiB */

struct cm_exe_hash_cache {
	int valid;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;
	char hash[CM_EXE_HASH_MAX];
};

/* Which form cm_app_exe_hash produced. */
enum cm_exe_hash_kind {
	CM_EXE_HASH_SHA256 = 0,
	CM_EXE_HASH_META = 1,
};

/* 1 when built with libcrypto (sha256 available), else 0. */
int cm_app_have_sha256(void);

/* Identity of the file at `file` (e.g. "/proc/PID/exe", which opens the
 * very file the process runs even if it was replaced or deleted since);
 * `display` is the path used in the meta form (the link's target), NULL
 * to use `file`.  cache may be NULL.  Returns CM_EXE_HASH_SHA256 or
 * CM_EXE_HASH_META with out filled; -1 with errno/err when the file
 * cannot even be stat()ed (ENOENT, EACCES, ...). */
int cm_app_exe_hash(const char *file, const char *display,
		    struct cm_exe_hash_cache *cache,
		    char out[CM_EXE_HASH_MAX], struct cm_error *err);

/* A hash being made in the background (cm_app_exe_hash_start). */
struct cm_exe_hash_job {
	int running;		/* a thread is hashing */
	atomic_int done;	/* the thread has finished */
	int fd;
	int rc;			/* the thread's: 0 sha256, -1 failed */
	pthread_t thread;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;
	char display[256];	/* for the meta form if sha256 fails */
	char hash[CM_EXE_HASH_MAX];
};

/* As cm_app_exe_hash, but a regular file larger than
 * CM_EXE_HASH_INLINE_BYTES (not in the cache) is hashed by a thread: 1
 * out filled now; 0 running (call cm_app_exe_hash_finish); -1 with
 * errno/err when the file cannot be stat()ed. */
int cm_app_exe_hash_start(struct cm_exe_hash_job *j, const char *file,
			  const char *display,
			  struct cm_exe_hash_cache *cache,
			  char out[CM_EXE_HASH_MAX], struct cm_error *err);

/* A running job: 1 finished (thread joined, out filled, cache updated;
 * the meta form if hashing failed), 0 still running.  wait != 0 blocks
 * until it has finished (bounded: at most CM_EXE_HASH_MAX_BYTES). */
int cm_app_exe_hash_finish(struct cm_exe_hash_job *j, int wait,
			   struct cm_exe_hash_cache *cache,
			   char out[CM_EXE_HASH_MAX]);

/* The meta form for size/mtime/path, cut to 128 bytes keeping the end of
 * the path.  Exposed for tests. */
void cm_app_exe_meta(uint64_t size, int64_t mtime_s, const char *path,
		     char out[CM_EXE_HASH_MAX]);

/* Tasks of a Slurm step on node nodeid, from SLURM_STEP_TASKS_PER_NODE's
 * compressed form ("2", "4(x3),2": counts per node, "(xN)" repeats one N
 * times).  The count, or -1 when malformed or nodeid is out of range. */
int cm_app_tasks_on_node(const char *tasks_per_node, int nodeid);

/* The argv shape of argv[0..argc-1] into out (size len >= 1, cut at
 * len - 1 bytes).  argc == 0: basename(exe) (exe may be NULL: ""). */
void cm_app_argv_shape(int argc, char *const argv[], const char *exe,
		       char *out, size_t len);

#endif
