/* test_perf_sample.c: perf sample records, rings, the hardware probe and
 * real software address sampling (nodeagent/perf_record.c,
 * perf_open.c, perf_sample.c).
 *
 * Records and rings are built byte by byte (sample with and without user
 * registers, hw samples with ADDR, lost/throttle/unknown records, records
 * wrapping the ring end, zero and oversized header sizes, truncation).  The
 * probe runs on the real sysfs and on fake trees (PEBS, IBS, SPE, nothing).
 * The real test samples a writer thread of this process (covered by
 * inheritance) and a forked process (attached by pid) with cpu-clock, and
 * decodes the sampled instructions read from /proc/PID/mem.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <asm/perf_regs.h>
#include <linux/perf_event.h>

#include "decode.h"
#include "perf_sample.h"
#include "tap.h"

/* ---- building records ------------------------------------------------- */

struct rb {
	uint8_t b[1024];
	size_t n;
};

static void put64(struct rb *r, uint64_t v)
{
	memcpy(r->b + r->n, &v, 8);
	r->n += 8;
}

static void put32x2(struct rb *r, uint32_t a, uint32_t b)
{
	memcpy(r->b + r->n, &a, 4);
	memcpy(r->b + r->n + 4, &b, 4);
	r->n += 8;
}

static void begin(struct rb *r, uint32_t type)
{
	memset(r, 0, sizeof(*r));
	memcpy(r->b, &type, 4);
	r->n = 8;
}

/* Set the header size to the bytes written (or to forced if nonzero). */
static void finish(struct rb *r, uint16_t forced)
{
	uint16_t size = forced ? forced : (uint16_t)r->n;

	memcpy(r->b + 6, &size, 2);
}

static const struct cm_perf_layout sw_lay = {
	CM_PERF_SAMPLE_TYPE_SW, CM_PERF_REGS_MASK
};
static const struct cm_perf_layout hw_lay = { CM_PERF_SAMPLE_TYPE_HW, 0 };

/* A sample of the sample backend: register k holds 0x1000 * (k + 1). */
static void sw_sample(struct rb *r, uint32_t tid, uint64_t ip, uint64_t abi)
{
	begin(r, PERF_RECORD_SAMPLE);
	put64(r, ip);
	put32x2(r, 100, tid);
	put64(r, 5000 + tid);
	put64(r, abi);
	if (abi != PERF_SAMPLE_REGS_ABI_NONE)
		for (int bit = 0; bit < 64; bit++)
			if (CM_PERF_REGS_MASK & (1ull << bit))
				put64(r, 0x1000ull * (uint64_t)(bit + 1));
	finish(r, 0);
}

static void test_layout(void)
{
	struct cm_perf_layout l = { PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN, 0 };
	struct cm_perf_record rec;
	struct cm_error e = { "" };
	struct rb r;

	ok(cm_perf_layout_check(&sw_lay, NULL) == 0, "sw layout accepted");
	ok(cm_perf_layout_check(&hw_lay, NULL) == 0, "hw layout accepted");
	ok(cm_perf_layout_check(&l, &e) == -1 && errno == EINVAL &&
	   strstr(e.text, "0x20"), "callchain rejected, named: %s", e.text);
	sw_sample(&r, 7, 0x401000, PERF_SAMPLE_REGS_ABI_64);
	ok(cm_perf_parse_record(&l, r.b, r.n, &rec, NULL) == -1 &&
	   errno == EINVAL, "parse with an unknown layout: EINVAL");
}

