/* test_detect_table.c: the sharer table and the maps keys
 * (nodeagent/detect_table.c).
 *
 * Known answers: 4 producer/consumer pairs give exactly the 4 pairs; the
 * time window drops old sharers; a fifth sharer evicts the oldest; hash
 * collisions overwrite; the block size sets the granularity; one shared
 * segment at different addresses in two processes is communication, private
 * memory at one address in two processes is not.  Lines waited on: a marked
 * line adds no event, its block is seen by line, the marks go with the
 * block's entry.  Then /proc/PID/maps
 * parsing on recorded text, a fake proc root and this process's own maps
 * (one memfd mapped twice gives one key).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "commap/matrix.h"
#include "detect_table.h"
#include "tap.h"

#define MS 1000000ull

static struct cm_detect_table *table(uint32_t block, uint32_t slots,
				     uint64_t window)
{
	struct cm_detect_config c = { block, slots, window };

	return cm_detect_table_new(&c, NULL);
}

/* Access by thread th of process proc at vaddr (private memory). */
static int acc(struct cm_detect_table *t, struct cm_matrix *m, int th,
	       uint64_t proc, uint64_t vaddr, uint64_t now)
{
	struct cm_block_key k;

	cm_block_key_private(&k, proc, vaddr);
	return cm_detect_access(t, m, th, &k, now);
}

static void test_config(void)
{
	struct cm_detect_config c;
	struct cm_detect_table *t;
	struct cm_error e = { "" };
	static const uint32_t bad_blocks[] = { 0, 32, 48, 3000, 4u << 20 };

	cm_detect_config_default(&c);
	is_int(c.block_size, 4096, "default block 4 KiB");
	is_int(c.window_ns, 100 * MS, "default window 100 ms");
	t = cm_detect_table_new(&c, &e);
	ok(t != NULL, "default table");
	ok(cm_detect_table_bytes(t) >= (size_t)c.slots * 64 &&
	   cm_detect_table_bytes(t) <= (size_t)c.slots * 128,
	   "bounded memory: %zu bytes for %u slots",
	   cm_detect_table_bytes(t), c.slots);
	cm_detect_table_free(t);
	for (size_t i = 0; i < sizeof(bad_blocks) / sizeof(*bad_blocks); i++) {
		c.block_size = bad_blocks[i];
		ok(!cm_detect_table_new(&c, &e) && errno == EINVAL,
		   "block size %u refused: %s", bad_blocks[i], e.text);
	}
	c.block_size = 64;
	ok((t = cm_detect_table_new(&c, NULL)) != NULL, "64 B accepted");
	cm_detect_table_free(t);
	c.block_size = 2u << 20;
	ok((t = cm_detect_table_new(&c, NULL)) != NULL, "2 MiB accepted");
	cm_detect_table_free(t);
	c.block_size = 4096;
	c.slots = 3;
	ok(!cm_detect_table_new(&c, &e) && errno == EINVAL,
	   "3 slots refused: %s", e.text);
	c.slots = 0;
	ok(!cm_detect_table_new(&c, NULL) && errno == EINVAL, "0 slots");
	c.slots = CM_DETECT_MAX_SLOTS * 2;
	ok(!cm_detect_table_new(&c, NULL) && errno == EINVAL,
	   "too many slots");
	ok(!cm_detect_table_new(NULL, NULL) && errno == EINVAL, "NULL config");
}

/* SPCD §V-B style: 4 pairs, each writer and reader over its own 256 KiB
 * buffer, accesses interleaved in time. */
static void test_pairs(void)
{
	struct cm_detect_table *t = table(4096, 1u << 16, 10 * MS);
	struct cm_matrix *m = cm_matrix_new(8);
	struct cm_detect_stats st;
	uint64_t x = 12345, now = 0;
	int pairs_ok = 1;

	for (int step = 0; step < 4000; step++) {
		for (int th = 0; th < 8; th++) {
			uint64_t buf = 0x10000000ull + (uint64_t)(th / 2) *
				       0x100000ull;

			x = x * 6364136223846793005ull + 1442695040888963407ull;
			acc(t, m, th, 1, buf + (x >> 33) % (256 * 1024), now);
			now += 3000;	/* 3 us between samples */
		}
	}
	is_int(cm_matrix_nedges(m), 4, "exactly 4 communicating pairs");
	for (int p = 0; p < 4; p++)
		pairs_ok &= cm_matrix_get(m, 2 * p, 2 * p + 1) > 0;
	ok(pairs_ok, "the pairs are (0,1) (2,3) (4,5) (6,7)");
	cm_detect_stats(t, &st);
	is_int(st.accesses, 32000, "32000 accesses");
	is_double(cm_matrix_total(m), (double)st.events, 0, "events == total");
	ok(st.events > 1000, "many events (%llu)",
	   (unsigned long long)st.events);
	is_int(st.inserts, 4 * 64, "one insert per block (4 x 64 blocks)");
	is_int(st.overwrites, 0, "no overwrite in a 65536-slot table");
	cm_matrix_free(m);
	cm_detect_table_free(t);
}

