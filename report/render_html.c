/* render_html.c: the report pages (job, job list, application), plain
 * HTML5 with inline CSS and SVG, no JavaScript.  Every string that comes
 * from a document goes through cm_render_escape (or rd_url_escape in
 * links). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "render_internal.h"

static const char CSS[] =
	"body{font-family:sans-serif;margin:1em 2em;color:#222;"
	"max-width:1400px}"
	"h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;"
	"margin-top:2em}h3{font-size:1.05em}"
	"table{border-collapse:collapse;margin:.5em 0}"
	"td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;"
	"vertical-align:top}th{background:#f0f0f0}"
	"td.num{text-align:right;font-variant-numeric:tabular-nums}"
	"nav a{margin-right:1em}code{font-size:.95em}"
	".fig{overflow-x:auto;margin:.5em 0 1.5em}"
	"form label{margin-right:1em}.muted{color:#666}"
	"ul.outcome{padding:.4em 1.6em;background:#f7f7f2;"
	"border-left:4px solid #888}ul.outcome li.outcome{font-weight:bold}"
	"ul.outcome li.warning{color:#a33}"
	".cols{display:flex;flex-wrap:wrap;gap:0 2.5em;align-items:flex-start}";

static void esc(FILE *out, const char *s)
{
	cm_render_escape(out, s);
}

/* The base of every link, always ending in '/'. */
static void base(FILE *out, const struct cm_render_opts *o)
{
	const char *b = o && o->base_url && *o->base_url ? o->base_url : "/";

	esc(out, b);
	if (b[strlen(b) - 1] != '/')
		fputc('/', out);
}

static void page_head(FILE *out, const struct cm_render_opts *o,
		      const char *title, const char *title2)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head>"
	      "<meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">"
	      "<title>", out);
	esc(out, title);
	if (title2) {
		fputc(' ', out);
		esc(out, title2);
	}
	fprintf(out, " \xe2\x80\x94 commap</title><style>%s</style></head>\n"
		"<body>\n<nav><a href=\"", CSS);
	base(out, o);
	fputs("jobs\">Jobs</a></nav>\n<h1>", out);
	esc(out, title);
	if (title2) {
		fputc(' ', out);
		esc(out, title2);
	}
	fputs("</h1>\n", out);
}

static void page_foot(FILE *out, const struct cm_render_opts *o)
{
	fputs("<footer class=\"muted\"><p>commap report", out);
	if (o && o->footer) {
		fputs(" \xc2\xb7 ", out);
		esc(out, o->footer);
	}
	fputs("</p></footer>\n</body></html>\n", out);
}

/* A row "name | value" with the value escaped; NULL values are skipped. */
static void kv(FILE *out, const char *name, const char *value)
{
	if (!value)
		return;
	fprintf(out, "<tr><th>%s</th><td>", name);
	esc(out, value);
	fputs("</td></tr>\n", out);
}

