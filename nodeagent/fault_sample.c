/* fault_sample.c: NUMA-balancing hinting faults through the
 * exceptions:page_fault_user tracepoint (see fault_sample.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
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

#define TP_PATH "events/exceptions/page_fault_user"
#define DEFAULT_TRACEFS "/sys/kernel/tracing"
#define DEBUGFS_TRACEFS "/sys/kernel/debug/tracing"
/* The kernel copies at most a page of filter text. */
#define FILTER_MAX 4096

/* ---- pure parsing ------------------------------------------------------ */

void cm_fault_format_default(struct cm_fault_format *f)
{
	f->pid_off = 4;
	f->addr_off = 8;
	f->ip_off = 16;
	f->err_off = 24;
	f->min_size = 32;
}

/* Largest offset or size believed: a trace entry lives in one page. */
#define FORMAT_NUM_MAX 65535u

/* "N" up to ';' or a blank, N a decimal number <= FORMAT_NUM_MAX (strtoul
 * alone would take "-8" as a huge offset). */
static bool format_num(const char *p, unsigned *v)
{
	unsigned long n = 0;

	if (!isdigit((unsigned char)*p))
		return false;
	for (; isdigit((unsigned char)*p); p++) {
		n = n * 10 + (unsigned long)(*p - '0');
		if (n > FORMAT_NUM_MAX)
			return false;
	}
	if (*p != ';' && *p != '\0' && !isspace((unsigned char)*p))
		return false;
	*v = (unsigned)n;
	return true;
}

/* One "field:TYPE NAME;\toffset:N;\tsize:N;" line: the name (last word
 * before ';'), offset and size.  1 a field, 0 no field, -1 a field whose
 * offset or size is not a number in range. */
static int format_line(const char *line, const char *end, char *name,
		       size_t namelen, unsigned *off, unsigned *size)
{
	const char *f = strstr(line, "field:"), *semi, *w, *o, *s;
	size_t n;

	if (!f || f >= end)
		return 0;
	semi = memchr(f, ';', (size_t)(end - f));
	if (!semi)
		return 0;
	for (w = semi; w > f && w[-1] != ' ' && w[-1] != ':'; w--)
		;
	n = (size_t)(semi - w);
	if (n == 0 || n >= namelen)
		return 0;
	memcpy(name, w, n);
	name[n] = '\0';
	o = strstr(semi, "offset:");
	s = strstr(semi, "size:");
	if (!o || !s || o >= end || s >= end)
		return 0;
	if (!format_num(o + 7, off) || !format_num(s + 5, size))
		return -1;
	return 1;
}

struct want_field {
	const char *name;
	unsigned size;
	unsigned *off;
	bool found;
};

int cm_fault_format_parse(const char *text, struct cm_fault_format *f,
			  struct cm_error *err)
{
	struct cm_fault_format r = { 0 };
	struct want_field w[] = {
		{ "common_pid", 4, &r.pid_off, false },
		{ "address", 8, &r.addr_off, false },
		{ "ip", 8, &r.ip_off, false },
		{ "error_code", 8, &r.err_off, false },
	};
	const char *line = text;

	if (!text || !f)
		return cm_errorf(err, EINVAL, "fault format: NULL argument");
	while (line && *line) {
		const char *end = strchr(line, '\n');
		char name[64];
		unsigned off, size;

		if (!end)
			end = line + strlen(line);
		int kind = format_line(line, end, name, sizeof(name), &off,
				       &size);

		if (kind != 0) {
			for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
				if (strcmp(name, w[i].name))
					continue;
				if (kind < 0)
					return cm_errorf(err, EBADMSG, "fault "
						"format: field %s: offset or "
						"size is not a number up to "
						"%u", name, FORMAT_NUM_MAX);
				if (size != w[i].size)
					return cm_errorf(err, EBADMSG, "fault "
						"format: field %s has size %u, "
						"want %u", name, size,
						w[i].size);
				*w[i].off = off;
				w[i].found = true;
				if (off + size > r.min_size)
					r.min_size = off + size;
			}
		}
		line = *end ? end + 1 : NULL;
	}
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (!w[i].found)
			return cm_errorf(err, EBADMSG, "fault format: no field "
					 "%s", w[i].name);
	*f = r;
	return 0;
}

