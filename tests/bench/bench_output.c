/* bench_output.c: ratios and the text, CSV and Markdown tables of the
 * mapping benchmark. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_map.h"

static const char *const col_names[COL_COUNT] = {
	[COL_AUTO] = "auto",
	[COL_GREEDY] = "greedy",
	[COL_MATCHING] = "matching",
	[COL_EXACT] = "exact",
	[COL_COMPACT] = "compact",
	[COL_SCATTER] = "scatter",
	[COL_ROUNDROBIN] = "roundrobin",
	[COL_RANDOM] = "random",
	[COL_SCOTCH] = "scotch",
};

const char *bench_col_name(enum bench_col col)
{
	return (unsigned)col < COL_COUNT ? col_names[col] : "?";
}

/* x / best, where a best of 0 makes every non-zero value infinitely worse. */
static double ratio(double x, double best)
{
	if (best > 0)
		return x / best;
	return x > 0 ? INFINITY : 1.0;
}

static void row_ratios(struct bench_row *r)
{
	double best_cost = INFINITY, best_ms = INFINITY;

	for (int c = 0; c < COL_COUNT; c++) {
		if (r->cell[c].state != CELL_OK)
			continue;
		best_cost = fmin(best_cost, r->cell[c].cost);
		best_ms = fmin(best_ms, r->cell[c].ms);
	}
	for (int c = 0; c < COL_COUNT; c++) {
		struct bench_cell *cell = &r->cell[c];

		if (cell->state != CELL_OK)
			continue;
		cell->cost_ratio = ratio(cell->cost, best_cost);
		cell->time_ratio = ratio(cell->ms, best_ms);
	}
}

void bench_rows_compute_ratios(struct bench_row *rows, int nrows)
{
	for (int i = 0; i < nrows; i++)
		row_ratios(&rows[i]);
}

static const char *state_text(enum bench_state s)
{
	switch (s) {
	case CELL_NOT_APPLICABLE:
		return "n/a";
	case CELL_SKIPPED:
		return "skip";
	case CELL_FAILED:
		return "FAIL";
	default:
		return "-";
	}
}

/* "auto/scotch": how far commap's default is from the reference. */
static int auto_vs_scotch(const struct bench_row *r, double *out)
{
	const struct bench_cell *a = &r->cell[COL_AUTO];
	const struct bench_cell *s = &r->cell[COL_SCOTCH];

	if (a->state != CELL_OK || s->state != CELL_OK)
		return -1;
	*out = ratio(a->cost, s->cost);
	return 0;
}

static void fmt_cost_cell(char *buf, size_t len, const struct bench_cell *c)
{
	if (c->state != CELL_OK)
		snprintf(buf, len, "%s", state_text(c->state));
	else
		snprintf(buf, len, "%.3f%s", c->cost_ratio,
			 c->repaired ? "*" : "");
}

/* Milliseconds with three significant digits, then the ratio. */
static void fmt_time_cell(char *buf, size_t len, const struct bench_cell *c)
{
	if (c->state != CELL_OK)
		snprintf(buf, len, "%s", state_text(c->state));
	else if (c->ms < 0.01)
		snprintf(buf, len, "%.4f (%.0fx)", c->ms, c->time_ratio);
	else if (c->ms < 1)
		snprintf(buf, len, "%.3f (%.0fx)", c->ms, c->time_ratio);
	else if (c->ms < 100)
		snprintf(buf, len, "%.1f (%.0fx)", c->ms, c->time_ratio);
	else
		snprintf(buf, len, "%.0f (%.0fx)", c->ms, c->time_ratio);
}

typedef void (*cell_fmt)(char *, size_t, const struct bench_cell *);

/* Text and Markdown share the layout: one line per row, one column per
 * selected mapper; md selects the pipes. */
static void print_header(FILE *out, int md, const int *selected, int extra)
{
	fprintf(out, md ? "| family | N |" : "%-12s %5s", "family", "N");
	for (int c = 0; c < COL_COUNT; c++)
		if (selected[c])
			fprintf(out, md ? " %s |" : " %15s",
				bench_col_name(c));
	if (extra)
		fprintf(out, md ? " auto/scotch |" : " %12s", "auto/scotch");
	fprintf(out, "\n");
	if (!md)
		return;
	fprintf(out, "|---|--:|");
	for (int c = 0; c < COL_COUNT; c++)
		if (selected[c])
			fprintf(out, "--:|");
	fprintf(out, extra ? "--:|\n" : "\n");
}

