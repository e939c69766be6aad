/* test_cma_trace.c: single-copy transfers (nodeagent/cma_trace.h,
 * cma_attrib.h and their use in collect.h).
 *
 * Pure parts: the syscall tracepoints' format files, PERF_RECORD_SAMPLE
 * records of layout TID|TIME|RAW built by hand (the four tracepoints told
 * by common_type, another tracepoint skipped, truncated records), pairing
 * of enters and exits in every order the rings can give them, failed
 * calls, the pairing table's bound.
 * Real parts (root): this process copies to and from a child with
 * process_vm_readv/writev a known number of times and bytes; the tracer
 * must see every call and byte (syscalls are counted, not sampled), none
 * with a kernel filter that leaves this thread out, and
 * the collector must put exactly bytes / unit between this thread and the
 * child's thread that made CMA calls itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cma_attrib.h"
#include "cma_trace.h"
#include "collect.h"
#include "proc_track.h"
#include "tap.h"
#include "tracepoint_test_util.h"

/* Format files of kernel 6.18 (x86-64). */
static const char enter_format[] =
	"name: sys_enter_process_vm_readv\n"
	"ID: 720\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;"
	"\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:pid_t pid;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:const struct iovec * lvec;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long liovcnt;\toffset:32;\tsize:8;\tsigned:0;\n"
	"\tfield:const struct iovec * rvec;\toffset:40;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long riovcnt;\toffset:48;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long flags;\toffset:56;\tsize:8;\tsigned:0;\n";
static const char exit_format[] =
	"name: sys_exit_process_vm_readv\n"
	"ID: 719\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n";

static void test_format(void)
{
	struct cm_error err;
	unsigned off = 99;

	ok(cm_cma_format_field(enter_format, "pid", 8, &off, &err) == 0 &&
	   off == 16, "enter format: pid at 16");
	ok(cm_cma_format_field(enter_format, "rvec", 8, &off, &err) == 0 &&
	   off == 40, "a pointer field's name after '*': rvec at 40");
	ok(cm_cma_format_field(exit_format, "ret", 8, &off, &err) == 0 &&
	   off == 16, "exit format: ret at 16");
	ok(cm_cma_format_field(exit_format, "pid", 8, &off, &err) == -1 &&
	   errno == EBADMSG && strstr(err.text, "no field pid"),
	   "missing field named (%s)", err.text);
	ok(cm_cma_format_field(exit_format, "ret", 4, &off, &err) == -1 &&
	   errno == EBADMSG && strstr(err.text, "size 8, want 4"),
	   "wrong size named (%s)", err.text);
	ok(cm_cma_format_field("\tfield:long ret;\toffset:-8;\tsize:8;\n",
			       "ret", 8, &off, &err) == -1 &&
	   errno == EBADMSG, "negative offset refused (%s)", err.text);
	ok(cm_cma_format_field("\tfield:long ret;\toffset:99999999;\tsize:8;",
			       "ret", 8, &off, &err) == -1,
	   "offset out of range refused");
	ok(cm_cma_format_field("", "ret", 8, &off, &err) == -1,
	   "empty text: no field");
	ok(cm_cma_format_field(NULL, "ret", 8, &off, &err) == -1 &&
	   errno == EINVAL, "NULL text: EINVAL");
}

static void test_format_ids(struct cm_cma_format *f)
{
	cm_cma_format_default(f);
	for (int k = 0; k < CM_CMA_NKINDS; k++)
		f->id[k] = 720 - (uint64_t)k;
}

/* A sample record: header, pid 1000, tid 1002, time, raw size, raw entry
 * (common_type id, value at 16), padded to 8.  Returns its size. */
static size_t build(uint8_t *buf, uint32_t rawlen, uint16_t id,
		    uint64_t time, uint64_t value)
{
	size_t size = tp_record(buf, rawlen, time);
	uint8_t *raw = buf + 28;

	tp_put16(raw, id);
	if (rawlen >= 24)
		tp_put64(raw + 16, value);
	return size;
}

