/* test_fault_sample.c: the fault backend (nodeagent/fault_sample.h and its
 * use in collect.h).
 *
 * Pure parts: the tracepoint format file, PERF_RECORD_SAMPLE records of
 * layout TID|TIME|RAW built by hand (default and moved offsets, present
 * bit, truncated records), the tid filter builder.
 * Real parts (root, tracefs): the sampler's kernel filter on this very
 * thread (first-touch faults of fresh pages are ours, none with an empty
 * filter, a filter too long falls back to none), then the collector with
 * backend FAULT on a multi-threaded child for ~5 s with
 * kernel.numa_balancing managed (numa_balancing.h, default state file, so
 * other agents of the node are respected) and restored afterwards.
 * Hinting faults are not deterministic here (the first scan comes after
 * ~1 s of a thread's CPU time): their count is reported, not asserted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "fault_sample.h"
#include "proc_track.h"
#include "tap.h"
#include "tracepoint_test_util.h"

/* The format file of kernel 6.18 (x86-64). */
static const char real_format[] =
	"name: page_fault_user\n"
	"ID: 190\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;"
	"\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:unsigned long address;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long ip;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long error_code;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\n"
	"print fmt: \"address=%ps ip=%ps error_code=0x%lx\", (void *)"
	"REC->address, (void *)REC->ip, REC->error_code\n";

/* A sample record as the kernel writes it: header, pid, tid, time, raw
 * size, raw entry of rawlen bytes (fields at f's offsets), padded to 8.
 * Returns the record's size. */
static size_t build(uint8_t *buf, const struct cm_fault_format *f,
		    uint32_t rawlen, uint64_t addr, uint64_t ip, uint64_t ec)
{
	size_t size = tp_record(buf, rawlen, 123456789);
	uint8_t *raw = buf + 28;

	tp_put32(raw + f->pid_off, 1002);
	if (f->addr_off + 8 <= rawlen)
		tp_put64(raw + f->addr_off, addr);
	if (f->ip_off + 8 <= rawlen)
		tp_put64(raw + f->ip_off, ip);
	if (f->err_off + 8 <= rawlen)
		tp_put64(raw + f->err_off, ec);
	return size;
}

static void test_format(void)
{
	struct cm_fault_format f, d;
	struct cm_error err;
	char text[sizeof(real_format) + 64], *p;

	cm_fault_format_default(&d);
	ok(cm_fault_format_parse(real_format, &f, &err) == 0 &&
	   f.pid_off == 4 && f.addr_off == 8 && f.ip_off == 16 &&
	   f.err_off == 24 && f.min_size == 32,
	   "format of this kernel: pid 4, address 8, ip 16, error_code 24");
	ok(memcmp(&f, &d, sizeof(f)) == 0, "... equal to the default");

	/* Moved fields (another kernel): offsets follow the file. */
	strcpy(text, real_format);
	p = strstr(text, "offset:24");
	p[7] = '4';
	p[8] = '0';
	ok(cm_fault_format_parse(text, &f, &err) == 0 && f.err_off == 40 &&
	   f.min_size == 48, "error_code moved to 40: min size 48");

	strcpy(text, real_format);
	p = strstr(text, "error_code");
	memcpy(p, "error_cude", 10);
	ok(cm_fault_format_parse(text, &f, &err) == -1 && errno == EBADMSG &&
	   strstr(err.text, "error_code"), "missing field: named (%s)",
	   err.text);

	strcpy(text, real_format);
	p = strstr(text, "address;\toffset:8;\tsize:8");
	p[strlen("address;\toffset:8;\tsize:")] = '4';
	ok(cm_fault_format_parse(text, &f, &err) == -1 && errno == EBADMSG &&
	   strstr(err.text, "address"), "address of size 4: refused (%s)",
	   err.text);
	/* A negative or huge offset would put the field outside the raw
	 * entry (strtoul took "-8" as 2^32 - 8 and min_size wrapped). */
	strcpy(text, real_format);
	p = strstr(text, "address;\toffset:8;");
	memcpy(p + strlen("address;\toffset:"), "-8", 2);
	memmove(p + strlen("address;\toffset:-8"),
		p + strlen("address;\toffset:8;") - 1,
		strlen(p + strlen("address;\toffset:8;") - 1) + 1);
	ok(cm_fault_format_parse(text, &f, &err) == -1 && errno == EBADMSG &&
	   strstr(err.text, "address"), "address at offset -8: refused (%s)",
	   err.text);
	strcpy(text, real_format);
	p = strstr(text, "ip;\toffset:16;");
	memcpy(p + strlen("ip;\toffset:"), "99", 2);
	ok(cm_fault_format_parse(text, &f, &err) == 0 && f.ip_off == 99 &&
	   f.min_size == 107, "ip moved to 99: min size 107");
	ok(cm_fault_format_parse("field:unsigned long address;\toffset:"
				 "4294967288;\tsize:8;\n", &f, &err) == -1 &&
	   errno == EBADMSG, "offset 2^32 - 8: refused (%s)", err.text);
	ok(cm_fault_format_parse("", &f, &err) == -1 && errno == EBADMSG,
	   "empty format: refused");
	ok(cm_fault_format_parse(NULL, &f, &err) == -1 && errno == EINVAL,
	   "NULL: EINVAL");
}

