/* record.c: writing recordings (see record.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cma_attrib.h"
#include "record.h"

/* Accesses stop being written past this size (a replay reads at most
 * 1 GiB); the trailer still is, with the count of those left out. */
#define RECORD_MAX_BYTES ((1ull << 30) - (1ull << 20))

struct cm_recorder {
	FILE *f;
	char path[4096];
	int err;		/* first errno, 0 none */
	uint64_t bytes;		/* written so far */
	uint64_t dropped;	/* accesses left out past the limit */
	unsigned char *seen;	/* per thread index: 1 written, 2 exited */
	int seen_cap;
	int options;		/* the options line was written */
	int cma_unit;		/* the cma_unit line was written */
};

static uint64_t clock_now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Keep the first error; stop writing after it. */
static void check(struct cm_recorder *r, int rc)
{
	if (rc < 0 && !r->err)
		r->err = errno ? errno : EIO;
	else if (rc > 0)
		r->bytes += (uint64_t)rc;
}

struct cm_recorder *cm_record_open(const char *path, struct cm_error *err)
{
	struct cm_recorder *r = calloc(1, sizeof(*r));
	int fd;

	if (!r) {
		cm_errorf(err, ENOMEM, "record: out of memory");
		return NULL;
	}
	snprintf(r->path, sizeof(r->path), "%s", path);
	/* O_NOFOLLOW: never write through a link someone left there. */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	r->f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!r->f) {
		cm_errorf(err, errno, "record: cannot create %s: %s", path,
			  strerror(errno));
		if (fd >= 0)
			close(fd);
		free(r);
		return NULL;
	}
	check(r, fprintf(r->f, "%s %d\n", CM_RECORD_FORMAT,
			 CM_RECORD_VERSION));
	check(r, fprintf(r->f, "start %llu %llu\n",
			 (unsigned long long)clock_now(CLOCK_REALTIME),
			 (unsigned long long)clock_now(CLOCK_MONOTONIC)));
	return r;
}

void cm_record_detect(struct cm_recorder *r,
		      const struct cm_detect_config *cfg)
{
	if (!r || r->err)
		return;
	check(r, fprintf(r->f, "detect %u %u %llu\n", cfg->block_size,
			 cfg->slots, (unsigned long long)cfg->window_ns));
}

int cm_record_has_thread(const struct cm_recorder *r, int i)
{
	return r && i >= 0 && i < r->seen_cap && r->seen[i];
}

static int mark_seen(struct cm_recorder *r, int i)
{
	if (i >= r->seen_cap) {
		int cap = r->seen_cap ? r->seen_cap : 64;
		unsigned char *s;

		while (cap <= i)
			cap *= 2;
		s = realloc(r->seen, (size_t)cap);
		if (!s)
			return -1;
		memset(s + r->seen_cap, 0, (size_t)(cap - r->seen_cap));
		r->seen = s;
		r->seen_cap = cap;
	}
	r->seen[i] = 1;
	return 0;
}

void cm_record_thread(struct cm_recorder *r, int i, pid_t pid, pid_t tid,
		      int rank, int index)
{
	if (!r || r->err || i < 0 || cm_record_has_thread(r, i))
		return;
	if (mark_seen(r, i) < 0) {
		r->err = ENOMEM;
		return;
	}
	check(r, fprintf(r->f, "thread %d %d %d %d %d\n", i, (int)pid,
			 (int)tid, rank, index));
}

void cm_record_options(struct cm_recorder *r, uint64_t t0_ns, double alpha,
		       double gain, double near_seen, const char *mode)
{
	if (!r || r->err || r->options)
		return;
	r->options = 1;
	/* %.17g: the replay decides with the very same doubles */
	check(r, fprintf(r->f, "options %llu %.17g %.17g %s %.17g\n",
			 (unsigned long long)t0_ns, alpha, gain,
			 mode && *mode ? mode : "dynamic", near_seen));
}

void cm_record_exit(struct cm_recorder *r, int i)
{
	if (!r || r->err || !cm_record_has_thread(r, i) || r->seen[i] == 2)
		return;
	r->seen[i] = 2;
	check(r, fprintf(r->f, "exit %d\n", i));
}

/* Past the size limit, lines of the decisions are left out as accesses
 * are (the replay says the recording was cut); 1: leave this one out. */
