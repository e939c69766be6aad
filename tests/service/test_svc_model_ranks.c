/* test_svc_model_ranks.c: the rank matrix across nodes from node results
 * (svc_model_ranks_build): a step's node results joined, incomplete or
 * inconsistent steps left out, steps averaged, filters by rank count and
 * command line. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "svc_model_ranks.h"
#include "tap.h"

/* A node result of job/step on node holding ranks with pairs (a JSON
 * text for each). */
static json_t *node_doc(int job, int step, const char *node,
			const char *shape, const char *ranks, const char *pairs)
{
	char text[2048];
	json_t *d;

	snprintf(text, sizeof(text),
		 "{\"format\": \"commap-result\", \"version\": 1,"
		 " \"identity\": {\"job\": %d, \"step\": %d, \"node\": \"%s\","
		 " \"argv_shape\": \"%s\"},"
		 " \"rank_traffic\": {\"source\": \"ompi-monitoring\","
		 " \"ranks\": %s, \"pairs\": %s}}", job, step, node, shape,
		 ranks, pairs);
	d = json_loads(text, 0, NULL);
	if (!d)
		diag("bad test document: %s", text);
	return d;
}

/* Job 10: 6 ranks on 3 nodes by block, heavy partners r and r + 3 (on
 * other nodes), each direction scale * 1000 bytes, light 0 <-> 1. */
static void add_pairs_job(json_t *docs, int job, int scale)
{
	char p[3][256];

	snprintf(p[0], sizeof(p[0]), "[[0, 3, %d, 10], [1, 4, %d, 10],"
		 " [0, 1, 5, 1], [1, 0, 5, 1]]", 1000 * scale, 1000 * scale);
	snprintf(p[1], sizeof(p[1]), "[[2, 5, %d, 10], [3, 0, %d, 10]]",
		 1000 * scale, 1000 * scale);
	snprintf(p[2], sizeof(p[2]), "[[4, 1, %d, 10], [5, 2, %d, 10]]",
		 1000 * scale, 1000 * scale);
	json_array_append_new(docs, node_doc(job, 0, "n1", "app", "[0, 1]",
					     p[0]));
	json_array_append_new(docs, node_doc(job, 0, "n2", "app", "[2, 3]",
					     p[1]));
	json_array_append_new(docs, node_doc(job, 0, "n3", "app", "[4, 5]",
					     p[2]));
}

static json_int_t pair_bytes(const json_t *out, int i, int j)
{
	size_t k;
	const json_t *p;

	json_array_foreach(json_object_get(out, "pairs"), k, p)
		if (json_integer_value(json_array_get(p, 0)) == i &&
		    json_integer_value(json_array_get(p, 1)) == j)
			return json_integer_value(json_array_get(p, 2));
	return -1;
}

static json_int_t run_field(const json_t *out, int k, const char *f)
{
	return json_integer_value(json_object_get(json_array_get(
		json_object_get(out, "runs"), (size_t)k), f));
}

static void test_one_step(void)
{
	json_t *docs = json_array(), *out;
	struct svc_ranks_query q = { 0 };
	struct cm_error e = { "" };

	add_pairs_job(docs, 10, 1);
	out = svc_model_ranks_build(docs, &q, &e);
	ok(out != NULL, "one step: a matrix (%s)", out ? "" : e.text);
	is_int((int)json_integer_value(json_object_get(out, "ranks")), 6,
	       "one step: 6 ranks");
	is_int((int)pair_bytes(out, 0, 3), 2000, "0-3: bytes both ways");
	is_int((int)pair_bytes(out, 2, 5), 2000, "2-5: sent by two nodes, summed");
	is_int((int)pair_bytes(out, 0, 1), 10, "0-1: 5 + 5 bytes");
	is_int((int)pair_bytes(out, 3, 0), -1, "pairs are written i < j");
	is_int((int)json_array_size(json_object_get(out, "pairs")), 4,
	       "one step: 4 pairs");
	is_int((int)run_field(out, 0, "bytes_total"), 6010,
	       "the step's bytes in all");
	is_int((int)run_field(out, 0, "bytes_between_nodes"), 6000,
	       "the step's bytes between nodes (0-1 is inside n1)");
	is_int((int)run_field(out, 0, "nodes"), 3, "the step's 3 nodes");
	ok(json_is_null(json_object_get(json_array_get(json_object_get(out,
		"runs"), 0), "placement")), "no placement recorded: null");
	json_decref(out);
	/* a node's result says srun placed the ranks from the learned
	 * matrix: the run carries it */
	json_object_set_new(json_object_get(json_array_get(docs, 1),
					    "rank_traffic"), "placement",
			    json_pack("{s:s, s:i, s:i, s:i}", "distribution",
				      "learned", "predicted_block", 6000,
				      "predicted", 0, "runs", 1));
	out = svc_model_ranks_build(docs, &q, &e);
	json_decref(docs);
	is_str(json_string_value(json_object_get(json_object_get(
		json_array_get(json_object_get(out, "runs"), 0), "placement"),
		"distribution")), "learned",
	       "the placement of a node's result is the run's");
	json_decref(out);
}