static void test_records(void)
{
	struct cm_fault_format f, moved;
	struct cm_fault out;
	struct cm_error err;
	uint8_t buf[256];
	size_t n;
	static const struct {
		uint64_t ec;
		int hinting;
		const char *what;
	} codes[] = {
		{ 0x4, 0, "user read, not present: first touch" },
		{ 0x6, 0, "user write, not present: first touch" },
		{ 0x5, 1, "user read, present: hinting" },
		{ 0x7, 1, "user write, present: hinting" },
		{ 0x15, 1, "instruction fetch, present: hinting" },
		{ 0x0, 0, "no bit at all: not hinting" },
	};

	cm_fault_format_default(&f);
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		n = build(buf, &f, 36, 0x7f0000001234ull, 0x401000,
			  codes[i].ec);
		memset(&out, 0xff, sizeof(out));
		ok(cm_fault_parse_sample(&f, buf, n, &out, &err) == 0 &&
		   out.pid == 1000 && out.tid == 1002 &&
		   out.time == 123456789 && out.addr == 0x7f0000001234ull &&
		   out.ip == 0x401000 && out.error_code == codes[i].ec &&
		   out.hinting == codes[i].hinting, "error code 0x%llx: %s",
		   (unsigned long long)codes[i].ec, codes[i].what);
	}
	ok(n == 64, "the kernel's size: 28 + 36 raw bytes = 64");

	/* Offsets from another format. */
	moved = f;
	moved.addr_off = 24;
	moved.err_off = 8;
	moved.min_size = 32;
	n = build(buf, &moved, 36, 0xabc000, 0x401000, 0x7);
	ok(cm_fault_parse_sample(&moved, buf, n, &out, &err) == 0 &&
	   out.addr == 0xabc000 && out.error_code == 7 && out.hinting,
	   "moved offsets: address and error code where the format says");

	/* Truncated and malformed. */
	n = build(buf, &f, 36, 1, 2, 5);
	ok(cm_fault_parse_sample(&f, buf, 4, &out, &err) == -1 &&
	   errno == EBADMSG, "shorter than a header: EBADMSG");
	ok(cm_fault_parse_sample(&f, buf, n - 8, &out, &err) == -1 &&
	   errno == EBADMSG, "header size beyond the bytes given: EBADMSG");
	tp_put32(buf + 24, 200);
	ok(cm_fault_parse_sample(&f, buf, n, &out, &err) == -1 &&
	   errno == EBADMSG && strstr(err.text, "raw size"),
	   "raw size past the record: EBADMSG (%s)", err.text);
	n = build(buf, &f, 20, 1, 2, 5);
	ok(cm_fault_parse_sample(&f, buf, n, &out, &err) == -1 &&
	   errno == EBADMSG && strstr(err.text, "needs 32"),
	   "raw entry of 20 bytes: too short for error_code (%s)", err.text);
	n = build(buf, &f, 36, 1, 2, 5);
	((struct perf_event_header *)(void *)buf)->size = 16;
	ok(cm_fault_parse_sample(&f, buf, n, &out, &err) == -1 &&
	   errno == EBADMSG, "header size 16: no room for the fields");
	n = build(buf, &f, 36, 1, 2, 5);
	((struct perf_event_header *)(void *)buf)->type = PERF_RECORD_LOST;
	ok(cm_fault_parse_sample(&f, buf, n, &out, &err) == -1 &&
	   errno == EINVAL, "not a sample record: EINVAL");
	ok(cm_fault_parse_sample(&f, NULL, n, &out, &err) == -1 &&
	   errno == EINVAL, "NULL record: EINVAL");
}

