/* perf_sample.c: the sampler: perf events attached to a step's threads,
 * one ring per CPU, drained in time order across the rings.
 *
 * Ring protocol: the kernel advances data_head, the reader data_tail
 * (records: perf_record.c; opening events: perf_open.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "perf_sample.h"
#include "perf_open.h"
#include "grow.h"

void cm_perf_config_default(struct cm_perf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->backend = CM_PERF_BACKEND_SAMPLE;
	cfg->clock = CM_PERF_CPU_CLOCK;
	cfg->period_ns = CM_PERF_DEFAULT_PERIOD_NS;
	cfg->regs_mask = CM_PERF_REGS_MASK;
	cfg->hw_period = 10007;
	cfg->ring_pages = CM_PERF_DEFAULT_RING_PAGES;
}

struct ring {
	int fd;				/* the event that owns the mapping */
	void *base;			/* metadata page + data */
	size_t maplen;
	uint8_t *data;
	uint64_t size;
	/* drain cursor: the records in [tail, head) are being read; next
	 * is the first sample not yet handed out when has_next */
	uint64_t head, tail;
	int has_next;
	struct cm_perf_sample next;
};

struct cm_perf_sampler {
	struct cm_perf_config cfg;
	struct perf_event_attr attr;
	struct cm_perf_layout lay;
	int ncpu;
	struct ring *rings;		/* one per possible CPU */
	struct ring **heap;		/* drain: rings with a pending sample,
					 * a min-heap on its time */
	int *fds;			/* every event */
	int nfds, capfds;
	pid_t *tids;			/* attached tasks */
	int ntids, captids;
	struct cm_perf_stats st;
	uint8_t buf[65536];		/* a record wrapping the ring end */
};

static int check_config(const struct cm_perf_config *cfg,
			struct cm_error *err)
{
	unsigned p = cfg->ring_pages;

	if (p == 0 || (p & (p - 1)) || p > 4096)
		return cm_errorf(err, EINVAL, "perf sampler: ring_pages %u is "
				 "not a power of two in [1, 4096]", p);
	if (cfg->backend == CM_PERF_BACKEND_HW) {
		if (cfg->hw.kind == CM_PERF_HW_NONE)
			return cm_errorf(err, ENOENT, "perf sampler: hw "
					 "backend without a hardware PMU%s%s",
					 cfg->hw.reason[0] ? ": " : "",
					 cfg->hw.reason);
		if (cfg->hw_period == 0)
			return cm_errorf(err, EINVAL, "perf sampler: "
					 "hw_period 0");
		return 0;
	}
	if (cfg->backend != CM_PERF_BACKEND_SAMPLE ||
	    (cfg->clock != CM_PERF_CPU_CLOCK &&
	     cfg->clock != CM_PERF_TASK_CLOCK))
		return cm_errorf(err, EINVAL, "perf sampler: unknown backend "
				 "or clock");
	if (cfg->period_ns < CM_PERF_MIN_PERIOD_NS)
		return cm_errorf(err, EINVAL, "perf sampler: period %llu ns "
				 "below the minimum %llu ns",
				 (unsigned long long)cfg->period_ns,
				 (unsigned long long)CM_PERF_MIN_PERIOD_NS);
	if (!cfg->regs_mask || (cfg->regs_mask & ~CM_PERF_REGS_MASK &
				~0xe00ull))
		return cm_errorf(err, EINVAL, "perf sampler: regs_mask 0x%llx "
				 "outside the x86-64 general registers",
				 (unsigned long long)cfg->regs_mask);
	return 0;
}

struct cm_perf_sampler *cm_perf_sampler_new(const struct cm_perf_config *cfg,
					    struct cm_error *err)
{
	struct cm_perf_sampler *s;
	long n;

