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
 *
 * The command line and the tables of sizes and families:
 * bench_map_args.c; the output: bench_output.c.
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
#include "bench_map_args.h"

#include "commap/cost.h"
#include "commap/error.h"
#include "commap/mapping.h"
#include "commap/matrix.h"
#include "commap/matrix_gen.h"
#include "commap/topology.h"

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
