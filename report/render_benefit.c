/* render_benefit.c: whether commap helped a run, and what its matrix
 * rests on, as lines for both renderers (docs/reports.md "Did it help").
 *
 * Cost: the cost model of lib/cost.h (communication times the topology
 * distance of the two threads' PUs) of the whole-run matrix under the
 * mapping the agent applied last, beside the cost the same matrix has
 * when the threads are left to the scheduler.  Unpinned threads go
 * anywhere in the step's CPUs, so that cost is the expectation over
 * uniformly random placements: every pair then sits at the mean distance
 * of two distinct PUs (of two PUs drawn with repetition when there are
 * more threads than PUs).  Both are computed here from the same matrix,
 * so the ratio means something even when the agent's own timeline costs
 * were taken on an aged copy.
 *
 * Time: this run against earlier runs of the same application identity
 * (the service adds them to a stored result as "earlier_runs").
 * Latency: the agent's thread creation to first pin percentiles. */
#define _GNU_SOURCE	/* strptime, timegm */
#include <config.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commap/topology.h"
#include "render.h"
#include "render_internal.h"

/* The step's topology (synthetic restricted to its cpuset), or NULL. */
static struct cm_topo *step_topology(const json_t *doc)
{
	const json_t *t = json_object_get(doc, "topology");
	struct cm_topo *topo = NULL;

	if (!rd_jstr(t, "synthetic") ||
	    cm_topo_load_synthetic(&topo, rd_jstr(t, "synthetic"), NULL) < 0)
		return NULL;
	if (rd_jstr(t, "cpuset") && cm_topo_restrict(topo, rd_jstr(t, "cpuset"),
						 NULL) < 0) {
		cm_topo_free(topo);
		return NULL;
	}
	return topo;
}

/* PUs whose pairs are averaged at most: the mean is quadratic in them,
 * and a result's topology is whatever its uploader wrote. */
#define MEAN_PUS_MAX 512

/* The mean distance of two PUs drawn at random (distinct ones unless
 * with_same).  Past MEAN_PUS_MAX PUs, over every k-th PU only: a
 * machine's subtrees repeat, so evenly spaced PUs see the same mix of
 * distances. */
static double mean_distance(const struct cm_topo *topo, int with_same)
{
	int n = cm_topo_npus(topo), a, b;
	int step = (n + MEAN_PUS_MAX - 1) / MEAN_PUS_MAX;
	double sum = 0, pairs = 0;

	step = step > 0 ? step : 1;
	for (a = 0; a < n; a += step)
		for (b = 0; b < n; b += step) {
			if (a == b && !with_same)
				continue;
			sum += a == b ? 0 : cm_topo_distance(topo, a, b);
			pairs++;
		}
	return pairs > 0 ? sum / pairs : 0;
}

/* The logical PU of thread i in the last timeline entry, or -1 (not
 * placed, or on a PU outside the step's). */
static int placed_pu(const struct cm_topo *topo, const json_t *pus, int i)
{
	const json_t *v = json_array_get(pus, (size_t)i);

	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > 1 << 20)
		return -1;
	return cm_topo_pu_by_os_index(topo, (int)json_integer_value(v));
}

struct costs {
	double applied, unpinned, total;
	int pus;
};

/* Both costs of the document's edges; 0, or -1 when there is nothing to
 * compare (no topology, no edges, no mapping applied). */
static int costs_of(const json_t *doc, struct costs *c)
{
	const json_t *edges = json_object_get(doc, "edges"), *e;
	const json_t *tl = json_object_get(doc, "timeline");
	const json_t *pus = json_object_get(json_array_get(tl,
				json_array_size(tl) - 1), "pu_of_thread");
	int nthreads = (int)json_array_size(json_object_get(doc, "threads"));
	struct cm_topo *topo;
	double mean;
	size_t k;

	memset(c, 0, sizeof(*c));
	if (json_array_size(edges) == 0 || !json_is_array(pus) ||
	    !(topo = step_topology(doc)))
		return -1;
	c->pus = cm_topo_npus(topo);
	mean = mean_distance(topo, nthreads > c->pus);
	json_array_foreach(edges, k, e) {
		double w = json_number_value(json_array_get(e, 2));
		int a = placed_pu(topo, pus, (int)json_integer_value(
					  json_array_get(e, 0)));
		int b = placed_pu(topo, pus, (int)json_integer_value(
					  json_array_get(e, 1)));

		c->total += w;
		c->unpinned += w * mean;
		c->applied += w * (a < 0 || b < 0 ? mean : a == b ? 0 :
				   cm_topo_distance(topo, a, b));
	}
	cm_topo_free(topo);
	return 0;
}

