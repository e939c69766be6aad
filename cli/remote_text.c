/* remote_text.c: 'commap report' in a terminal: the summary of one step's
 * result, its communication matrix as a Unicode heatmap, and the final
 * mapping per core (docs/cli.md "commap report"). */
#define _GNU_SOURCE	/* asprintf, strptime, timegm */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commap/topology.h"
#include "remote.h"
#include "render.h"

#define LABEL_MAX 16

struct text_result {
	const json_t *doc;
	int n;				/* threads */
	char (*label)[LABEL_MAX];	/* "rank.thread" or "thread" */
	int *final_pu;			/* OS index or -1 */
	/* Display order, rank-major (report/render.h): order[k] is the
	 * document index of the k-th thread shown, pos[i] its inverse. */
	int *order, *pos;
	long long *tid;			/* -1 when absent */
};

/* The label of the k-th thread shown. */
static const char *shown_label(const struct text_result *r, int k)
{
	return r->label[r->order[k]];
}

/* ---- small helpers ------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "-";
}

static double jnum(const json_t *o, const char *key, double dflt)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : dflt;
}

/* Seconds between two "YYYY-MM-DDTHH:MM:SS[.frac]Z" stamps, -1 if not. */
static double run_seconds(const char *a, const char *b)
{
	struct tm ta = { 0 }, tb = { 0 };
	double fa = 0, fb = 0;
	const char *ea, *eb;

	ea = strptime(a, "%Y-%m-%dT%H:%M:%S", &ta);
	eb = strptime(b, "%Y-%m-%dT%H:%M:%S", &tb);
	if (!ea || !eb)
		return -1;
	if (*ea == '.')
		fa = strtod(ea, NULL);
	if (*eb == '.')
		fb = strtod(eb, NULL);
	return difftime(timegm(&tb), timegm(&ta)) + fb - fa;
}

/* ---- parsing ------------------------------------------------------------- */

static void make_labels(struct text_result *r, const json_t *threads)
{
	int i, j, rank;

	for (i = 0; i < r->n; i++) {
		const json_t *t = json_array_get(threads, (size_t)i);
		const json_t *rk = json_object_get(t, "rank");
		int local = 0;

		if (!json_is_integer(rk)) {
			snprintf(r->label[i], LABEL_MAX, "%d", i);
			continue;
		}
		rank = (int)json_integer_value(rk);
		for (j = 0; j < i; j++)
			if (json_integer_value(json_object_get(
				    json_array_get(threads, (size_t)j),
				    "rank")) == rank)
				local++;
		snprintf(r->label[i], LABEL_MAX, "%d.%d", rank % 100000,
			 local % 100000);
	}
}

static void final_mapping(struct text_result *r)
{
	const json_t *tl = json_object_get(r->doc, "timeline");
	const json_t *last = json_array_get(tl, json_array_size(tl) - 1);
	const json_t *pus = json_object_get(last, "pu_of_thread");
	int i;

	for (i = 0; i < r->n; i++) {
		const json_t *p = json_array_get(pus, (size_t)i);

		r->final_pu[i] = json_is_integer(p) ?
					 (int)json_integer_value(p) : -1;
	}
}

/* The report library's display order; document order if it refuses the
 * document (the service validated it, so only a bare file can). */
static void display_order(struct text_result *r)
{
	struct cm_report *rep = NULL;
	int i;

	if (cm_report_parse(&rep, r->doc, NULL) == 0 && rep->nthreads == r->n)
		for (i = 0; i < r->n; i++)
			r->order[i] = rep->order[i];
	else
		for (i = 0; i < r->n; i++)
			r->order[i] = i;
	for (i = 0; i < r->n; i++)
		r->pos[r->order[i]] = i;
	cm_report_free(rep);
}

