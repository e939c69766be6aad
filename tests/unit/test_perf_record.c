/* test_perf_record.c: perf sample records and rings
 * (nodeagent/perf_record.c), built byte by byte: samples with and without
 * user registers, hw samples with ADDR, lost/throttle/unknown records,
 * records wrapping the ring end, zero and oversized header sizes,
 * truncation.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <asm/perf_regs.h>
#include <linux/perf_event.h>

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

int main(void)
{
	test_layout();
	test_sw_sample();
	test_hw_and_full_layout();
	test_other_records();
	test_ring();
	return done_testing();
}