static void test_window(void)
{
	struct cm_detect_table *t = table(4096, 1024, 100 * MS);
	struct cm_matrix *m = cm_matrix_new(4);
	struct cm_detect_stats st;

	is_int(acc(t, m, 0, 1, 0x5000, 0), 0, "first access: no event");
	is_int(acc(t, m, 1, 1, 0x5008, 200 * MS), 0,
	       "200 ms later, window 100 ms: no event");
	is_int(acc(t, m, 2, 1, 0x5010, 250 * MS), 1,
	       "thread 2 at 250 ms: one event (thread 1, 50 ms ago)");
	ok(cm_matrix_get(m, 2, 1) == 1 && cm_matrix_get(m, 2, 0) == 0,
	   "with 1, not with 0");
	is_int(acc(t, m, 1, 1, 0x5ff8, 240 * MS), 1,
	       "out-of-order sample (240 ms < 250 ms) within the window");
	is_int(acc(t, m, 1, 1, 0x5ff8, 245 * MS), 1,
	       "the same thread again: only the other sharer");
	cm_detect_stats(t, &st);
	is_int(st.out_of_window, 4, "old sharer (thread 0) skipped 4 times");
	cm_matrix_free(m);
	cm_detect_table_free(t);

	/* window 0: unbounded */
	t = table(4096, 1024, 0);
	m = cm_matrix_new(2);
	acc(t, m, 0, 1, 0x5000, 0);
	is_int(acc(t, m, 1, 1, 0x5000, 3600000 * MS), 1,
	       "unbounded window: an hour apart still counts");
	cm_matrix_free(m);
	cm_detect_table_free(t);
}

static void test_sharers(void)
{
	struct cm_detect_table *t = table(4096, 1024, 0);
	struct cm_matrix *m = cm_matrix_new(6);
	struct cm_detect_stats st;

	for (int th = 0; th < 4; th++)
		is_int(acc(t, m, th, 1, 0x9000, (uint64_t)th + 1), th,
		       "sharer k meets the k before it");
	is_int(acc(t, m, 4, 1, 0x9000, 5), 4, "fifth sharer meets four");
	cm_detect_stats(t, &st);
	is_int(st.sharer_evictions, 1, "fifth sharer evicted one");
	is_int(acc(t, m, 5, 1, 0x9000, 6), 4, "sixth meets four");
	ok(cm_matrix_get(m, 5, 0) == 0 && cm_matrix_get(m, 5, 1) == 1 &&
	   cm_matrix_get(m, 5, 4) == 1, "the oldest (thread 0) was evicted");
	is_int(acc(t, m, 3, 1, 0x9000, 7), 3,
	       "a present sharer refreshes, meets the other three");
	cm_matrix_free(m);
	cm_detect_table_free(t);
}