static void test_parse(void)
{
	struct cm_cma_format f;
	struct cm_cma_event ev;
	struct cm_error err;
	uint8_t buf[256];
	size_t n;
	int good = 1;

	test_format_ids(&f);
	for (int k = 0; k < CM_CMA_NKINDS; k++) {
		n = build(buf, 64, (uint16_t)f.id[k], 500 + (uint64_t)k,
			  k < 2 ? 4242 : (uint64_t)65536);
		memset(&ev, 0, sizeof(ev));
		if (cm_cma_parse_sample(&f, buf, n, &ev, &err) != 0 ||
		    ev.kind != (enum cm_cma_kind)k || ev.pid != 1000 ||
		    ev.tid != 1002 || ev.time != 500 + (uint64_t)k ||
		    ev.value != (k < 2 ? 4242 : 65536))
			good = 0;
	}
	ok(good, "each tracepoint's record parsed to its kind and value");
	n = build(buf, 64, (uint16_t)f.id[CM_CMA_EXIT_READ], 1,
		  (uint64_t)-14);
	ok(cm_cma_parse_sample(&f, buf, n, &ev, &err) == 0 &&
	   ev.value == -14, "a failed call's return value (-EFAULT) kept");
	n = build(buf, 64, 12, 1, 1);
	ok(cm_cma_parse_sample(&f, buf, n, &ev, &err) == 1,
	   "another tracepoint's record: skipped (1)");
	n = build(buf, 16, (uint16_t)f.id[0], 1, 1);
	ok(cm_cma_parse_sample(&f, buf, n, &ev, &err) == -1 &&
	   errno == EBADMSG, "raw entry too short for the pid (%s)", err.text);
	n = build(buf, 64, (uint16_t)f.id[0], 1, 1);
	tp_put32(buf + 24, 4000);
	ok(cm_cma_parse_sample(&f, buf, n, &ev, &err) == -1 &&
	   errno == EBADMSG, "raw size past the record (%s)", err.text);
	ok(cm_cma_parse_sample(&f, buf, 6, &ev, &err) == -1 &&
	   errno == EBADMSG, "shorter than a header");
	n = build(buf, 64, (uint16_t)f.id[0], 1, 1);
	ok(cm_cma_parse_sample(&f, buf, n - 8, &ev, &err) == -1 &&
	   errno == EBADMSG, "record cut short");
	buf[0] = PERF_RECORD_LOST;
	ok(cm_cma_parse_sample(&f, buf, n, &ev, &err) == -1 &&
	   errno == EINVAL, "not a sample: EINVAL");
}

static struct cm_cma_event mkev(uint32_t tid, enum cm_cma_kind k,
				uint64_t t, int64_t v)
{
	struct cm_cma_event e = { 77, tid, t, k, v };

	return e;
}