static void test_filter(void)
{
	char buf[256];
	pid_t t1[] = { 12, 7, 10, 11, 12 };
	pid_t t2[] = { 42 };
	pid_t many[100];

	is_int(cm_fault_filter_build(NULL, 0, buf, sizeof(buf)), 12,
	       "no tid: a filter that matches nothing");
	is_str(buf, "common_pid<0", "... common_pid<0");
	cm_fault_filter_build(t2, 1, buf, sizeof(buf));
	is_str(buf, "common_pid==42", "one tid");
	cm_fault_filter_build(t1, 5, buf, sizeof(buf));
	is_str(buf, "common_pid==7||(common_pid>=10&&common_pid<=12)",
	       "unsorted with a duplicate: sorted, run 10-12 merged");
	for (int i = 0; i < 100; i++)
		many[i] = 1000 + 2 * i;	/* no two consecutive */
	ok(cm_fault_filter_build(many, 100, buf, sizeof(buf)) == -1 &&
	   errno == ENOSPC && buf[0] == '\0', "too long: ENOSPC, empty");
	for (int i = 0; i < 100; i++)
		many[i] = 5000 + i;
	cm_fault_filter_build(many, 100, buf, sizeof(buf));
	is_str(buf, "(common_pid>=5000&&common_pid<=5099)",
	       "100 consecutive tids: one range");
	ok(cm_fault_filter_build(t2, 1, buf, 5) == -1 && errno == ENOSPC,
	   "tiny buffer: ENOSPC");
	ok(cm_fault_filter_build(t2, -1, buf, sizeof(buf)) == -1 &&
	   errno == EINVAL, "negative count: EINVAL");
	ok(cm_fault_is_hinting(5) && !cm_fault_is_hinting(6),
	   "present bit = hinting");
}

/* ---- real: the sampler on this thread ------------------------------ */

struct own {
	pid_t tid;
	uint64_t lo, hi;
	long ours_in, ours_hint, foreign;
};

static void count_own(const struct cm_fault *f, void *arg)
{
	struct own *o = arg;

	if ((pid_t)f->tid != o->tid) {
		o->foreign++;
		return;
	}
	if (f->addr >= o->lo && f->addr < o->hi) {
		o->ours_in++;
		o->ours_hint += f->hinting;
	}
}

/* Touch npages fresh pages, their range in o. */
static void touch_fresh(struct own *o, int npages)
{
	tp_touch_fresh(npages, &o->lo, &o->hi);
}

