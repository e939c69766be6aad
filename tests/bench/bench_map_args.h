/* bench_map_args.h: the mapping benchmark's command line (bench_map_args.c):
 * the sizes, families, columns and options of a run.
 */
#ifndef BENCH_MAP_ARGS_H
#define BENCH_MAP_ARGS_H

#include <stdint.h>

#include "bench_map.h"

#define MAX_SIZES 32
#define MAX_FAMILIES 32

/* Families: the generator pattern and whether thread numbers are shuffled
 * (so that following thread order is no help). */
struct family {
	const char *name;
	const char *pattern;
	int shuffle;
};

struct config {
	int sizes[MAX_SIZES];
	int nsizes;
	const struct family *families[MAX_FAMILIES];
	int nfamilies;
	int selected[COL_COUNT];
	int explicit_algorithms;
	int reps;
	double budget_ms;	/* stop repeating a cell after this much */
	double skip_ms;		/* skip larger N after a run this slow */
	uint64_t seed;
	enum bench_format format;
	const char *topology;	/* overrides the table */
	const char *csv_path;	/* also write the CSV here */
	struct bench_scotch_options scotch;
	int no_refine;
	int check;
	int quiet;
	int by_level;
};

/* Names of enum bench_scotch_strategy, for the header of the output. */
extern const char *const scotch_strategies[3];

/* The synthetic topology of the table with n PUs, or NULL. */
const char *table_topology(int n);
/* Parse the command line into cfg: 0, 1 when done (--help,
 * --list-topologies), -1 on an error (printed). */
int parse_args(struct config *cfg, int argc, char **argv);

#endif