/* A JSON scalar as text: integers in full, reals compactly. */
static void scalar(FILE *out, const json_t *v)
{
	if (json_is_integer(v))
		fprintf(out, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		rd_number(out, json_real_value(v));
	else if (json_is_string(v))
		esc(out, json_string_value(v));
	else if (json_is_true(v))
		fputs("yes", out);
	else if (json_is_false(v))
		fputs("no", out);
	else
		fputs("\xe2\x80\x94", out);
}

static void kv_json(FILE *out, const char *name, const json_t *v)
{
	if (!v)
		return;
	fprintf(out, "<tr><th>%s</th><td>", name);
	scalar(out, v);
	fputs("</td></tr>\n", out);
}

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void app_link(FILE *out, const struct cm_render_opts *o,
		     const char *app)
{
	if (!app || !*app)
		return;
	fputs("<a href=\"", out);
	base(out, o);
	fputs("apps/", out);
	rd_url_escape(out, app);
	fputs("\">", out);
	esc(out, app);
	fputs("</a>", out);
}

static const char *basename_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* ---- the job page ------------------------------------------------------ */

/* Why nothing was pinned, and each mapping the progress guard undid
 * (docs/agent.md). */
static void placement_notes(FILE *out, const json_t *doc)
{
	const json_t *tl = json_object_get(doc, "timeline");
	char label[64];

	kv(out, "not pinned", json_string_value(json_object_get(doc,
								"not_pinned")));
	for (size_t k = 0; k < json_array_size(tl); k++) {
		const json_t *e = json_array_get(tl, k);
		const char *why = json_string_value(json_object_get(e,
								    "reason"));

		if (!why || strcmp(why, "guard-undo") != 0)
			continue;
		snprintf(label, sizeof(label), "progress guard, %.2f s",
			 json_number_value(json_object_get(e, "t")));
		kv(out, label, json_string_value(json_object_get(e, "note")));
	}
}

/* Whether the run started from a learned model (the agent's "model"
 * field; absent: it did not look for one). */
static void model_used(FILE *out, const json_t *doc)
{
	const json_t *m = json_object_get(doc, "model");
	const json_t *d = json_object_get(m, "distance");
	json_int_t runs = json_integer_value(json_object_get(m, "runs"));

	fputs("<tr><th>learned model</th><td>", out);
	if (json_is_true(json_object_get(m, "used"))) {
		fprintf(out, "started from model %lld (%lld run%s)",
			(long long)json_integer_value(json_object_get(m, "id")),
			(long long)runs, runs == 1 ? "" : "s");
		if (json_is_number(d))
			fprintf(out, ", distance %.3f", json_number_value(d));
	} else if (m) {
		char buf[512];

		fputs("not used", out);
		if (jstr(m, "reason")) {
			fputs(": ", out);
			esc(out, cm_report_model_reason(doc, buf, sizeof(buf)));
		}
	} else {
		fputs("none", out);
	}
	fputs("</td></tr>\n", out);
}

static void identity_table(FILE *out, const struct cm_report *r,
			   const json_t *row)
{
	const json_t *id = json_object_get(r->doc, "identity");
	const json_t *topo = json_object_get(r->doc, "topology");
	const json_t *argv = json_object_get(id, "argv");
	size_t i;

	fputs("<table class=\"identity\">\n", out);
	if (row)
		kv_json(out, "result id", json_object_get(row, "id"));
	kv_json(out, "job", json_object_get(id, "job"));
	if (r->step >= 0) {
		char buf[24];

		kv(out, "step", cm_report_step_name(r->step, buf,
						    sizeof(buf)));
	} else {
		kv_json(out, "step", json_object_get(id, "step"));
	}
	kv(out, "node", r->node);
	if (r->user || json_object_get(id, "uid")) {
		fputs("<tr><th>user</th><td>", out);
		esc(out, r->user);
		fputs(" (uid ", out);
		scalar(out, json_object_get(id, "uid"));
		fputs(")</td></tr>\n", out);
	}
	kv(out, "executable", r->executable);
	kv(out, "executable hash", jstr(id, "exe_hash"));
	if (json_is_array(argv)) {
		fputs("<tr><th>command line</th><td><code>", out);
		for (i = 0; i < json_array_size(argv); i++) {
			if (i)
				fputc(' ', out);
			esc(out, json_string_value(json_array_get(argv, i)));
		}
		fputs("</code></td></tr>\n", out);
	}
	kv(out, "mode", r->mode);
	model_used(out, r->doc);
	placement_notes(out, r->doc);
	kv(out, "detection backend", r->backend);
	kv(out, "started", r->started_at);
	kv(out, "ended", r->ended_at);
	if (r->duration_s >= 0) {
		fputs("<tr><th>duration</th><td>", out);
		rd_number(out, r->duration_s);
		fputs(" s</td></tr>\n", out);
	}
	kv(out, "CPUs (OS indices)", r->cpuset);
	kv_json(out, "PUs", json_object_get(topo, "pus"));
	kv(out, "topology", r->synthetic);
	kv_json(out, "dry run (not pinned)", json_object_get(topo, "dry_run"));
	kv_json(out, "ranks", json_object_get(id, "ranks"));
	fprintf(out, "<tr><th>threads</th><td>%d</td></tr>\n"
		"<tr><th>communicating pairs</th><td>%d</td></tr>\n"
		"<tr><th>pins</th><td>%d (%d first placements)</td></tr>\n"
		"<tr><th>migrations</th><td>%d</td></tr>\n"
		"<tr><th>mappings applied</th><td>%d</td></tr>\n",
		r->nthreads, r->nedges, r->nmigrations,
		r->nmigrations - r->nmoves, r->nmoves, r->nsteps);
	if (r->nsteps && r->timeline[r->nsteps - 1].cost >= 0) {
		fputs("<tr><th>final cost</th><td>", out);
		rd_number(out, r->timeline[r->nsteps - 1].cost);
		if (r->timeline[0].cost > 0 && r->nsteps > 1) {
			fputs(" (initial ", out);
			rd_number(out, r->timeline[0].cost);
			fputs(")", out);
		}
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n", out);
}

/* Detection statistics, and what the agent cost the job. */
static void stats_table(FILE *out, const struct cm_report *r)
{
	const json_t *stats = json_object_get(r->doc, "stats");
	const char *key;
	json_t *v;
	double app_cpu = 0, agent = -1, samples = -1, decoded = -1, lost = -1;
	int i;

	fputs("<table class=\"stats\">\n", out);
	json_object_foreach((json_t *)stats, key, v) {
		fputs("<tr><th>", out);
		esc(out, key);
		fputs("</th><td class=\"num\">", out);
		scalar(out, v);
		fputs("</td></tr>\n", out);
	}
	if (!json_object_size(stats))
		fputs("<tr><td class=\"muted\">no statistics recorded</td>"
		      "</tr>\n", out);
	fputs("</table>\n", out);
	for (i = 0; i < r->nthreads; i++)
		if (r->threads[i].cpu_s > 0)
			app_cpu += r->threads[i].cpu_s;
	v = json_object_get(stats, "agent_cpu_s");
	agent = json_is_number(v) ? json_number_value(v) : -1;
	v = json_object_get(stats, "samples");
	samples = json_is_number(v) ? json_number_value(v) : -1;
	v = json_object_get(stats, "decoded");
	decoded = json_is_number(v) ? json_number_value(v) : -1;
	v = json_object_get(stats, "lost");
	lost = json_is_number(v) ? json_number_value(v) : -1;
	fputs("<ul class=\"overhead\">\n", out);
	if (agent >= 0 && app_cpu > 0)
		fprintf(out, "<li>agent CPU time: %.2f%% of the application's "
			"(%.3g s for %.3g s)</li>\n", 100 * agent / app_cpu,
			agent, app_cpu);
	if (agent >= 0 && r->duration_s > 0)
		fprintf(out, "<li>agent CPU per wall-clock second: %.2f%% of "
			"one core</li>\n", 100 * agent / r->duration_s);
	if (samples > 0 && decoded >= 0)
		fprintf(out, "<li>samples with a data address: %.1f%%</li>\n",
			100 * decoded / samples);
	if (samples > 0 && lost >= 0)
		fprintf(out, "<li>samples lost: %.2f%%</li>\n",
			100 * lost / (samples + lost));
	fputs("</ul>\n", out);
}

static void threads_table(FILE *out, const struct cm_report *r)
{
	int i;

	fprintf(out, "<details><summary>Placement of the %d threads</summary>"
		"\n<table class=\"threads\"><tr><th>thread</th><th>tid</th>"
		"<th>CPU s</th><th>final PU</th></tr>\n", r->nthreads);
	for (i = 0; i < r->nthreads; i++) {
		const struct cm_report_thread *t = &r->threads[i];

		fprintf(out, "<tr><td>%s</td><td class=\"num\">", t->label);
		if (t->tid >= 0)
			fprintf(out, "%lld", t->tid);
		fputs("</td><td class=\"num\">", out);
		if (t->cpu_s >= 0)
			rd_number(out, t->cpu_s);
		fputs("</td><td class=\"num\">", out);
		if (t->final_pu >= 0)
			fprintf(out, "%d", t->final_pu);
		fputs("</td></tr>\n", out);
	}
	fputs("</table></details>\n", out);
}

/* What happened and why, before anything else (render_outcome.c). */
static int outcome_list(FILE *out, const json_t *doc)
{
	json_t *lines = cm_report_outcome(doc), *l;
	size_t i;

	if (!lines)
		return -1;
	fputs("<ul class=\"outcome\">\n", out);
	json_array_foreach(lines, i, l) {
		fprintf(out, "<li class=\"%s\">",
			json_string_value(json_object_get(l, "kind")));
		esc(out, json_string_value(json_object_get(l, "text")));
		fputs("</li>\n", out);
	}
	fputs("</ul>\n", out);
	json_decref(lines);
	return 0;
}

static int result_section(FILE *out, const json_t *row, const json_t *doc,
			  int k, const struct cm_render_opts *o,
			  struct cm_error *err)
{
	struct cm_report *r;

	if (cm_report_parse(&r, doc, err) < 0)
		return -1;
	fprintf(out, "<section class=\"result\" id=\"result-%d\">\n<h2>", k);
	if (r->step >= 0) {
		char buf[24];

		fprintf(out, "Step %s", cm_report_step_name(r->step, buf,
							   sizeof(buf)));
	} else
		fputs("Run", out);
	if (r->node) {
		fputs(" on ", out);
		esc(out, r->node);
	}
	fputs("</h2>\n", out);
	if (outcome_list(out, doc) < 0)
		goto nomem;
	fputs("<div class=\"cols\"><div>\n", out);
	identity_table(out, r, row);
	fputs("</div><div><h3>Detection statistics and overhead</h3>\n",
	      out);
	stats_table(out, r);
	fputs("</div></div>\n", out);
	fputs("<h3>Communication matrix</h3>\n<div class=\"fig\">\n", out);
	if (rd_heatmap(out, r, o, 0, k) < 0)
		goto nomem;
	fputs("</div>\n<h3>Placement on the node</h3>\n<div class=\"fig\">\n",
	      out);
	if (rd_topology(out, r, o, 0, k) < 0)
		goto nomem;
	fputs("</div>\n", out);
	threads_table(out, r);
	fputs("<h3>Migrations over time</h3>\n<div class=\"fig\">\n", out);
	if (rd_migrations(out, r, o, 0, k) < 0)
		goto nomem;
	fputs("</div>\n</section>\n", out);
	cm_report_free(r);
	return 0;
nomem:
	cm_report_free(r);
	return cm_errorf(err, ENOMEM, "out of memory");
}

/* The job's clusters, when any has a name (results without one: "-"). */
static void clusters_row(FILE *out, const json_t *clusters)
{
	const char *c;
	size_t i, named = 0;

	for (i = 0; i < json_array_size(clusters); i++) {
		c = json_string_value(json_array_get(clusters, i));
		named += c && *c;
	}
	if (!named)
		return;
	fputs("<tr><th>cluster</th><td>", out);
	for (i = 0; i < json_array_size(clusters); i++) {
		c = json_string_value(json_array_get(clusters, i));
		if (i)
			fputs(", ", out);
		esc(out, c && *c ? c : "-");
	}
	fputs("</td></tr>\n", out);
}

static void job_summary(FILE *out, const json_t *job,
			const struct cm_render_opts *o)
{
	const json_t *s = json_object_get(job, "summary");
	const char *exe = jstr(job, "executable");
	const json_t *v;
	size_t i;

	fputs("<table class=\"summary\">\n", out);
	kv_json(out, "job", json_object_get(job, "job"));
	clusters_row(out, json_object_get(job, "clusters"));
	kv(out, "user", jstr(job, "user"));
	kv(out, "executable", exe);
	if (exe) {
		fputs("<tr><th>application</th><td>", out);
		app_link(out, o, basename_of(exe));
		fputs("</td></tr>\n", out);
	}
	kv_json(out, "results", json_object_get(s, "results"));
	v = json_object_get(s, "nodes");
	if (json_is_array(v)) {
		fputs("<tr><th>nodes</th><td>", out);
		for (i = 0; i < json_array_size(v); i++) {
			if (i)
				fputs(", ", out);
			scalar(out, json_array_get(v, i));
		}
		fputs("</td></tr>\n", out);
	}
	kv_json(out, "ranks", json_object_get(s, "ranks"));
	kv_json(out, "threads", json_object_get(s, "threads"));
	kv_json(out, "migrations", json_object_get(s, "migrations"));
	kv(out, "started", jstr(s, "started_at"));
	kv(out, "ended", jstr(s, "ended_at"));
	fputs("</table>\n", out);
}

int cm_render_job_html(FILE *out, const json_t *doc,
		       const struct cm_render_opts *o, struct cm_error *err)
{
	const json_t *results = json_object_get(doc, "results");
	const json_t *inner = json_object_get(doc, "document");
	char title[64];
	size_t i;

	if (!json_is_object(doc))
		return cm_errorf(err, EINVAL, "job: not a JSON object");
	if (json_is_array(results)) {
		json_t *job = json_object_get(doc, "job");

		if (json_is_integer(job))
			snprintf(title, sizeof(title), "Job %lld",
				 (long long)json_integer_value(job));
		else
			snprintf(title, sizeof(title), "Job");
		page_head(out, o, title, NULL);
		job_summary(out, doc, o);
		if (json_array_size(results) == 0)
			fputs("<p class=\"muted\">no results</p>\n", out);
		for (i = 0; i < json_array_size(results); i++) {
			const json_t *row = json_array_get(results, i);
			const json_t *d = json_object_get(row, "document");

			if (!d) {
				fputs("<p class=\"muted\">result stored "
				      "without its document</p>\n", out);
				continue;
			}
			if (result_section(out, row, d, (int)i, o, err) < 0)
				return -1;
		}
	} else {
		const json_t *d = inner ? inner : doc;
		struct cm_report *r;
		const char *app;

		if (cm_report_parse(&r, d, err) < 0)
			return -1;
		if (r->job >= 0)
			snprintf(title, sizeof(title), "Job %lld", r->job);
		else if (json_is_integer(json_object_get(doc, "id")))
			snprintf(title, sizeof(title), "Result %lld",
				 (long long)json_integer_value(
					 json_object_get(doc, "id")));
		else
			snprintf(title, sizeof(title), "Result");
		app = basename_of(r->executable);
		page_head(out, o, title, NULL);
		if (app) {
			fputs("<p>Application ", out);
			app_link(out, o, app);
			fputs("</p>\n", out);
		}
		cm_report_free(r);
		if (result_section(out, inner ? doc : NULL, d, 0, o, err) < 0)
			return -1;
	}
	page_foot(out, o);
	return rd_finish(out, err);
}

/* ---- lists ------------------------------------------------------------- */

/* More than one cluster in a list ("" for results without a name): then
 * a cluster column tells apart two jobs of the same id. */
static int many_clusters(const json_t *arr)
{
	const char *first = NULL, *c;
	size_t i;

	for (i = 0; i < json_array_size(arr); i++) {
		c = jstr(json_array_get(arr, i), "cluster");
		c = c ? c : "";
		if (!first)
			first = c;
		else if (strcmp(first, c))
			return 1;
	}
	return 0;
}

static void job_link(FILE *out, const json_t *j, int clusters,
		     const struct cm_render_opts *o)
{
	long long job = (long long)json_integer_value(json_object_get(j,
								      "job"));
	const char *c = jstr(j, "cluster");

	fputs("<a href=\"", out);
	base(out, o);
	fprintf(out, "jobs/%lld", job);
	if (clusters && c) {
		fputs("?cluster=", out);
		esc(out, c);	/* [A-Za-z0-9._-]: nothing to encode */
	}
	fprintf(out, "\">%lld</a>", job);
}

static void jobs_table(FILE *out, const json_t *arr,
		       const struct cm_render_opts *o)
{
	static const char *const nums[] = {
		"steps", "nodes", "ranks", "threads", "migrations",
	};
	int clusters = many_clusters(arr);
	size_t i, k;

	fputs("<table class=\"jobs\"><tr>", out);
	if (clusters)
		fputs("<th>cluster</th>", out);
	fputs("<th>job</th><th>user</th>"
	      "<th>application</th><th>started</th><th>ended</th>"
	      "<th>steps</th><th>nodes</th><th>ranks</th><th>threads</th>"
	      "<th>migrations</th></tr>\n", out);
	for (i = 0; i < json_array_size(arr); i++) {
		const json_t *j = json_array_get(arr, i);
		const json_t *job = json_object_get(j, "job");
		const json_t *ids = json_object_get(j, "result_ids");

		fputs("<tr>", out);
		if (clusters) {
			fputs("<td>", out);
			esc(out, jstr(j, "cluster") ? jstr(j, "cluster") : "");
			fputs("</td>", out);
		}
		fputs("<td>", out);
		if (json_is_integer(job)) {
			job_link(out, j, clusters, o);
		} else if (json_is_integer(json_array_get(ids, 0))) {
			long long id = json_integer_value(json_array_get(ids,
									 0));

			fputs("<a href=\"", out);
			base(out, o);
			fprintf(out, "results/%lld\">result %lld</a>", id, id);
		} else {
			fputs("\xe2\x80\x94", out);
		}
		fputs("</td><td>", out);
		esc(out, jstr(j, "user"));
		fputs("</td><td>", out);
		app_link(out, o, jstr(j, "app"));
		fputs("</td><td>", out);
		esc(out, jstr(j, "started_at"));
		fputs("</td><td>", out);
		esc(out, jstr(j, "ended_at"));
		fputs("</td>", out);
		for (k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
			fputs("<td class=\"num\">", out);
			scalar(out, json_object_get(j, nums[k]));
			fputs("</td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</table>\n", out);
	if (json_array_size(arr) == 0)
		fputs("<p class=\"muted\">no jobs</p>\n", out);
}

static void filter_field(FILE *out, const json_t *filters, const char *name,
			 const char *label, const char *placeholder)
{
	fprintf(out, "<label>%s <input name=\"%s\" value=\"", label, name);
	esc(out, jstr(filters, name));
	fprintf(out, "\" placeholder=\"%s\" size=\"12\"></label>\n",
		placeholder);
}

int cm_render_jobs_html(FILE *out, const json_t *jobs, const json_t *filters,
			const struct cm_render_opts *o, struct cm_error *err)
{
	const json_t *arr = json_object_get(jobs, "jobs");

	if (!json_is_array(arr))
		return cm_errorf(err, EINVAL, "jobs: not an array");
	page_head(out, o, "Jobs", NULL);
	fputs("<form method=\"get\" action=\"", out);
	base(out, o);
	fputs("jobs\" class=\"filters\">\n", out);
	filter_field(out, filters, "user", "user", "name");
	filter_field(out, filters, "app", "application", "name or path");
	filter_field(out, filters, "since", "since", "YYYY-MM-DD");
	filter_field(out, filters, "until", "until", "YYYY-MM-DD");
	filter_field(out, filters, "limit", "limit", "100");
	fputs("<button type=\"submit\">Filter</button></form>\n", out);
	jobs_table(out, arr, o);
	page_foot(out, o);
	return rd_finish(out, err);
}

int cm_render_app_html(FILE *out, const char *app, const json_t *info,
		       const json_t *jobs, const struct cm_render_opts *o,
		       struct cm_error *err)
{
	return cm_render_app_models_html(out, app, info, jobs, NULL, o, err);
}

/* The learned models of the application, newest first. */
static int app_models(FILE *out, const json_t *models,
		      const struct cm_render_opts *o, struct cm_error *err)
{
	const json_t *arr = json_object_get(models, "models"), *m;
	size_t i;

	if (!models)
		return 0;
	fputs("<h2>Learned models</h2>\n", out);
	if (json_array_size(arr) == 0)
		fputs("<p class=\"muted\">No model yet: runs with an executable"
		      " hash (the agent's identity.exe_hash) make one.</p>\n",
		      out);
	json_array_foreach(arr, i, m)
		if (cm_render_model_html(out, m, o, err) < 0)
			return -1;
	return 0;
}

int cm_render_app_models_html(FILE *out, const char *app, const json_t *info,
			      const json_t *jobs, const json_t *models,
			      const struct cm_render_opts *o,
			      struct cm_error *err)
{
	const json_t *arr = json_object_get(jobs, "jobs");

	if (!json_is_array(arr))
		return cm_errorf(err, EINVAL, "jobs: not an array");
	page_head(out, o, "Application", app);
	if (json_is_object(info)) {
		fputs("<table class=\"app\">\n", out);
		kv(out, "executable", jstr(info, "executable"));
		kv_json(out, "jobs", json_object_get(info, "jobs"));
		kv_json(out, "results", json_object_get(info, "results"));
		kv_json(out, "users", json_object_get(info, "users"));
		kv(out, "last run", jstr(info, "last_started_at"));
		kv_json(out, "most threads", json_object_get(info,
							     "max_threads"));
		fputs("</table>\n", out);
	}
	if (app_models(out, models, o, err) < 0)
		return -1;
	fputs("<h2>Runs</h2>\n", out);
	jobs_table(out, arr, o);
	page_foot(out, o);
	return rd_finish(out, err);
}