static void test_collision_and_args(void)
{
	struct cm_detect_table *t = table(4096, 1, 0);
	struct cm_matrix *m = cm_matrix_new(3), *fresh;
	struct cm_detect_stats st;
	struct cm_block_key k;

	acc(t, m, 0, 1, 0x1000, 1);
	acc(t, m, 1, 1, 0x2000, 2);
	is_int(acc(t, m, 2, 1, 0x1000, 3), 0,
	       "one slot: block A was overwritten by B, no event");
	cm_detect_stats(t, &st);
	is_int(st.overwrites, 2, "two overwrites");
	is_int(st.inserts, 1, "one insert into the empty slot");

	is_int(acc(t, m, 9, 1, 0x1000, 4), 1, "thread 9 beyond the matrix");
	is_int(cm_matrix_nthreads(m), 10, "matrix grew to 10 threads");
	fresh = cm_matrix_new(0);
	is_int(acc(t, fresh, 1, 1, 0x1000, 5), 2,
	       "a fresh empty matrix grows to fit old sharers");
	ok(cm_matrix_get(fresh, 1, 9) == 1 && cm_matrix_get(fresh, 1, 2) == 1,
	   "events in the fresh matrix");
	cm_block_key_private(&k, 1, 0x1000);
	ok(cm_detect_access(t, m, -1, &k, 0) == -1 && errno == EINVAL,
	   "thread -1: EINVAL");
	ok(cm_detect_access(t, NULL, 0, &k, 0) == -1 && errno == EINVAL,
	   "NULL matrix: EINVAL");
	ok(cm_detect_access(t, m, 0, NULL, 0) == -1 && errno == EINVAL,
	   "NULL key: EINVAL");
	cm_detect_table_clear(t);
	is_int(acc(t, m, 2, 1, 0x1000, 6), 0, "after clear: no sharers");
	cm_matrix_free(fresh);
	cm_matrix_free(m);
	cm_detect_table_free(t);
}

static void test_granularity(void)
{
	struct cm_detect_table *t64 = table(64, 1024, 0);
	struct cm_detect_table *t4k = table(4096, 1024, 0);
	struct cm_detect_table *t2m = table(2u << 20, 1024, 0);
	struct cm_matrix *m = cm_matrix_new(2);

	acc(t64, m, 0, 1, 0x1000, 1);
	is_int(acc(t64, m, 1, 1, 0x1040, 2), 0, "64 B: 0x1000/0x1040 apart");
	is_int(acc(t64, m, 1, 1, 0x103f, 3), 1, "64 B: 0x1000/0x103f shared");
	acc(t4k, m, 0, 1, 0x1000, 1);
	is_int(acc(t4k, m, 1, 1, 0x1040, 2), 1, "4 KiB: 0x1000/0x1040 shared");
	is_int(acc(t4k, m, 1, 1, 0x2000, 3), 0, "4 KiB: 0x2000 apart");
	acc(t2m, m, 0, 1, 0x200000, 1);
	is_int(acc(t2m, m, 1, 1, 0x3ff000, 2), 1, "2 MiB: 0x3ff000 shared");
	is_int(acc(t2m, m, 1, 1, 0x400000, 3), 0, "2 MiB: 0x400000 apart");
	cm_matrix_free(m);
	cm_detect_table_free(t64);
	cm_detect_table_free(t4k);
	cm_detect_table_free(t2m);
}

/* Mark the line of vaddr (process 1) as waited on. */
static int mark(struct cm_detect_table *t, uint64_t vaddr)
{
	struct cm_block_key k;

	cm_block_key_private(&k, 1, vaddr);
	return cm_detect_mark_spin(t, &k);
}

static int is_spin(struct cm_detect_table *t, uint64_t vaddr)
{
	struct cm_block_key k;

	cm_block_key_private(&k, 1, vaddr);
	return cm_detect_spin_line(t, &k);
}

/* A marked line adds no event and is counted; the block's other lines
 * meet only sharers on their own line, and none on a line three threads
 * touch; an unmarked block keeps SPCD's block granularity. */
