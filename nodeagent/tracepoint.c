/* tracepoint.c: tracefs, format files and per-CPU perf rings of filtered
 * tracepoint events, shared by the fault sampler and the CMA tracer (see
 * tracepoint.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fault_sample.h"
#include "perf_sample.h"
#include "tracepoint.h"

#define DEFAULT_TRACEFS "/sys/kernel/tracing"
#define DEBUGFS_TRACEFS "/sys/kernel/debug/tracing"

/* ---- format files ------------------------------------------------------ */

/* "N" up to ';' or a blank, N a decimal number <= CM_TP_FORMAT_NUM_MAX
 * (strtoul alone would take "-8" as a huge offset). */
static bool format_num(const char *p, unsigned *v)
{
	unsigned long n = 0;

	if (!isdigit((unsigned char)*p))
		return false;
	for (; isdigit((unsigned char)*p); p++) {
		n = n * 10 + (unsigned long)(*p - '0');
		if (n > CM_TP_FORMAT_NUM_MAX)
			return false;
	}
	if (*p != ';' && *p != '\0' && !isspace((unsigned char)*p))
		return false;
	*v = (unsigned)n;
	return true;
}

/* "KEY" in [p, end) followed by a number. */
static bool key_num(const char *p, const char *end, const char *key,
		    unsigned *v)
{
	size_t kl = strlen(key);

	for (; p + kl <= end; p++)
		if (memcmp(p, key, kl) == 0)
			return format_num(p + kl, v);
	return false;
}

int cm_tp_format_line(const char *line, const char *end, const char **name,
		      size_t *namelen, unsigned *off, unsigned *size)
{
	const char *f, *semi, *w;

	for (f = line; f + 6 <= end && memcmp(f, "field:", 6); f++)
		;
	if (f + 6 > end)
		return 0;
	semi = memchr(f, ';', (size_t)(end - f));
	if (!semi)
		return 0;
	for (w = semi; w > f + 6 && w[-1] != ' ' && w[-1] != ':' &&
	     w[-1] != '*'; w--)
		;
	if (w == semi)
		return 0;
	*name = w;
	*namelen = (size_t)(semi - w);
	if (!key_num(semi, end, "offset:", off) ||
	    !key_num(semi, end, "size:", size))
		return -1;
	return 1;
}

/* ---- tracefs ----------------------------------------------------------- */