static int text_result_init(struct text_result *r, const json_t *doc)
{
	const json_t *threads = json_object_get(doc, "threads");
	size_t n1;
	int i;

	r->doc = doc;
	r->n = (int)json_array_size(threads);
	n1 = (size_t)r->n + 1;
	r->label = calloc(n1, sizeof(*r->label));
	r->final_pu = calloc(n1, sizeof(*r->final_pu));
	r->order = calloc(n1, sizeof(*r->order));
	r->pos = calloc(n1, sizeof(*r->pos));
	r->tid = calloc(n1, sizeof(*r->tid));
	if (!r->label || !r->final_pu || !r->order || !r->pos || !r->tid)
		return -1;
	make_labels(r, threads);
	final_mapping(r);
	display_order(r);
	for (i = 0; i < r->n; i++) {
		const json_t *t = json_object_get(json_array_get(threads,
						  (size_t)i), "tid");

		r->tid[i] = json_is_integer(t) ? json_integer_value(t) : -1;
	}
	return 0;
}

static void text_result_free(struct text_result *r)
{
	free(r->label);
	free(r->final_pu);
	free(r->order);
	free(r->pos);
	free(r->tid);
}

/* ---- summary ------------------------------------------------------------- */

/* Whether the run started from a learned model (the agent's
 * "model" field, absent when it did not look for one). */
static void print_model_used(FILE *out, const json_t *doc)
{
	const json_t *m = json_object_get(doc, "model");
	const json_t *d = json_object_get(m, "distance");
	long long runs = (long long)json_integer_value(json_object_get(m,
								       "runs"));

	if (!m)
		return;
	if (!json_is_true(json_object_get(m, "used"))) {
		char buf[512];
		const char *why = cm_report_model_reason(doc, buf,
							 sizeof(buf));

		fprintf(out, "  model        not used%s%s\n", *why ? ": " : "",
			why);
		return;
	}
	fprintf(out, "  model        started from model %lld (%lld run%s)",
		(long long)json_integer_value(json_object_get(m, "id")), runs,
		runs == 1 ? "" : "s");
	if (json_is_number(d))
		fprintf(out, ", distance %.3f", json_number_value(d));
	fputc('\n', out);
}

/* What happened and why, first (report/render_outcome.c): the headline,
 * then warnings, guard decisions, thin evidence, the model. */
static void print_outcome(FILE *out, const json_t *doc)
{
	json_t *lines = cm_report_outcome(doc), *l;
	size_t i;

	json_array_foreach(lines, i, l)
		fprintf(out, "  %s %s\n", i ? "  " : "=>",
			json_string_value(json_object_get(l, "text")));
	json_decref(lines);
}

static void print_identity(FILE *out, const json_t *doc)
{
	const json_t *id = json_object_get(doc, "identity");
	const json_t *job = json_object_get(id, "job");
	const json_t *argv = json_object_get(id, "argv");
	size_t i;
	const char *cluster = json_string_value(json_object_get(doc,
								"cluster"));

	char step[24];

	if (json_is_integer(job))
		fprintf(out, "job %lld step %s on %s%s%s%s\n",
			(long long)json_integer_value(job),
			cm_report_step_name((long long)json_integer_value(
				json_object_get(id, "step")), step,
				sizeof(step)),
			jstr(id, "node"), cluster ? " (cluster " : "",
			cluster ? cluster : "", cluster ? ")" : "");
	else
		fprintf(out, "run outside Slurm on %s\n", jstr(id, "node"));
	print_outcome(out, doc);
	fprintf(out, "  user         %s (uid %lld)\n", jstr(id, "user"),
		(long long)json_integer_value(json_object_get(id, "uid")));
	fprintf(out, "  executable   %s\n", jstr(id, "executable"));
	if (json_array_size(argv)) {
		fputs("  argv        ", out);
		for (i = 0; i < json_array_size(argv); i++)
			fprintf(out, " %s",
				json_string_value(json_array_get(argv, i)) ?
					json_string_value(
						json_array_get(argv, i)) : "?");
		fputc('\n', out);
	}
	print_model_used(out, doc);
}


size_t remote_count_pins(const json_t *migrations, int moved)
{
	size_t i, k = 0;
	json_t *e;

	json_array_foreach(migrations, i, e) {
		json_int_t from = json_integer_value(json_object_get(e, "from"));

		k += moved ? from >= 0 : from < 0;
	}
	return k;
}