static void test_spin_lines(void)
{
	struct cm_detect_table *t = table(4096, 1024, 0);
	struct cm_matrix *m = cm_matrix_new(4);
	struct cm_detect_stats st;

	acc(t, m, 0, 1, 0x10000, 1);
	is_int(acc(t, m, 1, 1, 0x10040, 2), 1,
	       "unmarked block: another line of it is shared");
	is_int(is_spin(t, 0x10000), 0, "no mark: 0");
	ok(mark(t, 0x10000) == 0 &&
	   is_spin(t, 0x10000) == CM_DETECT_SPIN_LINE &&
	   is_spin(t, 0x1003f) == CM_DETECT_SPIN_LINE &&
	   is_spin(t, 0x10040) == CM_DETECT_SPIN_BLOCK,
	   "a mark covers its 64 B line only; the block's other lines say so");
	is_int(acc(t, m, 2, 1, 0x10008, 3), 0,
	       "an access to the marked line: no event");
	is_int(acc(t, m, 2, 1, 0x10080, 4), 0,
	       "another line of a marked block: the sharers on other lines "
	       "do not count");
	is_int(acc(t, m, 3, 1, 0x100bf, 5), 1,
	       "the same line of a marked block: its sharer counts");
	ok(cm_matrix_get(m, 2, 3) == 1 && cm_matrix_get(m, 2, 0) == 0 &&
	   cm_matrix_get(m, 3, 1) == 0, "only the pair on one line");
	cm_detect_stats(t, &st);
	ok(st.spin_marks == 1 && st.spin_refs == 1 && st.line_skips == 4 &&
	   st.accesses == 5, "counted: 1 mark, 1 spin access, 4 line skips, "
	   "5 accesses (%llu %llu %llu %llu)",
	   (unsigned long long)st.spin_marks,
	   (unsigned long long)st.spin_refs,
	   (unsigned long long)st.line_skips,
	   (unsigned long long)st.accesses);
	mark(t, 0x10000);
	cm_detect_stats(t, &st);
	is_int((int)st.spin_marks, 1, "marking a marked line again: no new "
	       "mark");
	ok(mark(t, 0x20000) == 0 && is_spin(t, 0x20000),
	   "a mark enters a block not in the table");
	is_int(acc(t, m, 0, 1, 0x20040, 6), 0, "... with no sharer");
	is_int(acc(t, m, 1, 1, 0x20040, 7), 1,
	       "... and its other lines meet on one line");
	is_int(acc(t, m, 2, 1, 0x20050, 8), 0,
	       "a third thread on that line: crowded, no event");
	is_int(acc(t, m, 3, 1, 0x20040, 9), 0, "... a fourth neither");
	acc(t, m, 3, 1, 0x21040, 10);
	acc(t, m, 2, 1, 0x21040, 11);
	is_int(acc(t, m, 1, 1, 0x21040, 12), 2,
	       "a block without marks: three threads on one line all meet");
	cm_detect_table_clear(t);
	ok(!is_spin(t, 0x10000), "clear: the marks are gone");
	ok(cm_detect_mark_spin(NULL, NULL) == -1 && errno == EINVAL,
	   "mark: NULL table: EINVAL");
	ok(!cm_detect_spin_line(NULL, NULL), "spin line of NULL: 0");
	cm_matrix_free(m);
	cm_detect_table_free(t);
}

/* One slot: the block that takes it drops the marks of the one before.
 * Above 4 KiB a mark covers 1/64 of the block. */
static void test_spin_slots(void)
{
	struct cm_detect_table *t = table(4096, 1, 0);
	struct cm_detect_table *big = table(64u << 10, 1024, 0);
	struct cm_matrix *m = cm_matrix_new(2);

	mark(t, 0x10000);
	acc(t, m, 0, 1, 0x50000, 1);
	ok(!is_spin(t, 0x10000), "a block overwriting the slot drops the "
	   "marks");
	acc(t, m, 0, 1, 0x10000, 2);
	is_int(acc(t, m, 1, 1, 0x10000, 3), 1, "the line counts again");
	mark(big, 0x100000);
	ok(is_spin(big, 0x1003ff) == CM_DETECT_SPIN_LINE &&
	   is_spin(big, 0x100400) == CM_DETECT_SPIN_BLOCK,
	   "64 KiB blocks: a mark covers 1 KiB");
	cm_matrix_free(m);
	cm_detect_table_free(t);
	cm_detect_table_free(big);
}

/* Two MPI-like ranks: one shm segment at different addresses (and, in B,
 * mapped from file offset 0x1000), private heaps at the same address. */
static const char maps_a[] =
	"55d0c8a3e000-55d0c8a40000 r--p 00000000 08:01 1311830"
	"                    /usr/bin/rank\n"
	"55d0c9000000-55d0c9100000 rw-p 00000000 00:00 0 \n"
	"7f0000000000-7f0000100000 rw-s 00000000 00:19 4242"
	"                       /dev/shm/vader_segment.node.0\n"
	"7ffd1e000000-7ffd1e021000 rw-p 00000000 00:00 0"
	"                          [stack]\n";
static const char maps_b[] =
	"55d0c9000000-55d0c9100000 rw-p 00000000 00:00 0 \n"
	"7f5500000000-7f55000ff000 rw-s 00001000 00:19 4242"
	"                       /dev/shm/vader_segment.node.0\n"
	"7f6600000000-7f6600001000 rw-p 00000000 00:00 0 \n";