static void test_sw_sample(void)
{
	struct cm_perf_record rec;
	struct cm_perf_stats st = { 0 };
	struct cm_error e = { "" };
	struct rb r;

	sw_sample(&r, 4242, 0x401234, PERF_SAMPLE_REGS_ABI_64);
	is_int(r.n, 8 + 8 + 8 + 8 + 8 + 17 * 8, "sw sample is 176 bytes");
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, &e) == 0,
	   "sw sample parsed %s", e.text);
	is_int(rec.kind, CM_PERF_REC_SAMPLE, "kind sample");
	is_int(rec.sample.pid, 100, "pid");
	is_int(rec.sample.tid, 4242, "tid");
	is_int(rec.sample.time, 5000 + 4242, "time");
	is_int(rec.sample.ip, 0x401234, "ip");
	is_int(rec.sample.regs.v[PERF_REG_X86_AX], 0x1000, "ax");
	is_int(rec.sample.regs.v[PERF_REG_X86_IP], 0x9000, "ip register");
	is_int(rec.sample.regs.v[PERF_REG_X86_R15], 0x18000, "r15");
	is_int(rec.sample.regs.valid, CM_PERF_REGS_MASK, "17 registers valid");
	cm_perf_stats_account(&st, &rec);

	/* abi NONE: the thread was not in user mode, no registers follow */
	sw_sample(&r, 9, 0x401000, PERF_SAMPLE_REGS_ABI_NONE);
	is_int(r.n, 40, "abi-none sample is 40 bytes");
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, NULL) == 0 &&
	   rec.sample.regs.valid == 0 && rec.sample.tid == 9,
	   "abi none: parsed without registers");
	cm_perf_stats_account(&st, &rec);
	is_int(st.samples, 2, "two samples counted");
	is_int(st.no_regs, 1, "one without registers");
	is_int(st.bytes, 176 + 40, "bytes counted");

	sw_sample(&r, 9, 0x401000, PERF_SAMPLE_REGS_ABI_32);
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, &e) == -1 &&
	   errno == EBADMSG, "abi 32: EBADMSG (%s)", e.text);
	sw_sample(&r, 9, 0x401000, PERF_SAMPLE_REGS_ABI_64);
	finish(&r, (uint16_t)(r.n - 8));
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, &e) == -1 &&
	   errno == EBADMSG && strstr(e.text, "registers"),
	   "register block cut by the header size: %s", e.text);
	finish(&r, 20);
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, &e) == -1 &&
	   errno == EBADMSG, "sample cut inside tid: %s", e.text);
	finish(&r, 4);
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, &e) == -1 &&
	   errno == EBADMSG, "header size 4: %s", e.text);
	finish(&r, 0);
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n - 8, &rec, &e) == -1 &&
	   errno == EBADMSG, "header size beyond the bytes given: %s",
	   e.text);
	ok(cm_perf_parse_record(&sw_lay, r.b, 6, &rec, NULL) == -1 &&
	   errno == EBADMSG, "6 bytes: no header");
}

static void test_hw_and_full_layout(void)
{
	struct cm_perf_layout full = {
		PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
		PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
		PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
		PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC, 0
	};
	struct cm_perf_record rec;
	struct rb r;

	begin(&r, PERF_RECORD_SAMPLE);
	put64(&r, 0x400100);		/* ip */
	put32x2(&r, 10, 11);		/* pid, tid */
	put64(&r, 123456789);		/* time */
	put64(&r, 0x7f0000001040ull);	/* addr */
	finish(&r, 0);
	ok(cm_perf_parse_record(&hw_lay, r.b, r.n, &rec, NULL) == 0 &&
	   rec.sample.addr == 0x7f0000001040ull && rec.sample.tid == 11 &&
	   rec.sample.pid == 10 && rec.sample.time == 123456789 &&
	   rec.sample.ip == 0x400100 && !rec.sample.has_regs_block,
	   "hw sample: addr, tid, time, ip");
	finish(&r, 32);
	ok(cm_perf_parse_record(&hw_lay, r.b, r.n, &rec, NULL) == -1 &&
	   errno == EBADMSG, "hw sample without its addr: EBADMSG");

	begin(&r, PERF_RECORD_SAMPLE);
	put64(&r, 77);			/* identifier */
	put64(&r, 0x400200);		/* ip */
	put32x2(&r, 1, 2);
	put64(&r, 3);			/* time */
	put64(&r, 0xabc0);		/* addr */
	put64(&r, 77);			/* id */
	put64(&r, 78);			/* stream id */
	put32x2(&r, 5, 0);		/* cpu, res */
	put64(&r, 10007);		/* period */
	put64(&r, 250);			/* weight */
	put64(&r, 0x1234);		/* data_src */
	finish(&r, 0);
	ok(cm_perf_parse_record(&full, r.b, r.n, &rec, NULL) == 0 &&
	   rec.sample.id == 77 && rec.sample.ip == 0x400200 &&
	   rec.sample.addr == 0xabc0 && rec.sample.cpu == 5 &&
	   rec.sample.period == 10007 && rec.sample.weight == 250 &&
	   rec.sample.data_src == 0x1234, "every supported field in order");
}