static void print_summary(FILE *out, const struct text_result *r)
{
	const json_t *doc = r->doc, *topo = json_object_get(doc, "topology");
	const json_t *st = json_object_get(doc, "stats");
	const json_t *id = json_object_get(doc, "identity");
	const char *start = jstr(doc, "started_at");
	const char *end = jstr(doc, "ended_at");
	double run = run_seconds(start, end);
	double agent = jnum(st, "agent_cpu_s", -1);

	print_identity(out, doc);
	fprintf(out, "  mode         %s, backend %s%s\n", jstr(doc, "mode"),
		jstr(doc, "backend"),
		json_is_true(json_object_get(topo, "dry_run")) ?
			" (dry run: mapped, not pinned)" : "");
	fprintf(out, "  run time     %s .. %s", start, end);
	if (run >= 0)
		fprintf(out, " (%.1f s)", run);
	fprintf(out, "\n  threads      %d in %lld rank(s) on PUs %s "
		"(%lld PUs)\n", r->n,
		(long long)json_integer_value(json_object_get(id, "ranks")),
		jstr(topo, "cpuset"),
		(long long)json_integer_value(json_object_get(topo, "pus")));
	fprintf(out, "  samples      %.0f (lost %.0f, decoded %.0f, "
		"faults %.0f)\n",
		jnum(st, "samples", 0), jnum(st, "lost", 0),
		jnum(st, "decoded", 0), jnum(st, "faults", 0));
	fprintf(out, "  overhead     agent CPU %.3f s", agent < 0 ? 0 : agent);
	if (agent >= 0 && run > 0)
		fprintf(out, " (%.2f%% of one CPU over the run)",
			100.0 * agent / run);
	fprintf(out, ", mapping %.2f ms\n", jnum(st, "mapping_ms", 0));
	fprintf(out, "  pins         %.0f (%zu first placements), migrations "
		"%zu, mappings applied %zu\n",
		jnum(st, "pins", 0),
		remote_count_pins(json_object_get(doc, "migrations"), 0),
		remote_count_pins(json_object_get(doc, "migrations"), 1),
		json_array_size(json_object_get(doc, "timeline")));
}

/* Whether it helped and what the matrix rests on (render_benefit.c):
 * the unpinned and applied costs, this run against earlier ones of the
 * application (the service's "earlier_runs" in row), pin latency, the
 * evidence. */
static void print_benefit(FILE *out, const json_t *doc, const json_t *row)
{
	json_t *lines = cm_report_benefit(doc, row), *l;
	size_t i;

	if (!json_array_size(lines)) {
		json_decref(lines);
		return;
	}
	fputs("did it help\n", out);
	json_array_foreach(lines, i, l)
		fprintf(out, "  %s\n", json_string_value(json_object_get(l,
								"text")));
	json_decref(lines);
}

/* ---- heatmap ------------------------------------------------------------- */

/* Weights summed into buckets of k threads (m = ceil(n / k) per side). */
static double *bucket_matrix(const struct text_result *r, int k, int m,
			     double *max)
{
	const json_t *edges = json_object_get(r->doc, "edges");
	double *w = calloc((size_t)m * (size_t)m + 1, sizeof(*w));
	size_t e;

	*max = 0;
	if (!w)
		return NULL;
	for (e = 0; e < json_array_size(edges); e++) {
		const json_t *ed = json_array_get(edges, e);
		json_int_t i = json_integer_value(json_array_get(ed, 0));
		json_int_t j = json_integer_value(json_array_get(ed, 1));
		double x = json_number_value(json_array_get(ed, 2));
		int bi, bj;

		if (i < 0 || j < 0 || i >= r->n || j >= r->n || !(x > 0))
			continue;
		bi = r->pos[i] / k;
		bj = r->pos[j] / k;
		w[(size_t)bi * m + bj] += x;
		if (bi != bj)
			w[(size_t)bj * m + bi] += x;
	}
	for (e = 0; e < (size_t)m * m; e++)
		if (w[e] > *max)
			*max = w[e];
	return w;
}