static void test_processes(void)
{
	struct cm_maps a = { 0 }, b = { 0 };
	struct cm_detect_table *t = table(4096, 1024, 0);
	struct cm_matrix *m = cm_matrix_new(2);
	struct cm_block_key ka, kb;

	ok(cm_maps_parse(&a, maps_a, NULL) == 0 && a.n == 4, "maps A");
	ok(cm_maps_parse(&b, maps_b, NULL) == 0 && b.n == 3, "maps B");
	ok(cm_maps_key(&a, 100, 0x7f0000002010, &ka) == 0 && ka.shared &&
	   ka.inode == 4242 && ka.space == makedev(0, 0x19) &&
	   ka.addr == 0x2010, "A: shm key (dev 00:19, inode, offset 0x2010)");
	ok(cm_maps_key(&b, 200, 0x7f5500001ff0, &kb) == 0 && kb.shared &&
	   kb.addr == 0x2ff0, "B: other address, file offset 0x2ff0");
	cm_detect_access(t, m, 0, &ka, 1);
	is_int(cm_detect_access(t, m, 1, &kb, 2), 1,
	       "same segment block via different addresses: communication");

	ok(cm_maps_key(&a, 100, 0x55d0c9000100, &ka) == 0 && !ka.shared &&
	   ka.space == 100 && ka.addr == 0x55d0c9000100, "A: private heap");
	ok(cm_maps_key(&b, 200, 0x55d0c9000100, &kb) == 0 && !kb.shared,
	   "B: private heap at the same address");
	cm_detect_access(t, m, 0, &ka, 3);
	is_int(cm_detect_access(t, m, 1, &kb, 4), 0,
	       "private memory at one address in two processes: none");
	ok(cm_maps_key(&a, 100, 0x55d0c8a3e010, &ka) == 0 && !ka.shared,
	   "private file mapping keyed as private");
	ok(cm_maps_key(&b, 200, 0x1000, &kb) == -1 && errno == ENOENT &&
	   !kb.shared && kb.space == 200 && kb.addr == 0x1000,
	   "unmapped address: ENOENT, private key still filled");
	cm_maps_free(&a);
	cm_maps_free(&b);
	cm_matrix_free(m);
	cm_detect_table_free(t);
}

static void test_maps_parse(void)
{
	static const struct {
		const char *line, *why;
	} bad[] = {
		{ "", "empty" },
		{ "7f00 rw-p 0 00:00 0", "no dash" },
		{ "2000-1000 rw-p 00000000 00:00 0", "end before start" },
		{ "1000-2000 rwxq 00000000 00:00 0", "bad share flag" },
		{ "1000-2000 rw-p", "no offset" },
		{ "1000-2000 rw-p 0000zz00 00:00 0", "bad offset" },
		{ "1000-2000 rw-p 00000000 0000 0", "no colon in dev" },
		{ "1000-2000 rw-p 00000000 00:00", "no inode" },
		{ "1000-2000 rw-p 00000000 00:00 -5", "negative inode" },
		{ "-1000-2000 rw-p 00000000 00:00 0", "leading minus" },
		{ "1000-2000 rw-p 00000000 00:00 12x /p", "junk after inode" },
	};
	struct cm_map_region r;
	struct cm_maps mp = { 0 };
	struct cm_error e = { "" };
	size_t plen;

	ok(cm_maps_parse_line("7f12a4000000-7f12a4021000 rw-s 00003000 fd:02 "
			      "987654   /memfd:my seg (deleted)", &r, &plen,
			      NULL) == 0, "memfd line parsed");
	ok(r.start == 0x7f12a4000000 && r.end == 0x7f12a4021000 &&
	   r.offset == 0x3000 && r.dev == makedev(0xfd, 2) &&
	   r.inode == 987654 && r.shared && strcmp(r.perms, "rw-s") == 0,
	   "fields");
	ok(plen == strlen("/memfd:my seg") &&
	   strncmp(r.path, "/memfd:my seg", plen) == 0,
	   "path with a space, \" (deleted)\" dropped");
	ok(cm_maps_parse_line("ffffffffff600000-ffffffffff601000 --xp "
			      "00000000 00:00 0                  "
			      "[vsyscall]", &r, &plen, NULL) == 0 &&
	   !r.shared && plen == 10, "vsyscall");
	ok(cm_maps_parse_line("1000-2000 rw-p 00000000 00:00 0", &r, &plen,
			      NULL) == 0 && plen == 0, "no path");
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ok(cm_maps_parse_line(bad[i].line, &r, &plen, &e) == -1 &&
		   errno == EINVAL, "%s refused: %s", bad[i].why, e.text);

	ok(cm_maps_parse(&mp, "1000-2000 rw-p 00000000 00:00 0\n"
			 "3000-4000 rw-p 00000000 00:00 0\n"
			 "5000-6000 r-zp 00000000 00:00 0\n", &e) == -1 &&
	   errno == EINVAL && strstr(e.text, "line 3") && mp.n == 0,
	   "bad third line: whole parse fails, named: %s", e.text);
	ok(cm_maps_parse(&mp, "", NULL) == 0 && mp.n == 0, "empty text");
	ok(cm_maps_find(&mp, 0x1000) == NULL, "find in empty maps");
	ok(cm_maps_parse(&mp, "5000-6000 rw-p 00000000 00:00 0 /b\n\n"
			 "1000-2000 rw-p 00000000 00:00 0 /a", NULL) == 0 &&
	   mp.n == 2 && mp.r[0].start == 0x1000 &&
	   strcmp(mp.r[0].path, "/a") == 0 && strcmp(mp.r[1].path, "/b") == 0,
	   "unsorted text, blank line, no final newline");
	ok(cm_maps_find(&mp, 0x1000) == &mp.r[0], "find start");
	ok(cm_maps_find(&mp, 0x1fff) == &mp.r[0], "find last byte");
	ok(cm_maps_find(&mp, 0x2000) == NULL, "end is exclusive");
	ok(cm_maps_find(&mp, 0x3000) == NULL, "gap");
	ok(cm_maps_find(&mp, 0x5800) == &mp.r[1], "second region");
	ok(cm_maps_find(&mp, 0x10) == NULL, "below the first");
	cm_maps_free(&mp);
}