static void test_other_records(void)
{
	struct cm_perf_stats st = { 0 };
	struct cm_perf_record rec;
	struct rb r;

	begin(&r, PERF_RECORD_LOST);
	put64(&r, 1);
	put64(&r, 42);
	finish(&r, 0);
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, NULL) == 0 &&
	   rec.kind == CM_PERF_REC_LOST && rec.lost == 42, "lost 42");
	cm_perf_stats_account(&st, &rec);
	finish(&r, 16);
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, NULL) == -1 &&
	   errno == EBADMSG, "lost record without its count: EBADMSG");

	begin(&r, PERF_RECORD_LOST_SAMPLES);
	put64(&r, 7);
	finish(&r, 0);
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, NULL) == 0 &&
	   rec.kind == CM_PERF_REC_LOST && rec.lost == 7, "lost samples 7");
	cm_perf_stats_account(&st, &rec);

	begin(&r, PERF_RECORD_THROTTLE);
	put64(&r, 1);
	put64(&r, 2);
	put64(&r, 3);
	finish(&r, 0);
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, NULL) == 0 &&
	   rec.kind == CM_PERF_REC_THROTTLE, "throttle");
	cm_perf_stats_account(&st, &rec);
	memcpy(r.b, &(uint32_t){ PERF_RECORD_UNTHROTTLE }, 4);
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, NULL) == 0 &&
	   rec.kind == CM_PERF_REC_UNTHROTTLE, "unthrottle");
	cm_perf_stats_account(&st, &rec);

	begin(&r, 99);
	put64(&r, 0);
	put64(&r, 0);
	finish(&r, 0);
	ok(cm_perf_parse_record(&sw_lay, r.b, r.n, &rec, NULL) == 0 &&
	   rec.kind == CM_PERF_REC_OTHER && rec.size == 24,
	   "unknown type 99: other, 24 bytes");
	cm_perf_stats_account(&st, &rec);
	is_int(st.lost, 49, "lost summed over both record types");
	is_int(st.throttle, 1, "throttle counted");
	is_int(st.unthrottle, 1, "unthrottle counted");
	is_int(st.other, 1, "other counted");
	is_int(st.samples, 0, "no samples");
}

/* ---- rings -------------------------------------------------------------- */

#define RING 256

static void ring_put(uint8_t *data, uint64_t pos, const struct rb *r)
{
	for (size_t i = 0; i < r->n; i++)
		data[(pos + i) % RING] = r->b[i];
}