static void test_pairing(void)
{
	struct cm_cma_pairer *p = cm_cma_pairer_new();
	struct cm_cma_pair_stats st;
	struct cm_cma_transfer x;
	struct cm_cma_event e;
	int r1, r2, got, stored;

	e = mkev(5, CM_CMA_ENTER_READ, 100, 900);
	r1 = cm_cma_pairer_feed(p, &e, &x);
	e = mkev(5, CM_CMA_EXIT_READ, 150, 4096);
	r2 = cm_cma_pairer_feed(p, &e, &x);
	ok(r1 == 0 && r2 == 1 && x.tid == 5 && x.pid == 77 && x.peer == 900 &&
	   x.bytes == 4096 && !x.write && x.time == 150,
	   "enter then exit: a read of 4096 bytes from pid 900");
	/* Read from another CPU's ring first: the exit before its enter. */
	e = mkev(6, CM_CMA_EXIT_WRITE, 300, 100);
	r1 = cm_cma_pairer_feed(p, &e, &x);
	e = mkev(6, CM_CMA_ENTER_WRITE, 250, 901);
	r2 = cm_cma_pairer_feed(p, &e, &x);
	ok(r1 == 0 && r2 == 1 && x.peer == 901 && x.bytes == 100 && x.write &&
	   x.time == 300, "exit read before its enter: still paired");
	e = mkev(7, CM_CMA_ENTER_READ, 400, 902);
	cm_cma_pairer_feed(p, &e, &x);
	e = mkev(7, CM_CMA_EXIT_READ, 410, -1);
	ok(cm_cma_pairer_feed(p, &e, &x) == 1 && x.bytes == 0,
	   "a failed call: finished with 0 bytes");
	e = mkev(8, CM_CMA_ENTER_READ, 500, 903);
	cm_cma_pairer_feed(p, &e, &x);
	e = mkev(8, CM_CMA_ENTER_READ, 510, 904);
	cm_cma_pairer_feed(p, &e, &x);
	e = mkev(8, CM_CMA_EXIT_READ, 520, 10);
	ok(cm_cma_pairer_feed(p, &e, &x) == 1 && x.peer == 904,
	   "an enter whose exit was lost is replaced by the next");
	e = mkev(9, CM_CMA_ENTER_READ, 600, 905);
	cm_cma_pairer_feed(p, &e, &x);
	e = mkev(9, CM_CMA_EXIT_WRITE, 610, 10);
	ok(cm_cma_pairer_feed(p, &e, &x) == 0, "an exit of the other "
	   "syscall does not pair");
	e = mkev(10, CM_CMA_ENTER_READ, 700, 0);
	cm_cma_pairer_feed(p, &e, &x);
	e = mkev(10, CM_CMA_EXIT_READ, 710, 64);
	ok(cm_cma_pairer_feed(p, &e, &x) == 1 && x.bytes == 0,
	   "peer pid 0 is no transfer");
	cm_cma_pairer_stats(p, &st);
	ok(st.calls == 5 && st.failed == 2 && st.bytes == 4096 + 100 + 10 &&
	   st.unpaired == 2 && st.no_slot == 0, "counted: %llu calls, %llu "
	   "failed, %llu bytes, %llu unpaired", (unsigned long long)st.calls,
	   (unsigned long long)st.failed, (unsigned long long)st.bytes,
	   (unsigned long long)st.unpaired);
	cm_cma_pairer_free(p);

	/* The table holds a bounded number of threads in flight. */
	p = cm_cma_pairer_new();
	stored = 0;
	for (uint32_t t = 1; t <= 3 * CM_CMA_PAIR_SLOTS; t++) {
		e = mkev(t, CM_CMA_ENTER_READ, 1000, 900);
		cm_cma_pairer_feed(p, &e, &x);
	}
	got = 0;
	for (uint32_t t = 1; t <= 3 * CM_CMA_PAIR_SLOTS; t++) {
		e = mkev(t, CM_CMA_EXIT_READ, 2000, 8);
		got += cm_cma_pairer_feed(p, &e, &x);
	}
	cm_cma_pairer_stats(p, &st);
	stored = (int)(3 * CM_CMA_PAIR_SLOTS - st.no_slot / 2);
	ok(got <= (int)CM_CMA_PAIR_SLOTS && st.no_slot > 0 && got > 0,
	   "%u threads in flight: %d paired (<= %u slots), %llu events "
	   "dropped and counted", 3 * CM_CMA_PAIR_SLOTS, got,
	   CM_CMA_PAIR_SLOTS, (unsigned long long)st.no_slot);
	(void)stored;
	/* A slot held by a call older than CM_CMA_ORPHAN_NS is reused. */
	e = mkev(99999, CM_CMA_ENTER_READ, 2000 + 2 * CM_CMA_ORPHAN_NS, 900);
	cm_cma_pairer_feed(p, &e, &x);
	e = mkev(99999, CM_CMA_EXIT_READ, 2001 + 2 * CM_CMA_ORPHAN_NS, 8);
	ok(cm_cma_pairer_feed(p, &e, &x) == 1,
	   "a full table gives up calls older than %llu ns",
	   (unsigned long long)CM_CMA_ORPHAN_NS);
	cm_cma_pairer_free(p);
}

