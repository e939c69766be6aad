/* bench_map.h: shared types of the mapping benchmark (tests/bench/map).
 *
 * One row per (family, N): every mapper ("column") maps the same matrix
 * onto the same topology; the row keeps cost and best time of each.
 */
#ifndef BENCH_MAP_H
#define BENCH_MAP_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "commap/matrix.h"
#include "commap/topology.h"

/* Columns: commap's algorithms (through cm_map) and Scotch. */
enum bench_col {
	COL_AUTO,
	COL_GREEDY,
	COL_MATCHING,
	COL_EXACT,
	COL_COMPACT,
	COL_SCATTER,
	COL_ROUNDROBIN,
	COL_RANDOM,
	COL_SCOTCH,
	COL_COUNT
};

enum bench_state {
	CELL_NOT_RUN = 0,	/* column not selected */
	CELL_NOT_APPLICABLE,	/* exact for n > CM_MAP_EXACT_MAX */
	CELL_SKIPPED,		/* too slow at a smaller size */
	CELL_FAILED,		/* the mapper returned an error */
	CELL_OK
};

/* Distances between PUs: cm_level_weight() of their lowest common level
 * (0 the same PU ... 6 the machine). */
#define BENCH_DISTANCES 7

struct bench_cell {
	enum bench_state state;
	double cost;		/* cm_cost of the mapping */
	/* weight of the links whose threads are at each distance: cost is
	 * the sum of d x by_distance[d]; where a mapper loses, by level */
	double by_distance[BENCH_DISTANCES];
	double ms;		/* best time over the repetitions */
	int reps;		/* repetitions actually run */
	int repaired;		/* Scotch: threads moved off shared PUs */
	double cost_ratio;	/* cost / best cost in the row */
	double time_ratio;	/* ms / fastest in the row */
	char note[96];		/* error text for CELL_FAILED */
};

struct bench_row {
	const char *family;
	int n;
	const char *topology;
	struct bench_cell cell[COL_COUNT];
};

/* What the output needs to say about the run. */
struct bench_run_info {
	const char *command;	/* the command line, for the header */
	int reps;
	uint64_t seed;
	int scotch_threads;
	const char *scotch_strategy;
	const int *sizes;
	const char *const *topologies;	/* one per size */
	const char *const *tleafs;	/* Scotch arch per size, or NULL */
	int nsizes;
	int by_level;		/* also print the links by distance */
};

enum bench_format { FMT_TEXT, FMT_CSV, FMT_MARKDOWN };

const char *bench_col_name(enum bench_col col);
void bench_rows_compute_ratios(struct bench_row *rows, int nrows);
void bench_print(FILE *out, enum bench_format fmt,
		 const struct bench_run_info *info,
		 const struct bench_row *rows, int nrows,
		 const int *selected);

/* Scotch (bench_scotch.c).  The architecture is the topology's sharing tree
 * as a Scotch "tleaf": level d has size[d] children per node and link[d] =
 * cm_level_weight() of the nodes at depth d, i.e. the distance of two PUs
 * whose lowest common ancestor is at depth d. */
#define BENCH_TLEAF_MAX_LEVELS 16

struct bench_tleaf {
	int nlevels;
	int size[BENCH_TLEAF_MAX_LEVELS];
	int link[BENCH_TLEAF_MAX_LEVELS];
};

int bench_scotch_available(void);
/* Scotch's text form of the architecture: "tleaf L s0 l0 s1 l1 ...". */
void bench_tleaf_format(const struct bench_tleaf *t, char *buf, size_t len);
/* 0, or -1 with msg when the tree is not uniform (Scotch's tleaf needs the
 * same arity for every node of a level). */
int bench_tleaf_from_topo(const struct cm_topo *topo, struct bench_tleaf *out,
			  char *msg, size_t msglen);
enum bench_scotch_strategy {
	BENCH_SCOTCH_DEFAULT,	/* empty strategy: Scotch's default */
	BENCH_SCOTCH_QUALITY,	/* SCOTCH_STRATQUALITY, 1% imbalance */
	BENCH_SCOTCH_BALANCED	/* SCOTCH_STRATDEFAULT, no imbalance */
};

struct bench_scotch_options {
	uint64_t seed;
	int nthreads;		/* Scotch worker threads (its context) */
	enum bench_scotch_strategy strategy;
};

/* Map with SCOTCH_graphMap; pu_of_thread gets Scotch's terminal numbers,
 * which are commap PU indices (both number leaves in tree order).
 * 0, or -1 with msg. */
int bench_scotch_map(const struct bench_tleaf *arch, const struct cm_matrix *m,
		     const struct bench_scotch_options *opt, int *pu_of_thread,
		     char *msg, size_t msglen);
/* Move threads off PUs holding more than one (n <= npus), each to the free
 * PU nearest its PU; returns the number moved. */
int bench_repair_overload(const struct cm_topo *topo, int n,
			  int *pu_of_thread);

#endif
