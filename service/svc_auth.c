/* svc_auth.c: munge authentication and the reader/writer/admin roles. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <munge.h>

#include "svc_auth.h"

#define NSS_BUF 16384
#define GROUPS_MAX 1024

struct svc_auth {
	struct svc_name_list admins;
	struct svc_name_list writers;
	int has_slurm;
	uid_t slurm_uid;
	char munge_socket[sizeof(((struct svc_config *)0)->munge_socket)];
};

struct svc_auth *svc_auth_new(const struct svc_config *c,
			      struct cm_error *err)
{
	struct svc_auth *a = calloc(1, sizeof(*a));

	if (!a) {
		cm_errorf(err, ENOMEM, "out of memory");
		return NULL;
	}
	a->admins = c->admins;
	a->writers = c->writers;
	memcpy(a->munge_socket, c->munge_socket, sizeof(a->munge_socket));
	if (c->slurm_user[0]) {
		struct passwd pw, *res = NULL;
		char buf[NSS_BUF];

		if (getpwnam_r(c->slurm_user, &pw, buf, sizeof(buf), &res) ||
		    !res) {
			free(a);
			cm_errorf(err, ENOENT,
				  "slurm_user: no such user '%s' (set slurm_user = to disable)",
				  c->slurm_user);
			return NULL;
		}
		a->has_slurm = 1;
		a->slurm_uid = res->pw_uid;
	}
	return a;
}

void svc_auth_free(struct svc_auth *a)
{
	free(a);
}

/* Is gid one of the caller's groups? */
static int in_groups(gid_t gid, const gid_t *groups, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

/* The caller's groups, looked up only when a list names a group. */
struct member {
	const char *user;
	gid_t pw_gid;
	gid_t groups[GROUPS_MAX];
	int n;			/* -1: not looked up yet */
};

static void member_groups(struct member *m)
{
	int n = GROUPS_MAX - 1;

	if (m->n >= 0)
		return;
	m->n = 1;
	if (!m->user[0])
		return;
	if (getgrouplist(m->user, m->pw_gid, m->groups + 1, &n) < 0)
		n = GROUPS_MAX - 1;	/* truncated: use what fit */
	m->n = n + 1;
}

/* Does the list name the user, or a group the user is in? */
static int list_matches(const struct svc_name_list *l, struct member *m)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		const char *name = l->name[i];

		if (name[0] != '@') {
			if (m->user[0] && strcmp(name, m->user) == 0)
				return 1;
		} else {
			struct group gr, *res = NULL;
			char buf[NSS_BUF];

			if (getgrnam_r(name + 1, &gr, buf, sizeof(buf),
				       &res) != 0 || !res)
				continue;
			member_groups(m);
			if (in_groups(res->gr_gid, m->groups, m->n))
				return 1;
		}
	}
	return 0;
}

/* Root and the Slurm user's roles follow from the uid alone; the group
 * database is read only when a list names a group (reading /etc/group
 * for every upload cost as much as validating its body). */
void svc_auth_classify(const struct svc_auth *a, uint32_t uid, uint32_t gid,
		       struct svc_caller *caller)
{
	struct passwd pw, *res = NULL;
	char buf[NSS_BUF];
	struct member m = { .user = caller->user, .pw_gid = gid, .n = -1 };

	memset(caller, 0, sizeof(*caller));
	caller->uid = uid;
	caller->gid = gid;
	m.groups[0] = gid;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res &&
	    strlen(res->pw_name) < sizeof(caller->user)) {
		strcpy(caller->user, res->pw_name);
		m.pw_gid = res->pw_gid;
	}
	caller->is_admin = uid == 0 || list_matches(&a->admins, &m);
	caller->is_writer = uid == 0 ||
			    (a->has_slurm && uid == a->slurm_uid) ||
			    list_matches(&a->writers, &m);
}

int svc_auth_decode(const struct svc_auth *a, const char *cred,
		    struct svc_caller *caller, struct cm_error *err)
{
	munge_ctx_t ctx = NULL;
	munge_err_t e;
	uid_t uid;
	gid_t gid;

	if (!cred || !*cred)
		return cm_errorf(err, EACCES,
				 "missing X-Munge-Credential header");
	if (a->munge_socket[0]) {
		ctx = munge_ctx_create();
		if (!ctx)
			return cm_errorf(err, ENOMEM, "munge: out of memory");
		if (munge_ctx_set(ctx, MUNGE_OPT_SOCKET, a->munge_socket) !=
		    EMUNGE_SUCCESS) {
			munge_ctx_destroy(ctx);
			return cm_errorf(err, EINVAL, "munge: bad socket %s",
					 a->munge_socket);
		}
	}
	e = munge_decode(cred, ctx, NULL, NULL, &uid, &gid);
	if (ctx)
		munge_ctx_destroy(ctx);
	/* munged unreachable or failing is our problem (503), not the
	 * caller's (401). */
	if (e == EMUNGE_SOCKET || e == EMUNGE_SNAFU || e == EMUNGE_NO_MEMORY ||
	    e == EMUNGE_TIMEOUT)
		return cm_errorf(err, EAGAIN, "munge: %s", munge_strerror(e));
	if (e != EMUNGE_SUCCESS)
		return cm_errorf(err, EACCES, "munge credential rejected: %s",
				 munge_strerror(e));
	svc_auth_classify(a, (uint32_t)uid, (uint32_t)gid, caller);
	return 0;
}
