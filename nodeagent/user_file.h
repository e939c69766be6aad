/* user_file.h: read a file a user named, with that user's rights.
 *
 * The agent runs as root, but the file of --commap=static:FILE is the
 * user's choice: opened as root it would disclose any file (/etc/shadow)
 * through the error or the result, and a FIFO or a slow filesystem would
 * block root's agent for ever.  So a child process drops to the job's
 * uid, gid and supplementary groups, opens the file non-blocking, accepts
 * only a regular file no larger than the cap, and hands the content back
 * through a pipe; the parent gives up (and kills the child) after a
 * timeout.  Errors name the file and the reason only, never its content,
 * and say the same for a missing file and an unreadable one.
 */
#ifndef COMMAP_USER_FILE_H
#define COMMAP_USER_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "commap/error.h"

/* Largest file read (64 MiB: a matrix of a few million edges). */
#define CM_USER_FILE_MAX ((size_t)64 << 20)
/* How long the whole read may take. */
#define CM_USER_FILE_TIMEOUT_MS 5000

/* Whose rights to read with.  uid (uid_t)-1: keep the caller's (a user's
 * own `commap run`). */
struct cm_user_cred {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;	/* supplementary groups, ngroups of them */
	int ngroups;
};

/* Read path (relative paths against dir when dir is not NULL) as cred,
 * at most max bytes within timeout_ms.  0 with *buf (malloc'd, NUL added,
 * *len bytes before it) or -1 with errno and err: EACCES (missing or not
 * readable: one message for both), EINVAL (not a regular file), EFBIG,
 * ETIMEDOUT, EPERM (the identity could not be taken), ENOMEM, EIO. */
int cm_user_file_read(const char *path, const char *dir,
		      const struct cm_user_cred *cred, size_t max,
		      int timeout_ms, char **buf, size_t *len,
		      struct cm_error *err);

/* path made printable for messages and results: bytes outside printable
 * ASCII become '?' (results are JSON, which must be UTF-8), truncated to
 * size - 1 bytes. */
void cm_user_file_name(const char *path, char *out, size_t size);

#endif
