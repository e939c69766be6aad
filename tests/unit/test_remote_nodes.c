/* test_remote_nodes.c: 'commap report JOB' across nodes
 * (cli/remote_nodes.c): job documents as GET /v1/jobs/{job} answers them,
 * the lines printed for each. */
#define _GNU_SOURCE	/* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "remote_nodes.h"
#include "tap.h"

/* The summary of TEXT (a job document) into *out (malloc'd); its rc. */
static int summary(const char *text, char **out)
{
	json_error_t e;
	json_t *job = json_loads(text, 0, &e);
	size_t len = 0;
	FILE *f;
	int rc;

	*out = NULL;
	if (!job) {
		diag("bad test document: %s", e.text);
		return -9;
	}
	f = open_memstream(out, &len);
	rc = remote_nodes_summary(f, job);
	fclose(f);
	json_decref(job);
	return rc;
}

/* Does TEXT hold a line whose blank-separated words start with WORDS? */
static int has_line(const char *text, const char *words)
{
	char want[256], *w, *save = NULL;
	const char *line = text;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		char got[256], *g, *gsave = NULL;
		int same = 1;

		snprintf(got, sizeof(got), "%.*s",
			 (int)(end ? end - line : (long)strlen(line)), line);
		snprintf(want, sizeof(want), "%s", words);
		g = strtok_r(got, " ", &gsave);
		for (w = strtok_r(want, " ", &save); w && same;
		     w = strtok_r(NULL, " ", &save)) {
			same = g && !strcmp(g, w);
			g = strtok_r(NULL, " ", &gsave);
		}
		if (same)
			return 1;
		line = end ? end + 1 : NULL;
	}
	return 0;
}

static const char *three_nodes =
	"{\"job\": 41, \"results\": ["
	"{\"step\": 0, \"node\": \"node1\", \"ranks\": 2, \"threads\": 6,"
	" \"edges\": 5, \"migrations\": 4, \"final_cost\": 12.5,"
	" \"document\": {\"topology\": {\"cpuset\": \"0-3\"}}},"
	"{\"step\": 0, \"node\": \"node2\", \"ranks\": 2, \"threads\": 6,"
	" \"edges\": 3, \"migrations\": 2, \"final_cost\": 8},"
	"{\"step\": 0, \"node\": \"node3\", \"ranks\": 1, \"threads\": 3,"
	" \"edges\": 0, \"migrations\": 0},"
	"{\"step\": 4294967291, \"node\": \"node1\", \"ranks\": 1,"
	" \"threads\": 1, \"edges\": 0, \"migrations\": 0}]}";

static void test_three_nodes(void)
{
	char *out;
	int rc = summary(three_nodes, &out);

	is_int(rc, 1, "3 nodes: printed");
	ok(out && has_line(out, "job 41 across 3 nodes: 4 results"),
	   "the heading names the job, its nodes and results");
	ok(out && has_line(out, "NODE STEP RANKS THREADS EDGES PINS COST CPUS"),
	   "the columns");
	ok(out && has_line(out, "node1 0 2 6 5 4 12.5 0-3"),
	   "node1's row: counts, final cost, the step's CPUs there");
	ok(out && has_line(out, "node2 0 2 6 3 2 8 -"),
	   "node2's row: no document, CPUs unknown");
	ok(out && has_line(out, "node3 0 1 3 0 0 - -"),
	   "node3's row: no final cost");
	ok(out && has_line(out, "node1 batch 1 1 0 0"),
	   "the batch step by its name");
	ok(out && has_line(out, "total 6 16 8 6"), "the totals");
	ok(out && strstr(out, "traffic between nodes is not measured"),
	   "says the matrices hold no traffic between nodes");
	if (out && tap_failed_)
		diag("output:\n%s", out);
	free(out);
}

static void test_one_node(void)
{
	static const char *cases[] = {
		"{\"job\": 1, \"results\": [{\"step\": 0, \"node\": \"a\"},"
		" {\"step\": 1, \"node\": \"a\"}]}",
		"{\"job\": 1, \"results\": []}",
		"{\"job\": 1}",
		"{\"id\": 3, \"node\": \"a\", \"document\": {}}",
		"{\"job\": 1, \"results\": [{\"step\": 0}, {\"step\": 1}]}",
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out;
		int rc = summary(cases[i], &out);

		ok(rc == 0 && out && !*out,
		   "one node or none (case %zu): nothing printed", i);
		free(out);
	}
}