static void print_row(FILE *out, int md, const struct bench_row *r,
		      const int *selected, cell_fmt fmt, int extra)
{
	char buf[64];
	double avs;

	fprintf(out, md ? "| %s | %d |" : "%-12s %5d", r->family, r->n);
	for (int c = 0; c < COL_COUNT; c++) {
		if (!selected[c])
			continue;
		fmt(buf, sizeof(buf), &r->cell[c]);
		fprintf(out, md ? " %s |" : " %15s", buf);
	}
	if (extra && auto_vs_scotch(r, &avs) == 0)
		fprintf(out, md ? " %.4f |" : " %12.4f", avs);
	else if (extra)
		fprintf(out, md ? " - |" : " %12s", "-");
	fprintf(out, "\n");
}

static void print_table(FILE *out, int md, const struct bench_row *rows,
			int nrows, const int *selected, cell_fmt fmt,
			int extra)
{
	print_header(out, md, selected, extra);
	for (int i = 0; i < nrows; i++)
		print_row(out, md, &rows[i], selected, fmt, extra);
}

static void print_failures(FILE *out, const struct bench_row *rows,
			   int nrows)
{
	for (int i = 0; i < nrows; i++)
		for (int c = 0; c < COL_COUNT; c++)
			if (rows[i].cell[c].state == CELL_FAILED)
				fprintf(out, "FAIL %s N=%d %s: %s\n",
					rows[i].family, rows[i].n,
					bench_col_name(c),
					rows[i].cell[c].note);
}

static void print_topologies(FILE *out, int md,
			     const struct bench_run_info *info)
{
	if (md)
		fprintf(out, "| N | topology (hwloc synthetic) | Scotch arch |"
			"\n|--:|---|---|\n");
	for (int i = 0; i < info->nsizes; i++) {
		const char *t = info->tleafs[i] ? info->tleafs[i] : "-";

		fprintf(out, md ? "| %d | `%s` | `%s` |\n"
				: "  N=%-5d %-34s %s\n",
			info->sizes[i], info->topologies[i], t);
	}
}

/* --by-level: the distances with a link anywhere in the run. */
static void used_distances(const struct bench_row *rows, int nrows,
			   const int *selected, int *used)
{
	for (int d = 0; d < BENCH_DISTANCES; d++)
		used[d] = 0;
	for (int i = 0; i < nrows; i++)
		for (int c = 0; c < COL_COUNT; c++)
			for (int d = 0; d < BENCH_DISTANCES; d++)
				if (selected[c] &&
				    rows[i].cell[c].state == CELL_OK &&
				    rows[i].cell[c].by_distance[d] > 0)
					used[d] = 1;
}

/* One line per mapper and row: where its cost comes from, level by
 * level (e.g. auto and Scotch at the same N side by side). */
static void print_by_level(FILE *out, int md, const struct bench_row *rows,
			   int nrows, const int *selected)
{
	int used[BENCH_DISTANCES];

	used_distances(rows, nrows, selected, used);
	fprintf(out, md ? "\n#### Weight of the links by distance (1 core, "
			  "2 L2, 3 L3, 4 NUMA node, 5 package, 6 machine)"
			  "\n\n| family | N | mapper |"
			: "\nweight of the links by distance (1 core, 2 L2, "
			  "3 L3, 4 NUMA node, 5 package, 6 machine)\n"
			  "%-12s %5s %-10s", "family", "N", "mapper");
	for (int d = 0; d < BENCH_DISTANCES; d++)
		if (used[d])
			fprintf(out, md ? " %d |" : " %10d", d);
	fprintf(out, "\n");
	if (md) {
		fprintf(out, "|---|--:|---|");
		for (int d = 0; d < BENCH_DISTANCES; d++)
			if (used[d])
				fprintf(out, "--:|");
		fprintf(out, "\n");
	}
	for (int i = 0; i < nrows; i++) {
		for (int c = 0; c < COL_COUNT; c++) {
			const struct bench_cell *cl = &rows[i].cell[c];

			if (!selected[c] || cl->state != CELL_OK)
				continue;
			fprintf(out, md ? "| %s | %d | %s |" : "%-12s %5d %-10s",
				rows[i].family, rows[i].n, bench_col_name(c));
			for (int d = 0; d < BENCH_DISTANCES; d++)
				if (used[d])
					fprintf(out, md ? " %.6g |" : " %10.6g",
						cl->by_distance[d]);
			fprintf(out, "\n");
		}
	}
}

