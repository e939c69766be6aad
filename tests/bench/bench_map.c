/* bench_map.c: the mapping benchmark (docs/PERFORMANCE.md, "Mapping").
 *
 * For each communication family and size N, maps a generated matrix onto a
 * synthetic topology of N PUs with every commap algorithm (through cm_map)
 * and with Scotch, scores every mapping with cm_cost, and prints cost and
 * time as ratios to the best of the row.  Times are the best of R runs,
 * measured with CLOCK_MONOTONIC, all in the same process so the ratios
 * share the machine's state.
 *
 *   bench_map [--sizes 16,64,...] [--families stencil2d,...] [--reps R]
 *             [--algorithms auto,scotch,...] [--format text|csv|markdown]
 *             [--seed S] [--topology SPEC] [--check] ...
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_map.h"

#include "commap/cost.h"
#include "commap/error.h"
#include "commap/mapping.h"
#include "commap/matrix.h"
#include "commap/matrix_gen.h"
#include "commap/topology.h"

#define MAX_SIZES 32
#define MAX_FAMILIES 32

/* Synthetic machines, one per N, with exactly N PUs: packages, NUMA nodes,
 * L3s, cores and SMT pairs in proportions like real servers. */
static const struct {
	int n;
	const char *spec;
} topo_table[] = {
	{ 8, "pack:2 core:2 pu:2" },
	{ 16, "pack:2 l3:2 core:2 pu:2" },
	{ 32, "pack:2 numa:2 core:4 pu:2" },
	{ 64, "pack:2 numa:2 l3:2 core:4 pu:2" },
	{ 128, "pack:2 numa:2 l3:2 core:8 pu:2" },
	{ 256, "pack:2 numa:2 l3:4 core:8 pu:2" },
	{ 512, "pack:2 numa:4 l3:4 core:8 pu:2" },
	{ 1024, "pack:4 numa:2 l3:4 core:16 pu:2" },
	{ 2048, "pack:4 numa:4 l3:4 core:16 pu:2" },
	{ 4096, "pack:8 numa:4 l3:4 core:16 pu:2" },
};

/* Families: the generator pattern and whether thread numbers are shuffled
 * (so that following thread order is no help). */
static const struct family {
	const char *name;
	const char *pattern;
	int shuffle;
} family_table[] = {
	{ "stencil2d", "stencil2d", 1 },
	{ "stencil3d", "stencil3d", 1 },
	{ "clusters4", "clusters:4", 1 },
	{ "clusters8", "clusters:8", 1 },
	{ "clusters16", "clusters:16", 1 },
	{ "pairs", "pairs", 0 },
	{ "ring", "ring", 0 },
	{ "all2all", "all2all", 0 },
	{ "random", "random", 0 },
	/* not in the default list: the easy ones with hidden structure */
	{ "pairs-shuf", "pairs", 1 },
	{ "ring-shuf", "ring", 1 },
};
#define DEFAULT_FAMILIES 9

static const enum cm_map_algorithm col_algorithm[COL_SCOTCH] = {
	[COL_AUTO] = CM_MAP_AUTO,
	[COL_GREEDY] = CM_MAP_GREEDY,
	[COL_MATCHING] = CM_MAP_MATCHING,
	[COL_EXACT] = CM_MAP_EXACT,
	[COL_COMPACT] = CM_MAP_COMPACT,
	[COL_SCATTER] = CM_MAP_SCATTER,
	[COL_ROUNDROBIN] = CM_MAP_ROUNDROBIN,
	[COL_RANDOM] = CM_MAP_RANDOM,
};