int cm_fault_is_hinting(uint64_t error_code)
{
	return (error_code & CM_FAULT_ERR_PRESENT) != 0;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int cm_fault_parse_sample(const struct cm_fault_format *f, const void *rec,
			  size_t len, struct cm_fault *out,
			  struct cm_error *err)
{
	const uint8_t *p = rec, *raw;
	struct perf_event_header h;
	uint32_t rawsize;

	if (!f || !rec || !out)
		return cm_errorf(err, EINVAL, "fault record: NULL argument");
	if (len < sizeof(h))
		return cm_errorf(err, EBADMSG, "fault record: %zu bytes, "
				 "shorter than a header", len);
	memcpy(&h, p, sizeof(h));
	if (h.type != PERF_RECORD_SAMPLE)
		return cm_errorf(err, EINVAL, "fault record: type %u is not a "
				 "sample", h.type);
	if (h.size > len || h.size < sizeof(h) + 20)
		return cm_errorf(err, EBADMSG, "fault record: size %u (have "
				 "%zu, need >= %zu)", h.size, len,
				 sizeof(h) + 20);
	/* TID: pid, tid; TIME; RAW: u32 size then the trace entry. */
	out->pid = get32(p + 8);
	out->tid = get32(p + 12);
	out->time = get64(p + 16);
	rawsize = get32(p + 24);
	raw = p + 28;
	if (rawsize > (size_t)h.size - 28)
		return cm_errorf(err, EBADMSG, "fault record: raw size %u runs "
				 "past the record (%u bytes)", rawsize, h.size);
	if (rawsize < f->min_size)
		return cm_errorf(err, EBADMSG, "fault record: raw size %u, "
				 "the trace entry needs %u", rawsize,
				 f->min_size);
	out->addr = get64(raw + f->addr_off);
	out->ip = get64(raw + f->ip_off);
	out->error_code = get64(raw + f->err_off);
	out->hinting = cm_fault_is_hinting(out->error_code);
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Append one term; false when it does not fit. */
static bool filter_term(char *buf, size_t len, size_t *pos, pid_t lo,
			pid_t hi)
{
	int n;

	if (lo == hi)
		n = snprintf(buf + *pos, len - *pos, "%scommon_pid==%d",
			     *pos ? "||" : "", (int)lo);
	else
		n = snprintf(buf + *pos, len - *pos,
			     "%s(common_pid>=%d&&common_pid<=%d)",
			     *pos ? "||" : "", (int)lo, (int)hi);
	if (n < 0 || (size_t)n >= len - *pos)
		return false;
	*pos += (size_t)n;
	return true;
}

int cm_fault_filter_build(pid_t *tids, int n, char *buf, size_t len)
{
	size_t pos = 0;

	if (!buf || !len || n < 0 || (n > 0 && !tids))
		return cm_errorf(NULL, EINVAL, "fault filter: bad argument");
	if (n == 0) {
		if (len <= strlen("common_pid<0"))
			return cm_errorf(NULL, ENOSPC, "fault filter: no room");
		strcpy(buf, "common_pid<0");
		return (int)strlen(buf);
	}
	qsort(tids, (size_t)n, sizeof(*tids), cmp_pid);
	for (int i = 0; i < n;) {
		int j = i;

		while (j + 1 < n && tids[j + 1] - tids[j] <= 1)
			j++;	/* a run of consecutive (or equal) tids */
		if (!filter_term(buf, len, &pos, tids[i], tids[j])) {
			buf[0] = '\0';
			return cm_errorf(NULL, ENOSPC, "fault filter: more "
					 "than %zu bytes", len);
		}
		i = j + 1;
	}
	return (int)pos;
}

/* ---- the sampler ------------------------------------------------------- */

/* Per CPU: the ring belongs to an event whose filter matches nothing
 * (owner); the event doing the work (active) writes into it.  The kernel
 * lets a perf tracepoint event have a filter set only once (EEXIST after),
 * so a new thread set means a new active event, redirected into the same
 * ring (PERF_EVENT_IOC_SET_OUTPUT), and the old one closed. */
struct fring {
	int cpu;
	int fd;			/* owner: mapped, polled */
	int active;		/* -1 none yet */
	void *base;
	size_t maplen;
	uint8_t *data;
	uint64_t size;
};

struct cm_fault_sampler {
	struct cm_fault_format fmt;
	struct perf_event_attr attr;
	struct fring *rings;
	int ncpu, nrings;
	struct cm_fault_stats st;
	uint8_t buf[65536];	/* a record wrapping at the ring's end */
};

void cm_fault_config_default(struct cm_fault_config *cfg)
{
	cfg->tracefs = NULL;
	cfg->ring_pages = CM_FAULT_DEFAULT_RING_PAGES;
}

/* Whole small file into buf (NUL-terminated); bytes read or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
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

static int read_tp_id(const char *root, uint64_t *id)
{
	char path[512], buf[32];

	snprintf(path, sizeof(path), "%s/" TP_PATH "/id", root);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	*id = strtoull(buf, NULL, 10);
	return *id ? 0 : -1;
}

/* The tracepoint's id and format.  With no root given, tracefs is
 * mounted at its usual place when it is not (root only), and the debugfs
 * path is tried last. */
static int find_tracepoint(const struct cm_fault_config *cfg, uint64_t *id,
			   struct cm_fault_format *fmt, struct cm_error *err)
{
	const char *root = cfg->tracefs;
	char path[512], text[8192];

	if (!root) {
		root = DEFAULT_TRACEFS;
		/* Not mounted (no README): mount it, or try debugfs. */
		if (read_tp_id(root, id) < 0 &&
		    access(DEFAULT_TRACEFS "/README", F_OK) < 0 &&
		    mount("nodev", DEFAULT_TRACEFS, "tracefs", 0, NULL) < 0 &&
		    read_tp_id(DEBUGFS_TRACEFS, id) == 0)
			root = DEBUGFS_TRACEFS;
	}
	if (read_tp_id(root, id) < 0)
		return cm_errorf(err, ENOENT, "fault backend: cannot read %s/"
				 TP_PATH "/id: %s (tracefs not mounted, or no "
				 "such tracepoint in this kernel)", root,
				 strerror(errno));
	snprintf(path, sizeof(path), "%s/" TP_PATH "/format", root);
	if (read_small(path, text, sizeof(text)) <= 0) {
		cm_fault_format_default(fmt);
		return 0;
	}
	return cm_fault_format_parse(text, fmt, err);
}

static int paranoid(void)
{
	char buf[32];

	if (read_small("/proc/sys/kernel/perf_event_paranoid", buf,
		       sizeof(buf)) <= 0)
		return 99;
	return atoi(buf);
}

static int open_error(struct cm_error *err, int e, int cpu)
{
	if (e == EACCES || e == EPERM)
		return cm_errorf(err, e, "perf_event_open(exceptions:"
				 "page_fault_user, cpu %d): %s; CPU-wide "
				 "tracepoints need root or CAP_PERFMON "
				 "(kernel.perf_event_paranoid is %d)", cpu,
				 strerror(e), paranoid());
	return cm_errorf(err, e, "perf_event_open(exceptions:page_fault_user,"
			 " cpu %d): %s", cpu, strerror(e));
}

static int map_fring(struct fring *r, unsigned pages, struct cm_error *err)
{
	size_t page = (size_t)getpagesize();
	struct perf_event_mmap_page *meta;

	r->maplen = (1 + (size_t)pages) * page;
	r->base = mmap(NULL, r->maplen, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		return cm_errorf(err, errno, "fault backend: mmap of a ring "
				 "(%zu bytes): %s", r->maplen,
				 strerror(errno));
	}
	meta = r->base;
	r->data = (uint8_t *)r->base + (meta->data_offset ? meta->data_offset
					: page);
	r->size = meta->data_size ? meta->data_size : (uint64_t)pages * page;
	return 0;
}

static int open_cpu(struct cm_fault_sampler *s, struct perf_event_attr *a,
		    int cpu, unsigned pages, struct cm_error *err)
{
	struct fring *r = &s->rings[s->nrings];

	r->cpu = cpu;
	r->active = -1;
	r->fd = (int)syscall(SYS_perf_event_open, a, -1, cpu, -1,
			     PERF_FLAG_FD_CLOEXEC);
	if (r->fd < 0)
		return errno == ENODEV ? 0 : open_error(err, errno, cpu);
	s->nrings++;
	if (ioctl(r->fd, PERF_EVENT_IOC_SET_FILTER, "common_pid<0"))
		return cm_errorf(err, errno, "fault backend: cpu %d: cannot "
				 "set a filter: %s", cpu, strerror(errno));
	if (map_fring(r, pages, err))
		return -1;
	if (ioctl(r->fd, PERF_EVENT_IOC_ENABLE, 0))
		return cm_errorf(err, errno, "fault backend: enable: %s",
				 strerror(errno));
	return 0;
}

struct cm_fault_sampler *cm_fault_sampler_new(const struct cm_fault_config *c,
					      struct cm_error *err)
{
	struct cm_fault_config def;
	struct cm_fault_sampler *s;
	struct perf_event_attr a;
	uint64_t id = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	if (!c) {
		cm_fault_config_default(&def);
		c = &def;
	}
	if (!c->ring_pages || (c->ring_pages & (c->ring_pages - 1))) {
		cm_errorf(err, EINVAL, "fault backend: ring_pages %u is not a "
			  "power of two", c->ring_pages);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s || ncpu < 1 ||
	    !(s->rings = calloc((size_t)ncpu, sizeof(*s->rings)))) {
		free(s);
		cm_errorf(err, ENOMEM, "fault backend: out of memory");
		return NULL;
	}
	s->ncpu = (int)ncpu;
	if (find_tracepoint(c, &id, &s->fmt, err))
		goto fail;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = id;
	a.sample_period = 1;	/* every fault */
	a.sample_type = CM_FAULT_SAMPLE_TYPE;
	a.disabled = 1;
	a.use_clockid = 1;	/* same clock as the sample backend */
	a.clockid = CLOCK_MONOTONIC;
	a.watermark = 1;
	a.wakeup_watermark = c->ring_pages * (uint32_t)getpagesize() / 4;
	s->attr = a;
	for (int cpu = 0; cpu < s->ncpu; cpu++)
		if (open_cpu(s, &a, cpu, c->ring_pages, err))
			goto fail;
	if (!s->nrings) {
		cm_errorf(err, ENODEV, "fault backend: no online CPU");
		goto fail;
	}
	return s;
fail:
	cm_fault_sampler_free(s);
	return NULL;
}

void cm_fault_sampler_free(struct cm_fault_sampler *s)
{
	int e = errno;

	if (!s)
		return;
	for (int i = 0; i < s->nrings; i++) {
		if (s->rings[i].active >= 0)
			close(s->rings[i].active);
		if (s->rings[i].base)
			munmap(s->rings[i].base, s->rings[i].maplen);
		close(s->rings[i].fd);
	}
	free(s->rings);
	free(s);
	errno = e;
}

/* A new active event on ring r's CPU with this filter (NULL: none),
 * writing into r's ring; -1 on failure (nothing left open). */
static int open_active(struct cm_fault_sampler *s, const struct fring *r,
		       const char *filter)
{
	int fd = (int)syscall(SYS_perf_event_open, &s->attr, -1, r->cpu, -1,
			      PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return -1;
	if ((filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter)) ||
	    ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Replace every CPU's active event by one with this filter; all or
 * nothing.  0 or -1. */
static int replace_active(struct cm_fault_sampler *s, const char *filter)
{
	int *fds = malloc((size_t)s->nrings * sizeof(*fds));

	if (!fds)
		return -1;
	for (int i = 0; i < s->nrings; i++) {
		fds[i] = open_active(s, &s->rings[i], filter);
		if (fds[i] < 0) {
			int e = errno;

			while (i-- > 0)
				close(fds[i]);
			free(fds);
			errno = e;
			return -1;
		}
	}
	/* Old off, new on: a gap of a few microseconds, no fault twice. */
	for (int i = 0; i < s->nrings; i++) {
		if (s->rings[i].active >= 0) {
			ioctl(s->rings[i].active, PERF_EVENT_IOC_DISABLE, 0);
			close(s->rings[i].active);
		}
		ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
		s->rings[i].active = fds[i];
	}
	free(fds);
	return 0;
}

int cm_fault_sampler_set_tids(struct cm_fault_sampler *s, pid_t *tids, int n)
{
	char filter[FILTER_MAX];

	if (!s || n < 0 || (n > 0 && !tids))
		return cm_errorf(NULL, EINVAL, "fault sampler: bad argument");
	if (cm_fault_filter_build(tids, n, filter, sizeof(filter)) >= 0 &&
	    replace_active(s, filter) == 0) {
		s->st.filters++;
		return 0;
	}
	/* Too long, or refused: every process's faults, dropped by the
	 * consumer's identity check (correct, only more expensive). */
	s->st.filter_fail++;
	if (replace_active(s, NULL) < 0)
		return cm_errorf(NULL, errno, "fault sampler: cannot open "
				 "an event: %s", strerror(errno));
	return 1;
}

/* Non-sample records: lost counts are kept, the rest skipped. */
static void other_record(struct cm_fault_sampler *s, const uint8_t *p,
			 size_t len)
{
	struct perf_event_header h;

	memcpy(&h, p, sizeof(h));
	if (h.type == PERF_RECORD_LOST && len >= 24)
		s->st.lost += get64(p + 16);
	else if (h.type == PERF_RECORD_LOST_SAMPLES && len >= 16)
		s->st.lost += get64(p + 8);
	else
		s->st.other++;
}

static long read_fring(struct cm_fault_sampler *s, struct fring *r,
		       cm_fault_fn fn, void *arg)
{
	struct perf_event_mmap_page *meta = r->base;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	const uint8_t *p;
	struct cm_fault f;
	size_t len;
	long n = 0;
	int got;

	while ((got = cm_perf_ring_next(r->data, r->size, head, &tail,
					s->buf, sizeof(s->buf), &p, &len,
					NULL)) > 0) {
		struct perf_event_header h;

		memcpy(&h, p, sizeof(h));
		if (h.type != PERF_RECORD_SAMPLE) {
			other_record(s, p, len);
			continue;
		}
		if (cm_fault_parse_sample(&s->fmt, p, len, &f, NULL)) {
			s->st.malformed++;
			continue;
		}
		s->st.records++;
		n++;
		if (fn)
			fn(&f, arg);
	}
	if (got < 0) {
		s->st.malformed++;
		tail = head;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

long cm_fault_sampler_read(struct cm_fault_sampler *s, cm_fault_fn fn,
			   void *arg)
{
	long n = 0;

	if (!s)
		return cm_errorf(NULL, EINVAL, "fault sampler: NULL");
	for (int i = 0; i < s->nrings; i++)
		n += read_fring(s, &s->rings[i], fn, arg);
	return n;
}

int cm_fault_sampler_pollfds(const struct cm_fault_sampler *s,
			     struct pollfd *pfd, int max)
{
	int n = 0;

	for (int i = 0; s && i < s->nrings && n < max; i++) {
		pfd[n].fd = s->rings[i].fd;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		n++;
	}
	return n;
}

void cm_fault_sampler_stats(const struct cm_fault_sampler *s,
			    struct cm_fault_stats *st)
{
	if (s)
		*st = s->st;
	else
		memset(st, 0, sizeof(*st));
}

int cm_fault_sampler_nevents(const struct cm_fault_sampler *s)
{
	return s ? s->nrings : 0;
}
