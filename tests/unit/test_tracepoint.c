/* test_tracepoint.c: what the tracepoint readers share
 * (nodeagent/tracepoint.h), the fault sampler's and the CMA tracer's
 * common setup.
 *
 * Pure parts: format-file lines (names after '*', offsets and sizes in
 * range, a line that names a field but gives no number), small files cut
 * to the buffer, tracepoint ids from a tracefs tree made here, the
 * messages of a refused perf_event_open, bad ring sizes.
 * Real parts (root, tracefs): one owner ring per CPU for
 * exceptions:page_fault_user, a kernel filter on this thread (its first
 * touches of fresh pages arrive, nothing foreign), an empty filter
 * (nothing arrives), closing twice.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tap.h"
#include "tracepoint.h"
#include "tracepoint_test_util.h"

struct line_case {
	const char *line;
	int kind;
	const char *name;
	unsigned off, size;
};

static const struct line_case lines[] = {
	{ "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;", 1,
	  "common_pid", 4, 4 },
	{ "\tfield:const struct iovec * lvec;\toffset:24;\tsize:8;", 1,
	  "lvec", 24, 8 },
	{ "\tfield:char *buf;\toffset:8;\tsize:8;", 1, "buf", 8, 8 },
	{ "\tfield:unsigned long address;\toffset:65535;\tsize:8;", 1,
	  "address", 65535, 8 },
	{ "\tfield:unsigned long address;\toffset:65536;\tsize:8;", -1,
	  "address", 0, 0 },
	{ "\tfield:unsigned long address;\toffset:-8;\tsize:8;", -1,
	  "address", 0, 0 },
	{ "\tfield:unsigned long address;\toffset:8x;\tsize:8;", -1,
	  "address", 0, 0 },
	{ "\tfield:unsigned long ip;\tsize:8;", -1, "ip", 0, 0 },
	{ "\tfield:;\toffset:0;\tsize:8;", 0, NULL, 0, 0 },
	{ "\tfield:int x", 0, NULL, 0, 0 },
	{ "name: page_fault_user", 0, NULL, 0, 0 },
	{ "", 0, NULL, 0, 0 },
};

static void test_format_lines(void)
{
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		const struct line_case *c = &lines[i];
		const char *name = NULL;
		size_t nl = 0;
		unsigned off = 0, size = 0;
		int k = cm_tp_format_line(c->line, c->line + strlen(c->line),
					  &name, &nl, &off, &size);
		int same = k == c->kind;

		if (same && c->name)
			same = nl == strlen(c->name) &&
			       memcmp(name, c->name, nl) == 0;
		if (same && k == 1)
			same = off == c->off && size == c->size;
		ok(same, "format line %zu: kind %d (want %d)", i, k, c->kind);
	}
	/* The numbers must be on the line itself, not on the next one. */
	{
		const char *text = "\tfield:int x;\n\toffset:4;\tsize:4;\n";
		const char *name;
		size_t nl;
		unsigned off, size;

		is_int(cm_tp_format_line(text, strchr(text, '\n'), &name, &nl,
					 &off, &size), -1,
		       "offset on the next line: not taken");
	}
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void test_tracefs_tree(void)
{
	char dir[] = "/tmp/commap-tp-XXXXXX", path[256], buf[8];
	uint64_t id = 0;

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/events", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/events/g", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/events/g/good", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/events/g/zero", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/events/g/good/id", dir);
	write_file(path, "720\n");
	is_int(cm_tp_read_small(path, buf, sizeof(buf)), 4,
	       "a small file read whole");
	is_int(cm_tp_read_small(path, buf, 3), 2, "... cut to the buffer");
	is_str(buf, "72", "... NUL-terminated");
	is_int(cm_tp_read_id(dir, "g/good", &id), 0, "tracepoint id read");
	ok(id == 720, "... 720 (%llu)", (unsigned long long)id);
	snprintf(path, sizeof(path), "%s/events/g/zero/id", dir);
	write_file(path, "0\n");
	ok(cm_tp_read_id(dir, "g/zero", &id) < 0 && errno == ENOENT,
	   "id 0: ENOENT");
	ok(cm_tp_read_id(dir, "g/none", &id) < 0 && errno == ENOENT,
	   "no such tracepoint: ENOENT");
	is_str(cm_tp_tracefs_root(dir, "events/g/good/id"), dir,
	       "a given tracefs root is used as it is");
	unlink(path);
	snprintf(path, sizeof(path), "%s/events/g/good/id", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/events/g/good", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/events/g/zero", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/events/g", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/events", dir);
	rmdir(path);
	rmdir(dir);
}