static void test_ring(void)
{
	uint8_t data[RING], buf[65536], small[16];
	struct cm_perf_record rec;
	struct cm_error e = { "" };
	uint64_t head, tail, start = 10 * RING + 64;
	const uint8_t *p;
	size_t len;
	struct rb r;
	int n;

	memset(data, 0xee, sizeof(data));
	/* 40-byte abi-none sample at 64, unknown 24 at 104, lost at 128,
	 * a 40-byte sample at 152 and a 40-byte one at 192..232, then a
	 * 40-byte one at 232 that wraps to 16: written over 232..256+16. */
	head = start;
	sw_sample(&r, 1, 0x1001, PERF_SAMPLE_REGS_ABI_NONE);
	ring_put(data, head, &r);
	head += r.n;
	begin(&r, 99);
	put64(&r, 0);
	put64(&r, 0);
	finish(&r, 0);
	ring_put(data, head, &r);
	head += r.n;
	begin(&r, PERF_RECORD_LOST);
	put64(&r, 1);
	put64(&r, 5);
	finish(&r, 0);
	ring_put(data, head, &r);
	head += r.n;
	for (uint32_t t = 2; t <= 4; t++) {
		sw_sample(&r, t, 0x1000 + t, PERF_SAMPLE_REGS_ABI_NONE);
		ring_put(data, head, &r);
		head += r.n;
	}
	tail = start;
	n = 0;
	uint32_t tids[8] = { 0 };
	int got;

	while ((got = cm_perf_ring_next(data, RING, head, &tail, buf,
					sizeof(buf), &p, &len, &e)) == 1) {
		if (cm_perf_parse_record(&sw_lay, p, len, &rec, &e))
			break;
		if (rec.kind == CM_PERF_REC_SAMPLE && n < 8)
			tids[n++] = rec.sample.tid;
	}
	is_int(got, 0, "ring drained to empty");
	is_int(tail, head, "tail reached head");
	is_int(n, 4, "four samples read");
	ok(tids[0] == 1 && tids[1] == 2 && tids[2] == 3 && tids[3] == 4,
	   "in order, the wrapped one (tid 4) intact");

	/* the wrapped record needs a buffer large enough */
	tail = head - 40;
	ok(cm_perf_ring_next(data, RING, head, &tail, small, sizeof(small),
			     &p, &len, &e) == -1 && errno == EINVAL &&
	   tail == head - 40, "wrapped record, buffer too small: EINVAL");
	ok(cm_perf_ring_next(data, RING, head, &tail, buf, sizeof(buf), &p,
			     &len, NULL) == 1 && p == buf && len == 40,
	   "wrapped record copied to buf");

	/* zero-size header */
	memset(data, 0, sizeof(data));
	tail = 0;
	ok(cm_perf_ring_next(data, RING, 64, &tail, buf, sizeof(buf), &p,
			     &len, &e) == -1 && errno == EBADMSG && tail == 0,
	   "zero header size: EBADMSG (%s)", e.text);
	/* a record larger than what was written */
	sw_sample(&r, 1, 1, PERF_SAMPLE_REGS_ABI_NONE);
	ring_put(data, 0, &r);
	ok(cm_perf_ring_next(data, RING, 32, &tail, buf, sizeof(buf), &p,
			     &len, &e) == -1 && errno == EBADMSG,
	   "record beyond head: EBADMSG (%s)", e.text);
	ok(cm_perf_ring_next(data, RING, RING + 8, &tail, buf, sizeof(buf),
			     &p, &len, &e) == -1 && errno == EBADMSG,
	   "more pending than the ring holds: EBADMSG (%s)", e.text);
	ok(cm_perf_ring_next(data, RING, 4, &tail, buf, sizeof(buf), &p,
			     &len, &e) == -1 && errno == EBADMSG,
	   "4 bytes pending: EBADMSG");
	ok(cm_perf_ring_next(data, 100, 0, &tail, buf, sizeof(buf), &p,
			     &len, NULL) == -1 && errno == EINVAL,
	   "ring size not a power of two: EINVAL");
	ok(cm_perf_ring_next(data, RING, 0, &tail, buf, sizeof(buf), &p,
			     &len, NULL) == 0, "empty ring: 0");
}

/* ---- hardware probe ----------------------------------------------------- */

static char fake_root[64];