static const char *const scotch_strategies[] = {
	[BENCH_SCOTCH_DEFAULT] = "default",
	[BENCH_SCOTCH_QUALITY] = "quality",
	[BENCH_SCOTCH_BALANCED] = "balanced",
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

/* Everything one row needs while it runs. */
struct row_ctx {
	const struct config *cfg;
	const struct cm_topo *topo;
	const struct bench_tleaf *tleaf;	/* NULL: no Scotch here */
	const struct cm_matrix *m;
	int *map;
	struct bench_row *row;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_map [options]\n"
"  --sizes LIST        thread counts N (default 16,64,256,1024,4096);\n"
"                      each N maps onto the table's N-PU topology\n"
"  --families LIST     stencil2d,stencil3d,clusters4,clusters8,clusters16,\n"
"                      pairs,ring,all2all,random (default: these),\n"
"                      pairs-shuf,ring-shuf\n"
"  --algorithms LIST   auto,greedy,matching,exact,compact,scatter,\n"
"                      roundrobin,random,scotch (default: all; exact only\n"
"                      when some N <= %d)\n"
"  --reps R            best of R runs per cell (default 3)\n"
"  --budget-ms MS      stop repeating a cell after MS ms (default 2000)\n"
"  --skip-ms MS        skip larger N of a family for a mapper that took\n"
"                      longer than MS ms (default 60000)\n"
"  --format FMT        text, csv or markdown (default text)\n"
"  --csv FILE          also write the results as CSV to FILE\n"
"  --seed S            matrix, shuffle and mapper seed (default 1)\n"
"  --topology SPEC     one hwloc synthetic topology for every size\n"
"  --scotch-threads T  Scotch worker threads (default 1, like commap)\n"
"  --scotch-strategy S default (Scotch's own, 1%% imbalance; doubled-up\n"
"                      PUs are then repaired), quality, or balanced\n"
"  --no-refine         set cm_map_options.no_refine\n"
"  --list-topologies   print the N -> topology table and exit\n"
"  --check             exit 1 if auto costs more than Scotch anywhere\n"
"  --quiet             no progress lines on stderr\n"
"  --by-level          also the weight of the links by the distance of\n"
"                      their threads (the level that joins them): cost\n"
"                      is the sum of distance x weight\n",
		CM_MAP_EXACT_MAX);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_sizes(struct config *cfg, char *list)
{
	cfg->nsizes = 0;
	for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
		long v;

		if (cfg->nsizes == MAX_SIZES ||
		    parse_long(t, 1, 1 << 20, &v) < 0) {
			fprintf(stderr, "bench_map: bad size '%s'\n", t);
			return -1;
		}
		cfg->sizes[cfg->nsizes++] = (int)v;
	}
	if (cfg->nsizes == 0)
		fprintf(stderr, "bench_map: --sizes needs a list\n");
	return cfg->nsizes ? 0 : -1;
}

static const struct family *find_family(const char *name)
{
	for (size_t i = 0; i < sizeof(family_table) / sizeof(*family_table);
	     i++)
		if (strcmp(family_table[i].name, name) == 0)
			return &family_table[i];
	return NULL;
}

static int parse_families(struct config *cfg, char *list)
{
	cfg->nfamilies = 0;
	for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
		const struct family *f = find_family(t);

		if (!f || cfg->nfamilies == MAX_FAMILIES) {
			fprintf(stderr, "bench_map: unknown family '%s'\n", t);
			return -1;
		}
		cfg->families[cfg->nfamilies++] = f;
	}
	if (cfg->nfamilies == 0)
		fprintf(stderr, "bench_map: --families needs a list\n");
	return cfg->nfamilies ? 0 : -1;
}

static int parse_algorithms(struct config *cfg, char *list)
{
	memset(cfg->selected, 0, sizeof(cfg->selected));
	for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
		int c;

		for (c = 0; c < COL_COUNT; c++)
			if (strcmp(t, bench_col_name(c)) == 0)
				break;
		if (c == COL_COUNT) {
			fprintf(stderr, "bench_map: unknown algorithm '%s'\n",
				t);
			return -1;
		}
		cfg->selected[c] = 1;
	}
	cfg->explicit_algorithms = 1;
	return 0;
}

