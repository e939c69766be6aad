/* test_benefit.c: the did-it-help lines (render_benefit.c).  The unpinned
 * cost is checked against its definition, the mean cost over every
 * placement the scheduler could make, enumerated with lib's cm_cost; the
 * applied cost against cm_cost of the mapping; the run-time line's
 * median; the evidence line with absent and nested fields. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commap/cost.h"
#include "commap/matrix.h"
#include "commap/topology.h"
#include "render.h"
#include "tap.h"

#define SPEC "pack:2 core:2 pu:1"

/* The text of the line of kind, or "" (the lines are kept by the caller). */
static const char *line(const json_t *lines, const char *kind)
{
	const json_t *l;
	size_t i;

	json_array_foreach(lines, i, l)
		if (!strcmp(json_string_value(json_object_get(l, "kind")), kind))
			return json_string_value(json_object_get(l, "text"));
	return "";
}

static json_t *result(int n, const char *edges, const char *pus)
{
	json_t *d = json_pack("{s:s, s:i, s:s, s:s, s:{s:s, s:s, s:i}}",
			      "format", "commap-result", "version", 1,
			      "started_at", "2026-11-22T14:00:00Z",
			      "ended_at", "2026-11-22T14:01:00Z",
			      "topology", "synthetic", SPEC, "cpuset", "0-3",
			      "pus", 4);
	json_t *th = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(th, json_pack("{s:i, s:i}", "rank", 0,
						    "index", i));
	json_object_set_new(d, "threads", th);
	json_object_set_new(d, "edges", json_loads(edges, 0, NULL));
	json_object_set_new(d, "timeline", json_pack("[{s:f, s:o}]", "t", 0.1,
				"pu_of_thread", json_loads(pus, 0, NULL)));
	return d;
}

static struct cm_matrix *matrix_of(const json_t *doc)
{
	const json_t *edges = json_object_get(doc, "edges"), *e;
	struct cm_matrix *m = cm_matrix_new((int)json_array_size(
		json_object_get(doc, "threads")));
	size_t k;

	json_array_foreach(edges, k, e)
		cm_matrix_add(m, (int)json_integer_value(json_array_get(e, 0)),
			      (int)json_integer_value(json_array_get(e, 1)),
			      json_number_value(json_array_get(e, 2)));
	return m;
}

/* Mean cm_cost over every assignment of n threads to the 4 PUs: all
 * permutations (distinct PUs) when n <= 4, else all 4^n with repeats. */
static double mean_cost(const struct cm_topo *t, const struct cm_matrix *m,
			int n)
{
	int pu[8], k, i, used;
	long total = 1, count = 0;
	double sum = 0;

	for (i = 0; i < n; i++)
		total *= 4;
	for (k = 0; k < total; k++) {
		int x = k;

		used = 0;
		for (i = 0; i < n; i++, x /= 4) {
			pu[i] = x % 4;
			used |= 1 << pu[i];
		}
		if (n <= 4 && __builtin_popcount((unsigned)used) != n)
			continue;
		sum += cm_cost(t, m, pu);
		count++;
	}
	return sum / (double)count;
}

static void check_costs(int n, const char *edges, const char *pus,
			const int *applied, const char *name)
{
	json_t *doc = result(n, edges, pus), *lines;
	struct cm_topo *t = NULL;
	struct cm_matrix *m = matrix_of(doc);
	double got_a = -1, got_u = -1, want_a, want_u;
	int logical[8];

	cm_topo_load_synthetic(&t, SPEC, NULL);
	for (int i = 0; i < n; i++)
		logical[i] = cm_topo_pu_by_os_index(t, applied[i]);
	want_a = cm_cost(t, m, logical);
	want_u = mean_cost(t, m, n);
	lines = cm_report_benefit(doc, NULL);
	ok(sscanf(line(lines, "cost"), "predicted cost: %lf applied against "
		  "%lf unpinned", &got_a, &got_u) == 2, "%s: a cost line: %s",
	   name, line(lines, "cost"));
	is_double(got_a, want_a, 1e-3 * want_a, "  the applied cost is "
		  "cm_cost of the last mapping");
	is_double(got_u, want_u, 1e-3 * want_u, "  the unpinned cost is the "
		  "mean over every placement");
	json_decref(lines);
	json_decref(doc);
	cm_matrix_free(m);
	cm_topo_free(t);
}

static void test_costs(void)
{
	static const int four[] = { 0, 2, 1, 3 };
	static const int six[] = { 0, 0, 1, 2, 3, 3 };

	check_costs(4, "[[0,1,3],[0,2,5],[1,3,7],[2,3,11],[0,3,2]]",
		    "[0,2,1,3]", four, "4 threads on 4 PUs");
	check_costs(6, "[[0,1,4],[1,2,1],[2,3,6],[3,4,2],[4,5,9],[0,5,3]]",
		    "[0,0,1,2,3,3]", six, "6 threads on 4 PUs (doubled up)");
}

static void test_no_edges(void)
{
	json_t *doc = result(2, "[]", "[0,1]"), *lines;

	lines = cm_report_benefit(doc, NULL);
	ok(strstr(line(lines, "cost"), "nothing to gain") != NULL,
	   "no edges: nothing to gain (%s)", line(lines, "cost"));
	ok(strcmp(line(lines, "time"), "") == 0,
	   "a bare result (no row): no run-time line");
	ok(strstr(line(lines, "latency"), "not recorded") != NULL,
	   "no pin latency: said");
	ok(strstr(line(lines, "samples"), "no sampling figures") != NULL,
	   "no stats: said, no numbers made up");
	json_decref(lines);
	json_decref(doc);
}