static void test_odd_rows(void)
{
	char *out;
	/* Fields of the wrong type or missing are shown as 0 or '-', and a
	 * long node name is cut to its column. */
	int rc = summary("{\"job\": \"x\", \"results\": ["
			 "{\"node\": \"a-very-long-node-name-indeed\","
			 " \"ranks\": \"2\", \"final_cost\": null},"
			 "{\"node\": \"\", \"step\": 1}, 7]}", &out);

	is_int(rc, 1, "odd rows: still printed");
	ok(out && has_line(out, "job 0 across 2 nodes: 3 results"),
	   "a bad job id is 0; an empty name and a non-object are one node");
	ok(out && has_line(out, "a-very-long-node 0 0 0 0 0 - -"),
	   "wrong types are 0 or '-'; the name cut to 16 characters");
	free(out);
}

/* A ring of 6 ranks, 2 per node, and rank 0 sending to rank 9 of a node
 * without a result; step 1 without rank_traffic. */
#define TRAFFIC_ROW(node, ranks, pairs) \
	"{\"step\": 0, \"node\": \"" node "\", \"ranks\": 2, " \
	"\"document\": {\"rank_traffic\": {\"source\": " \
	"\"ompi-monitoring\", \"ranks\": " ranks ", \"pairs\": " pairs "}}}"
static const char *ring =
	"{\"job\": 50, \"results\": ["
	TRAFFIC_ROW("n1", "[0, 1]", "[[0, 1, 100, 1], [1, 2, 200, 2], "
		    "[0, 9, 7, 1], [1, 0, 0, 0]]") ","
	TRAFFIC_ROW("n2", "[2, 3]", "[[2, 3, 100, 1], [3, 4, 300, 3]]") ","
	TRAFFIC_ROW("n3", "[4, 5]", "[[4, 5, 100, 1], [5, 0, 50, 1], "
		    "[5, 0, \"x\", 1], [\"4\", 0, 1, 1]]") ","
	"{\"step\": 1, \"node\": \"n1\", \"document\": {}},"
	"{\"step\": 2, \"node\": \"n2\", \"document\": {\"rank_traffic\": "
	"{\"source\": \"ompi-monitoring\", \"ranks\": [], \"pairs\": []}}}]}";

static void test_traffic(void)
{
	char *out;
	int rc = summary(ring, &out);

	is_int(rc, 1, "ring: printed");
	ok(out && has_line(out, "MPI ranks across nodes, step 0 "
			   "(ompi-monitoring): 6 ranks on 3 nodes"),
	   "the traffic's heading: step, source, ranks, nodes");
	ok(out && has_line(out, "bytes within nodes: 300 (35.0%)"),
	   "bytes within nodes: the three pairs inside a node");
	ok(out && has_line(out, "bytes between nodes: 550 (64.2%)"),
	   "bytes between nodes: 1->2, 3->4, 5->0");
	ok(out && has_line(out, "bytes to ranks of nodes without a result: 7"),
	   "bytes to a rank no result names");
	ok(out && has_line(out, "bytes total: 857 in 10 messages"),
	   "the totals (malformed pairs left out)");
	ok(out && has_line(out, "n1 2 100 200 50") &&
	   has_line(out, "n2 2 100 300 200") && has_line(out, "n3 2 100 50 300"),
	   "per node: ranks, within, to and from the others");
	ok(out && has_line(out, "ranks 3 and 4 (n2, n3): 300") &&
	   strstr(out, "ranks 3 and 4") < strstr(out, "ranks 1 and 2 (n1, n2): "
						    "200") &&
	   strstr(out, "ranks 1 and 2") < strstr(out, "ranks 0 and 5 (n1, n3): "
						    "50"),
	   "the heaviest pairs across nodes, heaviest first");
	ok(out && has_line(out, "FROM\\TO 0 1 2 3 4 5") &&
	   has_line(out, "0 . 100 . . . . n1") &&
	   has_line(out, "5 50 . . . . . n3"),
	   "the matrix of the ranks with a node, by node");
	ok(out && !strstr(out, "not measured"), "no 'not measured' line");
	ok(out && !strstr(out, "step 2"), "a step where no rank was counted "
	   "is not shown");
	if (out && tap_failed_)
		diag("output:\n%s", out);
	free(out);
}

int main(void)
{
	test_three_nodes();
	test_traffic();
	test_one_node();
	test_odd_rows();
	return done_testing();
}