static int parse_scotch_strategy(struct config *cfg, const char *s)
{
	for (int i = 0; i <= BENCH_SCOTCH_BALANCED; i++) {
		if (strcmp(s, scotch_strategies[i]) == 0) {
			cfg->scotch.strategy = i;
			return 0;
		}
	}
	fprintf(stderr, "bench_map: unknown Scotch strategy '%s'\n", s);
	return -1;
}

static int parse_format(struct config *cfg, const char *s)
{
	if (strcmp(s, "text") == 0)
		cfg->format = FMT_TEXT;
	else if (strcmp(s, "csv") == 0)
		cfg->format = FMT_CSV;
	else if (strcmp(s, "markdown") == 0)
		cfg->format = FMT_MARKDOWN;
	else {
		fprintf(stderr, "bench_map: unknown format '%s'\n", s);
		return -1;
	}
	return 0;
}

static void config_defaults(struct config *cfg)
{
	static const int sizes[] = { 16, 64, 256, 1024, 4096 };

	memset(cfg, 0, sizeof(*cfg));
	cfg->nsizes = 5;
	memcpy(cfg->sizes, sizes, sizeof(sizes));
	for (int i = 0; i < DEFAULT_FAMILIES; i++)
		cfg->families[cfg->nfamilies++] = &family_table[i];
	for (int c = 0; c < COL_COUNT; c++)
		cfg->selected[c] = 1;
	cfg->reps = 3;
	cfg->budget_ms = 2000;
	cfg->skip_ms = 60000;
	cfg->seed = 1;
	cfg->scotch.nthreads = 1;
}

static const char *table_topology(int n)
{
	for (size_t i = 0; i < sizeof(topo_table) / sizeof(*topo_table); i++)
		if (topo_table[i].n == n)
			return topo_table[i].spec;
	return NULL;
}

static void list_topologies(void)
{
	for (size_t i = 0; i < sizeof(topo_table) / sizeof(*topo_table); i++)
		printf("%d\t%s\n", topo_table[i].n, topo_table[i].spec);
}

enum {
	OPT_SIZES = 256, OPT_FAMILIES, OPT_REPS, OPT_ALGORITHMS, OPT_FORMAT,
	OPT_SEED, OPT_TOPOLOGY, OPT_CHECK, OPT_BUDGET, OPT_SKIP,
	OPT_SCOTCH_THREADS, OPT_SCOTCH_STRATEGY, OPT_NO_REFINE, OPT_LIST,
	OPT_QUIET, OPT_CSV, OPT_BY_LEVEL, OPT_HELP
};

static const struct option long_options[] = {
	{ "sizes", required_argument, NULL, OPT_SIZES },
	{ "families", required_argument, NULL, OPT_FAMILIES },
	{ "reps", required_argument, NULL, OPT_REPS },
	{ "algorithms", required_argument, NULL, OPT_ALGORITHMS },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "budget-ms", required_argument, NULL, OPT_BUDGET },
	{ "skip-ms", required_argument, NULL, OPT_SKIP },
	{ "scotch-threads", required_argument, NULL, OPT_SCOTCH_THREADS },
	{ "scotch-strategy", required_argument, NULL, OPT_SCOTCH_STRATEGY },
	{ "no-refine", no_argument, NULL, OPT_NO_REFINE },
	{ "list-topologies", no_argument, NULL, OPT_LIST },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "csv", required_argument, NULL, OPT_CSV },
	{ "by-level", no_argument, NULL, OPT_BY_LEVEL },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* One option with a number argument; -1 on a bad value. */
static int parse_number_option(struct config *cfg, int opt, const char *arg)
{
	long v;

	if (parse_long(arg, opt == OPT_SEED ? 0 : 1, LONG_MAX, &v) < 0) {
		fprintf(stderr, "bench_map: bad number '%s'\n", arg);
		return -1;
	}
	switch (opt) {
	case OPT_REPS:
		cfg->reps = v > 1000 ? 1000 : (int)v;
		break;
	case OPT_SEED:
		cfg->seed = (uint64_t)v;
		break;
	case OPT_BUDGET:
		cfg->budget_ms = (double)v;
		break;
	case OPT_SKIP:
		cfg->skip_ms = (double)v;
		break;
	default:
		cfg->scotch.nthreads = v > 64 ? 64 : (int)v;
		break;
	}
	return 0;
}