ssize_t cm_tp_read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -1;
	while ((size_t)got < len - 1 &&
	       (n = read(fd, buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

static bool readable(const char *root, const char *probe)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, probe);
	return access(path, R_OK) == 0;
}

const char *cm_tp_tracefs_root(const char *given, const char *probe)
{
	if (given)
		return given;
	if (readable(DEFAULT_TRACEFS, probe))
		return DEFAULT_TRACEFS;
	/* Not mounted (no README): mount it where it belongs. */
	if (access(DEFAULT_TRACEFS "/README", F_OK) < 0 &&
	    mount("nodev", DEFAULT_TRACEFS, "tracefs", 0, NULL) == 0)
		return DEFAULT_TRACEFS;
	if (readable(DEBUGFS_TRACEFS, probe))
		return DEBUGFS_TRACEFS;
	return DEFAULT_TRACEFS;
}

int cm_tp_read_id(const char *root, const char *event, uint64_t *id)
{
	char path[512], buf[32];

	snprintf(path, sizeof(path), "%s/events/%s/id", root, event);
	if (cm_tp_read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	*id = strtoull(buf, NULL, 10);
	if (!*id) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

int cm_tp_paranoid(void)
{
	char buf[32];

	if (cm_tp_read_small("/proc/sys/kernel/perf_event_paranoid", buf,
			     sizeof(buf)) <= 0)
		return 99;
	return atoi(buf);
}

int cm_tp_open_error(struct cm_error *err, const char *who,
		     const char *event, int e, int cpu)
{
	if (e == EACCES || e == EPERM)
		return cm_errorf(err, e, "%s: perf_event_open(%s, cpu %d): "
				 "%s; CPU-wide tracepoints need root or "
				 "CAP_PERFMON (kernel.perf_event_paranoid "
				 "is %d)", who, event, cpu, strerror(e),
				 cm_tp_paranoid());
	return cm_errorf(err, e, "%s: perf_event_open(%s, cpu %d): %s", who,
			 event, cpu, strerror(e));
}

/* ---- rings ------------------------------------------------------------- */

static void rings_attr(struct perf_event_attr *a, unsigned pages)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->sample_period = 1;	/* every event */
	a->sample_type = CM_TP_SAMPLE_TYPE;
	a->disabled = 1;
	a->use_clockid = 1;	/* same clock as the sample backend */
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = pages * (uint32_t)getpagesize() / 4;
}

static int open_event(const struct cm_tp_rings *r, int k, int cpu)
{
	struct perf_event_attr a = r->attr;

	a.config = r->ids[k];
	return (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

static int map_ring(const struct cm_tp_rings *r, struct cm_tp_ring *g,
		    unsigned pages, struct cm_error *err)
{
	size_t page = (size_t)getpagesize();
	struct perf_event_mmap_page *meta;

	g->maplen = (1 + (size_t)pages) * page;
	g->base = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE, MAP_SHARED,
		       g->owner, 0);
	if (g->base == MAP_FAILED) {
		g->base = NULL;
		return cm_errorf(err, errno, "%s: mmap of a ring (%zu bytes): "
				 "%s", r->who, g->maplen, strerror(errno));
	}
	meta = g->base;
	g->data = (uint8_t *)g->base + (meta->data_offset ? meta->data_offset
					: page);
	g->size = meta->data_size ? meta->data_size : (uint64_t)pages * page;
	return 0;
}

/* One CPU's ring: its owner event, mapped and enabled.  0 (also when the
 * CPU is offline: nothing opened), -1. */
static int open_cpu(struct cm_tp_rings *r, int cpu, unsigned pages,
		    struct cm_error *err)
{
	struct cm_tp_ring *g = &r->ring[r->nring];

	g->cpu = cpu;
	for (int k = 0; k < CM_TP_EVENTS_MAX; k++)
		g->active[k] = -1;
	g->owner = open_event(r, 0, cpu);
	if (g->owner < 0)
		return errno == ENODEV ? 0 :
		       cm_tp_open_error(err, r->who, r->event, errno, cpu);
	r->nring++;	/* closed with what it has */
	if (ioctl(g->owner, PERF_EVENT_IOC_SET_FILTER, "common_pid<0"))
		return cm_errorf(err, errno, "%s: cpu %d: cannot set a filter: "
				 "%s", r->who, cpu, strerror(errno));
	if (map_ring(r, g, pages, err))
		return -1;
	if (ioctl(g->owner, PERF_EVENT_IOC_ENABLE, 0))
		return cm_errorf(err, errno, "%s: enable: %s", r->who,
				 strerror(errno));
	return 0;
}

int cm_tp_rings_open(struct cm_tp_rings *r, unsigned pages,
		     struct cm_error *err)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	r->ring = NULL;
	r->nring = 0;
	if (!pages || (pages & (pages - 1)))
		return cm_errorf(err, EINVAL, "%s: ring_pages %u is not a "
				 "power of two", r->who, pages);
	if (r->nids < 1 || r->nids > CM_TP_EVENTS_MAX)
		return cm_errorf(err, EINVAL, "%s: %d tracepoints", r->who,
				 r->nids);
	if (ncpu < 1 || !(r->ring = calloc((size_t)ncpu, sizeof(*r->ring))))
		return cm_errorf(err, ENOMEM, "%s: out of memory", r->who);
	rings_attr(&r->attr, pages);
	for (int cpu = 0; cpu < ncpu; cpu++)
		if (open_cpu(r, cpu, pages, err))
			goto fail;
	if (!r->nring) {
		cm_errorf(err, ENODEV, "%s: no online CPU", r->who);
		goto fail;
	}
	return 0;
fail:
	cm_tp_rings_close(r);
	return -1;
}

void cm_tp_rings_close(struct cm_tp_rings *r)
{
	int e = errno;

	for (int i = 0; r->ring && i < r->nring; i++) {
		struct cm_tp_ring *g = &r->ring[i];

		for (int k = 0; k < CM_TP_EVENTS_MAX; k++)
			if (g->active[k] >= 0)
				close(g->active[k]);
		if (g->base)
			munmap(g->base, g->maplen);
		close(g->owner);
	}
	free(r->ring);
	r->ring = NULL;
	r->nring = 0;
	errno = e;
}

/* An active event of tracepoint k on ring g's CPU with this filter (NULL:
 * none), writing into g's ring; -1 with errno (nothing left open). */
static int open_active(const struct cm_tp_rings *r,
		       const struct cm_tp_ring *g, int k, const char *filter)
{
	int fd = open_event(r, k, g->cpu);

	if (fd < 0)
		return -1;
	if ((filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter)) ||
	    ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, g->owner)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int cm_tp_rings_filter(struct cm_tp_rings *r, const char *filter)
{
	size_t n = (size_t)r->nring * (size_t)r->nids, k = (size_t)r->nids;
	int *fds = malloc((n ? n : 1) * sizeof(*fds));

	if (!fds)
		return -1;
	for (size_t i = 0; i < n; i++) {
		fds[i] = open_active(r, &r->ring[i / k], (int)(i % k), filter);
		if (fds[i] < 0) {
			int e = errno;

			while (i-- > 0)
				close(fds[i]);
			free(fds);
			errno = e;
			return -1;
		}
	}
	/* Old off, new on: a gap of microseconds, no event twice. */
	for (size_t i = 0; i < n; i++) {
		int *old = &r->ring[i / k].active[i % k];

		if (*old >= 0) {
			ioctl(*old, PERF_EVENT_IOC_DISABLE, 0);
			close(*old);
		}
		ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
		*old = fds[i];
	}
	free(fds);
	return 0;
}

int cm_tp_rings_set_tids(struct cm_tp_rings *r, pid_t *tids, int n)
{
	char filter[CM_TP_FILTER_MAX];

	if (!r || n < 0 || (n > 0 && !tids)) {
		errno = EINVAL;
		return -1;
	}
	if (cm_fault_filter_build(tids, n, filter, sizeof(filter)) >= 0 &&
	    cm_tp_rings_filter(r, filter) == 0)
		return 0;
	/* Too long, or refused: every process's events, dropped by the
	 * consumer's identity check (correct, only more expensive). */
	return cm_tp_rings_filter(r, NULL) < 0 ? -1 : 1;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Non-sample records: lost counts are kept, the rest skipped. */
static void other_record(const uint8_t *p, size_t len,
			 struct cm_tp_counts *c)
{
	struct perf_event_header h;

	memcpy(&h, p, sizeof(h));
	if (h.type == PERF_RECORD_LOST && len >= 24)
		c->lost += get64(p + 16);
	else if (h.type == PERF_RECORD_LOST_SAMPLES && len >= 16)
		c->lost += get64(p + 8);
	else
		c->other++;
}

void cm_tp_ring_drain(struct cm_tp_rings *r, int i, uint8_t *buf,
		      size_t buflen, cm_tp_record_fn fn, void *arg,
		      struct cm_tp_counts *c)
{
	struct cm_tp_ring *g = &r->ring[i];
	struct perf_event_mmap_page *meta = g->base;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	const uint8_t *p;
	size_t len;
	int got;

	while ((got = cm_perf_ring_next(g->data, g->size, head, &tail, buf,
					buflen, &p, &len, NULL)) > 0) {
		struct perf_event_header h;

		memcpy(&h, p, sizeof(h));
		if (h.type != PERF_RECORD_SAMPLE)
			other_record(p, len, c);
		else
			fn(p, len, arg);
	}
	if (got < 0) {
		c->malformed++;
		tail = head;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

int cm_tp_rings_pollfds(const struct cm_tp_rings *r, struct pollfd *pfd,
			int max)
{
	int n = 0;

	for (int i = 0; r && i < r->nring && n < max; i++) {
		pfd[n].fd = r->ring[i].owner;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		n++;
	}
	return n;
}