static void test_sort(void)
{
	struct cm_cma_event ev[5] = {
		{ 1, 1, 30, CM_CMA_EXIT_READ, 0 },
		{ 1, 1, 10, CM_CMA_ENTER_READ, 0 },
		{ 1, 2, 20, CM_CMA_EXIT_READ, 0 },
		{ 1, 2, 20, CM_CMA_ENTER_READ, 0 },
		{ 1, 3, 5, CM_CMA_ENTER_WRITE, 0 },
	};

	cm_cma_sort(ev, 5);
	ok(ev[0].time == 5 && ev[1].time == 10 && ev[2].time == 20 &&
	   ev[2].kind == CM_CMA_ENTER_READ && ev[3].kind == CM_CMA_EXIT_READ &&
	   ev[4].time == 30, "sorted by time, an enter before an exit of "
	   "the same nanosecond");
}

/* ---- real: a child to copy to and from ------------------------------- */

#define BUF_BYTES (1u << 20)
#define NREADS 40
#define READ_BYTES (64u * 1024)
#define NWRITES 25
#define WRITE_BYTES 4096u

static char child_buf[BUF_BYTES];

/* The child: reads from the parent once (so it has made a CMA call and
 * is its own "MPI thread"), says where, waits to be killed. */
static void child(int wfd, pid_t parent)
{
	struct iovec l = { child_buf, 64 }, r = { child_buf, 64 };
	uintptr_t addr = (uintptr_t)child_buf;

	memset(child_buf, 1, sizeof(child_buf));
	if (process_vm_readv(parent, &l, 1, &r, 1, 0) != 64)
		_exit(3);
	if (write(wfd, &addr, sizeof(addr)) != sizeof(addr))
		_exit(2);
	pause();
	_exit(0);
}

struct seen {
	pid_t pid, peer;
	uint64_t calls, bytes, writes;
};

static void on_transfer(const struct cm_cma_transfer *x, void *arg)
{
	struct seen *s = arg;

	if (x->pid != (uint32_t)getpid() || x->peer != (uint32_t)s->peer)
		return;
	s->calls++;
	s->bytes += x->bytes;
	s->writes += (uint64_t)x->write;
}

/* NREADS reads of READ_BYTES and NWRITES writes of WRITE_BYTES with the
 * child; 0 when every call copied everything. */
static int copy_with(pid_t peer, uintptr_t raddr)
{
	static char local[READ_BYTES];
	int bad = 0;

	for (int i = 0; i < NREADS; i++) {
		struct iovec l = { local, READ_BYTES };
		struct iovec r = { (void *)(raddr + (uintptr_t)i * 4096),
				   READ_BYTES };

		bad |= process_vm_readv(peer, &l, 1, &r, 1, 0) !=
		       (ssize_t)READ_BYTES;
	}
	for (int i = 0; i < NWRITES; i++) {
		struct iovec l = { local, WRITE_BYTES };
		struct iovec r = { (void *)raddr, WRITE_BYTES };

		bad |= process_vm_writev(peer, &l, 1, &r, 1, 0) !=
		       (ssize_t)WRITE_BYTES;
	}
	return bad;
}

static pid_t start_child(uintptr_t *addr)
{
	int fds[2];
	pid_t parent = getpid(), pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], parent);
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], addr, sizeof(*addr)) != sizeof(*addr)) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		pid = -1;
	}
	close(fds[0]);
	return pid;
}

