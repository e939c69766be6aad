/* detect_table.h: communication detection from (thread, address, time)
 * samples with a table of recent sharers per memory block (SPCD §III-B,
 * §III-C; LHMapping §3.2).
 *
 * Memory is divided in blocks of block_size bytes.  A fixed-size,
 * direct-mapped hash table holds, per block, up to CM_DETECT_SHARERS recent
 * sharers (thread index, time of its last access).  An access by thread t at
 * time now is one communication event between t and every other sharer of
 * the block whose last access is within the time window (|now - then| <=
 * window; 0: unbounded), added to a struct cm_matrix (SPCD §III-C-2:
 * temporal false communication).  A block that hashes to a slot held by
 * another block overwrites it (SPCD §III-B: "in case of hash collisions, we
 * overwrite the previous entry"); a fifth sharer replaces the one seen
 * longest ago.  Memory is bounded by the table size; an access is O(1) and
 * allocates nothing (except growing the matrix for a new thread index).
 *
 * Lines waited on (spin lines): the evidence seam (evidence.h, "Runs")
 * tells the table when a thread re-reads the cache line of its previous
 * reference, with nothing else in between: a wait on a flag.  The line is
 * marked in its block's entry (cm_detect_mark_spin): later references to
 * it add no event (stats.spin_refs), and a block holding a marked line is
 * seen by line: an access meets only the sharers whose last access was on
 * its own line, and none when two or more recent sharers are on it (a
 * word every thread touches: stats.line_skips).  Synchronisation state
 * laid out one word per cache line in one page (a flag per thread, a
 * barrier's counters) then stops making every thread that waits look
 * like a partner of every other (SPCD §III-C-1: spatial false
 * communication, here at the granularity of the block).  Marks live as
 * long as the block's entry.
 *
 * Keys (struct cm_block_key): private memory by (process, virtual address);
 * shared file and shm mappings by (device, inode, file offset), so that
 * processes mapping the same segment at different addresses (MPI ranks over
 * shared memory) meet in the same block.  cm_maps_* resolve an address of a
 * process to its key from /proc/PID/maps (proc root configurable).
 *
 * Functions return -1 with errno (EINVAL, ENOMEM, ENOENT) and a message in
 * the optional struct cm_error.  Not thread-safe.
 */
#ifndef COMMAP_NODEAGENT_DETECT_TABLE_H
#define COMMAP_NODEAGENT_DETECT_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"
#include "commap/matrix.h"

/* Sharers remembered per block. */
#define CM_DETECT_SHARERS 4

#define CM_DETECT_MIN_BLOCK 64u
#define CM_DETECT_MAX_BLOCK (2u << 20)
#define CM_DETECT_DEFAULT_BLOCK 4096u
/* Slots: a power of two in [1, CM_DETECT_MAX_SLOTS]; default 2^18 (SPCD
 * used 256,000), about 20 MiB. */
#define CM_DETECT_DEFAULT_SLOTS (1u << 18)
#define CM_DETECT_MAX_SLOTS (1u << 24)
#define CM_DETECT_DEFAULT_WINDOW_NS 100000000ull	/* 100 ms */

struct cm_detect_config {
	uint32_t block_size;	/* bytes, power of two, 64 B .. 2 MiB */
	uint32_t slots;		/* hash table entries, power of two */
	uint64_t window_ns;	/* 0: unbounded */
};

void cm_detect_config_default(struct cm_detect_config *cfg);

/* Where a byte of memory is.  Private: space = process id or index, inode =
 * 0, addr = virtual address.  Shared mapping: space = device, inode =
 * inode, addr = byte offset in the file. */
struct cm_block_key {
	uint64_t space;
	uint64_t inode;
	uint64_t addr;
	int shared;
};

/* Key of private memory of process proc at virtual address vaddr. */
void cm_block_key_private(struct cm_block_key *key, uint64_t proc,
			  uint64_t vaddr);
/* Key of byte file_off of the file (dev, inode). */
void cm_block_key_shared(struct cm_block_key *key, uint64_t dev,
			 uint64_t inode, uint64_t file_off);

