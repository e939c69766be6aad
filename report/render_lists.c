/* render_lists.c: the list pages (jobs, applications, learned models)
 * and an application's and a model's page with their history.  Job
 * lists sort by any column header and page with the listing's own query
 * (GET /v1/jobs ?sort= ?offset= ?limit=), so the pages need no
 * JavaScript; every id is a link to its page. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "render_internal.h"

#define LIMIT_DEFAULT 100

static void esc(FILE *out, const char *s)
{
	cm_render_escape(out, s);
}

/* More than one cluster in a list ("" for results without a name): then
 * a cluster column tells apart two jobs of the same id. */
static int many_clusters(const json_t *arr)
{
	const char *first = NULL, *c;
	size_t i;

	for (i = 0; i < json_array_size(arr); i++) {
		c = rd_jstr(json_array_get(arr, i), "cluster");
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
	const char *c = rd_jstr(j, "cluster");

	fputs("<a href=\"", out);
	rd_base(out, o);
	fprintf(out, "jobs/%lld", job);
	if (clusters && c) {
		fputs("?cluster=", out);
		esc(out, c);	/* [A-Za-z0-9._-]: nothing to encode */
	}
	fprintf(out, "\">%lld</a>", job);
}

/* path's segments percent-encoded, its slashes kept. */
static void path_escape(FILE *out, const char *path)
{
	char seg[512];
	const char *slash;
	size_t n;

	while (path && *path) {
		slash = strchr(path, '/');
		n = slash ? (size_t)(slash - path) : strlen(path);
		snprintf(seg, sizeof(seg), "%.*s", (int)n, path);
		rd_url_escape(out, seg);
		if (!slash)
			break;
		fputc('/', out);
		path = slash + 1;
	}
}

/* A link to path with the query's parameters but skip, then extra
 * ("sort=-pins"); written inside an href. */
static void query_link(FILE *out, const struct cm_render_opts *o,
		       const char *path, const json_t *query,
		       const char *skip1, const char *skip2,
		       const char *extra)
{
	const char *key;
	json_t *v;
	int n = 0;

	rd_base(out, o);
	path_escape(out, path);
	json_object_foreach((json_t *)query, key, v) {
		if (!json_string_length(v) || !strcmp(key, skip1) ||
		    !strcmp(key, skip2))
			continue;
		fputs(n++ ? "&amp;" : "?", out);
		rd_url_escape(out, key);
		fputc('=', out);
		rd_url_escape(out, json_string_value(v));
	}
	if (extra)
		fprintf(out, "%s%s", n ? "&amp;" : "?", extra);
}

struct column {
	const char *title, *sort;	/* sort NULL: not sortable */
	int text;			/* text sorts A first, numbers largest */
};

static const struct column columns[] = {
	{ "job", "job", 0 }, { "user", "user", 1 },
	{ "application", "app", 1 }, { "mode", "mode", 1 },
	{ "started", "started", 0 }, { "duration", "duration", 0 },
	{ "steps", NULL, 0 }, { "nodes", "nodes", 0 }, { "ranks", NULL, 0 },
	{ "threads", "threads", 0 }, { "pins", "pins", 0 },
	{ "migrations", "migrations", 0 },
};
#define NCOLUMNS (sizeof(columns) / sizeof(columns[0]))

/* A header: a link sorting by it (the other way when it is the order
 * shown), marked when it is. */
static void header(FILE *out, const struct column *c, const json_t *query,
		   const char *path, const struct cm_render_opts *o)
{
	const char *cur = rd_jstr(query, "sort");
	int on = cur && c->sort && !strcmp(cur + (*cur == '-'), c->sort);
	char want[32];

	if (!c->sort) {
		fprintf(out, "<th>%s</th>", c->title);
		return;
	}
	if (on)
		snprintf(want, sizeof(want), "sort=%s%s", *cur == '-' ? "" :
			 "-", c->sort);
	else
		snprintf(want, sizeof(want), "sort=%s%s", c->text ? "" : "-",
			 c->sort);
	fputs("<th><a href=\"", out);
	query_link(out, o, path, query, "sort", "offset", want);
	fprintf(out, "\"%s>%s%s</a></th>", on ? " class=\"sorted\"" : "",
		c->title, !on ? "" : *cur == '-' ? " \xe2\x86\x93" :
		" \xe2\x86\x91");
}

static void id_cell(FILE *out, const json_t *j, int clusters,
		    const struct cm_render_opts *o)
{
	const json_t *ids = json_object_get(j, "result_ids");

	if (json_is_integer(json_object_get(j, "job"))) {
		job_link(out, j, clusters, o);
	} else if (json_is_integer(json_array_get(ids, 0))) {
		long long id = json_integer_value(json_array_get(ids, 0));

		fputs("<a href=\"", out);
		rd_base(out, o);
		fprintf(out, "results/%lld\">result %lld</a>", id, id);
	} else {
		fputs("\xe2\x80\x94", out);
	}
}

static void num_cell(FILE *out, const json_t *v, const char *unit)
{
	fputs("<td class=\"num\">", out);
	rd_scalar(out, v);
	if (json_is_number(v) && unit)
		fputs(unit, out);
	fputs("</td>", out);
}

static void job_row(FILE *out, const json_t *j, int clusters,
		    const struct cm_render_opts *o)
{
	fputs("<tr>", out);
	if (clusters) {
		fputs("<td>", out);
		esc(out, rd_str(rd_jstr(j, "cluster")));
		fputs("</td>", out);
	}
	fputs("<td>", out);
	id_cell(out, j, clusters, o);
	fputs("</td><td>", out);
	esc(out, rd_jstr(j, "user"));
	fputs("</td><td>", out);
	rd_app_link(out, o, rd_jstr(j, "app"));
	fputs("</td><td>", out);
	esc(out, rd_jstr(j, "mode"));
	fputs("</td><td>", out);
	esc(out, rd_jstr(j, "started_at"));
	fputs("</td>", out);
	num_cell(out, json_object_get(j, "duration_s"), " s");
	num_cell(out, json_object_get(j, "steps"), NULL);
	num_cell(out, json_object_get(j, "nodes"), NULL);
	num_cell(out, json_object_get(j, "ranks"), NULL);
	num_cell(out, json_object_get(j, "threads"), NULL);
	num_cell(out, json_object_get(j, "pins"), NULL);
	num_cell(out, json_object_get(j, "migrations"), NULL);
	fputs("</tr>\n", out);
}

/* Previous and next page links, when there are such pages. */
static void pages(FILE *out, const json_t *jobs, const json_t *query,
		  const char *path, const struct cm_render_opts *o)
{
	const char *s = rd_jstr(query, "offset"), *l = rd_jstr(query, "limit");
	long offset = s ? atol(s) : 0, limit = l ? atol(l) : LIMIT_DEFAULT;
	int more = json_is_true(json_object_get(jobs, "more"));
	char want[48];

	if (offset <= 0 && !more)
		return;
	limit = limit > 0 ? limit : LIMIT_DEFAULT;
	fputs("<nav class=\"pages\">", out);
	if (offset > 0) {
		snprintf(want, sizeof(want), "offset=%ld",
			 offset > limit ? offset - limit : 0);
		fputs("<a rel=\"prev\" href=\"", out);
		query_link(out, o, path, query, "offset", "", want);
		fputs("\">\xe2\x86\x90 previous</a>", out);
	}
	fprintf(out, "<span class=\"muted\">jobs %ld to %ld</span>",
		offset + 1, offset + (long)json_array_size(
			json_object_get(jobs, "jobs")));
	if (more) {
		snprintf(want, sizeof(want), "offset=%ld", offset + limit);
		fputs(" <a rel=\"next\" href=\"", out);
		query_link(out, o, path, query, "offset", "", want);
		fputs("\">next \xe2\x86\x92</a>", out);
	}
	fputs("</nav>\n", out);
}

void rd_jobs_table(FILE *out, const json_t *jobs, const json_t *query,
		   const char *path, const struct cm_render_opts *o)
{
	const json_t *arr = json_object_get(jobs, "jobs");
	int clusters = many_clusters(arr);
	size_t i;

	fputs("<table class=\"jobs\"><tr>", out);
	if (clusters)
		fputs("<th>cluster</th>", out);
	for (i = 0; i < NCOLUMNS; i++)
		header(out, &columns[i], query, path, o);
	fputs("</tr>\n", out);
	for (i = 0; i < json_array_size(arr); i++)
		job_row(out, json_array_get(arr, i), clusters, o);
	fputs("</table>\n", out);
	if (json_array_size(arr) == 0)
		fputs("<p class=\"muted\">no jobs</p>\n", out);
	pages(out, jobs, query, path, o);
}

static void filter_field(FILE *out, const json_t *filters, const char *name,
			 const char *label, const char *placeholder)
{
	fprintf(out, "<label>%s <input name=\"%s\" value=\"", label, name);
	esc(out, rd_jstr(filters, name));
	fprintf(out, "\" placeholder=\"%s\" size=\"12\"></label>\n",
		placeholder);
}

int cm_render_jobs_html(FILE *out, const json_t *jobs, const json_t *filters,
			const struct cm_render_opts *o, struct cm_error *err)
{
	if (!json_is_array(json_object_get(jobs, "jobs")))
		return cm_errorf(err, EINVAL, "jobs: not an array");
	rd_page_head(out, o, "Jobs", NULL);
	fputs("<form method=\"get\" action=\"", out);
	rd_base(out, o);
	fputs("jobs\" class=\"filters\">\n", out);
	filter_field(out, filters, "user", "user", "name");
	filter_field(out, filters, "app", "application", "name or path");
	filter_field(out, filters, "since", "since", "YYYY-MM-DD");
	filter_field(out, filters, "until", "until", "YYYY-MM-DD");
	filter_field(out, filters, "limit", "limit", "100");
	if (rd_jstr(filters, "sort")) {
		fputs("<input type=\"hidden\" name=\"sort\" value=\"", out);
		esc(out, rd_jstr(filters, "sort"));
		fputs("\">", out);
	}
	fputs("<button type=\"submit\">Filter</button></form>\n", out);
	rd_jobs_table(out, jobs, filters, "jobs", o);
	rd_page_foot(out, o);
	return rd_finish(out, err);
}

/* ---- applications ------------------------------------------------------ */

int cm_render_apps_html(FILE *out, const json_t *apps,
			const struct cm_render_opts *o, struct cm_error *err)
{
	const json_t *arr = json_object_get(apps, "apps"), *a;
	size_t i;

	if (!json_is_array(arr))
		return cm_errorf(err, EINVAL, "apps: not an array");
	rd_page_head(out, o, "Applications", NULL);
	fputs("<table class=\"apps\"><tr><th>application</th>"
	      "<th>executable</th><th>jobs</th><th>results</th>"
	      "<th>users</th><th>last run</th><th>most threads</th></tr>\n",
	      out);
	json_array_foreach(arr, i, a) {
		fputs("<tr><td>", out);
		rd_app_link(out, o, rd_jstr(a, "app"));
		fputs("</td><td><code>", out);
		esc(out, rd_jstr(a, "executable"));
		fputs("</code></td>", out);
		num_cell(out, json_object_get(a, "jobs"), NULL);
		num_cell(out, json_object_get(a, "results"), NULL);
		num_cell(out, json_object_get(a, "users"), NULL);
		fputs("<td>", out);
		esc(out, rd_jstr(a, "last_started_at"));
		fputs("</td>", out);
		num_cell(out, json_object_get(a, "max_threads"), NULL);
		fputs("</tr>\n", out);
	}
	fputs("</table>\n", out);
	if (json_array_size(arr) == 0)
		fputs("<p class=\"muted\">no applications</p>\n", out);
	rd_page_foot(out, o);
	return rd_finish(out, err);
}

int cm_render_app_html(FILE *out, const char *app, const json_t *info,
		       const json_t *jobs, const struct cm_render_opts *o,
		       struct cm_error *err)
{
	return cm_render_app_models_html(out, app, info, jobs, NULL, o, err);
}

/* The models' table: one row per model, linked to its page. */
static void models_table(FILE *out, const json_t *arr,
			 const struct cm_render_opts *o)
{
	const json_t *m, *key;
	size_t i;

	fputs("<table class=\"models\"><tr><th>model</th><th>application"
	      "</th><th>user</th><th>shape</th><th>command-line shape</th>"
	      "<th>runs</th><th>stability</th><th>updated</th></tr>\n", out);
	json_array_foreach(arr, i, m) {
		long long id = (long long)json_integer_value(
			json_object_get(m, "id"));

		key = json_object_get(m, "key");
		fputs("<tr><td><a href=\"", out);
		rd_base(out, o);
		fprintf(out, "models/%lld\">model %lld</a></td><td>", id, id);
		rd_app_link(out, o, rd_jstr(m, "app") ? rd_jstr(m, "app") :
			    rd_basename(rd_jstr(m, "executable")));
		fputs("</td><td>", out);
		esc(out, rd_jstr(m, "user"));
		fprintf(out, "</td><td>%lld \xc3\x97 %lld</td><td><code>",
			(long long)json_integer_value(json_object_get(key,
								      "ranks")),
			(long long)json_integer_value(json_object_get(key,
						"threads_per_rank")));
		esc(out, rd_jstr(key, "argv_shape"));
		fputs("</code></td>", out);
		num_cell(out, json_object_get(m, "runs"), NULL);
		num_cell(out, json_object_get(m, "stability"), NULL);
		fputs("<td>", out);
		esc(out, rd_jstr(m, "updated_at"));
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n", out);
	if (json_array_size(arr) == 0)
		fputs("<p class=\"muted\">No model yet: runs with an executable"
		      " hash (the agent's identity.exe_hash) make one.</p>\n",
		      out);
}

/* The application's learned models: a table linking to their pages,
 * then each drawn (newest first). */
static int app_models(FILE *out, const json_t *models,
		      const struct cm_render_opts *o, struct cm_error *err)
{
	const json_t *arr = json_object_get(models, "models"), *m;
	size_t i;

	fputs("<h2>Learned models</h2>\n", out);
	models_table(out, arr, o);
	json_array_foreach(arr, i, m)
		if (cm_render_model_html(out, m, o, err) < 0)
			return -1;
	return 0;
}

/* A form comparing two runs, prefilled with the first two listed. */
static void compare_form(FILE *out, const json_t *arr,
			 const struct cm_render_opts *o)
{
	const json_t *a = json_object_get(json_array_get(arr, 1), "job");
	const json_t *b = json_object_get(json_array_get(arr, 0), "job");

	if (!json_is_integer(a) || !json_is_integer(b))
		return;
	fputs("<form method=\"get\" class=\"compare\" action=\"", out);
	rd_base(out, o);
	fprintf(out, "compare\">Compare job <input name=\"a\" size=\"8\" "
		"value=\"%lld\"> with job <input name=\"b\" size=\"8\" "
		"value=\"%lld\"> <button type=\"submit\">Compare</button>"
		"</form>\n", (long long)json_integer_value(a),
		(long long)json_integer_value(b));
}

int cm_render_app_models_html(FILE *out, const char *app, const json_t *info,
			      const json_t *jobs, const json_t *models,
			      const struct cm_render_opts *o,
			      struct cm_error *err)
{
	return cm_render_app_page_html(out, app, info, jobs, NULL, models, o,
				       err);
}

int cm_render_app_page_html(FILE *out, const char *app, const json_t *info,
			    const json_t *jobs, const json_t *query,
			    const json_t *models,
			    const struct cm_render_opts *o,
			    struct cm_error *err)
{
	const json_t *arr = json_object_get(jobs, "jobs");
	char path[600];

	if (!json_is_array(arr))
		return cm_errorf(err, EINVAL, "jobs: not an array");
	rd_page_head(out, o, "Application", app);
	if (json_is_object(info)) {
		fputs("<table class=\"app\">\n", out);
		rd_kv(out, "executable", rd_jstr(info, "executable"));
		rd_kv_json(out, "jobs", json_object_get(info, "jobs"));
		rd_kv_json(out, "results", json_object_get(info, "results"));
		rd_kv_json(out, "users", json_object_get(info, "users"));
		rd_kv(out, "last run", rd_jstr(info, "last_started_at"));
		rd_kv_json(out, "most threads", json_object_get(info,
							"max_threads"));
		fputs("</table>\n", out);
	}
	if (models && app_models(out, models, o, err) < 0)
		return -1;
	fputs("<h2>Runs</h2>\n", out);
	compare_form(out, arr, o);
	snprintf(path, sizeof(path), "apps/%s", app);
	rd_jobs_table(out, jobs, query, path, o);	/* escaped there */
	rd_page_foot(out, o);
	return rd_finish(out, err);
}

/* ---- learned models ---------------------------------------------------- */

int cm_render_models_html(FILE *out, const json_t *models,
			  const struct cm_render_opts *o,
			  struct cm_error *err)
{
	const json_t *arr = json_object_get(models, "models");

	if (!json_is_array(arr))
		return cm_errorf(err, EINVAL, "models: not an array");
	rd_page_head(out, o, "Learned models", NULL);
	models_table(out, arr, o);
	rd_page_foot(out, o);
	return rd_finish(out, err);
}

/* The runs folded into the model (its stability history: result ids)
 * and the runs that started from it. */
static void model_history(FILE *out, const json_t *model, const json_t *runs,
			  const struct cm_render_opts *o)
{
	const json_t *h = json_object_get(model, "stability_history"), *v;
	const json_t *arr = json_object_get(runs, "runs");
	size_t i;

	fputs("<h2>Runs folded into it</h2>\n<p class=\"muted\">The recent "
	      "ones, each with the cosine of its matrix against the model "
	      "before it (a model's first run has none).</p>\n"
	      "<p class=\"folded\">", out);
	json_array_foreach(h, i, v) {
		long long id = (long long)json_integer_value(
			json_object_get(v, "result_id"));

		fputs(i ? ", " : "", out);
		fputs("<a href=\"", out);
		rd_base(out, o);
		fprintf(out, "results/%lld\">result %lld</a> (", id, id);
		rd_number(out, json_number_value(json_object_get(v, "value")));
		fputs(")", out);
	}
	if (json_array_size(h) == 0)
		fputs("<span class=\"muted\">none recorded</span>", out);
	fputs("</p>\n<h2>Runs that started from it</h2>\n", out);
	if (json_array_size(arr) == 0) {
		fputs("<p class=\"muted\">none among the application's latest "
		      "runs</p>\n", out);
		return;
	}
	fputs("<table class=\"model-runs\"><tr><th>job</th><th>step</th>"
	      "<th>node</th><th>started</th><th>duration</th></tr>\n", out);
	json_array_foreach(arr, i, v) {
		char buf[24];

		fputs("<tr><td>", out);
		id_cell(out, v, 0, o);
		fprintf(out, "</td><td>%s</td><td>", json_is_integer(
				json_object_get(v, "step")) ?
			cm_report_step_name(json_integer_value(
				json_object_get(v, "step")), buf, sizeof(buf)) :
			"");
		esc(out, rd_jstr(v, "node"));
		fputs("</td><td>", out);
		esc(out, rd_jstr(v, "started_at"));
		fputs("</td>", out);
		num_cell(out, json_object_get(v, "duration_s"), " s");
		fputs("</tr>\n", out);
	}
	fputs("</table>\n", out);
}

int cm_render_model_page_html(FILE *out, const json_t *model,
			      const json_t *runs,
			      const struct cm_render_opts *o,
			      struct cm_error *err)
{
	char title[32];
	const char *exe = rd_jstr(model, "executable");

	snprintf(title, sizeof(title), "Model %lld",
		 (long long)json_integer_value(json_object_get(model, "id")));
	rd_page_head(out, o, title, NULL);
	if (exe) {
		fputs("<p>Application ", out);
		rd_app_link(out, o, rd_basename(exe));
		fputs("</p>\n", out);
	}
	if (cm_render_model_html(out, model, o, err) < 0)
		return -1;
	model_history(out, model, runs, o);
	rd_page_foot(out, o);
	return rd_finish(out, err);
}