/* 0 to run, 1 to exit successfully (help, list), -1 on a usage error. */
static int parse_option(struct config *cfg, int opt, char *arg)
{
	switch (opt) {
	case OPT_SIZES:
		return parse_sizes(cfg, arg);
	case OPT_FAMILIES:
		return parse_families(cfg, arg);
	case OPT_ALGORITHMS:
		return parse_algorithms(cfg, arg);
	case OPT_FORMAT:
		return parse_format(cfg, arg);
	case OPT_SCOTCH_STRATEGY:
		return parse_scotch_strategy(cfg, arg);
	case OPT_TOPOLOGY:
		cfg->topology = arg;
		return 0;
	case OPT_CSV:
		cfg->csv_path = arg;
		return 0;
	case OPT_CHECK:
		cfg->check = 1;
		return 0;
	case OPT_NO_REFINE:
		cfg->no_refine = 1;
		return 0;
	case OPT_QUIET:
		cfg->quiet = 1;
		return 0;
	case OPT_BY_LEVEL:
		cfg->by_level = 1;
		return 0;
	case OPT_LIST:
		list_topologies();
		return 1;
	case OPT_HELP:
		usage(stdout);
		return 1;
	case OPT_REPS:
	case OPT_SEED:
	case OPT_BUDGET:
	case OPT_SKIP:
	case OPT_SCOTCH_THREADS:
		return parse_number_option(cfg, opt, arg);
	default:
		usage(stderr);
		return -1;
	}
}

static int cmp_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) -
	       (*(const int *)a < *(const int *)b);
}

/* Checks that need the whole command line. */
static int config_finish(struct config *cfg)
{
	int small = 0;

	qsort(cfg->sizes, (size_t)cfg->nsizes, sizeof(int), cmp_int);
	for (int i = 0; i < cfg->nsizes; i++) {
		if (!cfg->topology && !table_topology(cfg->sizes[i])) {
			fprintf(stderr, "bench_map: no topology for N=%d "
				"(see --list-topologies, or --topology)\n",
				cfg->sizes[i]);
			return -1;
		}
		small |= cfg->sizes[i] <= CM_MAP_EXACT_MAX;
	}
	if (!cfg->explicit_algorithms && !small)
		cfg->selected[COL_EXACT] = 0;
	if (!cfg->explicit_algorithms && !bench_scotch_available()) {
		fprintf(stderr, "bench_map: built without Scotch "
			"(libscotch-dev): no scotch column\n");
		cfg->selected[COL_SCOTCH] = 0;
	}
	if (cfg->check && !bench_scotch_available()) {
		fprintf(stderr, "bench_map: --check needs Scotch, and this "
			"build has none\n");
		return -1;
	}
	if (cfg->check)
		cfg->selected[COL_AUTO] = cfg->selected[COL_SCOTCH] = 1;
	return 0;
}

static int parse_args(struct config *cfg, int argc, char **argv)
{
	int opt, rv;

	config_defaults(cfg);
	while ((opt = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		rv = parse_option(cfg, opt, optarg);
		if (rv != 0)
			return rv;
	}
	if (optind < argc) {
		fprintf(stderr, "bench_map: unexpected argument '%s'\n",
			argv[optind]);
		return -1;
	}
	cfg->scotch.seed = cfg->seed;
	return config_finish(cfg) < 0 ? -1 : 0;
}

/* Each link once (row i, columns above i), by the distance of its
 * threads' PUs. */
static void score_by_distance(const struct row_ctx *rc,
			      struct bench_cell *cell)
{
	int n = cm_matrix_nthreads(rc->m);

	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *row;
		int deg = cm_matrix_row(rc->m, i, &row);

		for (int k = 0; k < deg; k++) {
			int d;

			if (row[k].col <= i)
				continue;
			d = cm_topo_distance(rc->topo, rc->map[i],
					     rc->map[row[k].col]);
			if (d >= 0 && d < BENCH_DISTANCES)
				cell->by_distance[d] += row[k].w;
		}
	}
}