static const char *const shades[] = { " ", "\u2591", "\u2592", "\u2593",
				      "\u2588" };

/* Level 0 (nothing) to 4 (the largest quarter). */
static int level_of(double x, double max)
{
	int l;

	if (!(x > 0) || !(max > 0))
		return 0;
	l = (int)ceil(4.0 * x / max);
	return l < 1 ? 1 : l > 4 ? 4 : l;
}

/* White (little) through yellow and red to dark red (most). */
static void colour_of(double f, int rgb[3])
{
	static const int stops[4][3] = {
		{ 255, 255, 204 }, { 254, 178, 76 }, { 227, 26, 28 },
		{ 80, 0, 20 }
	};
	double p = f * 3;
	int s = p >= 3 ? 2 : (int)p, c;

	p -= s;
	for (c = 0; c < 3; c++)
		rgb[c] = (int)(stops[s][c] + p * (stops[s + 1][c] -
						  stops[s][c]));
}

static void print_cell(FILE *out, double x, double max, int cw, int color)
{
	int l = level_of(x, max), rgb[3], i;

	if (color && l) {
		colour_of(x / max, rgb);
		fprintf(out, "\x1b[48;2;%d;%d;%dm%*s\x1b[0m", rgb[0], rgb[1],
			rgb[2], cw, "");
		return;
	}
	for (i = 0; i < cw; i++)
		fputs(shades[l], out);
}

/* Column labels written downwards, one character per line. */
static void print_col_labels(FILE *out, const struct text_result *r, int k,
			     int m, int lw, int cw)
{
	size_t len = 0, row;
	int b;

	for (b = 0; b < m; b++)
		if (strlen(shown_label(r, b * k)) > len)
			len = strlen(shown_label(r, b * k));
	for (row = 0; row < len; row++) {
		fprintf(out, "%*s ", lw, "");
		for (b = 0; b < m; b++) {
			const char *l = shown_label(r, b * k);

			fprintf(out, "%-*c", cw,
				row < strlen(l) ? l[row] : ' ');
		}
		fputc('\n', out);
	}
}

static void print_heatmap(FILE *out, const struct text_result *r,
			  const struct remote_text_opts *o)
{
	int lw = 1, cw, k, m, i, j, avail;
	double max, *w;

	for (i = 0; i < r->n; i++)
		if ((int)strlen(r->label[i]) > lw)
			lw = (int)strlen(r->label[i]);
	avail = o->width - lw - 2;
	if (avail < 8)
		avail = 8;
	k = (r->n + avail - 1) / avail;		/* threads per bucket */
	if (k < 1)
		k = 1;
	m = (r->n + k - 1) / k;
	cw = 2 * m <= avail ? 2 : 1;		/* square-ish cells */
	fprintf(out, "\ncommunication matrix (%d threads, rows and columns "
		"rank.thread)", r->n);
	if (r->n == 0) {
		fputs(": no threads\n", out);
		return;
	}
	w = bucket_matrix(r, k, m, &max);
	if (!w)
		return;
	if (k > 1)
		fprintf(out, "; %d threads wider than the terminal: "
			"aggregated in buckets of %d threads, labelled by "
			"their first", r->n, k);
	if (!(max > 0)) {
		/* no grid of blanks and a scale of zeros: say it */
		fputs("\n  no communication recorded between these threads\n",
		      out);
		free(w);
		return;
	}
	fputc('\n', out);
	print_col_labels(out, r, k, m, lw, cw);
	for (i = 0; i < m; i++) {
		fprintf(out, "%*s ", lw, shown_label(r, i * k));
		for (j = 0; j < m; j++)
			print_cell(out, w[(size_t)i * m + j], max, cw,
				   o->color);
		fputc('\n', out);
	}
	fprintf(out, "scale: blank 0");
	for (i = 1; i <= 4; i++) {
		fputc(' ', out);
		print_cell(out, max * i / 4.0, max, 1, o->color);
		fprintf(out, " <=%g", max * i / 4.0);
	}
	fputc('\n', out);
	free(w);
}

