/* cma_trace.c: Cross Memory Attach calls through the syscall tracepoints
 * (see cma_trace.h): the format files, the records, the tracer.  The
 * pairing of enters and exits is in cma_pair.c.
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

#include "cma_trace.h"
#include "fault_sample.h"
#include "perf_sample.h"

#define DEFAULT_TRACEFS "/sys/kernel/tracing"
#define DEBUGFS_TRACEFS "/sys/kernel/debug/tracing"
/* Largest offset or size believed: a trace entry lives in one page. */
#define FORMAT_NUM_MAX 65535u
/* The kernel copies at most a page of filter text. */
#define FILTER_MAX 4096

static const char *const tp_name[CM_CMA_NKINDS] = {
	"sys_enter_process_vm_readv", "sys_enter_process_vm_writev",
	"sys_exit_process_vm_readv", "sys_exit_process_vm_writev",
};

/* ---- pure parsing ------------------------------------------------------ */

void cm_cma_format_default(struct cm_cma_format *f)
{
	memset(f, 0, sizeof(*f));
	f->type_off = 0;
	f->pid_off = 16;
	f->ret_off = 16;
	f->min_enter = 24;
	f->min_exit = 24;
}

/* "N" up to ';' or a blank, N a decimal number <= FORMAT_NUM_MAX. */
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

/* Does line [line, end) declare field `name` ("field:TYPE NAME;")? */
static bool line_names(const char *line, const char *end, const char *name)
{
	const char *f = strstr(line, "field:"), *semi, *w;
	size_t n = strlen(name);

	if (!f || f >= end)
		return false;
	semi = memchr(f, ';', (size_t)(end - f));
	if (!semi)
		return false;
	for (w = semi; w > f && w[-1] != ' ' && w[-1] != ':' &&
	     w[-1] != '*'; w--)
		;
	return (size_t)(semi - w) == n && memcmp(w, name, n) == 0;
}

/* "KEY:N;" of line [semi, end): false when absent or not a number. */
static bool line_num(const char *p, const char *end, const char *key,
		     unsigned *v)
{
	const char *k = strstr(p, key);

	return k && k < end && format_num(k + strlen(key), v);
}

