/* test_agent_result.c: the result document the agent writes is a valid
 * commap-result v1 for the service's own validator and for the matrix
 * reader, and carries what was recorded. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agent.h"
#include "agent_result.h"
#include "commap/matrix_io.h"
#include "result_validate.h"
#include "tap.h"

static void fill(struct cm_agent_result *r)
{
	struct cm_result_thread th[4] = {
		{ 0, 0, 100, 100, 0.5 }, { 0, 1, 101, 100, 1.25 },
		{ 1, 0, 200, 200, -1 }, { 1, 1, 201, 200, 2 },
	};
	char *argv[] = { "./app", "-n", "4" };
	int map1[4] = { -1, 0, 1, -1 }, map2[4] = { 0, 0, 1, 1 };

	cm_agent_result_init(r);
	r->job = 42;
	r->step = 0;
	snprintf(r->node, sizeof(r->node), "vm");
	snprintf(r->user, sizeof(r->user), "alice");
	r->uid = 1000;
	snprintf(r->executable, sizeof(r->executable), "/home/alice/app");
	cm_agent_result_set_argv(r, 3, argv);
	r->ranks = 2;
	r->mode = "dynamic";
	r->backend = "sample";
	r->cpuset = strdup("0-1");
	r->pus = 2;
	r->synthetic = strdup("pack:1 core:2 pu:1");
	cm_agent_result_set_threads(r, th, 4);
	cm_agent_result_add_mapping(r, 0.2, map1, 4, 12.0, "initial");
	cm_agent_result_add_mapping(r, 0.45, map2, 4, 3.5, "pattern");
	cm_agent_result_add_migration(r, 0.2, 1, -1, 0);
	cm_agent_result_add_migration(r, 0.45, 0, -1, 0);
	cm_agent_result_add_migration(r, 0.45, 3, 1, 1);
	r->stats.samples = 1000;
	r->stats.decoded = 990;
	r->stats.pins = 3;
	r->stats.intervals = 4;
	r->stats.sample_period_us = 1000;
	r->stats.nbudget = 2;
	r->stats.budget[0] = (struct cm_result_spend){ 0, "learn", 1190, 2.1,
						       0.004, 1800, 0.03 };
	r->stats.budget[1] = (struct cm_result_spend){ 3.5, "watch", 8925,
						       40, 0.01, 4500, 0.004 };
	r->stats.drops_on = 1;
	r->stats.drop_spin = 12;
	r->stats.drop_stack = 40;
	r->ended_at.tv_sec += 70;
}

static void test_valid(void)
{
	struct cm_agent_result r;
	struct cm_matrix *m = cm_matrix_new(4), *back = NULL;
	struct svc_result_ident id;
	struct cm_error err;
	json_t *doc;
	char *text;

	fill(&r);
	cm_matrix_add(m, 0, 1, 153);
	cm_matrix_add(m, 2, 3, 7.5);
	text = cm_agent_result_json(&r, m, &err);
	ok(text != NULL, "document built");
	ok(text && text[strlen(text) - 1] == '\n', "ends with a newline");
	ok(svc_result_parse(text, strlen(text), 1 << 20, &doc, &id, &err) ==
	   0, "the service's validator accepts it (%s)", err.text);
	is_int(id.job, 42, "job");
	is_str(id.mode, "dynamic", "mode");
	is_int(id.n_threads, 4, "4 threads");
	is_int(id.n_edges, 2, "2 edges");
	is_int(id.n_timeline, 2, "2 mappings");
	is_int(id.n_migrations, 1, "1 migration (the 2 first placements are not)");
	is_double(id.final_cost, 3.5, 1e-9, "final cost = last mapping's");
	is_str(json_string_value(json_object_get(json_object_get(doc,
		"identity"), "user")), "alice", "user");
	is_int(json_array_size(json_object_get(json_object_get(doc,
		"identity"), "argv")), 3, "argv kept");
	ok(json_is_null(json_object_get(json_array_get(json_object_get(doc,
		"timeline"), 0), "pu_of_thread")) == 0, "timeline has PUs");
	is_int(json_integer_value(json_array_get(json_object_get(
		json_array_get(json_object_get(doc, "timeline"), 0),
		"pu_of_thread"), 0)), -1, "unplaced thread is -1");
	{
		json_t *st = json_object_get(doc, "stats");
		json_t *b = json_object_get(st, "sample_budget");

		ok(json_array_size(b) == 2 &&
		   !strcmp(json_string_value(json_object_get(
			json_array_get(b, 0), "phase")), "learn") &&
		   json_integer_value(json_object_get(json_array_get(b, 1),
			"samples")) == 4500 &&
		   json_real_value(json_object_get(json_array_get(b, 1),
			"app_cpu_s")) == 40,
		   "the sampling budget's phases, as spent");
		ok(json_integer_value(json_object_get(json_object_get(st,
			"dropped"), "spin")) == 12 &&
		   json_integer_value(json_object_get(json_object_get(st,
			"dropped"), "stack")) == 40,
		   "samples dropped, by kind");
	}
	json_decref(doc);
	ok(cm_matrix_parse(text, strlen(text), CM_MATRIX_FORMAT_AUTO, &back,
			   &err) == 0, "commap map reads it as a matrix (%s)",
	   err.text);
	ok(back && cm_matrix_nthreads(back) == 4 &&
	   cm_matrix_get(back, 0, 1) == 153 &&
	   cm_matrix_get(back, 2, 3) == 7.5, "same matrix back");
	cm_matrix_free(back);
	free(text);

	/* A static mapping has no cost: the key is left out, and the
	 * service still accepts the document. */
	{
		int map3[4] = { 0, 0, 1, 1 };

		cm_agent_result_add_mapping(&r, 0.5, map3, 4, -1, "static");
		text = cm_agent_result_json(&r, m, &err);
		ok(text && svc_result_parse(text, strlen(text), 1 << 20, &doc,
					    &id, &err) == 0,
		   "a mapping without a cost is accepted (%s)", err.text);
		ok(text && !json_object_get(json_array_get(json_object_get(doc,
			"timeline"), 2), "cost"), "and has no cost key");
		if (text)
			json_decref(doc);
		free(text);
	}
	cm_matrix_free(m);
	cm_agent_result_free(&r);
}