/* Returns 0 when the fault backend cannot run here (skipped). */
static int test_sampler(void)
{
	struct cm_fault_sampler *s;
	struct cm_fault_stats st;
	struct cm_fault_config cfg;
	struct cm_error err;
	struct own o = { .tid = (pid_t)syscall(SYS_gettid) };
	pid_t me = o.tid, many[2000];

	cm_fault_config_default(&cfg);
	cfg.tracefs = "/nonexistent";
	ok(cm_fault_sampler_new(&cfg, &err) == NULL && errno == ENOENT &&
	   strstr(err.text, "/nonexistent/events/exceptions/page_fault_user"),
	   "no tracefs: ENOENT naming the path (%s)", err.text);
	cfg.tracefs = NULL;
	cfg.ring_pages = 3;
	ok(cm_fault_sampler_new(&cfg, &err) == NULL && errno == EINVAL,
	   "ring of 3 pages: EINVAL");
	/* Rings of 2 MiB: with no filter (the too-long case below) every
	 * process's faults land in them, thousands in the few milliseconds
	 * of the touches on a busy machine, more than the default ring
	 * holds. */
	cfg.ring_pages = 512;
	s = cm_fault_sampler_new(&cfg, &err);
	if (!s) {
		diag("fault backend: %s", err.text);
		tp_skip(1, "fault backend unavailable here");
		return 0;
	}
	ok(cm_fault_sampler_nevents(s) >= 1, "one event per online CPU (%d)",
	   cm_fault_sampler_nevents(s));
	is_int(cm_fault_sampler_set_tids(s, &me, 1), 0,
	       "filter on this thread installed");
	touch_fresh(&o, 64);
	cm_fault_sampler_read(s, count_own, &o);
	ok(o.ours_in >= 64 && o.ours_hint == 0,
	   "64 fresh pages: %ld first-touch faults of ours there",
	   o.ours_in);
	is_int(o.foreign, 0, "the kernel filter let no foreign fault in");

	memset(&o, 0, sizeof(o));
	o.tid = me;
	is_int(cm_fault_sampler_set_tids(s, NULL, 0), 0, "empty filter");
	touch_fresh(&o, 64);
	cm_fault_sampler_read(s, count_own, &o);
	is_int(o.ours_in + o.foreign, 0, "... nothing comes through");

	/* 2000 scattered tids do not fit in a page of filter text. */
	for (int i = 0; i < 2000; i++)
		many[i] = 3 * i + 1;
	many[0] = me;
	memset(&o, 0, sizeof(o));
	o.tid = me;
	is_int(cm_fault_sampler_set_tids(s, many, 2000), 1,
	       "filter too long: none (returns 1)");
	touch_fresh(&o, 64);
	cm_fault_sampler_read(s, count_own, &o);
	ok(o.ours_in >= 64, "... our faults still come (%ld; %ld foreign)",
	   o.ours_in, o.foreign);
	cm_fault_sampler_stats(s, &st);
	ok(st.filters == 2 && st.filter_fail == 1 && st.malformed == 0,
	   "stats: 2 filters, 1 refused, 0 malformed (%llu records, %llu "
	   "lost)", (unsigned long long)st.records,
	   (unsigned long long)st.lost);
	cm_fault_sampler_free(s);
	return 1;
}

/* ---- real: the collector on a multi-threaded child ----------------- */

#define NTH 4
#define PAGES_PER_THREAD 256
#define RUN_NS 5000000000ull

static char *shared_buf;
static int go_fd;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Each thread: first-touch its own pages, then ~5 s of reads and writes
 * over its pages and a shared buffer (neighbours share a quarter). */
static void *worker(void *arg)
{
	long id = (long)arg;
	size_t pg = (size_t)getpagesize();
	size_t len = PAGES_PER_THREAD * pg;
	char *own = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char c;
	uint64_t end;
	volatile unsigned long sum = 0;

	if (own == MAP_FAILED || read(go_fd, &c, 1) < 0)
		return NULL;
	madvise(own, len, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < len; i += pg)
		own[i] = (char)id;
	end = mono_ns() + RUN_NS;
	while (mono_ns() < end) {
		size_t base = (size_t)id * (len / 2);

		for (size_t i = 0; i < len; i += 64) {
			sum += (unsigned char)own[i];
			shared_buf[base + i]++;
		}
	}
	return NULL;
}

