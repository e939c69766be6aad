/* tracepoint_test_util.h: what the tests of the tracepoint readers share
 * (test_tracepoint.c, test_fault_sample.c, test_cma_trace.c): sample
 * records built as the kernel writes them, fresh pages to fault on, and
 * skipped checks where tracepoints cannot be read.  Include after tap.h.
 */
#ifndef COMMAP_TRACEPOINT_TEST_UTIL_H
#define COMMAP_TRACEPOINT_TEST_UTIL_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static inline void tp_put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void tp_put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void tp_put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* The start of a PERF_RECORD_SAMPLE of layout TID|TIME|RAW: header, pid
 * 1000, tid 1002, time, raw size rawlen; the raw entry (zeroed) is at
 * buf + 28, the record padded to 8 bytes.  Returns the record's size. */
static inline size_t tp_record(uint8_t *buf, uint32_t rawlen, uint64_t time)
{
	size_t size = (28 + rawlen + 7) & ~(size_t)7;
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0,
				       (uint16_t)size };

	memset(buf, 0, size);
	memcpy(buf, &h, sizeof(h));
	tp_put32(buf + 8, 1000);
	tp_put32(buf + 12, 1002);
	tp_put64(buf + 16, time);
	tp_put32(buf + 24, rawlen);
	return size;
}

/* Touch npages fresh pages (no huge pages: one fault per page); their
 * range in [*lo, *hi) when not NULL. */
static inline void tp_touch_fresh(int npages, uint64_t *lo, uint64_t *hi)
{
	size_t pg = (size_t)getpagesize(), len = (size_t)npages * pg;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return;
	madvise(m, len, MADV_NOHUGEPAGE);
	if (lo && hi) {
		*lo = (uint64_t)(uintptr_t)m;
		*hi = *lo + len;
	}
	for (int i = 0; i < npages; i++)
		((volatile char *)m)[(size_t)i * pg] = 1;
	munmap(m, len);
}

/* n checks skipped, with the reason. */
static inline void tp_skip(int n, const char *why)
{
	for (int i = 0; i < n; i++) {
		tap_count_++;
		printf("ok %d # SKIP %s\n", tap_count_, why);
	}
}

#endif