/* Off mode / nothing seen: no threads, no matrix, still valid. */
static void test_empty(void)
{
	struct cm_agent_result r;
	struct svc_result_ident id;
	struct cm_error err;
	json_t *doc;
	char *text;

	cm_agent_result_init(&r);
	snprintf(r.node, sizeof(r.node), "n");
	snprintf(r.user, sizeof(r.user), "u");
	r.cpuset = strdup("0");
	r.pus = 1;
	r.mode = "off";
	text = cm_agent_result_json(&r, NULL, &err);
	ok(text && svc_result_parse(text, strlen(text), 1 << 20, &doc, &id,
				    &err) == 0,
	   "empty result is valid (%s)", err.text);
	ok(id.job == -1 && id.step == -1, "job and step null outside Slurm");
	ok(strstr(text, "\"executable\":\"unknown\"") != NULL,
	   "unknown executable named so");
	json_decref(doc);
	free(text);
	cm_agent_result_free(&r);
}

/* Edges and migrations naming threads beyond the list are dropped. */
static void test_beyond(void)
{
	struct cm_agent_result r;
	struct cm_matrix *m = cm_matrix_new(6);
	struct svc_result_ident id;
	struct cm_error err;
	json_t *doc;
	char *text;

	fill(&r);
	cm_matrix_add(m, 0, 5, 1);
	cm_matrix_add(m, 1, 2, 1);
	cm_agent_result_add_migration(&r, 1, 9, 0, 1);
	for (int i = 0; i < CM_RESULT_MAX_WARNINGS + 3; i++)
		cm_agent_result_warn(&r, "perf not permitted");
	text = cm_agent_result_json(&r, m, &err);
	ok(text && svc_result_parse(text, strlen(text), 1 << 20, &doc, &id,
				    &err) == 0, "still valid (%s)", err.text);
	is_int(id.n_edges, 1, "edge to thread 5 of 4 dropped");
	is_int(id.n_migrations, 1, "migration of thread 9 dropped");
	is_int(json_array_size(json_object_get(doc, "warnings")),
	       CM_RESULT_MAX_WARNINGS, "warnings bounded");
	json_decref(doc);
	free(text);
	cm_matrix_free(m);
	cm_agent_result_free(&r);
}