/* The mapping is scored only if it is a valid placement. */
static void cell_score(struct row_ctx *rc, struct bench_cell *cell)
{
	struct cm_error err = { { 0 } };
	int n = cm_matrix_nthreads(rc->m);

	if (cm_map_validate(rc->topo, n, rc->map, 0, &err) < 0) {
		cell->state = CELL_FAILED;
		snprintf(cell->note, sizeof(cell->note), "invalid: %s",
			 err.text);
		return;
	}
	cell->cost = cm_cost(rc->topo, rc->m, rc->map);
	if (rc->cfg->by_level)
		score_by_distance(rc, cell);
	cell->state = CELL_OK;
}

static int run_once(struct row_ctx *rc, int col, char *msg, size_t len)
{
	struct cm_map_options opts = { 0 };
	struct cm_error err = { { 0 } };

	if (col == COL_SCOTCH)
		return bench_scotch_map(rc->tleaf, rc->m, &rc->cfg->scotch,
					rc->map, msg, len);
	opts.algorithm = col_algorithm[col];
	opts.seed = rc->cfg->seed;
	opts.no_refine = rc->cfg->no_refine;
	if (cm_map(rc->topo, rc->m, &opts, rc->map, &err) == 0)
		return 0;
	snprintf(msg, len, "%s", err.text);
	return -1;
}

/* Best of the repetitions; stops early once the budget is spent. */
static void run_cell(struct row_ctx *rc, int col, struct bench_cell *cell)
{
	double spent = 0;

	cell->ms = -1;
	for (int r = 0; r < rc->cfg->reps; r++) {
		double t0 = now_ms(), dt;

		if (run_once(rc, col, cell->note, sizeof(cell->note)) < 0) {
			cell->state = CELL_FAILED;
			return;
		}
		dt = now_ms() - t0;
		cell->reps++;
		if (cell->ms < 0 || dt < cell->ms)
			cell->ms = dt;
		spent += dt;
		if (spent > rc->cfg->budget_ms)
			break;
	}
	/* Scotch may put two vertices on one leaf within its balance
	 * tolerance; spread them so that its cost is comparable. */
	if (col == COL_SCOTCH)
		cell->repaired = bench_repair_overload(
			rc->topo, cm_matrix_nthreads(rc->m), rc->map);
	cell_score(rc, cell);
}

static void progress(const struct config *cfg, const struct bench_row *row,
		     int col)
{
	const struct bench_cell *c = &row->cell[col];

	if (cfg->quiet)
		return;
	if (c->state == CELL_OK)
		fprintf(stderr, "  %-12s N=%-5d %-10s %10.3f ms  cost %.6g\n",
			row->family, row->n, bench_col_name(col), c->ms,
			c->cost);
	else if (c->state == CELL_FAILED)
		fprintf(stderr, "  %-12s N=%-5d %-10s FAILED: %s\n",
			row->family, row->n, bench_col_name(col), c->note);
}

/* skip_after[col]: this family's mapper was too slow at a smaller N. */
static void run_row(struct row_ctx *rc, int *skip_after)
{
	int n = cm_matrix_nthreads(rc->m);

	for (int col = 0; col < COL_COUNT; col++) {
		struct bench_cell *cell = &rc->row->cell[col];

		if (!rc->cfg->selected[col])
			continue;
		if (col == COL_EXACT && n > CM_MAP_EXACT_MAX) {
			cell->state = CELL_NOT_APPLICABLE;
			continue;
		}
		if (col == COL_SCOTCH && !rc->tleaf) {
			cell->state = CELL_FAILED;
			snprintf(cell->note, sizeof(cell->note), "%s",
				 bench_scotch_available() ?
				 "topology is not a uniform tree" :
				 "built without Scotch");
			continue;
		}
		if (skip_after[col]) {
			cell->state = CELL_SKIPPED;
			continue;
		}
		run_cell(rc, col, cell);
		progress(rc->cfg, rc->row, col);
		if (cell->state == CELL_OK && cell->ms > rc->cfg->skip_ms)
			skip_after[col] = 1;
	}
}