static void test_errors(void)
{
	struct cm_tp_rings r = { .who = "test", .event = "g:n", .nids = 1 };
	struct cm_error err;

	ok(cm_tp_open_error(&err, "fault backend", "exceptions:x", EACCES,
			    3) == -1 && errno == EACCES &&
	   strstr(err.text, "fault backend: perf_event_open(exceptions:x, "
		  "cpu 3)") && strstr(err.text, "perf_event_paranoid") &&
	   strstr(err.text, "CAP_PERFMON"),
	   "EACCES: names the event, the CPU and perf_event_paranoid (%s)",
	   err.text);
	ok(cm_tp_open_error(&err, "cma tracing", "s:p", EMFILE, 0) == -1 &&
	   errno == EMFILE && !strstr(err.text, "paranoid") &&
	   strstr(err.text, "cma tracing: "),
	   "EMFILE: the system's reason only (%s)", err.text);
	ok(cm_tp_rings_open(&r, 3, &err) < 0 && errno == EINVAL &&
	   strstr(err.text, "power of two"), "3 pages: EINVAL (%s)",
	   err.text);
	r.nids = CM_TP_EVENTS_MAX + 1;
	ok(cm_tp_rings_open(&r, 4, &err) < 0 && errno == EINVAL,
	   "too many tracepoints: EINVAL");
	cm_tp_rings_close(&r);
	ok(r.ring == NULL && r.nring == 0, "closing an unopened set is safe");
}

struct own {
	pid_t tid;
	long ours, foreign;
};

/* A record of layout TID|TIME|RAW: its tid at byte 12. */
static void count(const uint8_t *rec, size_t len, void *arg)
{
	struct own *o = arg;
	uint32_t tid;

	if (len < 16)
		return;
	memcpy(&tid, rec + 12, sizeof(tid));
	if ((pid_t)tid == o->tid)
		o->ours++;
	else
		o->foreign++;
}

static void drain_all(struct cm_tp_rings *r, struct own *o,
		      struct cm_tp_counts *c)
{
	static uint8_t buf[65536];

	for (int i = 0; i < r->nring; i++)
		cm_tp_ring_drain(r, i, buf, sizeof(buf), count, o, c);
}

static void test_live(void)
{
	const char *root = cm_tp_tracefs_root(NULL, "events/exceptions/"
					      "page_fault_user/id");
	struct cm_tp_rings r = { .who = "test", .nids = 1,
				 .event = "exceptions:page_fault_user" };
	struct cm_tp_counts c = { 0 };
	struct own o = { .tid = (pid_t)syscall(SYS_gettid) };
	struct pollfd pfd[1024];
	struct cm_error err;
	pid_t me = o.tid;

	if (cm_tp_read_id(root, "exceptions/page_fault_user", &r.ids[0]) ||
	    cm_tp_rings_open(&r, 16, &err)) {
		diag("no live tracepoint rings here");
		tp_skip(5, "tracepoints not readable or not permitted here");
		return;
	}
	ok(r.nring >= 1 && cm_tp_rings_pollfds(&r, pfd, 1024) == r.nring,
	   "one ring per online CPU, each polled (%d)", r.nring);
	tp_touch_fresh(16, NULL, NULL);
	drain_all(&r, &o, &c);
	ok(o.ours == 0 && o.foreign == 0,
	   "no active event yet: nothing recorded");
	is_int(cm_tp_rings_set_tids(&r, &me, 1), 0, "filter on this thread");
	tp_touch_fresh(64, NULL, NULL);
	drain_all(&r, &o, &c);
	ok(o.ours >= 64 && o.foreign == 0 && c.malformed == 0,
	   "64 fresh pages: %ld faults of ours, %ld foreign, %llu malformed",
	   o.ours, o.foreign, (unsigned long long)c.malformed);
	/* Faults of ours while the filter was replaced (the allocator's,
	 * under the sanitizers) were recorded by the old events: read them
	 * away before counting. */
	cm_tp_rings_set_tids(&r, NULL, 0);
	drain_all(&r, &o, &c);
	memset(&o, 0, sizeof(o));
	o.tid = me;
	tp_touch_fresh(64, NULL, NULL);
	drain_all(&r, &o, &c);
	is_int(o.ours + o.foreign, 0, "empty filter: nothing recorded");
	cm_tp_rings_close(&r);
	cm_tp_rings_close(&r);
	ok(r.ring == NULL, "closed twice");
}

int main(void)
{
	test_format_lines();
	test_tracefs_tree();
	test_errors();
	test_live();
	return done_testing();
}