static int over_limit(struct cm_recorder *r)
{
	if (r->bytes < RECORD_MAX_BYTES)
		return 0;
	r->dropped++;
	return 1;
}

void cm_record_clock(struct cm_recorder *r, uint64_t t_ns, int interval_ms,
		     uint64_t app_ns)
{
	if (!r || r->err || over_limit(r))
		return;
	if (interval_ms > 0)
		check(r, fprintf(r->f, "interval %llu %d %llu\n",
				 (unsigned long long)t_ns, interval_ms,
				 (unsigned long long)app_ns));
	else
		check(r, fprintf(r->f, "checkpoint %llu %llu\n",
				 (unsigned long long)t_ns,
				 (unsigned long long)app_ns));
}

void cm_record_snapshot(struct cm_recorder *r, char kind, uint64_t t_ns,
			int n, const double *cpu, const double *wait)
{
	if (!r || r->err || over_limit(r))
		return;
	check(r, fprintf(r->f, "snap %c %llu %d\n", kind,
			 (unsigned long long)t_ns, n));
	for (int i = 0; i < n && !r->err; i++)
		check(r, fprintf(r->f, "s %.17g %.17g\n", cpu[i], wait[i]));
}

void cm_record_access(struct cm_recorder *r, int i,
		      const struct cm_block_key *key, uint64_t region,
		      int cls, uint64_t time_ns)
{
	if (!r || r->err || over_limit(r))
		return;
	check(r, fprintf(r->f, "a %llu %d %llx %llx %llx %d %llx %d\n",
			 (unsigned long long)time_ns, i,
			 (unsigned long long)key->space,
			 (unsigned long long)key->inode,
			 (unsigned long long)key->addr, key->shared ? 1 : 0,
			 (unsigned long long)region, cls));
}

void cm_record_nopin(struct cm_recorder *r, uint64_t t_ns, int i, int os,
		     int err)
{
	if (!r || r->err || over_limit(r))
		return;
	check(r, fprintf(r->f, "nopin %llu %d %d %d\n",
			 (unsigned long long)t_ns, i, os, err));
}

void cm_record_cma(struct cm_recorder *r, const struct cm_cma_transfer *x,
		   double bytes_per_unit)
{
	if (!r || r->err || over_limit(r))
		return;
	if (!r->cma_unit) {
		r->cma_unit = 1;
		check(r, fprintf(r->f, "cma_unit %.17g\n", bytes_per_unit > 0 ?
				 bytes_per_unit : CM_CMA_BYTES_PER_UNIT));
	}
	check(r, fprintf(r->f, "cma %llu %u %u %u %llu\n",
			 (unsigned long long)x->time, x->pid, x->tid, x->peer,
			 (unsigned long long)x->bytes));
}

void cm_record_shm(struct cm_recorder *r, uint64_t time_ns, int i, int j,
		   double weight)
{
	if (!r || r->err || over_limit(r))
		return;
	check(r, fprintf(r->f, "shm %llu %d %d %.17g\n",
			 (unsigned long long)time_ns, i, j, weight));
}

/* The topology lines: both or neither. */
static void write_topology(struct cm_recorder *r, const struct cm_topo *topo)
{
	char *syn = topo ? cm_topo_synthetic(topo) : NULL;
	char *cpus = syn ? cm_topo_cpulist(topo) : NULL;

	if (cpus) {
		check(r, fprintf(r->f, "topology %s\n", syn));
		check(r, fprintf(r->f, "cpuset %s\n", cpus));
	}
	free(syn);
	free(cpus);
}

int cm_record_close(struct cm_recorder *r, const struct cm_topo *topo,
		    int dry_run, const char *mode, struct cm_error *err)
{
	int e;

	if (!r)
		return 0;
	if (!r->err) {
		write_topology(r, topo);
		if (r->dropped)
			check(r, fprintf(r->f, "dropped %llu\n",
					 (unsigned long long)r->dropped));
		check(r, fprintf(r->f, "dry_run %d\nmode %s\nend\n",
				 dry_run ? 1 : 0, mode ? mode : "dynamic"));
	}
	if (fflush(r->f) != 0 && !r->err)
		r->err = errno;
	if (fclose(r->f) != 0 && !r->err)
		r->err = errno;
	e = r->err;
	if (e)
		cm_errorf(err, e, "record: %s is incomplete: %s", r->path,
			  strerror(e));
	free(r->seen);
	free(r);
	return e ? -1 : 0;
}
