/* render_html.c: the report pages (job, job list, application), plain
 * HTML5 with inline CSS and SVG, no JavaScript.  Every string that comes
 * from a document goes through cm_render_escape (or rd_url_escape in
 * links). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "render_internal.h"
#include "render_traffic.h"

const char rd_css[] =
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
	".cols{display:flex;flex-wrap:wrap;gap:0 2.5em;align-items:flex-start}"
	"ul.benefit{padding:.4em 1.6em;background:#f2f5f8;"
	"border-left:4px solid #58a}"
	"th a{color:inherit}th a.sorted{text-decoration:underline double}"
	"nav.pages a{margin-right:1em}"
	".compare{display:grid;grid-template-columns:1fr 1fr;gap:0 2em}"
	".compare>div{min-width:0}"
	".compare svg{max-width:100%;height:auto}";

static void esc(FILE *out, const char *s)
{
	cm_render_escape(out, s);
}

/* The base of every link, always ending in '/'. */
void rd_base(FILE *out, const struct cm_render_opts *o)
{
	const char *b = o && o->base_url && *o->base_url ? o->base_url : "/";

	esc(out, b);
	if (b[strlen(b) - 1] != '/')
		fputc('/', out);
}

void rd_page_head(FILE *out, const struct cm_render_opts *o,
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
		"<body>\n<nav><a href=\"", rd_css);
	rd_base(out, o);
	fputs("jobs\">Jobs</a><a href=\"", out);
	rd_base(out, o);
	fputs("apps\">Applications</a><a href=\"", out);
	rd_base(out, o);
	fputs("models\">Models</a></nav>\n<h1>", out);
	esc(out, title);
	if (title2) {
		fputc(' ', out);
		esc(out, title2);
	}
	fputs("</h1>\n", out);
}

void rd_page_foot(FILE *out, const struct cm_render_opts *o)
{
	fputs("<footer class=\"muted\"><p>commap report", out);
	if (o && o->footer) {
		fputs(" \xc2\xb7 ", out);
		esc(out, o->footer);
	}
	fputs("</p></footer>\n</body></html>\n", out);
}

/* A row "name | value" with the value escaped; NULL values are skipped. */
void rd_kv(FILE *out, const char *name, const char *value)
{
	if (!value)
		return;
	fprintf(out, "<tr><th>%s</th><td>", name);
	esc(out, value);
	fputs("</td></tr>\n", out);
}

/* A JSON scalar as text: integers in full, reals compactly. */
void rd_scalar(FILE *out, const json_t *v)
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

void rd_kv_json(FILE *out, const char *name, const json_t *v)
{
	if (!v)
		return;
	fprintf(out, "<tr><th>%s</th><td>", name);
	rd_scalar(out, v);
	fputs("</td></tr>\n", out);
}

const char *rd_jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

void rd_app_link(FILE *out, const struct cm_render_opts *o,
		     const char *app)
{
	if (!app || !*app)
		return;
	fputs("<a href=\"", out);
	rd_base(out, o);
	fputs("apps/", out);
	rd_url_escape(out, app);
	fputs("\">", out);
	esc(out, app);
	fputs("</a>", out);
}

const char *rd_basename(const char *path)
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

	rd_kv(out, "not pinned", json_string_value(json_object_get(doc,
								"not_pinned")));
	for (size_t k = 0; k < json_array_size(tl); k++) {
		const json_t *e = json_array_get(tl, k);
		const char *why = json_string_value(json_object_get(e,
								    "reason"));

		if (!why || strcmp(why, "guard-undo") != 0)
			continue;
		snprintf(label, sizeof(label), "progress guard, %.2f s",
			 json_number_value(json_object_get(e, "t")));
		rd_kv(out, label, json_string_value(json_object_get(e, "note")));
	}
}

/* Whether the run started from a learned model (the agent's "model"
 * field; absent: it did not look for one). */