static void put_file(const char *rel, const char *text)
{
	char path[512], dir[512], *s;

	snprintf(path, sizeof(path), "%s/%s", fake_root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (s = dir + strlen(fake_root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(dir, 0755);
		*s = '/';
	}
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int new_fake_root(void)
{
	snprintf(fake_root, sizeof(fake_root), "/tmp/cm_hwprobe_XXXXXX");
	if (!mkdtemp(fake_root))
		return -1;
	put_file("bus/event_source/devices/software/type", "1\n");
	return 0;
}

static void rm_fake_root(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_root);
	if (system(cmd) != 0)
		diag("could not remove %s", fake_root);
}

static void test_hw_probe(void)
{
	struct cm_perf_hw hw;
	int r;

	r = cm_perf_hw_probe(NULL, &hw);
	ok(r == 0 || r == 1, "probe of this machine answers (%d)", r);
	diag("hw probe here: %s", hw.reason);
	if (r == 0)
		ok(hw.reason[0] && hw.kind == CM_PERF_HW_NONE,
		   "unavailable with a reason");
	if (access("/sys/bus/event_source/devices/cpu", F_OK) != 0 &&
	    access("/sys/bus/event_source/devices/ibs_op", F_OK) != 0)
		ok(r == 0 && strstr(hw.reason, "no hardware memory-sampling"),
		   "no CPU PMU here (VM): refused, reason names the search");
	ok(cm_perf_hw_find(NULL, NULL) == -1 && errno == EINVAL, "NULL hw");

	if (new_fake_root()) {
		ok(0, "mkdtemp");
		return;
	}
	r = cm_perf_hw_find(fake_root, &hw);
	ok(r == 0 && strstr(hw.reason, "present: software"),
	   "fake tree with only software: %s", hw.reason);

	put_file("bus/event_source/devices/arm_spe_0/type", "9\n");
	r = cm_perf_hw_find(fake_root, &hw);
	ok(r == 0 && strstr(hw.reason, "AUX"), "Arm SPE: refused (%s)",
	   hw.reason);

	put_file("bus/event_source/devices/ibs_op/type", "4242\n");
	r = cm_perf_hw_find(fake_root, &hw);
	ok(r == 1 && hw.kind == CM_PERF_HW_IBS && hw.type == 4242 &&
	   strcmp(hw.pmu, "ibs_op") == 0, "AMD IBS op found, type 4242");
	r = cm_perf_hw_probe(fake_root, &hw);
	ok(r == 0 && hw.kind == CM_PERF_HW_NONE &&
	   strstr(hw.reason, "perf_event_open"),
	   "IBS type the kernel does not know: refused (%s)", hw.reason);

	put_file("bus/event_source/devices/cpu/type", "4\n");
	put_file("bus/event_source/devices/cpu/events/mem-loads",
		 "event=0xcd,umask=0x1,ldlat=3\n");
	put_file("bus/event_source/devices/cpu/format/event", "config:0-7\n");
	put_file("bus/event_source/devices/cpu/format/umask", "config:8-15\n");
	r = cm_perf_hw_find(fake_root, &hw);
	ok(r == 0 && strstr(hw.reason, "cannot encode"),
	   "mem-loads with a term lacking its format: %s", hw.reason);
	put_file("bus/event_source/devices/cpu/format/ldlat",
		 "config1:0-15\n");
	r = cm_perf_hw_find(fake_root, &hw);
	ok(r == 1 && hw.kind == CM_PERF_HW_PEBS && hw.type == 4 &&
	   hw.config == 0x1cd && hw.config1 == 3 && hw.precise_ip == 2,
	   "Intel PEBS mem-loads encoded: config 0x%llx config1 %llu",
	   (unsigned long long)hw.config, (unsigned long long)hw.config1);

	/* a sampler on the fake IBS refuses cleanly at attach */
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_error e = { "" };

	cm_perf_config_default(&cfg);
	cfg.backend = CM_PERF_BACKEND_HW;
	ok(cm_perf_sampler_new(&cfg, &e) == NULL && errno == ENOENT,
	   "hw backend without a PMU: ENOENT (%s)", e.text);
	rm_fake_root();
	if (new_fake_root())
		return;
	put_file("bus/event_source/devices/ibs_op/type", "4242\n");
	cm_perf_hw_find(fake_root, &cfg.hw);
	s = cm_perf_sampler_new(&cfg, &e);
	ok(s != NULL, "hw sampler over fake IBS created");
	errno = 0;
	ok(s && cm_perf_sampler_attach(s, getpid(), &e) == -1 &&
	   (errno == ENOENT || errno == EOPNOTSUPP || errno == EINVAL) &&
	   cm_perf_sampler_nevents(s) == 0 && cm_perf_sampler_ntasks(s) == 0,
	   "attach refused, nothing left open: %s", e.text);
	cm_perf_sampler_free(s);
	rm_fake_root();
	r = cm_perf_hw_find("/nonexistent-root", &hw);
	ok(r == 0 && strstr(hw.reason, "cannot open"), "missing sysfs: %s",
	   hw.reason);
}

/* ---- sampler errors ----------------------------------------------------- */

static void test_config_errors(void)
{
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_error e = { "" };

	cm_perf_config_default(&cfg);
	cfg.period_ns = 1000;
	ok(!cm_perf_sampler_new(&cfg, &e) && errno == EINVAL &&
	   strstr(e.text, "period"), "period 1 us refused: %s", e.text);
	cm_perf_config_default(&cfg);
	cfg.ring_pages = 3;
	ok(!cm_perf_sampler_new(&cfg, &e) && errno == EINVAL,
	   "3 ring pages refused: %s", e.text);
	cm_perf_config_default(&cfg);
	cfg.regs_mask = 1ull << 30;
	ok(!cm_perf_sampler_new(&cfg, &e) && errno == EINVAL,
	   "register mask outside x86-64: %s", e.text);
	cm_perf_config_default(&cfg);
	s = cm_perf_sampler_new(&cfg, &e);
	ok(s != NULL, "default sampler");
	ok(cm_perf_sampler_attach(s, 0, &e) == -1 && errno == EINVAL,
	   "tid 0: EINVAL");
	/* a pid that cannot exist (above pid_max) */
	ok(cm_perf_sampler_attach(s, 0x3fffffff, &e) == -1 &&
	   errno == ESRCH && cm_perf_sampler_nevents(s) == 0,
	   "no such thread: ESRCH (%s)", e.text);
	ok(cm_perf_sampler_set_period(s, 100, &e) == -1 && errno == EINVAL,
	   "set period below the minimum: EINVAL");
	ok(cm_perf_sampler_read(s, NULL, NULL) == 0, "read with no ring: 0");
	cm_perf_sampler_free(s);
}

/* As an unprivileged user, sampling pid 1 (root's) is refused with a
 * message that names perf_event_paranoid. */
static void test_permission(void)
{
	int fds[2], status;
	char msg[CM_ERROR_TEXT_MAX + 16] = "";
	pid_t pid;

	if (geteuid() != 0 || pipe(fds)) {
		ok(1, "# SKIP not root: permission test needs setuid");
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct cm_perf_config cfg;
		struct cm_perf_sampler *s;
		struct cm_error e = { "" };
		int r, code = 3;

		close(fds[0]);
		if (setgid(65534) || setuid(65534))
			_exit(2);
		cm_perf_config_default(&cfg);
		s = cm_perf_sampler_new(&cfg, &e);
		r = s ? cm_perf_sampler_attach(s, 1, &e) : -1;
		if (r == -1 && (errno == EACCES || errno == EPERM))
			code = 0;
		if (write(fds[1], e.text, strlen(e.text)) < 0)
			code = 4;
		cm_perf_sampler_free(s);
		_exit(code);
	}
	close(fds[1]);
	if (read(fds[0], msg, sizeof(msg) - 1) < 0)
		msg[0] = '\0';
	close(fds[0]);
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "unprivileged attach to pid 1: EACCES/EPERM");
	ok(strstr(msg, "perf_event_paranoid") != NULL,
	   "message names perf_event_paranoid: %s", msg);
}

/* ---- real sampling ------------------------------------------------------ */

#define BUF_WORDS (256 * 1024 / 8)
#define MAX_SAMPLES 20000

static atomic_int stop_writer;
static atomic_int writer_tid;
static uint64_t *shared_buf;	/* written by the thread and the child */

/* Not instrumented, so that under ASan the sampled stores are the
 * buffer's, not shadow memory checks. */
__attribute__((noinline, no_sanitize_address, no_sanitize_undefined))
static void write_buffer(uint64_t *b, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++)
		b[i] = v + i;
}