/* The machines, loaded once per size. */
struct size_ctx {
	struct cm_topo *topo;
	struct bench_tleaf tleaf;
	int have_tleaf;
	char tleaf_text[160];
	const char *spec;
};

static int load_sizes(const struct config *cfg, struct size_ctx *sc)
{
	for (int i = 0; i < cfg->nsizes; i++) {
		struct cm_error err = { { 0 } };
		char msg[128];

		sc[i].spec = cfg->topology ? cfg->topology
					   : table_topology(cfg->sizes[i]);
		if (cm_topo_load_synthetic(&sc[i].topo, sc[i].spec, &err)) {
			fprintf(stderr, "bench_map: topology '%s': %s\n",
				sc[i].spec, err.text);
			return -1;
		}
		sc[i].have_tleaf = bench_scotch_available() &&
			bench_tleaf_from_topo(sc[i].topo, &sc[i].tleaf, msg,
					      sizeof(msg)) == 0;
		if (sc[i].have_tleaf)
			bench_tleaf_format(&sc[i].tleaf, sc[i].tleaf_text,
					   sizeof(sc[i].tleaf_text));
		if (bench_scotch_available() && !sc[i].have_tleaf)
			fprintf(stderr, "bench_map: no Scotch for '%s': %s\n",
				sc[i].spec, msg);
	}
	return 0;
}

static int generate(const struct config *cfg, const struct family *f, int n,
		    struct cm_matrix **m)
{
	struct cm_error err = { { 0 } };
	/* the shuffle seed must not be 0 (0 means "no shuffle") */
	uint64_t shuffle = f->shuffle ? (cfg->seed + 1 ? cfg->seed + 1 : 1)
				      : 0;

	if (cm_matrix_generate(f->pattern, n, cfg->seed, shuffle, m, &err)) {
		fprintf(stderr, "bench_map: %s N=%d: %s (row skipped)\n",
			f->name, n, err.text);
		return -1;
	}
	return 0;
}

/* A family that has no matrix of this size (clusters:16 with 8 threads). */
static void row_not_applicable(const struct config *cfg, struct bench_row *r)
{
	for (int col = 0; col < COL_COUNT; col++)
		if (cfg->selected[col])
			r->cell[col].state = CELL_NOT_APPLICABLE;
}

static int run_family(const struct config *cfg, const struct family *f,
		      struct size_ctx *sc, struct bench_row *rows)
{
	int skip_after[COL_COUNT] = { 0 };

	for (int i = 0; i < cfg->nsizes; i++) {
		int n = cfg->sizes[i];
		struct row_ctx rc = { .cfg = cfg, .topo = sc[i].topo };
		struct cm_matrix *m;

		if (n > cm_topo_npus(sc[i].topo)) {
			fprintf(stderr, "bench_map: N=%d > %d PUs of '%s'\n",
				n, cm_topo_npus(sc[i].topo), sc[i].spec);
			return -1;
		}
		rows[i] = (struct bench_row){ .family = f->name, .n = n,
					      .topology = sc[i].spec };
		if (generate(cfg, f, n, &m) < 0) {
			row_not_applicable(cfg, &rows[i]);
			continue;
		}
		rc.m = m;
		rc.tleaf = sc[i].have_tleaf ? &sc[i].tleaf : NULL;
		rc.row = &rows[i];
		rc.map = malloc((size_t)n * sizeof(int));
		if (rc.map)
			run_row(&rc, skip_after);
		free(rc.map);
		cm_matrix_free(m);
		if (!rc.map)
			return -1;
	}
	return 0;
}

