/* remote_nodes.c: a job across its nodes in 'commap report' (terminal).
 * Each node's agent maps the threads of its own node and uploads its own
 * result; the service keeps one per (step, node).  Before each node's
 * report this says which nodes ran which steps, what each found and
 * pinned, and the totals, so the per-node reports are read as parts of
 * one job. */
#include <config.h>

#include <string.h>

#include "remote_nodes.h"
#include "render.h"
#include "render_traffic.h"

#define NODE_W 16

static long long jint(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static const char *jstr(const json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s && *s ? s : dflt;
}

/* Distinct node names among the rows (a job's rows are few: quadratic is
 * fine). */
static int count_nodes(const json_t *rows)
{
	size_t i, j;
	int n = 0;

	for (i = 0; i < json_array_size(rows); i++) {
		const char *a = jstr(json_array_get(rows, i), "node", "");

		for (j = 0; j < i; j++)
			if (!strcmp(a, jstr(json_array_get(rows, j), "node",
					    "")))
				break;
		if (j == i)
			n++;
	}
	return n;
}

static void print_row(FILE *out, const json_t *row)
{
	const json_t *cost = json_object_get(row, "final_cost");
	const json_t *topo = json_object_get(json_object_get(row, "document"),
					     "topology");
	char buf[24], c[32] = "-";
	const char *step = cm_report_step_name(jint(row, "step"), buf,
					       sizeof(buf));
	if (json_is_number(cost))
		snprintf(c, sizeof(c), "%.4g", json_number_value(cost));
	fprintf(out, "  %-*.*s %-6s %5lld %7lld %5lld %5lld %10s  %s\n",
		NODE_W, NODE_W, jstr(row, "node", "?"), step,
		jint(row, "ranks"), jint(row, "threads"), jint(row, "edges"),
		jint(row, "migrations"), c, jstr(topo, "cpuset", "-"));
}

int remote_nodes_summary(FILE *out, const json_t *job)
{
	const json_t *rows = json_object_get(job, "results");
	long long ranks = 0, threads = 0, edges = 0, migr = 0;
	size_t i;
	int nodes = count_nodes(rows);

	if (nodes < 2)
		return 0;
	fprintf(out, "job %lld across %d nodes: %zu results (one per step "
		"and node)\n", jint(job, "job"), nodes, json_array_size(rows));
	fprintf(out, "  %-*s %-6s %5s %7s %5s %5s %10s  %s\n", NODE_W, "NODE",
		"STEP", "RANKS", "THREADS", "EDGES", "PINS", "COST", "CPUS");
	for (i = 0; i < json_array_size(rows); i++) {
		const json_t *row = json_array_get(rows, i);

		print_row(out, row);
		ranks += jint(row, "ranks");
		threads += jint(row, "threads");
		edges += jint(row, "edges");
		migr += jint(row, "migrations");
	}
	fprintf(out, "  %-*s %-6s %5lld %7lld %5lld %5lld\n", NODE_W, "total",
		"", ranks, threads, edges, migr);
	/* Each node's agent sees only its own node's threads: messages
	 * between nodes go over the network and are in no matrix.  Only
	 * the MPI library's counts (--commap-mpi-traffic) cover them. */
	if (cm_traffic_job_text(out, job) > 0)
		fputs("Each node's matrix and mapping follow.\n", out);
	else
		fputs("Each node's matrix and mapping follow; traffic between "
		      "nodes is not measured (srun --commap-mpi-traffic "
		      "counts it for Open MPI).\n", out);
	return ferror(out) ? -1 : 1;
}