static void model_used(FILE *out, const json_t *doc,
		       const struct cm_render_opts *o)
{
	const json_t *m = json_object_get(doc, "model");
	const json_t *d = json_object_get(m, "distance");
	json_int_t runs = json_integer_value(json_object_get(m, "runs"));

	fputs("<tr><th>learned model</th><td>", out);
	if (json_is_true(json_object_get(m, "used"))) {
		long long id = (long long)json_integer_value(
			json_object_get(m, "id"));

		fputs("started from <a href=\"", out);
		rd_base(out, o);
		fprintf(out, "models/%lld\">model %lld</a> (%lld run%s)", id,
			id, (long long)runs, runs == 1 ? "" : "s");
		if (json_is_number(d))
			fprintf(out, ", distance %.3f", json_number_value(d));
	} else if (m) {
		char buf[512];

		fputs("not used", out);
		if (rd_jstr(m, "reason")) {
			fputs(": ", out);
			esc(out, cm_report_model_reason(doc, buf, sizeof(buf)));
		}
	} else {
		fputs("none", out);
	}
	fputs("</td></tr>\n", out);
}

/* A row whose value is an id, linked to its page (BASE/kind/ID). */
static void id_row(FILE *out, const char *name, const char *kind,
		   const json_t *v, const struct cm_render_opts *o)
{
	if (!json_is_integer(v)) {
		rd_kv_json(out, name, v);
		return;
	}
	fprintf(out, "<tr><th>%s</th><td><a href=\"", name);
	rd_base(out, o);
	fprintf(out, "%s/%lld\">%lld</a></td></tr>\n", kind,
		(long long)json_integer_value(v),
		(long long)json_integer_value(v));
}