static void print_human(FILE *out, int md, const struct bench_run_info *info,
			const struct bench_row *rows, int nrows,
			const int *selected)
{
	int extra = selected[COL_AUTO] && selected[COL_SCOTCH];

	fprintf(out, md ? "Command: `%s`  \n" : "command: %s\n",
		info->command);
	fprintf(out, md ? "Best of %d repetitions, seed %llu, Scotch "
			  "strategy %s with %d thread(s).\n\n"
			: "best of %d repetitions, seed %llu, Scotch "
			  "strategy %s with %d thread(s)\n",
		info->reps, (unsigned long long)info->seed,
		info->scotch_strategy, info->scotch_threads);
	print_topologies(out, md, info);
	fprintf(out, md ? "\n#### Cost / best cost in the row (1.000 = best; "
			  "* = Scotch result repaired)\n\n"
			: "\ncost / best cost in the row (1.000 = best; "
			  "* = Scotch result repaired)\n");
	print_table(out, md, rows, nrows, selected, fmt_cost_cell, extra);
	fprintf(out, md ? "\n#### Time in ms, best of the repetitions "
			  "(ratio to the fastest in the row)\n\n"
			: "\ntime in ms, best of the repetitions "
			  "(ratio to the fastest in the row)\n");
	print_table(out, md, rows, nrows, selected, fmt_time_cell, 0);
	if (info->by_level)
		print_by_level(out, md, rows, nrows, selected);
	print_failures(out, rows, nrows);
}

static void print_csv_cell(FILE *out, const struct bench_row *r, int c,
			   int by_level)
{
	const struct bench_cell *cl = &r->cell[c];

	fprintf(out, "%s,%d,\"%s\",%s,%s,", r->family, r->n, r->topology,
		bench_col_name(c),
		cl->state == CELL_OK ? "ok" : state_text(cl->state));
	if (cl->state == CELL_OK)
		fprintf(out, "%.6g,%.6g,%.6f,%.6g,%d,%d", cl->cost,
			cl->cost_ratio, cl->ms, cl->time_ratio, cl->reps,
			cl->repaired);
	else
		fprintf(out, ",,,,%d,0", cl->reps);
	for (int d = 0; by_level && d < BENCH_DISTANCES; d++)
		if (cl->state == CELL_OK)
			fprintf(out, ",%.6g", cl->by_distance[d]);
		else
			fprintf(out, ",");
	fprintf(out, "\n");
}

/* --by-level appends the weights by distance (by_d0 ... by_d6), so that
 * the columns before keep their places. */
static void print_csv(FILE *out, const struct bench_row *rows, int nrows,
		      const int *selected, int by_level)
{
	fprintf(out, "family,n,topology,algorithm,state,cost,cost_ratio,"
		"time_ms,time_ratio,reps,repaired");
	for (int d = 0; by_level && d < BENCH_DISTANCES; d++)
		fprintf(out, ",by_d%d", d);
	fprintf(out, "\n");
	for (int i = 0; i < nrows; i++)
		for (int c = 0; c < COL_COUNT; c++)
			if (selected[c])
				print_csv_cell(out, &rows[i], c, by_level);
}

void bench_print(FILE *out, enum bench_format fmt,
		 const struct bench_run_info *info,
		 const struct bench_row *rows, int nrows,
		 const int *selected)
{
	if (fmt == FMT_CSV)
		print_csv(out, rows, nrows, selected, info->by_level);
	else
		print_human(out, fmt == FMT_MARKDOWN, info, rows, nrows,
			    selected);
	fflush(out);
}