static void *writer(void *arg)
{
	uint64_t v = 0;

	(void)arg;
	atomic_store(&writer_tid, (int)gettid());
	while (!atomic_load(&stop_writer))
		write_buffer(shared_buf, BUF_WORDS, v++);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void child_writer(void)
{
	double end = now_s() + 20;
	uint64_t v = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (now_s() < end)
		write_buffer(shared_buf, BUF_WORDS, v++);
	_exit(0);
}

struct collected {
	struct cm_perf_sample *s;
	long n;
	long of_writer, of_child;
	pid_t child;
	uint64_t last_time;	/* of the previous sample in this drain */
	int64_t last_cpu;	/* last tid, -1: none yet in this drain */
	long inversions;	/* samples older than the one before */
	long cpu_changes;	/* consecutive samples from two CPUs */
};

/* Start of a drain: order is only promised within one. */
static void new_drain(struct collected *c)
{
	c->last_time = 0;
	c->last_cpu = -1;
}

static void collect(const struct cm_perf_sample *smp, void *arg)
{
	struct collected *c = arg;

	if ((int)smp->tid == atomic_load(&writer_tid))
		c->of_writer++;
	if ((pid_t)smp->pid == c->child)
		c->of_child++;
	c->inversions += smp->time < c->last_time;
	c->cpu_changes += c->last_cpu >= 0 && c->last_cpu != smp->tid;
	c->last_time = smp->time;
	c->last_cpu = smp->tid;
	if (c->n < MAX_SAMPLES)
		c->s[c->n++] = *smp;
}

/* Decode one sample with code bytes from /proc/PID/mem: 1 in the buffer,
 * 0 elsewhere or none. */
static int decode_one(struct cm_decoder *dec, const struct cm_perf_sample *s,
		      int *decoded)
{
	uint8_t code[160];
	uint64_t lo = s->ip - 128, addr;
	struct cm_access acc;
	char path[64];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/mem", s->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	got = pread(fd, code, sizeof(code), (off_t)lo);
	close(fd);
	if (got < 144)
		return 0;
	if (cm_decode_address(dec, s->pid, code, (size_t)got, lo, s->ip,
			      &s->regs, &acc, NULL) != 1)
		return 0;
	(*decoded)++;
	addr = acc.ref[0].addr;
	return addr >= (uint64_t)(uintptr_t)shared_buf &&
	       addr < (uint64_t)(uintptr_t)(shared_buf + BUF_WORDS);
}

static void count_child(const struct cm_perf_sample *smp, void *arg)
{
	long *n = arg;

	n[0] += (pid_t)smp->pid == (pid_t)n[1];
}

/* task-clock works as well (the child is still writing). */
static void test_task_clock(pid_t child)
{
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_error e = { "" };
	long n[2] = { 0, child };
	double t0 = now_s();

	cm_perf_config_default(&cfg);
	cfg.clock = CM_PERF_TASK_CLOCK;
	cfg.period_ns = 200000;
	s = cm_perf_sampler_new(&cfg, &e);
	ok(s && cm_perf_sampler_attach(s, child, &e) == 0,
	   "task-clock sampler on the child: %s", e.text);
	while (s && (now_s() - t0 < 0.1 || (n[0] < 5 && now_s() - t0 < 3))) {
		usleep(20000);
		cm_perf_sampler_read(s, count_child, n);
	}
	ok(n[0] >= 5, "task-clock samples of the child: %ld", n[0]);
	cm_perf_sampler_free(s);
}

/* A one-page ring not read for a while overflows: the kernel's LOST
 * records are counted. */
static void test_lost(pid_t child)
{
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_perf_stats st = { 0 };
	struct cm_error e = { "" };
	double t0 = now_s();

	cm_perf_config_default(&cfg);
	cfg.ring_pages = 1;
	cfg.period_ns = 100000;
	s = cm_perf_sampler_new(&cfg, &e);
	ok(s && cm_perf_sampler_attach(s, child, &e) == 0,
	   "one-page ring on the child: %s", e.text);
	do {
		usleep(200000);
		cm_perf_sampler_read(s, NULL, NULL);
		cm_perf_sampler_stats(s, &st);
	} while (s && st.lost == 0 && now_s() - t0 < 3);
	diag("one-page ring: %llu samples read, %llu lost",
	     (unsigned long long)st.samples, (unsigned long long)st.lost);
	ok(st.lost > 0 && st.samples > 0, "lost samples counted");
	cm_perf_sampler_free(s);
}

static void test_real_sampling(void)
{
	struct collected c = { 0 };
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_perf_stats st;
	struct cm_decoder *dec;
	struct cm_error e = { "" };
	struct pollfd pfd[64];
	pthread_t th;
	double t0, t1;
	int in_thread = 0, in_child = 0, dec_thread = 0, dec_child = 0;
	int wtid;
	long pid_ok = 0;

	shared_buf = aligned_alloc(4096, BUF_WORDS * 8);
	c.s = calloc(MAX_SAMPLES, sizeof(*c.s));
	if (!shared_buf || !c.s) {
		ok(0, "allocation");
		return;
	}
	memset(shared_buf, 0, BUF_WORDS * 8);
	c.child = fork();
	if (c.child == 0)
		child_writer();
	cm_perf_config_default(&cfg);
	cfg.period_ns = 200000;
	s = cm_perf_sampler_new(&cfg, &e);
	ok(s != NULL, "sampler (cpu-clock, 200 us)");
	if (s && cm_perf_sampler_attach(s, gettid(), &e) == -1 &&
	    (errno == EACCES || errno == EPERM) && geteuid() != 0) {
		ok(1, "# SKIP perf events not allowed here: %s", e.text);
		kill(c.child, SIGKILL);
		waitpid(c.child, NULL, 0);
		cm_perf_sampler_free(s);
		free(c.s);
		free(shared_buf);
		return;
	}
	ok(s && cm_perf_sampler_ntasks(s) == 1,
	   "attach this thread, inherited by the writer: %s", e.text);
	ok(s && cm_perf_sampler_attach(s, c.child, &e) == 0,
	   "attach the forked process: %s", e.text);
	if (!s || cm_perf_sampler_ntasks(s) != 2) {
		kill(c.child, SIGKILL);
		waitpid(c.child, NULL, 0);
		cm_perf_sampler_free(s);
		free(c.s);
		free(shared_buf);
		return;
	}
	ok(cm_perf_sampler_attach(s, gettid(), NULL) == 0 &&
	   cm_perf_sampler_ntasks(s) == 2, "attaching again is a no-op");
	ok(cm_perf_sampler_pollfds(s, pfd, 64) >= 1, "one pollfd per ring");
	pthread_create(&th, NULL, writer, NULL);
	t0 = now_s();
	/* at least 0.3 s; longer only if the loaded VM gave us too little */
	do {
		poll(pfd, (nfds_t)cm_perf_sampler_pollfds(s, pfd, 64), 20);
		new_drain(&c);
		cm_perf_sampler_read(s, collect, &c);
		t1 = now_s();
	} while (t1 - t0 < 0.3 || ((c.of_writer < 20 || c.of_child < 20) &&
				   t1 - t0 < 5));
	atomic_store(&stop_writer, 1);
	pthread_join(th, NULL);
	new_drain(&c);
	cm_perf_sampler_read(s, collect, &c);
	wtid = atomic_load(&writer_tid);

	dec = cm_decoder_new(4, 0, NULL);
	for (long i = 0; dec && i < c.n; i++) {
		if ((int)c.s[i].tid == wtid) {
			pid_ok += c.s[i].pid == (uint32_t)getpid();
			in_thread += decode_one(dec, &c.s[i], &dec_thread);
		} else if ((pid_t)c.s[i].pid == c.child) {
			in_child += decode_one(dec, &c.s[i], &dec_child);
		}
	}
	test_task_clock(c.child);
	test_lost(c.child);
	kill(c.child, SIGKILL);
	waitpid(c.child, NULL, 0);
	cm_perf_sampler_stats(s, &st);
	diag("%.2f s: %ld samples (%.0f/s), writer %ld, child %ld, lost %llu, "
	     "throttle %llu", t1 - t0, c.n, (double)c.n / (t1 - t0),
	     c.of_writer, c.of_child, (unsigned long long)st.lost,
	     (unsigned long long)st.throttle);
	diag("decoded: writer %d/%ld (%d in buffer), child %d/%ld (%d in "
	     "buffer)", dec_thread, c.of_writer, in_thread, dec_child,
	     c.of_child, in_child);
	diag("within drains: %ld thread changes, %ld time inversions",
	     c.cpu_changes, c.inversions);
	is_int(c.inversions, 0, "samples of all CPUs come in time order");
	ok(c.of_writer >= 10, "writer thread (created after attach) sampled");
	ok(c.of_child >= 10, "forked process sampled");
	is_int(pid_ok, c.of_writer, "writer samples carry this process's pid");
	ok(in_thread >= 5, "writer's decoded addresses in its buffer");
	ok(in_child >= 5, "child's decoded addresses in the buffer");
	ok(dec_thread + dec_child >= (c.of_writer + c.of_child) / 2,
	   "most samples decode to an address");
	is_int(st.samples, c.n, "every sample counted");
	ok(st.malformed == 0, "no malformed records");
	long ok_regs = 0;

	for (long i = 0; i < c.n; i++)
		ok_regs += c.s[i].regs.valid == CM_PERF_REGS_MASK;
	ok(ok_regs == c.n - (long)st.no_regs, "user registers in samples");
	ok(cm_perf_sampler_set_period(s, 500000, &e) == 0,
	   "period changed at run time: %s", e.text);
	cm_decoder_free(dec);
	cm_perf_sampler_free(s);
	free(c.s);
	free(shared_buf);
}

int main(void)
{
	test_layout();
	test_sw_sample();
	test_hw_and_full_layout();
	test_other_records();
	test_ring();
	test_hw_probe();
	test_config_errors();
	test_permission();
	test_real_sampling();
	return done_testing();
}