int cm_cma_format_field(const char *text, const char *name, unsigned size,
			unsigned *off, struct cm_error *err)
{
	const char *line = text;

	if (!text || !name || !off)
		return cm_errorf(err, EINVAL, "cma format: NULL argument");
	while (line && *line) {
		const char *end = strchr(line, '\n');
		unsigned o, s;

		if (!end)
			end = line + strlen(line);
		if (line_names(line, end, name)) {
			if (!line_num(line, end, "offset:", &o) ||
			    !line_num(line, end, "size:", &s))
				return cm_errorf(err, EBADMSG, "cma format: "
					"field %s: offset or size is not a "
					"number up to %u", name,
					FORMAT_NUM_MAX);
			if (s != size)
				return cm_errorf(err, EBADMSG, "cma format: "
					"field %s has size %u, want %u", name,
					s, size);
			*off = o;
			return 0;
		}
		line = *end ? end + 1 : NULL;
	}
	return cm_errorf(err, EBADMSG, "cma format: no field %s", name);
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

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Which of the four tracepoints has this id; -1 none. */
static int kind_of(const struct cm_cma_format *f, uint64_t id)
{
	for (int k = 0; k < CM_CMA_NKINDS; k++)
		if (f->id[k] == id)
			return k;
	return -1;
}

int cm_cma_parse_sample(const struct cm_cma_format *f, const void *rec,
			size_t len, struct cm_cma_event *ev,
			struct cm_error *err)
{
	const uint8_t *p = rec, *raw;
	struct perf_event_header h;
	uint32_t rawsize;
	int kind;

	if (!f || !rec || !ev)
		return cm_errorf(err, EINVAL, "cma record: NULL argument");
	if (len < sizeof(h))
		return cm_errorf(err, EBADMSG, "cma record: %zu bytes, "
				 "shorter than a header", len);
	memcpy(&h, p, sizeof(h));
	if (h.type != PERF_RECORD_SAMPLE)
		return cm_errorf(err, EINVAL, "cma record: type %u is not a "
				 "sample", h.type);
	if (h.size > len || h.size < sizeof(h) + 20)
		return cm_errorf(err, EBADMSG, "cma record: size %u (have "
				 "%zu, need >= %zu)", h.size, len,
				 sizeof(h) + 20);
	/* TID: pid, tid; TIME; RAW: u32 size then the trace entry. */
	rawsize = get32(p + 24);
	raw = p + 28;
	if (rawsize > (size_t)h.size - 28)
		return cm_errorf(err, EBADMSG, "cma record: raw size %u runs "
				 "past the record (%u bytes)", rawsize, h.size);
	if (rawsize < f->type_off + 2u)
		return cm_errorf(err, EBADMSG, "cma record: raw size %u has "
				 "no common_type", rawsize);
	kind = kind_of(f, get16(raw + f->type_off));
	if (kind < 0)
		return 1;
	if (rawsize < (kind < CM_CMA_EXIT_READ ? f->min_enter : f->min_exit))
		return cm_errorf(err, EBADMSG, "cma record: raw size %u too "
				 "short for %s", rawsize, tp_name[kind]);
	ev->pid = get32(p + 8);
	ev->tid = get32(p + 12);
	ev->time = get64(p + 16);
	ev->kind = (enum cm_cma_kind)kind;
	ev->value = (int64_t)get64(raw + (kind < CM_CMA_EXIT_READ ?
					  f->pid_off : f->ret_off));
	return 0;
}

/* ---- the tracer -------------------------------------------------------- */

/* Per CPU: the ring belongs to an event whose filter matches nothing
 * (owner); the four events doing the work (active) write into it.  The
 * kernel lets a perf tracepoint event have a filter set only once, so a
 * new thread set means new active events, redirected into the same ring
 * (PERF_EVENT_IOC_SET_OUTPUT: only into a mapped ring), and the old ones
 * closed (the fault sampler does the same). */
struct cring {
	int cpu;
	int owner;		/* mapped, polled; -1 none yet */
	int fd[CM_CMA_NKINDS];	/* active, -1 none */
	void *base;
	size_t maplen;
	uint8_t *data;
	uint64_t size;
};

struct cm_cma_tracer {
	struct cm_cma_format fmt;
	struct perf_event_attr attr;
	struct cring *rings;
	int nrings;
	struct cm_cma_stats st;
	struct cm_cma_pairer *pair;
	size_t nbatch;
	struct cm_cma_event batch[CM_CMA_BATCH];
	uint8_t buf[65536];	/* a record wrapping at the ring's end */
};

void cm_cma_config_default(struct cm_cma_config *cfg)
{
	cfg->tracefs = NULL;
	cfg->ring_pages = CM_CMA_DEFAULT_RING_PAGES;
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

static int read_tp(const char *root, int kind, const char *file, char *buf,
		   size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/events/syscalls/%s/%s", root,
		 tp_name[kind], file);
	return read_small(path, buf, len) > 0 ? 0 : -1;
}

/* tracefs' root: the one given, else the usual place (mounted there when
 * it is not: root only), else the debugfs path. */
static const char *tracefs_root(const struct cm_cma_config *cfg)
{
	char buf[32];

	if (cfg->tracefs)
		return cfg->tracefs;
	if (read_tp(DEFAULT_TRACEFS, 0, "id", buf, sizeof(buf)) == 0)
		return DEFAULT_TRACEFS;
	if (access(DEFAULT_TRACEFS "/README", F_OK) < 0 &&
	    mount("nodev", DEFAULT_TRACEFS, "tracefs", 0, NULL) == 0)
		return DEFAULT_TRACEFS;
	if (read_tp(DEBUGFS_TRACEFS, 0, "id", buf, sizeof(buf)) == 0)
		return DEBUGFS_TRACEFS;
	return DEFAULT_TRACEFS;
}

/* The four ids and the field offsets (the x86-64 layout when a format
 * file is unreadable). */
static int find_tracepoints(const struct cm_cma_config *cfg,
			    struct cm_cma_format *f, struct cm_error *err)
{
	const char *root = tracefs_root(cfg);
	char text[4096];
	unsigned off;

	cm_cma_format_default(f);
	for (int k = 0; k < CM_CMA_NKINDS; k++) {
		if (read_tp(root, k, "id", text, sizeof(text)) < 0 ||
		    !(f->id[k] = strtoull(text, NULL, 10)))
			return cm_errorf(err, ENOENT, "cma tracing: cannot "
				"read %s/events/syscalls/%s/id (tracefs not "
				"mounted, or a kernel without syscall "
				"tracepoints)", root, tp_name[k]);
	}
	if (read_tp(root, CM_CMA_ENTER_READ, "format", text, sizeof(text)) ==
	    0) {
		if (cm_cma_format_field(text, "pid", 8, &off, err))
			return -1;
		f->pid_off = off;
		f->min_enter = off + 8;
	}
	if (read_tp(root, CM_CMA_EXIT_READ, "format", text, sizeof(text)) ==
	    0) {
		if (cm_cma_format_field(text, "ret", 8, &off, err))
			return -1;
		f->ret_off = off;
		f->min_exit = off + 8;
	}
	return 0;
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
		return cm_errorf(err, e, "cma tracing: perf_event_open(syscalls"
				 ":process_vm_*, cpu %d): %s; CPU-wide "
				 "tracepoints need root or CAP_PERFMON "
				 "(kernel.perf_event_paranoid is %d)", cpu,
				 strerror(e), paranoid());
	return cm_errorf(err, e, "cma tracing: perf_event_open(syscalls:"
			 "process_vm_*, cpu %d): %s", cpu, strerror(e));
}

static int map_cring(struct cring *r, unsigned pages, struct cm_error *err)
{
	size_t page = (size_t)getpagesize();
	struct perf_event_mmap_page *meta;

	r->maplen = (1 + (size_t)pages) * page;
	r->base = mmap(NULL, r->maplen, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->owner, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		return cm_errorf(err, errno, "cma tracing: mmap of a ring "
				 "(%zu bytes): %s", r->maplen,
				 strerror(errno));
	}
	meta = r->base;
	r->data = (uint8_t *)r->base + (meta->data_offset ? meta->data_offset
					: page);
	r->size = meta->data_size ? meta->data_size : (uint64_t)pages * page;
	return 0;
}

static int open_event(struct cm_cma_tracer *t, int kind, int cpu)
{
	struct perf_event_attr a = t->attr;

	a.config = t->fmt.id[kind];
	return (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

/* One CPU's ring: its owner event (a filter matching nothing), mapped and
 * enabled.  0 (also when the CPU is offline: nothing opened), -1. */
static int open_cpu(struct cm_cma_tracer *t, int cpu, unsigned pages,
		    struct cm_error *err)
{
	struct cring *r = &t->rings[t->nrings];

	r->cpu = cpu;
	for (int k = 0; k < CM_CMA_NKINDS; k++)
		r->fd[k] = -1;
	r->owner = open_event(t, 0, cpu);
	if (r->owner < 0)
		return errno == ENODEV ? 0 : open_error(err, errno, cpu);
	t->nrings++;	/* freed with what it has */
	if (ioctl(r->owner, PERF_EVENT_IOC_SET_FILTER, "common_pid<0"))
		return cm_errorf(err, errno, "cma tracing: cpu %d: cannot set "
				 "a filter: %s", cpu, strerror(errno));
	if (map_cring(r, pages, err))
		return -1;
	if (ioctl(r->owner, PERF_EVENT_IOC_ENABLE, 0))
		return cm_errorf(err, errno, "cma tracing: enable: %s",
				 strerror(errno));
	return 0;
}

/* An active event of this kind on ring r's CPU with this filter (NULL:
 * none), writing into r's ring; -1 on failure (nothing left open). */
static int open_active(struct cm_cma_tracer *t, const struct cring *r,
		       int kind, const char *filter)
{
	int fd = open_event(t, kind, r->cpu);

	if (fd < 0)
		return -1;
	if ((filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter)) ||
	    ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->owner)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Replace every CPU's four active events by ones with this filter; all
 * or nothing.  0 or -1 with errno. */
static int replace_active(struct cm_cma_tracer *t, const char *filter)
{
	size_t n = (size_t)t->nrings * CM_CMA_NKINDS;
	int *fds = malloc(n * sizeof(*fds));

	if (!fds)
		return -1;
	for (size_t i = 0; i < n; i++) {
		fds[i] = open_active(t, &t->rings[i / CM_CMA_NKINDS],
				     (int)(i % CM_CMA_NKINDS), filter);
		if (fds[i] < 0) {
			int e = errno;

			while (i-- > 0)
				close(fds[i]);
			free(fds);
			errno = e;
			return -1;
		}
	}
	/* Old off, new on: a gap of microseconds, no call twice. */
	for (size_t i = 0; i < n; i++) {
		int *old = &t->rings[i / CM_CMA_NKINDS].fd[i % CM_CMA_NKINDS];

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

static void tracer_attr(struct perf_event_attr *a, unsigned pages)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->sample_period = 1;	/* every call */
	a->sample_type = CM_CMA_SAMPLE_TYPE;
	a->disabled = 1;
	a->use_clockid = 1;	/* same clock as the samplers */
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = pages * (uint32_t)getpagesize() / 4;
}

struct cm_cma_tracer *cm_cma_tracer_new(const struct cm_cma_config *c,
					struct cm_error *err)
{
	struct cm_cma_config def;
	struct cm_cma_tracer *t;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	if (!c) {
		cm_cma_config_default(&def);
		c = &def;
	}
	if (!c->ring_pages || (c->ring_pages & (c->ring_pages - 1))) {
		cm_errorf(err, EINVAL, "cma tracing: ring_pages %u is not a "
			  "power of two", c->ring_pages);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t || ncpu < 1 ||
	    !(t->rings = calloc((size_t)ncpu, sizeof(*t->rings))) ||
	    !(t->pair = cm_cma_pairer_new())) {
		cm_cma_tracer_free(t);
		cm_errorf(err, ENOMEM, "cma tracing: out of memory");
		return NULL;
	}
	if (find_tracepoints(c, &t->fmt, err))
		goto fail;
	tracer_attr(&t->attr, c->ring_pages);
	for (int cpu = 0; cpu < ncpu; cpu++)
		if (open_cpu(t, cpu, c->ring_pages, err))
			goto fail;
	if (!t->nrings) {
		cm_errorf(err, ENODEV, "cma tracing: no online CPU");
		goto fail;
	}
	if (replace_active(t, NULL)) {
		open_error(err, errno, t->rings[0].cpu);
		goto fail;
	}
	return t;
fail:
	cm_cma_tracer_free(t);
	return NULL;
}

int cm_cma_tracer_set_tids(struct cm_cma_tracer *t, pid_t *tids, int n)
{
	char filter[FILTER_MAX];

	if (!t || n < 0 || (n > 0 && !tids))
		return cm_errorf(NULL, EINVAL, "cma tracer: bad argument");
	if (cm_fault_filter_build(tids, n, filter, sizeof(filter)) >= 0 &&
	    replace_active(t, filter) == 0) {
		t->st.filters++;
		return 0;
	}
	/* Too long, or refused: every process's calls, dropped by the
	 * consumer's identity check (correct, only more expensive). */
	t->st.filter_fail++;
	if (replace_active(t, NULL) < 0)
		return cm_errorf(NULL, errno, "cma tracer: cannot open an "
				 "event: %s", strerror(errno));
	return 1;
}

void cm_cma_tracer_free(struct cm_cma_tracer *t)
{
	int e = errno;

	if (!t)
		return;
	for (int i = 0; t->rings && i < t->nrings; i++) {
		struct cring *r = &t->rings[i];

		for (int k = 0; k < CM_CMA_NKINDS; k++)
			if (r->fd[k] >= 0)
				close(r->fd[k]);
		if (r->base)
			munmap(r->base, r->maplen);
		close(r->owner);
	}
	free(t->rings);
	cm_cma_pairer_free(t->pair);
	free(t);
	errno = e;
}

/* Sort the batch, pair it, hand finished calls with bytes to fn. */
static void flush_batch(struct cm_cma_tracer *t, cm_cma_fn fn, void *arg)
{
	struct cm_cma_transfer x;

	cm_cma_sort(t->batch, t->nbatch);
	for (size_t i = 0; i < t->nbatch; i++)
		if (cm_cma_pairer_feed(t->pair, &t->batch[i], &x) == 1 &&
		    x.bytes && fn)
			fn(&x, arg);
	t->nbatch = 0;
}

/* Non-sample records: lost counts are kept, the rest skipped. */
static void other_record(struct cm_cma_tracer *t, const uint8_t *p,
			 size_t len)
{
	struct perf_event_header h;

	memcpy(&h, p, sizeof(h));
	if (h.type == PERF_RECORD_LOST && len >= 24)
		t->st.lost += get64(p + 16);
	else if (h.type == PERF_RECORD_LOST_SAMPLES && len >= 16)
		t->st.lost += get64(p + 8);
	else
		t->st.other++;
}

static long read_cring(struct cm_cma_tracer *t, struct cring *r,
		       cm_cma_fn fn, void *arg)
{
	struct perf_event_mmap_page *meta = r->base;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	const uint8_t *p;
	size_t len;
	long n = 0;
	int got;

	while ((got = cm_perf_ring_next(r->data, r->size, head, &tail,
					t->buf, sizeof(t->buf), &p, &len,
					NULL)) > 0) {
		struct perf_event_header h;
		int rc;

		memcpy(&h, p, sizeof(h));
		if (h.type != PERF_RECORD_SAMPLE) {
			other_record(t, p, len);
			continue;
		}
		rc = cm_cma_parse_sample(&t->fmt, p, len,
					 &t->batch[t->nbatch], NULL);
		if (rc) {
			if (rc < 0)
				t->st.malformed++;
			else
				t->st.other++;
			continue;
		}
		t->st.records++;
		n++;
		if (++t->nbatch == CM_CMA_BATCH)
			flush_batch(t, fn, arg);
	}
	if (got < 0) {
		t->st.malformed++;
		tail = head;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

long cm_cma_tracer_read(struct cm_cma_tracer *t, cm_cma_fn fn, void *arg)
{
	long n = 0;

	if (!t)
		return cm_errorf(NULL, EINVAL, "cma tracer: NULL");
	for (int i = 0; i < t->nrings; i++)
		n += read_cring(t, &t->rings[i], fn, arg);
	flush_batch(t, fn, arg);
	return n;
}

int cm_cma_tracer_pollfds(const struct cm_cma_tracer *t, struct pollfd *pfd,
			  int max)
{
	int n = 0;

	for (int i = 0; t && i < t->nrings && n < max; i++) {
		pfd[n].fd = t->rings[i].owner;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		n++;
	}
	return n;
}

void cm_cma_tracer_stats(const struct cm_cma_tracer *t,
			 struct cm_cma_stats *st)
{
	if (!t) {
		memset(st, 0, sizeof(*st));
		return;
	}
	*st = t->st;
	cm_cma_pairer_stats(t->pair, &st->pair);
}