/* --check: commap's default must never cost more than Scotch. */
static int check_rows(const struct bench_row *rows, int nrows)
{
	int bad = 0;

	for (int i = 0; i < nrows; i++) {
		const struct bench_cell *a = &rows[i].cell[COL_AUTO];
		const struct bench_cell *s = &rows[i].cell[COL_SCOTCH];

		if (a->state == CELL_NOT_APPLICABLE ||
		    s->state == CELL_NOT_APPLICABLE)
			continue;
		if (a->state != CELL_OK || s->state != CELL_OK) {
			fprintf(stderr, "check: %s N=%d: auto or scotch did "
				"not run\n", rows[i].family, rows[i].n);
			bad = 1;
		} else if (a->cost > s->cost * (1 + 1e-9)) {
			fprintf(stderr, "check: %s N=%d: auto %.6g > scotch "
				"%.6g (x%.3f)\n", rows[i].family, rows[i].n,
				a->cost, s->cost, a->cost / s->cost);
			bad = 1;
		}
	}
	return bad;
}

static char *join_args(int argc, char **argv)
{
	size_t len = 1;
	char *s;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = calloc(len, 1);
	for (int i = 0; s && i < argc; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

static int print_results(const struct config *cfg, struct size_ctx *sc,
			 const struct bench_row *rows, int nrows,
			 const char *command)
{
	FILE *csv;
	const char *topologies[MAX_SIZES], *tleafs[MAX_SIZES];
	struct bench_run_info info = {
		.command = command ? command : "bench_map",
		.reps = cfg->reps,
		.seed = cfg->seed,
		.scotch_threads = cfg->scotch.nthreads,
		.scotch_strategy = scotch_strategies[cfg->scotch.strategy],
		.sizes = cfg->sizes,
		.topologies = topologies,
		.tleafs = tleafs,
		.nsizes = cfg->nsizes,
		.by_level = cfg->by_level,
	};

	for (int i = 0; i < cfg->nsizes; i++) {
		topologies[i] = sc[i].spec;
		tleafs[i] = sc[i].have_tleaf ? sc[i].tleaf_text : NULL;
	}
	bench_print(stdout, cfg->format, &info, rows, nrows, cfg->selected);
	if (!cfg->csv_path)
		return 0;
	csv = fopen(cfg->csv_path, "w");
	if (!csv) {
		fprintf(stderr, "bench_map: %s: %s\n", cfg->csv_path,
			strerror(errno));
		return -1;
	}
	bench_print(csv, FMT_CSV, &info, rows, nrows, cfg->selected);
	return fclose(csv) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	static struct config cfg;
	struct size_ctx sc[MAX_SIZES] = { { 0 } };
	struct bench_row *rows;
	int rv, nrows = 0, status = 1;
	char *command = join_args(argc, argv);

	rv = parse_args(&cfg, argc, argv);
	if (rv != 0) {
		free(command);
		return rv > 0 ? 0 : 2;
	}
	rows = calloc((size_t)cfg.nsizes * (size_t)cfg.nfamilies,
		      sizeof(*rows));
	if (!rows || load_sizes(&cfg, sc) < 0)
		goto out;
	for (int f = 0; f < cfg.nfamilies; f++, nrows += cfg.nsizes)
		if (run_family(&cfg, cfg.families[f], sc, rows + nrows) < 0)
			goto out;
	bench_rows_compute_ratios(rows, nrows);
	if (print_results(&cfg, sc, rows, nrows, command) < 0)
		goto out;
	status = cfg.check ? check_rows(rows, nrows) : 0;
out:
	for (int i = 0; i < cfg.nsizes; i++)
		if (sc[i].topo)
			cm_topo_free(sc[i].topo);
	free(rows);
	free(command);
	return status;
}
