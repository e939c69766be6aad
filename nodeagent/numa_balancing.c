/* numa_balancing.c: reference-counted kernel.numa_balancing (see
 * numa_balancing.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "numa_balancing.h"

#define MAX_HOLDERS 1024

static const char default_sysctl[] = "/proc/sys/kernel/numa_balancing";
static const char default_state[] = "/run/commap/numa_balancing";

struct holders {
	int saved;		/* value before the first holder, -1 unknown */
	int n;
	pid_t pid[MAX_HOLDERS];
};

static int read_int_file(const char *path, int *value)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%d", value) == 1;
	fclose(f);
	if (!ok)
		errno = EINVAL;
	return ok ? 0 : -1;
}

static int write_int_file(const char *path, int value)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -1;
	fprintf(f, "%d\n", value);
	return fclose(f) == 0 ? 0 : -1;
}

/* Parse the state file; a missing or empty one means no holders. */
static void holders_read(FILE *f, struct holders *h)
{
	int pid;

	h->saved = -1;
	h->n = 0;
	rewind(f);
	if (fscanf(f, "%d", &h->saved) != 1) {
		h->saved = -1;
		return;
	}
	while (h->n < MAX_HOLDERS && fscanf(f, "%d", &pid) == 1)
		if (pid > 0 && kill(pid, 0) == 0)	/* prune the dead */
			h->pid[h->n++] = pid;
}

static int holders_write(FILE *f, const struct holders *h)
{
	if (ftruncate(fileno(f), 0) < 0)
		return -1;
	rewind(f);
	if (h->n == 0)
		return fflush(f);
	fprintf(f, "%d\n", h->saved);
	for (int i = 0; i < h->n; i++)
		fprintf(f, "%d\n", (int)h->pid[i]);
	return fflush(f);
}

static void holders_remove(struct holders *h, pid_t pid)
{
	for (int i = 0; i < h->n; i++)
		if (h->pid[i] == pid)
			h->pid[i--] = h->pid[--h->n];
}

/* Open and lock the state file (creating its directory). */
static FILE *state_open(const char *path, struct cm_error *err)
{
	char dir[4096], *slash;
	int fd;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		cm_errorf(err, errno, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (flock(fd, LOCK_EX) < 0 || !(f = fdopen(fd, "r+"))) {
		cm_errorf(err, errno, "%s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	return f;
}

static void paths_default(const struct cm_numa_balancing_paths *in,
			  struct cm_numa_balancing_paths *out)
{
	out->sysctl = in && in->sysctl ? in->sysctl : default_sysctl;
	out->state = in && in->state ? in->state : default_state;
}

/* With no live holder left but a saved value, a previous last holder died
 * without restoring: do it now. */
static int restore_if_orphaned(const struct cm_numa_balancing_paths *p,
			       struct holders *h, struct cm_error *err)
{
	if (h->n > 0 || h->saved < 0)
		return 0;
	if (write_int_file(p->sysctl, h->saved) < 0)
		return cm_errorf(err, errno, "cannot restore %s to %d: %s",
				 p->sysctl, h->saved, strerror(errno));
	h->saved = -1;
	return 0;
}

int cm_numa_balancing_acquire(const struct cm_numa_balancing_paths *paths,
			      pid_t pid, struct cm_error *err)
{
	struct cm_numa_balancing_paths p;
	struct holders h;
	int current, rv = -1;
	FILE *f;

	paths_default(paths, &p);
	if (read_int_file(p.sysctl, &current) < 0)
		return cm_errorf(err, errno == ENOENT ? ENOENT : errno,
				 "%s: %s (kernel without NUMA balancing?)",
				 p.sysctl, strerror(errno));
	f = state_open(p.state, err);
	if (!f)
		return -1;
	holders_read(f, &h);
	if (restore_if_orphaned(&p, &h, err) < 0)
		goto out;
	if (h.n == 0) {
		if (read_int_file(p.sysctl, &current) < 0)
			goto out;
		h.saved = current;
	}
	if (h.n >= MAX_HOLDERS) {
		cm_errorf(err, EBUSY, "%s: too many holders", p.state);
		goto out;
	}
	if (current != 1 && write_int_file(p.sysctl, 1) < 0) {
		cm_errorf(err, errno, "cannot set %s to 1: %s", p.sysctl,
			  strerror(errno));
		goto out;
	}
	holders_remove(&h, pid);
	h.pid[h.n++] = pid;
	rv = holders_write(f, &h) == 0 ? 0 :
		cm_errorf(err, errno, "%s: %s", p.state, strerror(errno));
out:
	fclose(f);	/* also drops the lock */
	return rv;
}

int cm_numa_balancing_release(const struct cm_numa_balancing_paths *paths,
			      pid_t pid, struct cm_error *err)
{
	struct cm_numa_balancing_paths p;
	struct holders h;
	int rv;
	FILE *f;

	paths_default(paths, &p);
	f = state_open(p.state, err);
	if (!f)
		return -1;
	holders_read(f, &h);
	holders_remove(&h, pid);
	rv = restore_if_orphaned(&p, &h, err);
	if (rv == 0 && holders_write(f, &h) < 0)
		rv = cm_errorf(err, errno, "%s: %s", p.state, strerror(errno));
	fclose(f);
	return rv;
}