/* Two complete steps are averaged; a step missing a node's result, one
 * with a rank listed twice and one whose pair names another node's rank
 * as its source are left out. */
static void test_average_and_incomplete(void)
{
	json_t *docs = json_array(), *out;
	struct svc_ranks_query q = { 0 };
	struct cm_error e = { "" };

	/* newest first: the incomplete job 13, job 12 twice, job 11 */
	json_array_append_new(docs, node_doc(13, 0, "n1", "app", "[0, 1]",
					     "[[0, 3, 999999, 1]]"));
	json_array_append_new(docs, node_doc(14, 0, "n1", "app", "[0, 1]",
					     "[]"));
	json_array_append_new(docs, node_doc(14, 0, "n2", "app", "[1, 2]",
					     "[]"));
	json_array_append_new(docs, node_doc(15, 0, "n1", "app", "[0]",
					     "[[1, 0, 999999, 1]]"));
	json_array_append_new(docs, node_doc(15, 0, "n2", "app", "[1]",
					     "[]"));
	add_pairs_job(docs, 12, 3);
	add_pairs_job(docs, 11, 1);
	out = svc_model_ranks_build(docs, &q, &e);
	ok(out != NULL, "averaged: a matrix (%s)", out ? "" : e.text);
	is_int((int)json_array_size(json_object_get(out, "runs")), 2,
	       "averaged: jobs 12 and 11 only");
	is_int((int)run_field(out, 0, "job"), 12, "newest step first");
	is_int((int)pair_bytes(out, 0, 3), 4000, "0-3: (6000 + 2000) / 2");
	json_decref(out);
	json_decref(docs);
}

static void test_filters(void)
{
	json_t *docs = json_array(), *out;
	struct svc_ranks_query q = { 0 };
	struct cm_error e = { "" };

	json_array_append_new(docs, node_doc(20, 0, "n1", "other", "[0, 1]",
					     "[[0, 1, 7, 1]]"));
	json_array_append_new(docs, node_doc(21, 1, "n1", "app", "[0, 1]",
					     "[[0, 1, 8, 1]]"));
	json_array_append_new(docs, node_doc(21, 1, "n2", "app", "[2, 3]",
					     "[[2, 3, 8, 1]]"));
	add_pairs_job(docs, 22, 1);
	out = svc_model_ranks_build(docs, &q, &e);
	is_int((int)json_integer_value(json_object_get(out, "ranks")), 2,
	       "no filter: the newest complete step's 2 ranks");
	json_decref(out);
	q.argv_shape = "app";
	out = svc_model_ranks_build(docs, &q, &e);
	is_int((int)json_integer_value(json_object_get(out, "ranks")), 4,
	       "argv_shape app: the 4-rank step (step 1 of job 21)");
	is_int((int)json_array_size(json_object_get(out, "runs")), 1,
	       "argv_shape app, 4 ranks: one step");
	json_decref(out);
	q.ranks = 6;
	out = svc_model_ranks_build(docs, &q, &e);
	is_int((int)run_field(out, 0, "job"), 22, "ranks=6: job 22");
	json_decref(out);
	q.ranks = 5;
	errno = 0;
	out = svc_model_ranks_build(docs, &q, &e);
	ok(!out && errno == ENOENT, "ranks=5: none (ENOENT)");
	diag("%s", e.text);
	json_decref(docs);
}

static void test_no_traffic(void)
{
	json_t *docs = json_array();
	struct svc_ranks_query q = { 0 };
	struct cm_error e = { "" };

	json_array_append_new(docs, json_pack("{s:s, s:{s:i, s:i}}", "format",
					      "commap-result", "identity",
					      "job", 1, "step", 0));
	ok(!svc_model_ranks_build(docs, &q, &e) && errno == ENOENT,
	   "results without rank_traffic: none");
	json_decref(docs);
}

int main(void)
{
	test_one_step();
	test_average_and_incomplete();
	test_filters();
	test_no_traffic();
	return done_testing();
}
