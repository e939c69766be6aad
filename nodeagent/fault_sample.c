/* fault_sample.c: NUMA-balancing hinting faults through the
 * exceptions:page_fault_user tracepoint (see fault_sample.h).
 */
#include "config.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_sample.h"
#include "tracepoint.h"

#define TP_EVENT "exceptions/page_fault_user"
#define TP_PATH "events/" TP_EVENT

/* ---- pure parsing ------------------------------------------------------ */

void cm_fault_format_default(struct cm_fault_format *f)
{
	f->pid_off = 4;
	f->addr_off = 8;
	f->ip_off = 16;
	f->err_off = 24;
	f->min_size = 32;
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
		const char *end = strchr(line, '\n'), *name = NULL;
		size_t nl = 0;
		unsigned off = 0, size = 0;
		int kind;

		if (!end)
			end = line + strlen(line);
		kind = cm_tp_format_line(line, end, &name, &nl, &off, &size);
		for (size_t i = 0; kind && i < sizeof(w) / sizeof(w[0]); i++) {
			if (strlen(w[i].name) != nl ||
			    memcmp(name, w[i].name, nl))
				continue;
			if (kind < 0)
				return cm_errorf(err, EBADMSG, "fault format: "
					"field %s: offset or size is not a "
					"number up to %u", w[i].name,
					CM_TP_FORMAT_NUM_MAX);
			if (size != w[i].size)
				return cm_errorf(err, EBADMSG, "fault format: "
					"field %s has size %u, want %u",
					w[i].name, size, w[i].size);
			*w[i].off = off;
			w[i].found = true;
			if (off + size > r.min_size)
				r.min_size = off + size;
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

struct cm_fault_sampler {
	struct cm_fault_format fmt;
	struct cm_tp_rings rings;	/* one tracepoint, one ring per CPU */
	struct cm_fault_stats st;
	cm_fault_fn fn;			/* the current read's consumer */
	void *arg;
	long delivered;
	uint8_t buf[65536];	/* a record wrapping at the ring's end */
};

void cm_fault_config_default(struct cm_fault_config *cfg)
{
	cfg->tracefs = NULL;
	cfg->ring_pages = CM_FAULT_DEFAULT_RING_PAGES;
}

/* The tracepoint's id and format (the x86-64 layout when the format file
 * is unreadable). */
static int find_tracepoint(const struct cm_fault_config *cfg, uint64_t *id,
			   struct cm_fault_format *fmt, struct cm_error *err)
{
	const char *root = cm_tp_tracefs_root(cfg->tracefs, TP_PATH "/id");
	char path[512], text[8192];

	if (cm_tp_read_id(root, TP_EVENT, id) < 0)
		return cm_errorf(err, ENOENT, "fault backend: cannot read %s/"
				 TP_PATH "/id: %s (tracefs not mounted, or no "
				 "such tracepoint in this kernel)", root,
				 strerror(errno));
	snprintf(path, sizeof(path), "%s/" TP_PATH "/format", root);
	if (cm_tp_read_small(path, text, sizeof(text)) <= 0) {
		cm_fault_format_default(fmt);
		return 0;
	}
	return cm_fault_format_parse(text, fmt, err);
}

struct cm_fault_sampler *cm_fault_sampler_new(const struct cm_fault_config *c,
					      struct cm_error *err)
{
	struct cm_fault_config def;
	struct cm_fault_sampler *s;

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
	if (!s) {
		cm_errorf(err, ENOMEM, "fault backend: out of memory");
		return NULL;
	}
	s->rings.who = "fault backend";
	s->rings.event = "exceptions:page_fault_user";
	s->rings.nids = 1;
	if (find_tracepoint(c, &s->rings.ids[0], &s->fmt, err) ||
	    cm_tp_rings_open(&s->rings, c->ring_pages, err)) {
		cm_fault_sampler_free(s);
		return NULL;
	}
	return s;
}

void cm_fault_sampler_free(struct cm_fault_sampler *s)
{
	int e = errno;

	if (!s)
		return;
	cm_tp_rings_close(&s->rings);
	free(s);
	errno = e;
}

int cm_fault_sampler_set_tids(struct cm_fault_sampler *s, pid_t *tids, int n)
{
	int rc;

	if (!s || n < 0 || (n > 0 && !tids))
		return cm_errorf(NULL, EINVAL, "fault sampler: bad argument");
	rc = cm_tp_rings_set_tids(&s->rings, tids, n);
	if (rc == 0)
		s->st.filters++;
	else
		s->st.filter_fail++;
	if (rc < 0)
		return cm_errorf(NULL, errno, "fault sampler: cannot open "
				 "an event: %s", strerror(errno));
	return rc;
}

/* One sample record of a ring: parsed, counted, handed on. */
static void on_record(const uint8_t *p, size_t len, void *arg)
{
	struct cm_fault_sampler *s = arg;
	struct cm_fault f;

	if (cm_fault_parse_sample(&s->fmt, p, len, &f, NULL)) {
		s->st.malformed++;
		return;
	}
	s->st.records++;
	s->delivered++;
	if (s->fn)
		s->fn(&f, s->arg);
}

long cm_fault_sampler_read(struct cm_fault_sampler *s, cm_fault_fn fn,
			   void *arg)
{
	struct cm_tp_counts c = { 0 };

	if (!s)
		return cm_errorf(NULL, EINVAL, "fault sampler: NULL");
	s->fn = fn;
	s->arg = arg;
	s->delivered = 0;
	for (int i = 0; i < s->rings.nring; i++)
		cm_tp_ring_drain(&s->rings, i, s->buf, sizeof(s->buf),
				 on_record, s, &c);
	s->st.lost += c.lost;
	s->st.other += c.other;
	s->st.malformed += c.malformed;
	return s->delivered;
}

int cm_fault_sampler_pollfds(const struct cm_fault_sampler *s,
			     struct pollfd *pfd, int max)
{
	return s ? cm_tp_rings_pollfds(&s->rings, pfd, max) : 0;
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
	return s ? s->rings.nring : 0;
}