/* A cost as people read it: whole numbers in full up to 10^12, else
 * four significant digits. */
static const char *cost_text(double v, char *buf, size_t size)
{
	snprintf(buf, size, v >= 1e4 && v < 1e12 ? "%.0f" : "%.4g", v);
	return buf;
}

static int cost_line(json_t *a, const json_t *doc)
{
	char x[32], y[32];
	struct costs c;

	if (costs_of(doc, &c) < 0) {
		if (json_array_size(json_object_get(doc, "edges")) == 0)
			return rd_line(a, "cost", "predicted cost: no "
				       "communication recorded, so placement "
				       "has nothing to gain");
		return rd_line(a, "cost", "predicted cost: not known (no "
			       "mapping applied, or no topology in the "
			       "result)");
	}
	if (c.unpinned <= 0)
		return rd_line(a, "cost", "predicted cost: %s applied, %s "
			       "unpinned (every PU as near as every other)",
			       cost_text(c.applied, x, sizeof(x)),
			       cost_text(c.unpinned, y, sizeof(y)));
	return rd_line(a, "cost", "predicted cost: %s applied against %s "
		       "unpinned (random placement on the step's %d PUs): "
		       "%.2fx, %.0f%% %s", cost_text(c.applied, x, sizeof(x)),
		       cost_text(c.unpinned, y, sizeof(y)), c.pus,
		       c.applied / c.unpinned,
		       fabs(100.0 * (1 - c.applied / c.unpinned)),
		       c.applied <= c.unpinned ? "less" : "MORE");
}

/* A stored time, YYYY-MM-DDTHH:MM:SS[.fff]Z (the agent writes
 * milliseconds), as seconds since the epoch; -1 if it is not one. */
static double stamp_s(const char *s)
{
	struct tm t = { 0 };
	const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &t) : NULL;
	double frac = 0;
	char *end;

	if (!p)
		return -1;
	if (*p == '.') {
		frac = strtod(p, &end);
		if (end == p + 1)
			return -1;
		p = end;
	}
	if (strcmp(p, "Z") != 0)
		return -1;
	return (double)timegm(&t) + frac;
}