static void test_time(void)
{
	struct timespec ts = { 1795356000, 123456789 };
	char buf[40];

	cm_result_format_time(&ts, buf, sizeof(buf));
	is_str(buf, "2026-11-22T14:00:00.123Z", "UTC time with ms");
	ok(svc_timestamp_valid(buf, NULL), "the service accepts the format");
}

static void test_write_file(void)
{
	char dir[] = "/tmp/test_agent_result.XXXXXX", path[128];
	struct cm_error err;
	char buf[32] = "";
	FILE *f;

	ok(mkdtemp(dir) != NULL, "temp dir");
	snprintf(path, sizeof(path), "%s/r.json", dir);
	ok(cm_result_write_file(path, "{}\n", &err) == 0, "written");
	f = fopen(path, "r");
	ok(f && fgets(buf, sizeof(buf), f) && strcmp(buf, "{}\n") == 0,
	   "content");
	if (f)
		fclose(f);
	unlink(path);
	rmdir(dir);
	snprintf(path, sizeof(path), "%s/r.json", dir);
	ok(cm_result_write_file(path, "{}\n", &err) == -1 &&
	   errno == ENOENT && strstr(err.text, path), "missing dir: error "
	   "names the file (%s)", err.text);
}

/* Static files: a mapping (commap map --format json) or a matrix. */
static void test_static(void)
{
	char dir[] = "/tmp/test_agent_static.XXXXXX", p[128];
	struct agent_static st;
	struct cm_error err;
	FILE *f;

	ok(mkdtemp(dir) != NULL, "temp dir");
	snprintf(p, sizeof(p), "%s/map.json", dir);
	f = fopen(p, "w");
	fputs("{\"topology\":\"x\",\"pu_of_thread\":[1,0,1,0],\"cost\":1}", f);
	fclose(f);
	ok(agent_static_load(p, &st, &err) == 0 && st.os_pu && st.n == 4 &&
	   st.os_pu[0] == 1 && st.os_pu[1] == 0 && !st.matrix,
	   "mapping file read (%s)", err.text);
	agent_static_free(&st);
	f = fopen(p, "w");
	fputs("{\"pu_of_thread\":[1,-2]}", f);
	fclose(f);
	ok(agent_static_load(p, &st, &err) == -1 &&
	   strstr(err.text, "pu_of_thread[1]"), "negative PU refused (%s)",
	   err.text);
	f = fopen(p, "w");
	fputs("0,5,0\n5,0,1\n0,1,0\n", f);
	fclose(f);
	ok(agent_static_load(p, &st, &err) == 0 && st.matrix && !st.os_pu &&
	   st.n == 3, "CSV matrix read (%s)", err.text);
	agent_static_free(&st);
	f = fopen(p, "w");
	fputs("0,5\n1\n", f);
	fclose(f);
	ok(agent_static_load(p, &st, &err) == -1 && strstr(err.text, p),
	   "malformed matrix: error names the file (%s)", err.text);
	f = fopen(p, "w");
	fputs("0,1\nroot:secret-hash:1\n", f);
	fclose(f);
	ok(agent_static_load(p, &st, &err) == -1 && strstr(err.text, p) &&
	   strstr(err.text, "not a commap matrix or mapping (line 2)") &&
	   !strstr(err.text, "secret"),
	   "a file that is no matrix: the line, never its content (%s)",
	   err.text);
	unlink(p);
	/* EACCES for missing and unreadable alike (user_file.h) */
	ok(agent_static_load(p, &st, &err) == -1 && errno == EACCES &&
	   strstr(err.text, "no such file, or not readable"),
	   "missing file: EACCES, named (%s)", err.text);
	rmdir(dir);
}

int main(void)
{
	test_valid();
	test_empty();
	test_beyond();
	test_time();
	test_write_file();
	test_static();
	return done_testing();
}