static void test_time_and_evidence(void)
{
	json_t *doc = result(2, "[[0,1,2.5]]", "[0,1]"), *lines, *row;
	const json_t *l;
	size_t i;
	int by = 0;

	json_object_set_new(doc, "stats", json_pack(
		"{s:i, s:i, s:i, s:{s:f, s:f, s:f, s:i},"
		" s:{s:{s:i, s:i}, s:i}, s:[{s:f, s:i}, {s:f, s:i}, s],"
		" s:[{s:s, s:i}], s:{s:i, s:i}}",
		"samples", 1000, "decoded", 250, "faults", 3,
		"pin_latency_ms", "p50", 4.0, "p90", 9.0, "max", 12.0, "n", 2,
		"levels", "line", "events", 7, "samples", 9, "page", 40,
		"phases", "t", 0.0, "samples", 700, "t", 1.5, "samples", 300,
		"x", "sample_budget", "phase", "learn", "samples", 1800,
		"dropped", "spin", 120, "stack", 900));
	row = json_pack("{s:[{s:i}, {s:i}, {s:i}, {s:n}]}", "earlier_runs",
			"duration_s", 100, "duration_s", 80, "duration_s", 120,
			"duration_s");
	lines = cm_report_benefit(doc, row);
	is_str(line(lines, "time"), "run time: 60 s against a median of 100 s "
	       "over 3 earlier runs of this application (80 to 120 s): 0.60x",
	       "run time against the median of the earlier runs (a null "
	       "duration skipped)");
	is_str(line(lines, "latency"), "pin latency (thread start to first "
	       "pin): median 4 ms, p90 9 ms, max 12 ms over 2 threads",
	       "pin latency percentiles");
	is_str(line(lines, "samples"), "evidence: 1000 samples, 25.0% "
	       "decoded, 3 faults, 2.5 events in the matrix",
	       "evidence: samples, decoded share, faults, events");
	json_array_foreach(lines, i, l) {
		const char *t = json_string_value(json_object_get(l, "text"));

		by += !strcmp(t, "  by levels: line (events 7, samples 9), "
			      "page 40");
		by += 2 * !strcmp(t, "  by phases: (t 0, samples 700) (t 1.5, "
				  "samples 300)");
		by += 4 * !strcmp(t, "  by sampling phase: (learn, samples "
				  "1800)");
		by += 8 * !strcmp(t, "  dropped (say nothing about sharing): "
				  "spin 120, stack 900");
	}
	is_int(by, 15, "breakdowns by level (nested), by phase (a list), the "
	       "agent's sample_budget and dropped, as the result has them");
	json_decref(lines);
	/* The agent writes milliseconds. */
	json_object_set_new(doc, "started_at",
			    json_string("2026-11-22T14:00:00.250Z"));
	json_object_set_new(doc, "ended_at",
			    json_string("2026-11-22T14:00:04.750Z"));
	lines = cm_report_benefit(doc, row);
	is_str(line(lines, "time"), "run time: 4 s against a median of 100 s "
	       "over 3 earlier runs of this application (80 to 120 s): 0.04x",
	       "run time from stamps with milliseconds");
	json_decref(lines);
	json_object_set_new(doc, "ended_at", json_string("2026-11-22 14:00"));
	lines = cm_report_benefit(doc, row);
	is_str(line(lines, "time"), "run time: not known (the result's start "
	       "or end time is missing or malformed)",
	       "a malformed end time: said, not printed as -1 s");
	json_decref(lines);
	json_decref(row);
	json_decref(doc);
}

/* A topology of 1024 PUs: the unpinned cost averages every 2nd PU's
 * pairs only (the work is bounded), and stays the mean distance. */
static void test_large_topology(void)
{
	const char *spec = "pack:4 l3:2 core:32 pu:4";
	json_t *doc = result(2, "[[0,1,1]]", "[0,1]"), *lines;
	struct cm_topo *t = NULL;
	double got_a, got_u, want = 0;
	int a, b, n;

	json_object_set_new(json_object_get(doc, "topology"), "synthetic",
			    json_string(spec));
	json_object_set_new(json_object_get(doc, "topology"), "cpuset",
			    json_string("0-1023"));
	cm_topo_load_synthetic(&t, spec, NULL);
	n = cm_topo_npus(t);
	for (a = 0; a < n; a++)
		for (b = 0; b < n; b++)
			want += a == b ? 0 : cm_topo_distance(t, a, b);
	want /= (double)n * (n - 1);
	lines = cm_report_benefit(doc, NULL);
	ok(sscanf(line(lines, "cost"), "predicted cost: %lf applied against "
		  "%lf unpinned", &got_a, &got_u) == 2, "1024 PUs: a cost line");
	is_double(got_u, want, 0.01 * want, "  the unpinned cost within 1% "
		  "of the mean over all 1024 x 1023 pairs");
	json_decref(lines);
	json_decref(doc);
	cm_topo_free(t);
}

int main(void)
{
	test_large_topology();
	test_costs();
	test_no_edges();
	test_time_and_evidence();
	return done_testing();
}
