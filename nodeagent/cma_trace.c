/* cma_trace.c: Cross Memory Attach calls through the syscall tracepoints
 * (see cma_trace.h): the format files, the records, the tracer.  The
 * pairing of enters and exits is in cma_pair.c.
 */
#include "config.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cma_trace.h"
#include "tracepoint.h"

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

int cm_cma_format_field(const char *text, const char *name, unsigned size,
			unsigned *off, struct cm_error *err)
{
	const char *line = text;
	size_t want;

	if (!text || !name || !off)
		return cm_errorf(err, EINVAL, "cma format: NULL argument");
	want = strlen(name);
	while (line && *line) {
		const char *end = strchr(line, '\n'), *w = NULL;
		size_t nl = 0;
		unsigned o = 0, s = 0;
		int kind;

		if (!end)
			end = line + strlen(line);
		kind = cm_tp_format_line(line, end, &w, &nl, &o, &s);
		if (kind && nl == want && memcmp(w, name, nl) == 0) {
			if (kind < 0)
				return cm_errorf(err, EBADMSG, "cma format: "
					"field %s: offset or size is not a "
					"number up to %u", name,
					CM_TP_FORMAT_NUM_MAX);
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

/* The four tracepoints write into one ring per CPU (tracepoint.h); a
 * record tells its tracepoint by common_type. */
struct cm_cma_tracer {
	struct cm_cma_format fmt;
	struct cm_tp_rings rings;
	struct cm_cma_stats st;
	struct cm_cma_pairer *pair;
	cm_cma_fn fn;		/* the current read's consumer */
	void *arg;
	long nread;
	size_t nbatch;
	struct cm_cma_event batch[CM_CMA_BATCH];
	uint8_t buf[65536];	/* a record wrapping at the ring's end */
};

void cm_cma_config_default(struct cm_cma_config *cfg)
{
	cfg->tracefs = NULL;
	cfg->ring_pages = CM_CMA_DEFAULT_RING_PAGES;
}

static int read_tp(const char *root, int kind, const char *file, char *buf,
		   size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/events/syscalls/%s/%s", root,
		 tp_name[kind], file);
	return cm_tp_read_small(path, buf, len) > 0 ? 0 : -1;
}

/* The four ids and the field offsets (the x86-64 layout when a format
 * file is unreadable). */
static int find_tracepoints(const struct cm_cma_config *cfg,
			    struct cm_cma_format *f, struct cm_error *err)
{
	char probe[128], text[4096];
	const char *root;
	unsigned off;

	snprintf(probe, sizeof(probe), "events/syscalls/%s/id", tp_name[0]);
	root = cm_tp_tracefs_root(cfg->tracefs, probe);
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

struct cm_cma_tracer *cm_cma_tracer_new(const struct cm_cma_config *c,
					struct cm_error *err)
{
	struct cm_cma_config def;
	struct cm_cma_tracer *t;

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
	if (!t || !(t->pair = cm_cma_pairer_new())) {
		cm_cma_tracer_free(t);
		cm_errorf(err, ENOMEM, "cma tracing: out of memory");
		return NULL;
	}
	t->rings.who = "cma tracing";
	t->rings.event = "syscalls:process_vm_*";
	t->rings.nids = CM_CMA_NKINDS;
	if (find_tracepoints(c, &t->fmt, err))
		goto fail;
	for (int k = 0; k < CM_CMA_NKINDS; k++)
		t->rings.ids[k] = t->fmt.id[k];
	if (cm_tp_rings_open(&t->rings, c->ring_pages, err))
		goto fail;
	/* Every process's calls until the first cm_cma_tracer_set_tids. */
	if (cm_tp_rings_filter(&t->rings, NULL)) {
		cm_tp_open_error(err, t->rings.who, t->rings.event, errno,
				 t->rings.ring[0].cpu);
		goto fail;
	}
	return t;
fail:
	cm_cma_tracer_free(t);
	return NULL;
}

int cm_cma_tracer_set_tids(struct cm_cma_tracer *t, pid_t *tids, int n)
{
	int rc;

	if (!t || n < 0 || (n > 0 && !tids))
		return cm_errorf(NULL, EINVAL, "cma tracer: bad argument");
	rc = cm_tp_rings_set_tids(&t->rings, tids, n);
	if (rc == 0)
		t->st.filters++;
	else
		t->st.filter_fail++;
	if (rc < 0)
		return cm_errorf(NULL, errno, "cma tracer: cannot open an "
				 "event: %s", strerror(errno));
	return rc;
}

void cm_cma_tracer_free(struct cm_cma_tracer *t)
{
	int e = errno;

	if (!t)
		return;
	cm_tp_rings_close(&t->rings);
	cm_cma_pairer_free(t->pair);
	free(t);
	errno = e;
}

/* Sort the batch, pair it, hand finished calls with bytes to fn. */
static void flush_batch(struct cm_cma_tracer *t)
{
	struct cm_cma_transfer x;

	cm_cma_sort(t->batch, t->nbatch);
	for (size_t i = 0; i < t->nbatch; i++)
		if (cm_cma_pairer_feed(t->pair, &t->batch[i], &x) == 1 &&
		    x.bytes && t->fn)
			t->fn(&x, t->arg);
	t->nbatch = 0;
}

/* One sample record of a ring: parsed into the batch, counted. */
static void on_record(const uint8_t *p, size_t len, void *arg)
{
	struct cm_cma_tracer *t = arg;
	int rc = cm_cma_parse_sample(&t->fmt, p, len, &t->batch[t->nbatch],
				     NULL);

	if (rc) {
		if (rc < 0)
			t->st.malformed++;
		else
			t->st.other++;
		return;
	}
	t->st.records++;
	t->nread++;
	if (++t->nbatch == CM_CMA_BATCH)
		flush_batch(t);
}

long cm_cma_tracer_read(struct cm_cma_tracer *t, cm_cma_fn fn, void *arg)
{
	struct cm_tp_counts c = { 0 };

	if (!t)
		return cm_errorf(NULL, EINVAL, "cma tracer: NULL");
	t->fn = fn;
	t->arg = arg;
	t->nread = 0;
	for (int i = 0; i < t->rings.nring; i++)
		cm_tp_ring_drain(&t->rings, i, t->buf, sizeof(t->buf),
				 on_record, t, &c);
	t->st.lost += c.lost;
	t->st.other += c.other;
	t->st.malformed += c.malformed;
	flush_batch(t);
	return t->nread;
}

int cm_cma_tracer_pollfds(const struct cm_cma_tracer *t, struct pollfd *pfd,
			  int max)
{
	return t ? cm_tp_rings_pollfds(&t->rings, pfd, max) : 0;
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
