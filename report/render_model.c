/* render_model.c: a learned model (commap-model, docs/service.md "Learned
 * models") as an HTML section with its heatmap.  The model's matrix is
 * drawn by the result heatmap: the model is seen as a result whose
 * threads are the model's identities, so labels (r<rank>.t<n>), rank
 * lines, scales and binning are the same as on a job page. */
#include <errno.h>
#include <string.h>

#include "render_internal.h"

static void esc(FILE *out, const char *s)
{
	cm_render_escape(out, s);
}

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* A commap-result view of the model: threads, edges, topology and the
 * last mapping as the single timeline entry. */
static json_t *model_as_result(const json_t *m)
{
	const json_t *key = json_object_get(m, "key");
	const json_t *topo = json_object_get(m, "topology");
	const json_t *pus = json_object_get(json_object_get(m, "last_mapping"),
					    "pu_of_thread");

	return json_pack("{s:s, s:i, s:{s:O?}, s:O, s:O, s:{s:O?, s:O?, s:O?},"
			 " s:[{s:f, s:O?}]}",
		"format", "commap-result", "version", 1,
		"identity", "ranks", json_object_get(key, "ranks"),
		"threads", json_object_get(m, "threads"),
		"edges", json_object_get(m, "edges"),
		"topology", "cpuset", json_object_get(topo, "cpuset"),
		"synthetic", json_object_get(topo, "synthetic"),
		"pus", json_object_get(topo, "pus"),
		"timeline", "t", 0.0, "pu_of_thread", pus);
}

static void row(FILE *out, const char *name, const char *value)
{
	if (!value)
		return;
	fprintf(out, "<tr><th>%s</th><td>", name);
	esc(out, value);
	fputs("</td></tr>\n", out);
}

static void runs_and_stability(FILE *out, const json_t *m)
{
	const json_t *st = json_object_get(m, "stability");
	const json_t *h = json_object_get(m, "stability_history");
	json_int_t runs = json_integer_value(json_object_get(m, "runs"));
	const json_t *v;
	size_t i;

	fprintf(out, "<p class=\"model-runs\">%lld run%s, ", (long long)runs,
		runs == 1 ? "" : "s");
	if (json_is_number(st))
		fprintf(out, "stability %.2f", json_number_value(st));
	else
		fputs("stability not known yet (one run)", out);
	fputs(" <span class=\"muted\">(cosine similarity of the latest run"
	      " with the model before it; 1 = the same pattern)</span>", out);
	if (json_array_size(h) > 1) {
		fputs("<br>recent: ", out);
		json_array_foreach(h, i, v) {
			fprintf(out, "%s%.2f", i ? " \xc2\xb7 " : "",
				json_number_value(json_object_get(v, "value")));
		}
	}
	fputs("</p>\n", out);
}

static void key_table(FILE *out, const json_t *m)
{
	const json_t *key = json_object_get(m, "key");
	const json_t *topo = json_object_get(m, "topology");

	fputs("<table class=\"model\">\n", out);
	row(out, "user", jstr(m, "user"));
	row(out, "executable", jstr(m, "executable"));
	row(out, "executable hash", jstr(key, "exe_hash"));
	fprintf(out, "<tr><th>shape</th><td>%lld rank%s \xc3\x97 %lld threads"
		"</td></tr>\n",
		(long long)json_integer_value(json_object_get(key, "ranks")),
		json_integer_value(json_object_get(key, "ranks")) == 1 ?
		"" : "s",
		(long long)json_integer_value(json_object_get(key,
						"threads_per_rank")));
	fputs("<tr><th>command-line shape</th><td><code>", out);
	esc(out, jstr(key, "argv_shape"));
	fputs("</code></td></tr>\n", out);
	row(out, "updated", jstr(m, "updated_at"));
	row(out, "latest run on", jstr(topo, "node"));
	row(out, "its CPUs", jstr(topo, "cpuset"));
	row(out, "its topology", jstr(topo, "synthetic"));
	fputs("</table>\n", out);
}

int cm_render_model_html(FILE *out, const json_t *model,
			 const struct cm_render_opts *opts,
			 struct cm_error *err)
{
	json_int_t id = json_integer_value(json_object_get(model, "id"));
	struct cm_report *r = NULL;
	json_t *view;
	int rc;

	if (!json_is_object(model) || !jstr(model, "format") ||
	    strcmp(jstr(model, "format"), "commap-model") != 0)
		return cm_errorf(err, EINVAL, "format: not a commap-model");
	if (!json_is_object(json_object_get(model, "key")))
		return cm_errorf(err, EINVAL, "key: expected an object");
	view = model_as_result(model);
	if (!view)
		return cm_errorf(err, EINVAL,
				 "threads, edges: expected arrays");
	rc = cm_report_parse(&r, view, err);
	json_decref(view);
	if (rc < 0)
		return -1;
	fprintf(out, "<section class=\"model\" id=\"model-%lld\">\n"
		"<h3>Model %lld: <code>", (long long)id, (long long)id);
	esc(out, jstr(json_object_get(model, "key"), "argv_shape"));
	fputs("</code></h3>\n", out);
	runs_and_stability(out, model);
	fputs("<div class=\"cols\"><div>\n", out);
	key_table(out, model);
	fputs("</div><div class=\"fig\">\n", out);
	rc = rd_heatmap_kind(out, r, opts, 0, (int)id, "model-heatmap");
	fputs("</div></div>\n</section>\n", out);
	cm_report_free(r);
	if (rc < 0)
		return cm_errorf(err, ENOMEM, "out of memory");
	return rd_finish(out, err);
}