/* Seconds between two stored times, or -1. */
static double span_s(const char *a, const char *b)
{
	double ta = stamp_s(a), tb = stamp_s(b);

	return ta < 0 || tb < ta ? -1 : tb - ta;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static int time_line(json_t *a, const json_t *doc, const json_t *row)
{
	const json_t *runs = json_object_get(row, "earlier_runs"), *r;
	double run = span_s(rd_jstr(doc, "started_at"),
			    rd_jstr(doc, "ended_at"));
	double d[64], med;
	size_t i, n = 0;

	if (!runs)	/* a bare result: the service was not asked */
		return 0;
	json_array_foreach(runs, i, r)
		if (n < 64 && rd_jnum(r, "duration_s", -1) >= 0)
			d[n++] = rd_jnum(r, "duration_s", -1);
	if (run < 0)
		return rd_line(a, "time", "run time: not known (the result's "
			       "start or end time is missing or malformed)");
	if (n == 0)
		return rd_line(a, "time", "run time: %.0f s; no earlier run "
			       "of this application with the same shape to "
			       "compare with", run);
	qsort(d, n, sizeof(d[0]), cmp_double);
	med = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
	if (med <= 0)
		return rd_line(a, "time", "run time: %.0f s; %zu earlier "
			       "run%s, median %.0f s", run, n,
			       n == 1 ? "" : "s", med);
	return rd_line(a, "time", "run time: %.0f s against a median of %.0f s "
		       "over %zu earlier run%s of this application (%.0f to "
		       "%.0f s): %.2fx", run, med, n, n == 1 ? "" : "s", d[0],
		       d[n - 1], run / med);
}

static int latency_line(json_t *a, const json_t *doc)
{
	const json_t *l = json_object_get(json_object_get(doc, "stats"),
					  "pin_latency_ms");

	if (!json_is_object(l) || rd_jnum(l, "n", 0) <= 0)
		return rd_line(a, "latency", "pin latency: not recorded (no "
			       "thread pinned, or an agent that did not "
			       "measure it)");
	return rd_line(a, "latency", "pin latency (thread start to first pin): "
		       "median %.0f ms, p90 %.0f ms, max %.0f ms over %.0f "
		       "thread%s", rd_jnum(l, "p50", 0), rd_jnum(l, "p90", 0),
		       rd_jnum(l, "max", 0), rd_jnum(l, "n", 0),
		       rd_jnum(l, "n", 0) == 1 ? "" : "s");
}

/* Figures the agent may break down further (by level, by phase): each
 * numeric member of an object, as "name value". */
static void breakdown(char *buf, size_t size, const json_t *o)
{
	const char *key;
	json_t *v;
	size_t len = 0;

	buf[0] = '\0';
	json_object_foreach((json_t *)o, key, v) {
		if (len >= size)
			break;
		if (json_is_object(v)) {
			len += (size_t)snprintf(buf + len, size - len, "%s%s (",
						len ? "; " : "", key);
			if (len < size)
				breakdown(buf + len, size - len, v);
			len += strlen(buf + len);
			if (len < size)
				len += (size_t)snprintf(buf + len, size - len,
							")");
		} else if (json_is_number(v)) {
			len += (size_t)snprintf(buf + len, size - len,
						"%s%s %.4g", len ? ", " : "",
						key, json_number_value(v));
		} else if (json_is_string(v)) {
			len += (size_t)snprintf(buf + len, size - len,
						"%s%.32s", len ? ", " : "",
						json_string_value(v));
		}
	}
}

/* A list of breakdowns (one per phase, say): each element's figures in
 * parentheses, the first 8. */
static void breakdown_list(char *buf, size_t size, const json_t *a)
{
	const json_t *v;
	size_t i, len = 0;

	buf[0] = '\0';
	json_array_foreach(a, i, v) {
		if (i >= 8 || len + 4 >= size)
			break;
		if (!json_is_object(v))
			continue;
		len += (size_t)snprintf(buf + len, size - len, "%s(",
					len ? " " : "");
		breakdown(buf + len, size - len, v);
		len += strlen(buf + len);
		if (len + 1 < size)
			len += (size_t)snprintf(buf + len, size - len, ")");
	}
}

/* What the matrix rests on: samples, the share decoded, events (the
 * matrix's total weight), and any breakdown the result carries (an
 * object of figures, or a list of them). */
static int evidence_line(json_t *a, const json_t *doc)
{
	/* The breakdowns a result may carry, and how each line reads. */
	static const char *const parts[][2] = {
		{ "levels", "by levels" }, { "evidence", "by kind" },
		{ "phases", "by phases" },
		{ "sample_budget", "by sampling phase" },
		{ "dropped", "dropped (say nothing about sharing)" },
	};
	const json_t *st = json_object_get(doc, "stats"), *e;
	double samples = rd_jnum(st, "samples", -1);
	double decoded = rd_jnum(st, "decoded", -1);
	double events = 0;
	char more[512];
	size_t i;

	json_array_foreach(json_object_get(doc, "edges"), i, e)
		events += json_number_value(json_array_get(e, 2));
	if (samples < 0)
		return rd_line(a, "samples", "evidence: no sampling figures "
			       "in the result; %.4g events in the matrix",
			       events);
	if (rd_line(a, "samples", "evidence: %.0f samples, %.1f%% decoded, "
		    "%.0f faults, %.4g events in the matrix", samples,
		    samples > 0 && decoded >= 0 ? 100 * decoded / samples : 0.0,
		    rd_jnum(st, "faults", 0), events) < 0)
		return -1;
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		e = json_object_get(st, parts[i][0]);
		if (json_is_array(e))
			breakdown_list(more, sizeof(more), e);
		else if (json_is_object(e))
			breakdown(more, sizeof(more), e);
		else
			continue;
		if (more[0] && rd_line(a, "samples", "  %s: %s", parts[i][1],
				       more) < 0)
			return -1;
	}
	return 0;
}

json_t *cm_report_benefit(const json_t *doc, const json_t *row)
{
	json_t *a = json_array();

	if (!a || cost_line(a, doc) < 0 || time_line(a, doc, row) < 0 ||
	    latency_line(a, doc) < 0 || evidence_line(a, doc) < 0) {
		json_decref(a);
		return NULL;
	}
	return a;
}