	if (!cfg) {
		cm_errorf(err, EINVAL, "perf sampler: NULL config");
		return NULL;
	}
	if (check_config(cfg, err))
		return NULL;
	n = sysconf(_SC_NPROCESSORS_CONF);
	if (n < 1)
		n = 1;
	s = calloc(1, sizeof(*s));
	if (s) {
		s->rings = calloc((size_t)n, sizeof(*s->rings));
		s->heap = calloc((size_t)n, sizeof(*s->heap));
	}
	if (!s || !s->rings || !s->heap) {
		if (s) {
			free(s->rings);
			free(s->heap);
		}
		free(s);
		cm_errorf(err, ENOMEM, "perf sampler: out of memory");
		return NULL;
	}
	s->cfg = *cfg;
	s->ncpu = (int)n;
	for (int c = 0; c < s->ncpu; c++)
		s->rings[c].fd = -1;
	cm_perf_attr_build(cfg, &s->attr);
	s->lay.sample_type = s->attr.sample_type;
	s->lay.regs_mask = s->attr.sample_regs_user;
	return s;
}

void cm_perf_sampler_free(struct cm_perf_sampler *s)
{
	if (!s)
		return;
	for (int c = 0; c < s->ncpu; c++)
		if (s->rings[c].base)
			munmap(s->rings[c].base, s->rings[c].maplen);
	for (int i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	free(s->rings);
	free(s->heap);
	free(s->fds);
	free(s->tids);
	free(s);
}

static int map_ring(struct cm_perf_sampler *s, int cpu, int fd,
		    struct cm_error *err)
{
	size_t page = (size_t)getpagesize();
	struct ring *r = &s->rings[cpu];
	struct perf_event_mmap_page *meta;

	r->maplen = (1 + (size_t)s->cfg.ring_pages) * page;
	r->base = mmap(NULL, r->maplen, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	if (r->base == MAP_FAILED) {
		int e = errno;

		r->base = NULL;
		return cm_errorf(err, e, "perf sampler: mmap of the CPU %d "
				 "ring (%zu bytes): %s%s", cpu, r->maplen,
				 strerror(e), e == EPERM ? " (too much locked "
				 "memory: see kernel.perf_event_mlock_kb)" : "");
	}
	meta = r->base;
	r->data = (uint8_t *)r->base + (meta->data_offset ? meta->data_offset
					: page);
	r->size = meta->data_size ? meta->data_size
		  : (uint64_t)s->cfg.ring_pages * page;
	r->fd = fd;
	return 0;
}

static void unmap_ring(struct ring *r)
{
	munmap(r->base, r->maplen);
	r->base = NULL;
	r->fd = -1;
}

/* Route fd's records to the CPU's ring, mapping it if fd is the first
 * event there.  1 if a ring was mapped, 0 if redirected, -1 on error. */
static int route_event(struct cm_perf_sampler *s, int cpu, int fd,
		       pid_t tid, struct cm_error *err)
{
	if (s->rings[cpu].fd < 0)
		return map_ring(s, cpu, fd, err) ? -1 : 1;
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->rings[cpu].fd))
		return cm_errorf(err, errno, "perf sampler: tid %d cpu %d: "
				 "cannot share the CPU's ring: %s", (int)tid,
				 cpu, strerror(errno));
	return 0;
}

static const char *event_name(const struct cm_perf_sampler *s)
{
	if (s->cfg.backend == CM_PERF_BACKEND_HW)
		return cm_perf_hw_kind_name(s->cfg.hw.kind);
	return s->cfg.clock == CM_PERF_TASK_CLOCK ? "task-clock:u"
	       : "cpu-clock:u";
}

/* Undo a failed attach: close its events, unmap the rings it mapped. */
static void attach_rollback(struct cm_perf_sampler *s, const int *fds,
			    const bool *mapped)
{
	for (int c = 0; c < s->ncpu; c++) {
		if (mapped[c])
			unmap_ring(&s->rings[c]);
		if (fds[c] >= 0)
			close(fds[c]);
	}
}

