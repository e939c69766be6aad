/* replay.h: reading a recording (record.h, docs/formats.md "Recordings")
 * and replaying it offline: `commap replay FILE` (commap-agent --replay).
 *
 * The accesses are fed, in their recorded order, to a sharer table of the
 * recorded configuration, which rebuilds the events and the matrix the
 * live agent's table produced (the unaged "edges" of its result; under
 * real pinning corrected for co-located pairs by replay_clock.c), and
 * the single-copy transfers (version 4) to the agent's attribution
 * (cma_attrib.h) over the recorded threads, and the evidence of segment
 * ownership (version 5) as the agent added it (shm_owner.h).  Without recorded decisions
 * (versions 1 and 2, or no interval line), the threads that
 * communicate enough (remap_policy.h: CM_REMAP_MIN_THREAD_EVIDENCE and
 * CM_REMAP_MIN_THREAD_SHARE of the busiest) are then mapped once, from
 * scratch (cm_map, auto, seed 1), onto the recorded topology restricted
 * to the recorded CPU set.  Nothing depends on the clock or the machine
 * that replays: the same recording gives the same bytes.
 */
#ifndef COMMAP_NODEAGENT_REPLAY_H
#define COMMAP_NODEAGENT_REPLAY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"
#include "commap/matrix.h"
#include "detect_overlap.h"
#include "detect_table.h"
#include "evidence.h"

/* Bounds on what a recording may ask for: thread indices (the matrix is
 * n x n), and line length. */
#define CM_REPLAY_MAX_THREADS 4096
#define CM_REPLAY_MAX_LINE 4096
/* The sharer table's slots (the agent uses 2^18; each is ~80 bytes). */
#define CM_REPLAY_MAX_SLOTS (1u << 20)

struct cm_replay_thread {
	pid_t pid, tid;
	int rank, index;
	int known;		/* a "thread" line was read */
	int exited;		/* an "exit" line was read (version 3) */
};

/* A pin the agent could not make (version 4, record.h "nopin"). */
struct cm_replay_nopin {
	uint64_t t_ns;
	int i, os, err;
};
#define CM_REPLAY_MAX_NOPIN 65536

/* A parsed recording with its matrix rebuilt. */
struct cm_replay {
	uint64_t start_real_ns, start_mono_ns;
	struct cm_detect_config detect;
	struct cm_replay_thread *threads;
	int nthreads;
	uint64_t accesses, events;
	struct cm_evidence_counts refs;	/* accesses per class */
	struct cm_overlap_stats overlap;	/* version 2 only */
	uint64_t last_ns;	/* time of the last access, 0 none */
	char *synthetic;	/* NULL: no topology line */
	char *cpuset;		/* NULL: none */
	int dry_run;
	char mode[16];
	int complete;		/* the "end" line was read */
	uint64_t dropped;	/* accesses the recorder left out (size) */
	struct cm_matrix *m;
	/* version 3: the decisions' options ("options"), 0 when absent */
	int has_options;
	uint64_t t0_ns;		/* the agent's start, CLOCK_MONOTONIC */
	double alpha, gain;
	double near_seen;	/* 1 when not recorded */
	char opt_mode[16];
	int nintervals;		/* "interval" lines read */
	uint64_t last_clock_ns;	/* the last interval or checkpoint */
	/* version 4: the pins that failed, in the recording's order */
	struct cm_replay_nopin *nopin;
	int nnopin;
	/* version 4: single-copy transfers ("cma"), attributed as the agent
	 * attributes them (cma_attrib.h) to the recorded threads */
	double cma_unit;	/* bytes per matrix unit, 0 none */
	uint64_t cma_lines;	/* transfers read */
	uint64_t cma_added;	/* ... added to the matrix */
	uint64_t cma_bytes;	/* ... and their bytes */
	/* version 5: evidence of segment ownership ("shm"), as recorded */
	uint64_t shm_lines;
	double shm_weight;	/* their weight, all added */
};

/* A clock line of a version 3 recording (record.h), given to the replay
 * of the decisions once the accesses before it are in the matrix; or a
 * progress guard's snapshot (snap != 0), once all its lines are read. */
struct cm_replay_clock {
	uint64_t t_ns;		/* CLOCK_MONOTONIC */
	int interval_ms;	/* the interval's length; 0: a checkpoint */
	uint64_t app_ns;	/* the step's progress clock (record.h) */
	struct cm_matrix *fresh;	/* the events since the last one (the
					 * hook may correct them); NULL for a
					 * snapshot */
	char snap;		/* 'm', 'a', 'p' (record.h); 0: a clock line */
	int n;			/* the snapshot's threads */
	const double *cpu, *wait;	/* per thread, -1 unread */
};
typedef int (*cm_replay_clock_fn)(void *ctx, const struct cm_replay *rp,
				  const struct cm_replay_clock *ev,
				  struct cm_error *err);

/* Read a recording from text (len bytes, not NUL-terminated) into rp.
 * 0, or -1 with errno EINVAL (err: "line N: what is wrong") or ENOMEM;
 * rp is then empty. */
int cm_replay_parse(const char *text, size_t len, struct cm_replay *rp,
		    struct cm_error *err);
/* The same, calling fn (when not NULL) at each clock line; fn's -1 (with
 * err set) ends the parse with it. */
int cm_replay_parse_clocked(const char *text, size_t len,
			    struct cm_replay *rp, cm_replay_clock_fn fn,
			    void *ctx, struct cm_error *err);
void cm_replay_free(struct cm_replay *rp);

/* The whole replay: read path, rebuild, map, write the commap-result to
 * output (NULL: standard output).  Exit status: 0, 1 (unreadable or bad
 * recording, write failure; one line on stderr). */
int cm_replay_run(const char *path, const char *output);

#endif