static void child(int ready_w, int go_r)
{
	pthread_t th[NTH];
	size_t pg = (size_t)getpagesize();

	shared_buf = mmap(NULL, (NTH + 1) * PAGES_PER_THREAD * pg / 2 + pg,
			  PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	go_fd = go_r;
	for (long i = 0; i < NTH; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	if (write(ready_w, "r", 1) != 1)
		_exit(2);
	for (int i = 0; i < NTH; i++)
		pthread_join(th[i], NULL);
	_exit(0);
}

static int sysctl_now(void)
{
	FILE *f = fopen("/proc/sys/kernel/numa_balancing", "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Holders listed in the default state file (other agents of the node). */
static int other_holders(void)
{
	FILE *f = fopen("/run/commap/numa_balancing", "r");
	int v, n = -1;

	if (!f)
		return 0;
	while (fscanf(f, "%d", &v) == 1)
		n++;
	fclose(f);
	return n > 0 ? n : 0;
}

static void test_collector(void)
{
	struct cm_collect_opts o;
	struct cm_collect_stats st;
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_collector *c;
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_error err;
	int ready[2], go[2], status = -1, before = sysctl_now();
	pid_t pid;
	char ch;
	uint64_t until;

	if (pipe(ready) || pipe(go))
		return;
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		child(ready[1], go[0]);
	}
	close(ready[1]);
	close(go[0]);
	cm_collect_opts_default(&o);
	o.backend = CM_COLLECT_FAULT;
	o.fault_ring_pages = 64;
	c = cm_collect_new(&o, t, &err);
	ok(c != NULL, "collector with backend fault (%s)", c ? "" : err.text);
	if (!c || read(ready[0], &ch, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		goto out;
	}
	cm_collect_stats(c, &st);
	ok(st.backend == CM_COLLECT_FAULT && st.fault_on && st.period == 0 &&
	   st.tasks == 0, "fault only: no perf sampler, no period");
	ok(st.numa_held && sysctl_now() == 1,
	   "kernel.numa_balancing managed: 1 while collecting (was %d)",
	   before);
	ok(cm_collect_set_period(c, 1000000, m, &err) == -1 &&
	   errno == EINVAL, "no period to change: EINVAL");
	cm_tracker_add_root(t, pid, 0, NULL);
	cm_tracker_scan(t);
	ok(cm_collect_sync(c, &err) == 0, "sync: the filter lists the "
	   "child's %d threads", cm_tracker_nthreads(t));
	/* Everyone is known and filtered: let the threads run. */
	for (int i = 0; i < NTH; i++)
		if (write(go[1], "g", 1) != 1)
			break;
	until = mono_ns() + RUN_NS + 3000000000ull;
	while (waitpid(pid, &status, WNOHANG) == 0 && mono_ns() < until) {
		struct timespec ts = { 0, 50000000 };

		nanosleep(&ts, NULL);
		cm_tracker_scan(t);
		cm_collect_sync(c, NULL);
		cm_collect_drain(c, m, NULL);
	}
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	cm_collect_drain(c, m, NULL);
	cm_collect_stats(c, &st);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "the child ran to its end");
	ok(st.fault_records == st.fault_foreign + st.fault_unknown_tid +
	   st.fault_ours && st.fault_ours == st.fault_hinting +
	   st.fault_first_touch, "counters add up: %llu records = %llu "
	   "foreign + %llu unknown + %llu ours; ours = %llu hinting + %llu "
	   "first touch", (unsigned long long)st.fault_records,
	   (unsigned long long)st.fault_foreign,
	   (unsigned long long)st.fault_unknown_tid,
	   (unsigned long long)st.fault_ours,
	   (unsigned long long)st.fault_hinting,
	   (unsigned long long)st.fault_first_touch);
	ok(st.fault_first_touch + st.fault_lost >= NTH * PAGES_PER_THREAD,
	   "first-touch faults of the %d x %d fresh pages seen (%llu, %llu "
	   "lost)", NTH, PAGES_PER_THREAD,
	   (unsigned long long)st.fault_first_touch,
	   (unsigned long long)st.fault_lost);
	ok(st.accesses == st.fault_hinting && st.events == st.table.events,
	   "only hinting faults enter the table (%llu accesses, %llu "
	   "events)", (unsigned long long)st.accesses,
	   (unsigned long long)st.events);
	ok(st.fault_filters >= 1 && st.fault_filter_fail == 0,
	   "kernel filter installed (%llu times)",
	   (unsigned long long)st.fault_filters);
	diag("hinting faults in ~5 s: %llu (0 is normal here: the scan "
	     "starts after ~1 s of a thread's CPU time), matrix total %.0f",
	     (unsigned long long)st.fault_hinting, cm_matrix_total(m));
out:
	cm_collect_free(c);
	if (other_holders() == 0)
		is_int(sysctl_now(), before,
		       "kernel.numa_balancing restored after the collector");
	else
		ok(1, "# SKIP another agent holds kernel.numa_balancing");
	cm_matrix_free(m);
	cm_tracker_free(t);
	close(ready[0]);
	close(go[1]);
}

int main(void)
{
	test_format();
	test_records();
	test_filter();
	if (test_sampler())
		test_collector();
	return done_testing();
}