static int attach_events(struct cm_perf_sampler *s, pid_t tid, int *fds,
			 bool *mapped, struct cm_error *err)
{
	int opened = 0;

	for (int c = 0; c < s->ncpu; c++) {
		int r;

		fds[c] = cm_perf_event_open(&s->attr, tid, c);
		if (fds[c] < 0 && errno == ENODEV && c > 0)
			continue;	/* CPU offline */
		if (fds[c] < 0)
			return cm_perf_open_error(err, errno, event_name(s),
						  tid);
		opened++;
		r = route_event(s, c, fds[c], tid, err);
		if (r < 0)
			return -1;
		mapped[c] = r == 1;
	}
	if (!opened)
		return cm_errorf(err, ENODEV, "perf sampler: no online CPU");
	for (int c = 0; c < s->ncpu; c++)
		if (fds[c] >= 0 && ioctl(fds[c], PERF_EVENT_IOC_ENABLE, 0))
			return cm_errorf(err, errno, "perf sampler: enable: %s",
					 strerror(errno));
	return 0;
}

int cm_perf_sampler_attach(struct cm_perf_sampler *s, pid_t tid,
			   struct cm_error *err)
{
	int *fds;
	bool *mapped;
	int rv = -1;

	if (!s || tid <= 0)
		return cm_errorf(err, EINVAL, "perf sampler: bad tid %d",
				 (int)tid);
	for (int i = 0; i < s->ntids; i++)
		if (s->tids[i] == tid)
			return 0;
	if (cm_grow((void **)&s->tids, &s->captids, s->ntids + 1,
		    sizeof(*s->tids)) ||
	    cm_grow((void **)&s->fds, &s->capfds, s->nfds + s->ncpu,
		    sizeof(*s->fds)))
		return cm_errorf(err, ENOMEM, "perf sampler: out of memory");
	fds = malloc((size_t)s->ncpu * sizeof(*fds));
	mapped = calloc((size_t)s->ncpu, sizeof(*mapped));
	if (!fds || !mapped) {
		cm_errorf(err, ENOMEM, "perf sampler: out of memory");
		goto out;
	}
	for (int c = 0; c < s->ncpu; c++)
		fds[c] = -1;
	if (attach_events(s, tid, fds, mapped, err)) {
		int e = errno;

		attach_rollback(s, fds, mapped);
		errno = e;
		goto out;
	}
	for (int c = 0; c < s->ncpu; c++)
		if (fds[c] >= 0)
			s->fds[s->nfds++] = fds[c];
	s->tids[s->ntids++] = tid;
	rv = 0;
out:
	free(fds);
	free(mapped);
	return rv;
}

/* Drain one ring; corrupt data skips to head (counted). */
/* Advance r's cursor to its next user-mode sample, accounting the other
 * records (lost, throttle, kernel-mode samples) on the way.  Returns 1 with
 * r->next set, 0 when the ring has nothing more up to the head snapshot. */
