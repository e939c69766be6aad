/* wl_common.h: test workloads with a known communication pattern.
 *
 * A pattern is a list of edges (writer, reader) over "workload threads"
 * 0 .. n-1.  Every edge owns one buffer (256 KiB by default, its own
 * mapping): the writer stores into every word of it, the reader loads
 * every word, pass after pass, so the two threads really share memory at
 * block granularity and nobody else touches it.  A thread walks its
 * buffers round-robin, one whole buffer per pass.
 *
 * Ground truth.  Every thread counts the whole-buffer passes it makes on
 * each buffer; the weight of edge (i, j) is the number of passes the two
 * made over their buffer (writes + reads: the volume that went through
 * it, in buffers).  --truth writes it for the whole run, --truth1 and
 * --truth2 for each phase, as a commap-matrix (docs/formats.md) over the
 * workload threads; --truth-map writes one line per workload thread,
 * "i rank index pid tid", which says which real thread each one is.
 * See tests/workloads/README.md.
 */
#ifndef COMMAP_WL_COMMON_H
#define COMMAP_WL_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WL_MAX_THREADS 1024

struct wl_opts {
	const char *pattern;	/* pairs, phases, ring, stencil, ... */
	int threads;		/* workload threads (per rank for MPI) */
	double seconds;		/* run time; 0: none */
	double cpu_seconds;	/* CPU time per thread; 0: none */
	long passes;		/* buffer passes per thread (if seconds 0) */
	double phase_seconds;	/* phases: switch time (time mode) */
	int cluster;		/* clusters: group size */
	size_t buffer_bytes;
	const char *truth;	/* whole run */
	const char *truth1;	/* phase 1 */
	const char *truth2;	/* phase 2 (phase 1 when there is one) */
	const char *truth_map;
	int report_time;	/* print elapsed and CPU time */
};

struct wl_edge {
	int writer, reader;
};

/* One thread's buffers for one phase. */
struct wl_role {
	int nbuf;
	volatile uint64_t **buf;
	int *writes;		/* 1: writer of buf[k], 0: reader */
	int *edge;		/* edge of buf[k] (-1: private buffer) */
};

struct wl_plan {
	int n;			/* workload threads */
	int nphases;		/* 1 or 2 */
	int nedges[2];
	struct wl_edge *edges[2];
	size_t words;		/* words per buffer */
	struct wl_role *role[2];	/* [phase][thread] */
	long *passes[2];	/* [phase][edge]: passes by both threads */
	int compute;		/* compute-bound: no buffers at all */
	int independent;	/* one private buffer per thread */
};

/* Identity of a workload thread, for --truth-map. */
struct wl_ident {
	int rank, index;
	pid_t pid, tid;
};

/* Parse the options common to every workload; exits with status 2 and a
 * message on a bad option.  prog is the program name for messages. */
void wl_parse(struct wl_opts *o, int argc, char **argv, const char *prog,
	      const char *usage_extra);

/* Edges of the pattern over n threads for phase (0 or 1); returns the
 * number of phases of the pattern, -1 on an unknown pattern. *e is
 * malloc'd (free it). */
int wl_pattern_edges(const char *pattern, int n, int cluster, int phase,
		     struct wl_edge **e, int *ne);

/* Build the plan; buffers come from alloc(k, arg) for edge-buffer k of
 * all phases (k in 0 .. total edges - 1, then private buffers), or from
 * mmap when alloc is NULL.  Exits on error. */
typedef void *(*wl_alloc_fn)(size_t k, size_t bytes, void *arg);
void wl_plan_build(struct wl_plan *p, const struct wl_opts *o, int n,
		   wl_alloc_fn alloc, void *arg);
/* Free the plan; unmap its buffers when they came from mmap. */
void wl_plan_free(struct wl_plan *p, size_t bytes, int unmap);
/* Number of buffers wl_plan_build will ask for. */
size_t wl_plan_nbuffers(const struct wl_opts *o, int n);

/* Run workload thread t from start (CLOCK_MONOTONIC seconds) until the
 * time, its CPU time or the passes are used up.  Returns a checksum
 * (keeps the loads alive). */
uint64_t wl_work(const struct wl_plan *p, const struct wl_opts *o, int t,
		 double start);

/* Write truth files (phase 1 to o->truth, phase 2 to o->truth2) and the
 * map; id[t] for every workload thread.  0 or -1 (message printed). */
int wl_write_truth(const struct wl_plan *p, const struct wl_opts *o,
		   const struct wl_ident *id);

/* Print "elapsed_s=E cpu_s=C" (C: this process's user + system time). */
void wl_report_time(double elapsed);
double wl_now(void);
pid_t wl_gettid(void);
/* Creation index of thread tid in this process: its rank in (start time,
 * tid) order among /proc/self/task, as the agent numbers threads. */
int wl_creation_index(pid_t tid);

#endif
