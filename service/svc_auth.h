/* svc_auth.h: who is calling (munge) and what they may do.
 *
 * Every request carries a munge credential made by the client in the
 * X-Munge-Credential header; munged decodes it to the caller's uid and gid
 * (and refuses replayed or expired credentials).  Roles:
 *   writer: root, the Slurm user and the configured writers: may upload;
 *   admin:  root and the configured admins (users, @groups): read all;
 *   anyone else: reads only results whose identity.uid is theirs.
 */
#ifndef COMMAP_SVC_AUTH_H
#define COMMAP_SVC_AUTH_H

#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"
#include "svc_config.h"

struct svc_auth;

struct svc_caller {
	uint32_t uid;
	uint32_t gid;
	char user[SVC_NAME_MAX];	/* "" if the uid has no passwd entry */
	int is_writer;
	int is_admin;
};

/* Keep the role configuration.  Names are resolved at each request, so
 * users and groups created later (or served by LDAP) count at once.  The
 * Slurm user is resolved now: NULL with ENOENT if it is configured but
 * unknown. */
struct svc_auth *svc_auth_new(const struct svc_config *c,
			      struct cm_error *err);
void svc_auth_free(struct svc_auth *a);

/* Fill caller's name and roles for uid/gid (passwd and group database). */
void svc_auth_classify(const struct svc_auth *a, uint32_t uid, uint32_t gid,
		       struct svc_caller *caller);

/* Decode a munge credential and classify its uid.  0 on success; -1 with
 * EACCES and munge's reason in err (missing, invalid, expired, replayed),
 * or EAGAIN when munged cannot be reached. */
int svc_auth_decode(const struct svc_auth *a, const char *cred,
		    struct svc_caller *caller, struct cm_error *err);

#endif
