/* test_render.c: the report library on edge cases: parsing (refusals
 * name the field), labels, escaping (XSS, invalid UTF-8, control bytes),
 * heatmap cells/labels/legend at 1, 4 and 256 threads, the topology
 * drawn from a synthetic description restricted to a cpuset with holes,
 * the fallback grid, migrations, and the three pages. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "tap.h"

/* Render with fn into a malloc'd string. */
#define RENDER(buf, call) do { \
	size_t len_; \
	FILE *f_ = open_memstream(&(buf), &len_); \
	rc = (call); \
	fclose(f_); \
} while (0)

static int count(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* A result with n threads in ranks of rank_size threads, a ring of edges
 * (weight w, plus i for variety), the identity of the first thread on
 * PU os_base + i, and one migration. */
static json_t *make_result(int n, int rank_size, double w,
			   const char *synthetic, const char *cpuset,
			   const char *argv0)
{
	json_t *threads = json_array(), *edges = json_array();
	json_t *pus = json_array(), *doc;
	int i;

	for (i = 0; i < n; i++) {
		json_array_append_new(threads, json_pack("{s:i, s:i, s:i, s:f}",
			"index", i, "rank", i / rank_size, "tid", 100 + i,
			"cpu_s", 1.0));
		if (n > 1 && i + 1 < n)
			json_array_append_new(edges, json_pack("[i, i, f]", i,
				i + 1, w + i));
		json_array_append_new(pus, json_integer(i));
	}
	doc = json_pack("{s:s, s:i, s:{s:i, s:i, s:s, s:s, s:i, s:s, s:[s, s],"
		" s:i, s:i}, s:s, s:s, s:s, s:s, s:{s:s*, s:i, s:s*, s:b},"
		" s:o, s:o, s:[{s:f, s:o, s:f, s:s}],"
		" s:[{s:f, s:i, s:i, s:i}],"
		" s:{s:i, s:i, s:i, s:f}}",
		"format", "commap-result", "version", 1,
		"identity", "job", 42, "step", 0, "node", "n<1>",
		"user", "alice&bob", "uid", 1000,
		"executable", "/opt/<b>app", "argv", argv0, "-x",
		"ranks", (n + rank_size - 1) / rank_size, "threads", n,
		"mode", "dynamic", "backend", "sample",
		"started_at", "2026-11-22T14:00:00Z",
		"ended_at", "2026-11-22T14:01:10Z",
		"topology", "cpuset", cpuset, "pus", n, "synthetic", synthetic,
		"dry_run", 0,
		"threads", threads, "edges", edges,
		"timeline", "t", 0.2, "pu_of_thread", pus, "cost", 12.0,
		"reason", "initial",
		"migrations", "t", 3.5, "thread", n > 1 ? 1 : 0, "from", 3,
		"to", 1,
		"stats", "samples", 1000, "lost", 0, "decoded", 990,
		"agent_cpu_s", 0.12);
	return doc;
}

static void test_parse_errors(void)
{
	static const struct {
		const char *json, *field;
	} bad[] = {
		{ "[]", "result" },
		{ "{\"format\":\"x\",\"version\":1}", "format" },
		{ "{\"format\":\"commap-result\",\"version\":2}", "version" },
		{ "{\"format\":\"commap-result\",\"version\":1}", "threads" },
		{ "{\"format\":\"commap-result\",\"version\":1,\"threads\":[{}],"
		  "\"edges\":[[0,0,1]]}", "edges[0]" },
		{ "{\"format\":\"commap-result\",\"version\":1,\"threads\":[{},{}],"
		  "\"edges\":[[0,2,1]]}", "edges[0]" },
		{ "{\"format\":\"commap-result\",\"version\":1,\"threads\":[{},{}],"
		  "\"edges\":[[0,1,-1]]}", "edges[0][2]" },
		{ "{\"format\":\"commap-result\",\"version\":1,\"threads\":[{},{}],"
		  "\"edges\":[[0,1]]}", "edges[0]" },
		{ "{\"format\":\"commap-result\",\"version\":1,\"threads\":[3]}",
		  "threads[0]" },
		{ "{\"format\":\"commap-result\",\"version\":1,\"threads\":[{}],"
		  "\"migrations\":[{\"thread\":1}]}", "migrations[0]" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *doc = json_loads(bad[i].json, 0, NULL);
		struct cm_report *r = (struct cm_report *)1;
		struct cm_error e = { "" };
		int rc = cm_report_parse(&r, doc, &e);

		ok(rc == -1 && r == NULL && strncmp(e.text, bad[i].field,
			strlen(bad[i].field)) == 0,
		   "refused %s: %s", bad[i].json, e.text);
		json_decref(doc);
	}
}

static void test_parse(void)
{
	json_t *doc = make_result(6, 4, 2.0, "pack:1 core:8 pu:1", "0-7",
				  "app");
	struct cm_report *r;
	struct cm_error e = { "" };

	ok(cm_report_parse(&r, doc, &e) == 0, "a valid result parses");
	is_int(r->nthreads, 6, "6 threads");
	is_str(r->threads[0].label, "r0.t0", "label of thread 0");
	is_str(r->threads[3].label, "r0.t3", "label of thread 3");
	is_str(r->threads[4].label, "r1.t0", "rank 1 restarts at t0");
	is_int(r->nedges, 5, "5 edges");
	is_double(r->matrix[1 * 6 + 2], 3.0, 1e-12, "matrix is symmetric (a)");
	is_double(r->matrix[2 * 6 + 1], 3.0, 1e-12, "matrix is symmetric (b)");
	is_double(r->max_weight, 6.0, 1e-12, "max weight");
	is_double(r->duration_s, 70, 1e-9, "duration from the timestamps");
	is_int(r->threads[5].final_pu, 5, "final PU from the timeline");
	is_int(r->threads[1].final_pu, 1,
	       "a migration after the last mapping decides the final PU");
	json_decref(doc);	/* the report holds its own reference */
	is_str(r->node, "n<1>", "borrowed strings stay valid");
	cm_report_free(r);

	doc = json_loads("{\"format\":\"commap-result\",\"version\":1,"
			 "\"threads\":[{},{},{}]}", 0, NULL);
	ok(cm_report_parse(&r, doc, &e) == 0, "a minimal result parses");
	is_str(r->threads[2].label, "t2", "no ranks: plain t<n> labels");
	is_int(r->threads[2].final_pu, -1, "no timeline: not placed");
	is_double(r->duration_s, -1, 0, "no timestamps: unknown duration");
	cm_report_free(r);
	json_decref(doc);
}

static void test_escape(void)
{
	static const struct {
		const char *in, *out;
	} t[] = {
		{ "", "" },
		{ "plain", "plain" },
		{ "<script>alert('x')</script>",
		  "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" },
		{ "a&b \"q\"", "a&amp;b &quot;q&quot;" },
		{ "caf\xc3\xa9", "caf\xc3\xa9" },
		{ "bad\xff", "bad\xef\xbf\xbd" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },	/* overlong */
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "bell\x07", "bell\xef\xbf\xbd" },
		{ "tab\tnl\n", "tab\tnl\n" },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *buf = NULL;
		int rc;

		RENDER(buf, cm_render_escape(f_, t[i].in));
		ok(rc == 0 && strcmp(buf, t[i].out) == 0, "escape case %zu",
		   i);
		free(buf);
	}
}

static void test_heatmap(void)
{
	struct cm_render_opts o = { 0 };
	struct cm_report *r;
	json_t *doc;
	char *buf = NULL;
	int rc;

	doc = make_result(256, 16, 1.0, "pack:2 core:64 pu:2", "0-255",
			  "app");
	cm_report_parse(&r, doc, NULL);
	RENDER(buf, cm_render_heatmap_svg(f_, r, &o, 1, NULL));
	ok(rc == 0, "256-thread heatmap renders");
	ok(strncmp(buf, "<?xml", 5) == 0, "standalone: XML declaration");
	ok(strstr(buf, "id=\"heatmap\"") != NULL, "root id");
	is_int(count(buf, "class=\"row\""), 32,
	       "labels thinned to 32 per axis at 256 threads");
	ok(strstr(buf, ">r15.t8<") && strstr(buf, ">r0.t0<") &&
	   !strstr(buf, ">r15.t9<"), "every 8th thread labelled r<k>.t<n>");
	ok(strstr(buf, "class=\"legend\"") != NULL, "a legend");
	ok(strstr(buf, "width=\"2\" height=\"2\"") != NULL,
	   "2 px cells at 256 threads");
	ok(strstr(buf, "(log scale)") == NULL, "auto: linear for 1..256");
	free(buf);
	o.scale = CM_RENDER_SCALE_LOG;
	o.max_labels = 8;
	RENDER(buf, cm_render_heatmap_svg(f_, r, &o, 0, NULL));
	ok(strstr(buf, "(log scale)") != NULL, "log scale on request");
	is_int(count(buf, "class=\"row\""), 8, "max_labels 8");
	ok(strncmp(buf, "<svg", 4) == 0, "inline: no XML declaration");
	free(buf);
	cm_report_free(r);
	json_decref(doc);

	doc = make_result(1, 1, 1.0, NULL, "0", "app");
	cm_report_parse(&r, doc, NULL);
	RENDER(buf, cm_render_heatmap_svg(f_, r, NULL, 1, NULL));
	ok(rc == 0 && strstr(buf, "no communication recorded"),
	   "one thread: says there is no communication");
	free(buf);
	cm_report_free(r);
	json_decref(doc);

	doc = make_result(4, 4, 3.0, NULL, "0-3", "app");
	cm_report_parse(&r, doc, NULL);
	RENDER(buf, cm_render_heatmap_svg(f_, r, NULL, 1, NULL));
	is_int(count(buf, "<rect class=\"h"), 6 + 32,
	       "4 threads, 3 edges: 6 cells (both halves) + 32 legend steps");
	ok(strstr(buf, "<title>r0.t1 \xe2\x86\x94 r0.t2: 4</title>") != NULL,
	   "small matrices get a tooltip per cell");
	free(buf);
	cm_report_free(r);
	json_decref(doc);

	doc = make_result(1500, 100, 1.0, NULL, NULL, "app");
	cm_report_parse(&r, doc, NULL);
	ok(r->matrix == NULL, "no dense matrix above 1024 threads");
	RENDER(buf, cm_render_heatmap_svg(f_, r, NULL, 1, NULL));
	ok(rc == 0 && strstr(buf, "3 threads per cell"),
	   "1500 threads: binned, and the legend says so");
	free(buf);
	cm_report_free(r);
	json_decref(doc);
}

static void test_topology(void)
{
	struct cm_report *r;
	json_t *doc;
	char *buf = NULL;
	int rc;

	/* 8 threads on a 16-PU machine restricted to 0-3,8-11 (holes). */
	doc = make_result(8, 8, 1.0, "pack:2 core:4 pu:2", "0-3,8-11", "app");
	cm_report_parse(&r, doc, NULL);
	RENDER(buf, cm_render_topology_svg(f_, r, NULL, 1, NULL));
	ok(rc == 0, "topology renders");
	is_int(count(buf, "<g class=\"pu"), 8, "8 allowed PUs drawn");
	ok(strstr(buf, "data-os=\"8\"") && !strstr(buf, "data-os=\"4\""),
	   "the cpuset's holes are not drawn");
	ok(count(buf, "Package") >= 2, "two packages");
	ok(count(buf, "class=\"obj Core\"") == 4, "4 cores with SMT drawn");
	ok(strstr(buf, "not on a drawn PU") != NULL,
	   "threads on PUs outside the cpuset are listed");
	ok(strstr(buf, ">r0.t0<") != NULL, "a thread label on its PU");
	free(buf);
	cm_report_free(r);
	json_decref(doc);

	doc = make_result(4, 4, 1.0, NULL, "0-3", "app");
	cm_report_parse(&r, doc, NULL);
	RENDER(buf, cm_render_topology_svg(f_, r, NULL, 1, NULL));
	ok(rc == 0 && strstr(buf, "no topology description"),
	   "no synthetic: the fallback grid, with a note");
	is_int(count(buf, "<g class=\"pu used\""), 4, "4 PUs in use");
	free(buf);
	cm_report_free(r);
	json_decref(doc);

	doc = make_result(4, 4, 1.0, "pack:x", "0-3", "app");
	cm_report_parse(&r, doc, NULL);
	RENDER(buf, cm_render_topology_svg(f_, r, NULL, 1, NULL));
	ok(rc == 0 && strstr(buf, "topology not drawn"),
	   "a description hwloc refuses: the grid, and why");
	free(buf);
	cm_report_free(r);
	json_decref(doc);
}

static void test_migrations(void)
{
	struct cm_report *r;
	json_t *doc;
	char *buf = NULL;
	int rc;

	doc = make_result(100, 10, 1.0, NULL, NULL, "app");
	cm_report_parse(&r, doc, NULL);
	RENDER(buf, cm_render_migrations_svg(f_, r, NULL, 1, NULL));
	ok(rc == 0, "migrations render");
	is_int(count(buf, "class=\"migration\""), 1, "one migration mark");
	ok(strstr(buf, "r0.t1 moved from PU 3 to PU 1") != NULL,
	   "the mark says who moved where");
	ok(count(buf, "dominant-baseline=\"middle\" font-size=\"9\"") == 1,
	   "100 threads: only the moved thread gets a lane");
	free(buf);
	json_object_set_new((json_t *)r->doc, "migrations", json_array());
	cm_report_free(r);
	cm_report_parse(&r, doc, NULL);
	RENDER(buf, cm_render_migrations_svg(f_, r, NULL, 1, NULL));
	ok(strstr(buf, "no thread migrated") != NULL, "no migrations: said");
	free(buf);
	cm_report_free(r);
	/* First placements (from -1) are pins, not migrations. */
	json_object_set_new((json_t *)doc, "migrations", json_pack(
		"[{s:f, s:i, s:i, s:i}, {s:f, s:i, s:i, s:i}]",
		"t", 0.1, "thread", 0, "from", -1, "to", 0,
		"t", 0.1, "thread", 1, "from", -1, "to", 1));
	cm_report_parse(&r, doc, NULL);
	is_int(r->nmigrations, 2, "two pins");
	is_int(r->nmoves, 0, "  neither a migration");
	RENDER(buf, cm_render_migrations_svg(f_, r, NULL, 1, NULL));
	ok(strstr(buf, "0 migrations, 2 first placements") != NULL &&
	   strstr(buf, "no thread migrated") != NULL,
	   "first placements only: 0 migrations, no thread migrated");
	free(buf);
	cm_report_free(r);
	json_decref(doc);
}

static void test_pages(void)
{
	struct cm_render_opts o = { .base_url = "/x" };
	json_t *doc = make_result(4, 2, 1.0, "pack:1 core:4 pu:1", "0-3",
				  "<script>alert(1)</script>");
	json_t *job, *list, *filters;
	char *buf = NULL;
	int rc;

	RENDER(buf, cm_render_job_html(f_, doc, &o, NULL));
	ok(rc == 0, "a bare result renders as a page");
	ok(!strstr(buf, "<script") && strstr(buf, "&lt;script&gt;"),
	   "argv is escaped");
	ok(!strstr(buf, "<b>app") && strstr(buf, "/opt/&lt;b&gt;app"),
	   "the executable is escaped");
	ok(strstr(buf, "alice&amp;bob") != NULL, "the user is escaped");
	ok(strstr(buf, "id=\"heatmap-0\"") && strstr(buf, "id=\"topology-0\"")
	   && strstr(buf, "id=\"migrations-0\""), "three figures inline");
	ok(strstr(buf, "href=\"/x/apps/%3Cb%3Eapp\"") != NULL,
	   "application link percent-encoded under base_url");
	ok(strstr(buf, "agent CPU time: 3.00%") != NULL,
	   "overhead: agent CPU over the threads' CPU");
	free(buf);

	job = json_pack("{s:i, s:s, s:s, s:{s:i, s:[s]}, s:[{s:i, s:O}]}",
			"job", 42, "user", "alice", "executable", "/opt/app",
			"summary", "results", 1, "nodes", "n1",
			"results", "id", 7, "document", doc);
	RENDER(buf, cm_render_job_html(f_, job, &o, NULL));
	ok(rc == 0 && strstr(buf, "<h1>Job 42</h1>"), "a job object");
	ok(strstr(buf, "<th>result id</th><td>7</td>") != NULL,
	   "row columns shown");
	free(buf);
	json_decref(job);

	list = json_pack("{s:[{s:i, s:s, s:s, s:i}, {s:n, s:s, s:s, s:[i]}]}",
			 "jobs", "job", 42, "user", "<u>", "app", "a b",
			 "threads", 4, "job", "user", "u", "app", "x",
			 "result_ids", 9);
	filters = json_pack("{s:s}", "user", "\"><script>");
	RENDER(buf, cm_render_jobs_html(f_, list, filters, &o, NULL));
	json_decref(filters);
	ok(rc == 0 && strstr(buf, "href=\"/x/jobs/42\""), "job list links");
	ok(strstr(buf, "href=\"/x/results/9\"") != NULL,
	   "a job-less entry links to its result");
	ok(strstr(buf, "value=\"&quot;&gt;&lt;script&gt;\"") != NULL,
	   "filter values are escaped in attributes");
	ok(strstr(buf, "apps/a%20b") != NULL, "app names percent-encoded");
	free(buf);
	RENDER(buf, cm_render_app_html(f_, "a<b", NULL, list, NULL, NULL));
	ok(rc == 0 && strstr(buf, "Application a&lt;b"), "app page");
	free(buf);
	RENDER(buf, cm_render_jobs_html(f_, doc, NULL, NULL, NULL));
	ok(rc == -1, "a job list without jobs[] is refused");
	free(buf);
	json_decref(list);
	json_decref(doc);
}

/* Why nothing was pinned and the progress guard's undo, on the page. */
static void test_placement_notes(void)
{
	json_t *doc = make_result(4, 2, 1.0, "pack:1 core:4 pu:1", "0-3",
				  "app");
	char *buf = NULL;
	int rc;

	json_object_set_new(doc, "not_pinned",
			    json_string("equidistant: <all> the same"));
	json_array_append_new(json_object_get(doc, "timeline"), json_pack(
		"{s:f, s:[i, i, i, i], s:s, s:s}", "t", 0.37, "pu_of_thread",
		-1, -1, -1, -1, "reason", "guard-undo", "note",
		"CPU 2.00 -> 0.42 s/s"));
	RENDER(buf, cm_render_job_html(f_, doc, NULL, NULL));
	ok(rc == 0 && strstr(buf, "<th>not pinned</th><td>equidistant: "
			     "&lt;all&gt; the same</td>"),
	   "the page says why nothing was pinned (escaped)");
	ok(strstr(buf, "<th>progress guard, 0.37 s</th><td>CPU 2.00 -&gt; "
			"0.42 s/s</td>") != NULL,
	   "the page shows the guard's undo and its measures");
	free(buf);
	json_decref(doc);
}

/* Luminance of the fill of class hN in the heatmap's style. */
static double level_luma(const char *svg, int level)
{
	char key[16];
	const char *p;
	unsigned r, g, b;

	snprintf(key, sizeof(key), " .h%d{fill:#", level);
	p = strstr(svg, key);
	if (!p || sscanf(p + strlen(key), "%2x%2x%2x", &r, &g, &b) != 3)
		return -1;
	return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/* The strongest edge darkest; MPI threads shown rank-major. */
static void test_heatmap_order(void)
{
	json_t *doc = make_result(6, 3, 1.0, "pack:1 core:6 pu:1", "0-5",
				  "app"), *th;
	static const int ranks[] = { 0, 0, 1, 1, 1, 0 };
	struct cm_report *r = NULL;
	char *buf = NULL;
	size_t i;
	int rc, k;

	json_array_foreach(json_object_get(doc, "threads"), i, th)
		json_object_set_new(th, "rank", json_integer(ranks[i]));
	ok(cm_report_parse(&r, doc, NULL) == 0, "a 2-rank result parses");
	for (k = 0, rc = 1; k < 6; k++) {
		static const char *const want[] = { "r0.t0", "r0.t1", "r0.t2",
						    "r1.t0", "r1.t1", "r1.t2" };

		rc &= !strcmp(r->threads[r->order[k]].label, want[k]) &&
		      r->pos[r->order[k]] == k;
	}
	ok(rc, "display order is rank-major: r0.t0 r0.t1 r0.t2 r1.t0 ...");
	RENDER(buf, cm_render_heatmap_svg(f_, r, NULL, 0, NULL));
	ok(rc == 0 && level_luma(buf, 31) >= 0 &&
	   level_luma(buf, 31) < level_luma(buf, 0),
	   "the strongest level is drawn darker than the weakest");
	ok(strstr(buf, ">r0.t2</text>") && strstr(buf, ">r1.t0</text>") &&
	   strstr(buf, ">r0.t2</text>") < strstr(buf, ">r1.t0</text>"),
	   "labels in display order (r0.t2 before r1.t0)");
	free(buf);
	cm_report_free(r);
	json_decref(doc);
}

/* A model the agent could not use is its model's reason (the service's
 * internal words): the report says it once, by name. */
static void test_outcome_model_once(json_t *doc)
{
	const char *key = "no model for exe_hash=sha256:ab ranks=1 "
			  "argv_shape=app uid=0";
	json_t *o, *line;
	size_t i;
	int model = 0, raw = 0;

	json_object_set_new(doc, "model", json_pack("{s:b,s:s}", "used", 0,
						    "reason", key));
	o = cm_report_outcome(doc);
	json_array_foreach(o, i, line) {
		const char *t = json_string_value(json_object_get(line,
								  "text"));

		model += t && strstr(t, "no learned model") != NULL;
		raw += t && strstr(t, "exe_hash=") != NULL;
	}
	ok(o && model == 1 && raw == 0,
	   "an unused model: one line, without the internal key (%d, %d)",
	   model, raw);
	json_decref(o);
}

/* The first lines of a report: headline, warnings, evidence, names. */
static void test_outcome(void)
{
	json_t *doc = make_result(4, 4, 1.0, "pack:1 core:4 pu:1", "0-3",
				  "app"), *o;
	char buf[32];

	json_object_set_new(json_object_get(doc, "stats"), "pins",
			    json_integer(0));
	json_array_clear(json_object_get(doc, "timeline"));
	json_object_set_new(doc, "warnings",
			    json_pack("[s]", "static mapping: refused"));
	o = cm_report_outcome(doc);
	ok(o && json_array_size(o) >= 3, "outcome: headline and details");
	is_str(json_string_value(json_object_get(json_array_get(o, 0),
						 "text")),
	       "nothing pinned: see the warning below",
	       "  the headline points at the warning");
	is_str(json_string_value(json_object_get(json_array_get(o, 1),
						 "text")),
	       "warning: static mapping: refused", "  the warning follows");
	is_str(json_string_value(json_object_get(json_array_get(o, 2),
						 "kind")),
	       "evidence", "  990 decoded samples are thin evidence");
	json_decref(o);
	test_outcome_model_once(doc);
	is_str(cm_report_step_name(4294967291LL, buf, sizeof(buf)), "batch",
	       "step 4294967291 is batch");
	is_str(cm_report_step_name(4294967292LL, buf, sizeof(buf)), "extern",
	       "step 4294967292 is extern");
	is_str(cm_report_step_name(4294967290LL, buf, sizeof(buf)),
	       "interactive", "step 4294967290 is interactive");
	is_str(cm_report_step_name(3, buf, sizeof(buf)), "3", "step 3 is 3");
	ok(cm_report_step_parse("batch") == 4294967291LL &&
	   cm_report_step_parse("0") == 0 &&
	   cm_report_step_parse("4294967295") == 4294967295LL &&
	   cm_report_step_parse("4294967296") == -1 &&
	   cm_report_step_parse("-1") == -1 &&
	   cm_report_step_parse("1x") == -1 &&
	   cm_report_step_parse("") == -1, "step names and numbers parse");
	json_decref(doc);
}

/* Round ticks on the migrations' time axis; labels only where they fit. */
static void test_migration_axis(void)
{
	json_t *doc = make_result(4, 4, 1.0, "pack:1 core:4 pu:1", "0-3",
				  "app");	/* 70 s */
	json_t *mig = json_object_get(doc, "migrations");
	struct cm_report *r = NULL;
	char *buf = NULL, want[256] = "", *p;
	int rc, k;

	/* two moves of one thread 0.1 s apart: no room for the first's
	 * label before the second mark */
	json_array_append_new(mig, json_pack("{s:f, s:i, s:i, s:i}", "t", 3.6,
					     "thread", 1, "from", 1, "to", 2));
	ok(cm_report_parse(&r, doc, NULL) == 0, "a 70 s run parses");
	RENDER(buf, cm_render_migrations_svg(f_, r, NULL, 0, NULL));
	for (p = buf, k = 0; (p = strstr(p, "class=\"tick\"")); p++, k++) {
		char *gt = strchr(p, '>'), *lt = gt ? strchr(gt, '<') : NULL;

		if (lt && strlen(want) + (size_t)(lt - gt) < sizeof(want))
			strncat(want, gt + 1, (size_t)(lt - gt - 1)),
			strcat(want, "|");
	}
	is_str(want, "0|20|40|60|80 s|", "ticks at round seconds up to 80 s");
	ok(rc == 0 && count(buf, "class=\"move\"") == 1,
	   "one move label: the first would touch the next mark");
	free(buf);
	cm_report_free(r);
	json_decref(doc);
}

/* Threads on the topology carry their tid. */
static void test_topology_tids(void)
{
	json_t *doc = make_result(4, 2, 1.0, "pack:1 core:4 pu:1", "0-3",
				  "app");
	struct cm_report *r = NULL;
	char *buf = NULL;
	int rc;

	ok(cm_report_parse(&r, doc, NULL) == 0, "a 4-thread result parses");
	RENDER(buf, cm_render_topology_svg(f_, r, NULL, 0, NULL));
	ok(rc == 0 && strstr(buf, "<title>r1.t1 (tid 103)</title>"),
	   "a thread on its PU has its tid as a tooltip");
	free(buf);
	cm_report_free(r);
	json_decref(doc);
}

/* The job page's ranks across nodes: two nodes' rank_traffic, node names
 * escaped, the bytes within and between nodes, the pairs and the matrix. */
static void test_traffic_page(void)
{
	json_t *job = json_loads(
		"{\"job\": 9, \"results\": ["
		"{\"step\": 0, \"node\": \"a<1>\", \"document\": {"
		"\"rank_traffic\": {\"source\": \"ompi-monitoring\", "
		"\"ranks\": [0, 1], \"pairs\": [[0, 1, 10, 1], [1, 2, 4000, 2]]}}},"
		"{\"step\": 0, \"node\": \"b\", \"document\": {"
		"\"rank_traffic\": {\"source\": \"ompi-monitoring\", "
		"\"ranks\": [2], \"pairs\": [[2, 0, 6000, 3]]}}}]}", 0, NULL);
	char *buf = NULL;
	int rc;

	RENDER(buf, cm_render_job_html(f_, job, NULL, NULL));
	(void)rc;	/* the partial documents are not results */
	ok(strstr(buf, "<h2>MPI ranks across nodes, step 0</h2>") != NULL,
	   "the job page has the ranks across nodes");
	ok(strstr(buf, "<th>bytes within nodes</th><td>10 (0.1%)</td>") &&
	   strstr(buf, "<th>bytes between nodes</th><td>10000 (99.9%)</td>") &&
	   strstr(buf, "<td>10010 in 6 messages</td>"),
	   "bytes within and between nodes, the total");
	ok(strstr(buf, "<td>a&lt;1&gt;</td><td>2</td><td>10</td><td>4000</td>"
		   "<td>6000</td>") && !strstr(buf, "a<1>"),
	   "per node, the name escaped");
	ok(strstr(buf, "<tr><td>0, 2</td><td>a&lt;1&gt;, b</td><td>6000</td>") &&
	   strstr(buf, "<tr><td>1, 2</td>"), "the heaviest pairs across nodes");
	ok(count(buf, "class=\"cross\"") == 2, "the matrix marks the two "
	   "cells across nodes");
	ok(!strstr(buf, "ranks placed across nodes"),
	   "no placement asked for: none shown");
	free(buf);
	/* srun placed the ranks from the learned traffic (one node says) */
	json_object_set_new(json_object_get(json_object_get(json_array_get(
		json_object_get(job, "results"), 1), "document"),
		"rank_traffic"), "placement", json_pack("{s:s, s:i, s:i, s:i}",
		"distribution", "learned", "predicted_block", 9000,
		"predicted", 100, "runs", 2));
	RENDER(buf, cm_render_job_html(f_, job, NULL, NULL));
	ok(strstr(buf, "<tr><th>ranks placed across nodes</th><td>from the "
		   "learned traffic (between nodes predicted from earlier "
		   "runs: 9000 under block distribution, 100 so)</td></tr>")
	   != NULL, "the learned placement and its prediction beside the "
	   "bytes counted");
	free(buf);
	json_decref(job);
}

int main(void)
{
	test_traffic_page();
	test_topology_tids();
	test_migration_axis();
	test_heatmap_order();
	test_outcome();
	test_placement_notes();
	test_parse_errors();
	test_parse();
	test_escape();
	test_heatmap();
	test_topology();
	test_migrations();
	test_pages();
	return done_testing();
}