static void stop_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_tracer(void)
{
	struct cm_cma_tracer *t;
	struct cm_cma_stats st;
	struct cm_error err;
	struct seen s = { 0 };
	uintptr_t addr = 0;
	pid_t pid;

	t = cm_cma_tracer_new(NULL, &err);
	if (!t) {
		diag("tracer: %s", err.text);
		tp_skip(5, "CMA tracing not permitted or unsupported here");
		return;
	}
	pid = start_child(&addr);
	ok(pid > 0 && copy_with(pid, addr) == 0, "%d reads of %u B and %d "
	   "writes of %u B with a child", NREADS, READ_BYTES, NWRITES,
	   WRITE_BYTES);
	s.peer = pid;
	cm_cma_tracer_read(t, on_transfer, &s);
	cm_cma_tracer_stats(t, &st);
	ok(s.calls == NREADS + NWRITES && s.writes == NWRITES &&
	   s.bytes == (uint64_t)NREADS * READ_BYTES +
		      (uint64_t)NWRITES * WRITE_BYTES && st.lost == 0,
	   "every call and byte seen: %llu calls (%llu writes), %llu bytes, "
	   "%llu lost", (unsigned long long)s.calls,
	   (unsigned long long)s.writes, (unsigned long long)s.bytes,
	   (unsigned long long)st.lost);
	ok(st.malformed == 0 && st.pair.no_slot == 0,
	   "no malformed record, no pairing drop");
	/* A kernel filter listing only the child: this thread's calls are
	 * not recorded; listing this thread: they are again. */
	{
		pid_t only_child = pid, me = (pid_t)syscall(SYS_gettid);
		int r1 = cm_cma_tracer_set_tids(t, &only_child, 1), r2;

		memset(&s, 0, sizeof(s));
		s.peer = pid;
		copy_with(pid, addr);
		cm_cma_tracer_read(t, on_transfer, &s);
		ok(r1 == 0 && s.calls == 0, "filter without this thread: "
		   "none of its calls recorded (%llu)",
		   (unsigned long long)s.calls);
		r2 = cm_cma_tracer_set_tids(t, &me, 1);
		copy_with(pid, addr);
		cm_cma_tracer_read(t, on_transfer, &s);
		cm_cma_tracer_stats(t, &st);
		ok(r2 == 0 && s.calls == NREADS + NWRITES && st.filters == 2,
		   "filter with this thread: every call again (%llu), %llu "
		   "filters installed", (unsigned long long)s.calls,
		   (unsigned long long)st.filters);
	}
	if (pid > 0)
		stop_child(pid);
	cm_cma_tracer_free(t);
}

static void test_collector(void)
{
	struct cm_tracker *tr = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_collect_opts o;
	struct cm_collect_stats st;
	struct cm_collector *c;
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_error err;
	uintptr_t addr = 0;
	int me, other;
	pid_t pid;
	double want;

	/* The child's own call comes before the collector: unseen. */
	pid = start_child(&addr);
	cm_collect_opts_default(&o);
	o.cma_bytes_per_unit = 65536;
	c = cm_collect_new(&o, tr, &err);
	ok(c != NULL, "collector (%s)", c ? "" : err.text);
	cm_collect_stats(c, &st);
	if (!c || !st.cma_on) {
		diag("%s", cm_collect_last_problem(c));
		ok(!c || strstr(cm_collect_last_problem(c), "CMA"),
		   "no CMA tracing: a problem line says so");
		tp_skip(2, "CMA tracing not permitted or unsupported here");
		goto out;
	}
	ok(strcmp(cm_collect_last_problem(c), "") == 0, "no problem line");
	cm_tracker_add_root(tr, getpid(), 0, NULL);
	cm_tracker_add_root(tr, pid, 1, NULL);
	cm_tracker_scan(tr);
	cm_collect_sync(c, NULL);
	copy_with(pid, addr);
	cm_collect_drain(c, m, NULL);
	cm_collect_stats(c, &st);
	me = cm_tracker_find_thread(tr, getpid());
	other = cm_tracker_find_thread(tr, pid);
	want = ((double)NREADS * READ_BYTES + (double)NWRITES * WRITE_BYTES) /
	       65536.0;
	ok(me >= 0 && other >= 0 &&
	   fabs(cm_matrix_get(m, me, other) - want) < 1e-9 &&
	   st.cma_attrib.transfers == NREADS + NWRITES &&
	   st.cma_attrib.bytes == (uint64_t)(want * 65536),
	   "weight %.3f (= %.3f: bytes / 64 KiB) between this thread and "
	   "the child's; %llu transfers", cm_matrix_get(m, me, other), want,
	   (unsigned long long)st.cma_attrib.transfers);
	ok(st.cma_attrib.by_main == NREADS + NWRITES,
	   "peer side: its main thread (it made no call since it was "
	   "tracked): %llu", (unsigned long long)st.cma_attrib.by_main);
out:
	if (pid > 0)
		stop_child(pid);
	cm_collect_free(c);
	cm_matrix_free(m);
	cm_tracker_free(tr);
}

int main(void)
{
	test_format();
	test_parse();
	test_pairing();
	test_sort();
	test_tracer();
	test_collector();
	return done_testing();
}