/* ---- mapping per core ---------------------------------------------------- */

/* The number of the core holding PU index pu (cores counted in tree
 * order), or -1. */
static int core_of_pu(const struct cm_topo *t, int pu)
{
	int node = cm_topo_leaf_of_pu(t, pu), i, n = 0;

	while (node >= 0 &&
	       !(cm_topo_node_kinds(t, node) & (1u << CM_LEVEL_CORE)))
		node = cm_topo_node(t, node)->parent;
	if (node < 0)
		return -1;
	for (i = 0; i < node; i++)
		if (cm_topo_node_kinds(t, i) & (1u << CM_LEVEL_CORE))
			n++;
	return n;
}

static void print_threads_on(FILE *out, const struct text_result *r, int os)
{
	int k, any = 0;

	for (k = 0; k < r->n; k++) {
		int i = r->order[k];

		if (r->final_pu[i] != os)
			continue;
		fprintf(out, " %s", r->label[i]);
		if (r->tid[i] >= 0)	/* the tid ps, top and gdb show */
			fprintf(out, " (tid %lld)", r->tid[i]);
		any = 1;
	}
	if (!any)
		fputs(" -", out);
}

static void print_mapping_topo(FILE *out, const struct text_result *r,
			       const struct cm_topo *t)
{
	int npus = cm_topo_npus(t), pu, core, last = -2;

	for (pu = 0; pu < npus; pu++) {
		int os = cm_topo_pu_os_index(t, pu);

		core = core_of_pu(t, pu);
		if (core != last)
			fprintf(out, "%s  core %-3d", last == -2 ? "" : "\n",
				core);
		else
			fputs(" |", out);
		fprintf(out, " PU %d:", os);
		print_threads_on(out, r, os);
		last = core;
	}
	fputc('\n', out);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Without a topology: the PUs the threads ended on. */
static void print_mapping_flat(FILE *out, const struct text_result *r)
{
	int *p = malloc(((size_t)r->n + 1) * sizeof(*p)), i, n = 0;

	if (!p)
		return;
	for (i = 0; i < r->n; i++)
		if (r->final_pu[i] >= 0)
			p[n++] = r->final_pu[i];
	qsort(p, (size_t)n, sizeof(*p), cmp_int);
	for (i = 0; i < n; i++) {
		if (i && p[i] == p[i - 1])
			continue;
		fprintf(out, "  PU %d:", p[i]);
		print_threads_on(out, r, p[i]);
		fputc('\n', out);
	}
	if (!n)
		fputs("  (no thread was placed)\n", out);
	free(p);
}

static void print_mapping(FILE *out, const struct text_result *r)
{
	const json_t *topo = json_object_get(r->doc, "topology");
	const char *syn = json_string_value(json_object_get(topo, "synthetic"));
	const char *cpuset = json_string_value(json_object_get(topo, "cpuset"));
	struct cm_topo *t = NULL;

	fputs("\nfinal mapping (threads rank.thread on each PU, by core)", out);
	if (syn && cm_topo_load_synthetic(&t, syn, NULL) == 0 &&
	    (!cpuset || cm_topo_restrict(t, cpuset, NULL) == 0)) {
		fprintf(out, ", topology %s\n", syn);
		print_mapping_topo(out, r, t);
	} else {
		fputs(" (no usable topology in the result: PUs only)\n", out);
		print_mapping_flat(out, r);
	}
	cm_topo_free(t);
}

int remote_text_report(FILE *out, const json_t *row,
		       const struct remote_text_opts *o)
{
	const json_t *doc = json_object_get(row, "document");
	struct text_result r;

	if (!doc)
		doc = row;	/* a bare commap-result */
	if (text_result_init(&r, doc)) {
		text_result_free(&r);
		return -1;
	}
	print_summary(out, &r);
	print_benefit(out, doc, doc == row ? NULL : row);
	print_heatmap(out, &r, o);
	print_mapping(out, &r);
	text_result_free(&r);
	return ferror(out) ? -1 : 0;
}