static int ring_advance(struct cm_perf_sampler *s, struct ring *r)
{
	struct cm_perf_record rec;
	const uint8_t *p;
	size_t len;
	int got;

	r->has_next = 0;
	while ((got = cm_perf_ring_next(r->data, r->size, r->head, &r->tail,
					s->buf, sizeof(s->buf), &p, &len,
					NULL)) > 0) {
		if (cm_perf_parse_record(&s->lay, p, len, &rec, NULL)) {
			s->st.malformed++;
			continue;	/* its size was sane: skip it */
		}
		if (rec.kind == CM_PERF_REC_SAMPLE &&
		    (rec.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		    PERF_RECORD_MISC_KERNEL) {
			s->st.kernel++;
			continue;
		}
		cm_perf_stats_account(&s->st, &rec);
		if (rec.kind == CM_PERF_REC_SAMPLE) {
			r->next = rec.sample;
			r->has_next = 1;
			return 1;
		}
	}
	if (got < 0) {
		s->st.malformed++;
		r->tail = r->head;
	}
	return 0;
}

static void ring_open_cursor(struct cm_perf_sampler *s, struct ring *r)
{
	struct perf_event_mmap_page *meta = r->base;

	r->head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	r->tail = meta->data_tail;
	ring_advance(s, r);
}

static void ring_close_cursor(struct ring *r)
{
	struct perf_event_mmap_page *meta = r->base;

	__atomic_store_n(&meta->data_tail, r->tail, __ATOMIC_RELEASE);
}

/* Restore the heap order below slot i (the rings' pending sample times:
 * the oldest on top). */
static void heap_down(struct ring **h, int n, int i)
{
	for (;;) {
		int l = 2 * i + 1, m = i;
		struct ring *t;

		if (l < n && h[l]->next.time < h[m]->next.time)
			m = l;
		if (l + 1 < n && h[l + 1]->next.time < h[m]->next.time)
			m = l + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* Hand out the samples of every CPU's ring merged in time order: the
 * sharer table keeps the most recent sharers of each block (SPCD §III-C),
 * so reading one CPU's ring after the other would let the threads of the
 * last CPU read push out those of the others and skew the matrix towards
 * (or against) threads that happened to share a CPU.  Each ring is in
 * time order already; this is a k-way merge (a heap of the rings, so a
 * node with many CPUs pays log(CPUs) per sample) bounded by the head each
 * ring had when the drain began. */
long cm_perf_sampler_read(struct cm_perf_sampler *s, cm_perf_sample_fn fn,
			  void *arg)
{
	struct ring **h;
	long n = 0;
	int nh = 0;

	if (!s)
		return cm_errorf(NULL, EINVAL, "perf sampler: NULL");
	h = s->heap;
	for (int c = 0; c < s->ncpu; c++) {
		if (!s->rings[c].base)
			continue;
		ring_open_cursor(s, &s->rings[c]);
		if (s->rings[c].has_next)
			h[nh++] = &s->rings[c];
	}
	for (int i = nh / 2 - 1; i >= 0; i--)
		heap_down(h, nh, i);
	while (nh > 0) {
		n++;
		if (fn)
			fn(&h[0]->next, arg);
		if (!ring_advance(s, h[0]))
			h[0] = h[--nh];		/* that ring is drained */
		heap_down(h, nh, 0);
	}
	for (int c = 0; c < s->ncpu; c++)
		if (s->rings[c].base)
			ring_close_cursor(&s->rings[c]);
	return n;
}

int cm_perf_sampler_set_period(struct cm_perf_sampler *s, uint64_t period,
			       struct cm_error *err)
{
	struct cm_perf_config cfg;

	if (!s)
		return cm_errorf(err, EINVAL, "perf sampler: NULL");
	cfg = s->cfg;
	if (cfg.backend == CM_PERF_BACKEND_HW)
		cfg.hw_period = period;
	else
		cfg.period_ns = period;
	if (check_config(&cfg, err))
		return -1;
	for (int i = 0; i < s->nfds; i++)
		if (ioctl(s->fds[i], PERF_EVENT_IOC_PERIOD, &period))
			return cm_errorf(err, errno, "perf sampler: set period "
					 "%llu: %s", (unsigned long long)period,
					 strerror(errno));
	s->cfg = cfg;
	s->attr.sample_period = period;
	return 0;
}

int cm_perf_sampler_pollfds(const struct cm_perf_sampler *s,
			    struct pollfd *pfd, int max)
{
	int n = 0;

	if (!s || !pfd)
		return 0;
	for (int c = 0; c < s->ncpu && n < max; c++) {
		if (!s->rings[c].base)
			continue;
		pfd[n].fd = s->rings[c].fd;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		n++;
	}
	return n;
}

int cm_perf_sampler_ntasks(const struct cm_perf_sampler *s)
{
	return s ? s->ntids : 0;
}

int cm_perf_sampler_nevents(const struct cm_perf_sampler *s)
{
	return s ? s->nfds : 0;
}

void cm_perf_sampler_stats(const struct cm_perf_sampler *s,
			   struct cm_perf_stats *st)
{
	if (s)
		*st = s->st;
	else
		memset(st, 0, sizeof(*st));
}

void cm_perf_sampler_layout(const struct cm_perf_sampler *s,
			    struct cm_perf_layout *lay)
{
	if (s)
		*lay = s->lay;
	else
		memset(lay, 0, sizeof(*lay));
}