static void identity_table(FILE *out, const struct cm_report *r,
			   const json_t *row, const struct cm_render_opts *o)
{
	const json_t *id = json_object_get(r->doc, "identity");
	const json_t *topo = json_object_get(r->doc, "topology");
	const json_t *argv = json_object_get(id, "argv");
	size_t i;

	fputs("<table class=\"identity\">\n", out);
	if (row)
		rd_kv_json(out, "result id", json_object_get(row, "id"));
	id_row(out, "job", "jobs", json_object_get(id, "job"), o);
	if (r->step >= 0) {
		char buf[24];

		rd_kv(out, "step", cm_report_step_name(r->step, buf,
						    sizeof(buf)));
	} else {
		rd_kv_json(out, "step", json_object_get(id, "step"));
	}
	rd_kv(out, "node", r->node);
	if (r->user || json_object_get(id, "uid")) {
		fputs("<tr><th>user</th><td>", out);
		esc(out, r->user);
		fputs(" (uid ", out);
		rd_scalar(out, json_object_get(id, "uid"));
		fputs(")</td></tr>\n", out);
	}
	rd_kv(out, "executable", r->executable);
	rd_kv(out, "executable hash", rd_jstr(id, "exe_hash"));
	if (json_is_array(argv)) {
		fputs("<tr><th>command line</th><td><code>", out);
		for (i = 0; i < json_array_size(argv); i++) {
			if (i)
				fputc(' ', out);
			esc(out, json_string_value(json_array_get(argv, i)));
		}
		fputs("</code></td></tr>\n", out);
	}
	rd_kv(out, "mode", r->mode);
	model_used(out, r->doc, o);
	placement_notes(out, r->doc);
	rd_kv(out, "detection backend", r->backend);
	rd_kv(out, "started", r->started_at);
	rd_kv(out, "ended", r->ended_at);
	if (r->duration_s >= 0) {
		fputs("<tr><th>duration</th><td>", out);
		rd_number(out, r->duration_s);
		fputs(" s</td></tr>\n", out);
	}
	rd_kv(out, "CPUs (OS indices)", r->cpuset);
	rd_kv_json(out, "PUs", json_object_get(topo, "pus"));
	rd_kv(out, "topology", r->synthetic);
	rd_kv_json(out, "dry run (not pinned)", json_object_get(topo, "dry_run"));
	rd_kv_json(out, "ranks", json_object_get(id, "ranks"));
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

/* A statistic: objects (pin latency percentiles, breakdowns by level)
 * as "name value" pairs, arrays (the sampling periods) as lists, so no
 * figure the result carries is shown as a dash. */
static void stat_value(FILE *out, const json_t *v, int depth)
{
	const char *key;
	json_t *x;
	size_t i, k = 0;

	if (depth > 3) {
		fputs("\xe2\x80\xa6", out);
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, x) {
			fputs(k++ ? ", " : "", out);
			esc(out, key);
			fputc(' ', out);
			stat_value(out, x, depth + 1);
		}
	} else if (json_is_array(v)) {
		fputc('[', out);
		json_array_foreach(v, i, x) {
			fputs(i ? ", " : "", out);
			stat_value(out, x, depth + 1);
		}
		fputc(']', out);
	} else {
		rd_scalar(out, v);
	}
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
		stat_value(out, v, 0);
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

static int item_list(FILE *out, const char *cls, json_t *lines)
{
	json_t *l;
	size_t i;

	if (!lines)
		return -1;
	fprintf(out, "<ul class=\"%s\">\n", cls);
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

/* What happened and why, before anything else (render_outcome.c); then
 * whether it helped (render_benefit.c). */
int rd_outcome_lists(FILE *out, const json_t *doc, const json_t *row)
{
	if (item_list(out, "outcome", cm_report_outcome(doc)) < 0)
		return -1;
	return item_list(out, "benefit", cm_report_benefit(doc, row));
}

/* Links to the result's matrix as files (the service's pages). */
static void downloads(FILE *out, const json_t *row,
		      const struct cm_render_opts *o)
{
	const json_t *id = json_object_get(row, "id");

	if (!json_is_integer(id))
		return;
	fputs("<p class=\"downloads\">Matrix: <a href=\"", out);
	rd_base(out, o);
	fprintf(out, "results/%lld/matrix.json\" download>JSON</a> "
		"<a href=\"", (long long)json_integer_value(id));
	rd_base(out, o);
	fprintf(out, "results/%lld/matrix.csv\" download>CSV</a></p>\n",
		(long long)json_integer_value(id));
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
	if (rd_outcome_lists(out, doc, row) < 0)
		goto nomem;
	fputs("<div class=\"cols\"><div>\n", out);
	identity_table(out, r, row, o);
	fputs("</div><div><h3>Detection statistics and overhead</h3>\n",
	      out);
	stats_table(out, r);
	fputs("</div></div>\n", out);
	fputs("<h3>Communication matrix</h3>\n", out);
	downloads(out, row, o);
	fputs("<div class=\"fig\">\n", out);
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
	const char *exe = rd_jstr(job, "executable");
	const json_t *v;
	size_t i;

	fputs("<table class=\"summary\">\n", out);
	rd_kv_json(out, "job", json_object_get(job, "job"));
	clusters_row(out, json_object_get(job, "clusters"));
	rd_kv(out, "user", rd_jstr(job, "user"));
	rd_kv(out, "executable", exe);
	if (exe) {
		fputs("<tr><th>application</th><td>", out);
		rd_app_link(out, o, rd_basename(exe));
		fputs("</td></tr>\n", out);
	}
	rd_kv_json(out, "results", json_object_get(s, "results"));
	v = json_object_get(s, "nodes");
	if (json_is_array(v)) {
		fputs("<tr><th>nodes</th><td>", out);
		for (i = 0; i < json_array_size(v); i++) {
			if (i)
				fputs(", ", out);
			rd_scalar(out, json_array_get(v, i));
		}
		fputs("</td></tr>\n", out);
	}
	rd_kv_json(out, "ranks", json_object_get(s, "ranks"));
	rd_kv_json(out, "threads", json_object_get(s, "threads"));
	rd_kv_json(out, "migrations", json_object_get(s, "migrations"));
	rd_kv(out, "started", rd_jstr(s, "started_at"));
	rd_kv(out, "ended", rd_jstr(s, "ended_at"));
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
		rd_page_head(out, o, title, NULL);
		job_summary(out, doc, o);
		if (cm_traffic_job_html(out, doc) < 0)
			return cm_errorf(err, EIO, "write error");
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
		app = rd_basename(r->executable);
		rd_page_head(out, o, title, NULL);
		if (app) {
			fputs("<p>Application ", out);
			rd_app_link(out, o, app);
			fputs("</p>\n", out);
		}
		cm_report_free(r);
		if (result_section(out, inner ? doc : NULL, d, 0, o, err) < 0)
			return -1;
	}
	rd_page_foot(out, o);
	return rd_finish(out, err);
}