struct cm_detect_stats {
	uint64_t accesses;	/* cm_detect_access calls that succeeded */
	uint64_t events;	/* communication events added */
	uint64_t inserts;	/* blocks entered into an empty slot */
	uint64_t overwrites;	/* blocks that replaced another (collision) */
	uint64_t sharer_evictions;	/* sharers replaced by a fifth thread */
	uint64_t out_of_window;	/* sharers ignored as too old */
	uint64_t spin_marks;	/* lines newly marked as waited on */
	uint64_t spin_refs;	/* accesses to a marked line: no event */
	uint64_t line_skips;	/* sharers in a block holding a marked
				 * line, on another line or on a crowded
				 * one: no event */
};

struct cm_detect_table;

/* NULL with errno/err: EINVAL (block size or slots not a power of two in
 * range), ENOMEM. */
struct cm_detect_table *cm_detect_table_new(const struct cm_detect_config *c,
					    struct cm_error *err);
void cm_detect_table_free(struct cm_detect_table *t);
/* Forget every block (the counters stay). */
void cm_detect_table_clear(struct cm_detect_table *t);

void cm_detect_table_config(const struct cm_detect_table *t,
			    struct cm_detect_config *cfg);
/* Bytes the table holds. */
size_t cm_detect_table_bytes(const struct cm_detect_table *t);

/* Thread `thread` (the agent's index, >= 0) accessed key at time now_ns.
 * Adds one event (weight 1) to m for each other recent sharer, growing m
 * if thread is beyond its size.  Returns the number of events, -1/EINVAL
 * on bad arguments, -1/ENOMEM if m cannot grow. */
int cm_detect_access(struct cm_detect_table *t, struct cm_matrix *m,
		     int thread, const struct cm_block_key *key,
		     uint64_t now_ns);

void cm_detect_stats(const struct cm_detect_table *t,
		     struct cm_detect_stats *st);

/* Thread's reference to key continued a run on one cache line (a wait):
 * mark the line in its block's entry, entering the block (with no
 * sharer) if it is not in the table.  Marks cover 1/64 of a block (its
 * cache line for blocks up to 4 KiB).  0, or -1/EINVAL. */
int cm_detect_mark_spin(struct cm_detect_table *t,
			const struct cm_block_key *key);

/* What the marks say of key: CM_DETECT_SPIN_LINE its line is marked
 * (cm_detect_access adds no event for it), CM_DETECT_SPIN_BLOCK another
 * line of its block is, else 0 (also for bad arguments). */
#define CM_DETECT_SPIN_BLOCK 1
#define CM_DETECT_SPIN_LINE 2
int cm_detect_spin_line(const struct cm_detect_table *t,
			const struct cm_block_key *key);

/* ---- /proc/PID/maps --------------------------------------------------- */

struct cm_map_region {
	uint64_t start, end;	/* [start, end) */
	uint64_t offset;	/* file offset of start */
	uint64_t dev;		/* makedev(major, minor) */
	uint64_t inode;
	char perms[5];		/* "rw-s" */
	int shared;		/* 's': MAP_SHARED */
	const char *path;	/* "" for anonymous memory; owned by the maps */
};

struct cm_maps {
	struct cm_map_region *r;	/* sorted by start */
	size_t n, cap;
	char *strings;			/* paths */
	size_t slen, scap;
};

/* Parse one line of /proc/PID/maps into out (path points into line, not
 * NUL-terminated; *pathlen gives its length, without " (deleted)").
 * 0 or -1/EINVAL with a message naming the field. */
int cm_maps_parse_line(const char *line, struct cm_map_region *out,
		       size_t *pathlen, struct cm_error *err);

/* Replace maps' content by text (whole maps file).  A bad line fails the
 * whole parse, naming the line number; maps is then empty. */
int cm_maps_parse(struct cm_maps *maps, const char *text,
		  struct cm_error *err);
/* Read PROC/PID/maps (proc_root NULL: "/proc"). */
int cm_maps_load(struct cm_maps *maps, const char *proc_root, pid_t pid,
		 struct cm_error *err);
void cm_maps_free(struct cm_maps *maps);

/* The region holding addr, NULL if none (binary search). */
const struct cm_map_region *cm_maps_find(const struct cm_maps *maps,
					 uint64_t addr);

/* Key of addr in process proc (an id or index chosen by the caller):
 * shared when its region is MAP_SHARED with an inode (files, /dev/shm,
 * memfd, SysV shm, shared anonymous memory), else private.  0, or
 * -1/ENOENT when addr is in no region (key is still filled as private,
 * the maps may be stale). */
int cm_maps_key(const struct cm_maps *maps, uint64_t proc, uint64_t addr,
		struct cm_block_key *key);

#endif