static void test_maps_load(void)
{
	char root[] = "/tmp/cm_maps_XXXXXX", path[128];
	struct cm_maps mp = { 0 };
	struct cm_error e = { "" };
	struct cm_block_key k1, k2;
	FILE *f;
	int local = 0, fd;
	uint8_t *p1, *p2;

	if (!mkdtemp(root)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/123", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/123/maps", root);
	f = fopen(path, "w");
	if (f) {
		fputs(maps_a, f);
		fclose(f);
	}
	ok(cm_maps_load(&mp, root, 123, &e) == 0 && mp.n == 4,
	   "maps from a fake proc root: %s", e.text);
	ok(cm_maps_load(&mp, root, 124, &e) == -1 && errno == ENOENT,
	   "missing pid: ENOENT (%s)", e.text);
	unlink(path);
	snprintf(path, sizeof(path), "%s/123", root);
	rmdir(path);
	rmdir(root);

	ok(cm_maps_load(&mp, NULL, getpid(), &e) == 0 && mp.n > 5,
	   "this process's maps: %zu regions", mp.n);
	ok(cm_maps_find(&mp, (uint64_t)(uintptr_t)&local) != NULL,
	   "a stack variable is mapped");

	/* one memfd mapped twice: two addresses, one key */
	fd = memfd_create("cm_test", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 65536)) {
		ok(0, "memfd");
		return;
	}
	p1 = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	p2 = mmap(NULL, 32768, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 32768);
	ok(p1 != MAP_FAILED && p2 != MAP_FAILED && p1 != p2, "mapped twice");
	cm_maps_load(&mp, NULL, getpid(), NULL);
	ok(cm_maps_key(&mp, 1, (uint64_t)(uintptr_t)(p1 + 40000), &k1) == 0 &&
	   cm_maps_key(&mp, 1, (uint64_t)(uintptr_t)(p2 + 40000 - 32768),
		       &k2) == 0 && k1.shared && k2.shared &&
	   k1.space == k2.space && k1.inode == k2.inode &&
	   k1.addr == 40000 && k2.addr == 40000,
	   "memfd byte 40000 has one key through both mappings");
	munmap(p1, 65536);
	munmap(p2, 32768);
	close(fd);
	cm_maps_free(&mp);
}

int main(void)
{
	test_config();
	test_pairs();
	test_window();
	test_sharers();
	test_collision_and_args();
	test_granularity();
	test_spin_lines();
	test_spin_slots();
	test_processes();
	test_maps_parse();
	test_maps_load();
	return done_testing();
}
