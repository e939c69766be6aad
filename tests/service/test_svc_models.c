/* test_svc_models.c: the pure part of learned models (service/svc_models.h):
 * argv shapes, model keys, aggregation by thread identity, weights,
 * stability, last mapping, refusals. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svc_models.h"
#include "tap.h"

#define HASH "sha256:00000000000000000000000000000000000000000000000000000000000000aa"

/* A commap-result with threads (rank, index) in the given order, edges
 * over document indices, one final timeline entry. */
static json_t *result(const char *started, const char *threads_json,
		      const char *edges_json, const char *pus_json)
{
	json_error_t je;
	json_t *threads = json_loads(threads_json, 0, &je);
	json_t *edges = json_loads(edges_json, 0, &je);
	json_t *pus = json_loads(pus_json, 0, &je);

	return json_pack("{s:s, s:i, s:{s:n, s:n, s:s, s:s, s:i, s:s, s:s,"
			 " s:[s, s, s], s:i, s:i}, s:s, s:s, s:s,"
			 " s:{s:s, s:i, s:s}, s:o, s:o, s:[{s:f, s:o}]}",
		"format", "commap-result", "version", 1,
		"identity", "job", "step", "node", "n1", "user", "alice",
		"uid", 1000, "executable", "/opt/bin/pairs", "exe_hash", HASH,
		"argv", "./pairs", "-n", "4", "ranks", 1, "threads", 4,
		"mode", "dynamic", "started_at", started,
		"ended_at", "2030-01-01T00:10:00Z",
		"topology", "cpuset", "0-3", "pus", 4, "synthetic",
		"pack:1 core:2 pu:2",
		"threads", threads, "edges", edges,
		"timeline", "t", 0.5, "pu_of_thread", pus);
}

static const char T4[] = "[{\"rank\":0,\"index\":0},{\"rank\":0,\"index\":1},"
	"{\"rank\":0,\"index\":2},{\"rank\":0,\"index\":3}]";
/* The same identities in another document order: 3, 1, 0, 2. */
static const char T4_SHUFFLED[] = "[{\"rank\":0,\"index\":3},"
	"{\"rank\":0,\"index\":1},{\"rank\":0,\"index\":0},"
	"{\"rank\":0,\"index\":2}]";

/* Weight of the model edge between identities (0, a) and (0, b). */
static double weight(const json_t *model, long a, long b)
{
	const json_t *th = json_object_get(model, "threads");
	const json_t *e;
	long ia = -1, ib = -1;
	size_t k;

	for (k = 0; k < json_array_size(th); k++) {
		long idx = (long)json_integer_value(json_object_get(
				json_array_get(th, k), "index"));

		if (idx == a)
			ia = (long)k;
		if (idx == b)
			ib = (long)k;
	}
	json_array_foreach(json_object_get(model, "edges"), k, e) {
		long i = (long)json_integer_value(json_array_get(e, 0));
		long j = (long)json_integer_value(json_array_get(e, 1));

		if ((i == ia && j == ib) || (i == ib && j == ia))
			return json_number_value(json_array_get(e, 2));
	}
	return 0;
}

static long pu_of(const json_t *model, long index)
{
	const json_t *th = json_object_get(model, "threads");
	const json_t *pus = json_object_get(json_object_get(model,
				"last_mapping"), "pu_of_thread");
	size_t k;

	for (k = 0; k < json_array_size(th); k++)
		if (json_integer_value(json_object_get(json_array_get(th, k),
						       "index")) == index)
			return (long)json_integer_value(json_array_get(pus,
								       k));
	return -99;
}

static void test_argv_shape(void)
{
	static const struct {
		const char *argv, *exe, *want;
	} cases[] = {
		{ "[\"./bin/app\",\"-n\",\"16\",\"--size\",\"1024x768\"]", "x",
		  "app -n # --size #x#" },
		{ "[\"app2\",\"--ranks=128\",\"a1b22c333\"]", "x",
		  "app2 --ranks=# a#b#c#" },
		{ "[]", "/opt/x/stencil3d", "stencil3d" },
		{ "null", "/opt/x/stencil3d", "stencil3d" },
		{ "[\"\",\"7\"]", "/usr/bin/t", "t #" },
		{ "[\"/a/b/\",\"\"]", "x", " " },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *argv = json_loads(cases[i].argv, JSON_DECODE_ANY, NULL);
		char *s = svc_model_argv_shape(argv, cases[i].exe);

		is_str(s, cases[i].want, cases[i].argv);
		free(s);
		json_decref(argv);
	}
	{
		char *big = malloc(SVC_MODEL_ARGV_SHAPE_MAX + 2);
		json_t *argv;
		char *s;

		memset(big, 'a', SVC_MODEL_ARGV_SHAPE_MAX + 1);
		big[SVC_MODEL_ARGV_SHAPE_MAX + 1] = '\0';
		argv = json_pack("[s, s]", "app", big);
		errno = 0;
		s = svc_model_argv_shape(argv, "x");
		ok(!s && errno == E2BIG, "argv shape over the limit: E2BIG");
		free(s);
		free(big);
		json_decref(argv);
	}
}

static void test_key(void)
{
	struct cm_error e = { "" };
	json_t *r, *k;

	r = result("2030-01-01T00:00:00Z",
		   "[{\"rank\":0,\"index\":0},{\"rank\":1,\"index\":0},"
		   "{\"rank\":0,\"index\":1},{\"rank\":0,\"index\":2},"
		   "{\"rank\":1,\"index\":1}]", "[]", "[]");
	json_object_set_new(json_object_get(r, "identity"), "ranks",
			    json_integer(0));
	k = svc_model_key(r, &e);
	ok(k != NULL, "key of a result");
	is_str(json_string_value(json_object_get(k, "argv_shape")),
	       "pairs -n #", "key: argv_shape computed from argv");
	is_int(json_integer_value(json_object_get(k, "ranks")), 1,
	       "key: ranks 0 counts as 1");
	is_int(json_integer_value(json_object_get(k, "threads_per_rank")), 3,
	       "key: threads_per_rank computed as the most threads of a rank");
	json_decref(k);

	json_object_set_new(json_object_get(r, "identity"), "threads_per_rank",
			    json_integer(8));
	json_object_set_new(json_object_get(r, "identity"), "argv_shape",
			    json_string("pairs -x #"));
	k = svc_model_key(r, &e);
	is_int(json_integer_value(json_object_get(k, "threads_per_rank")), 8,
	       "key: the agent's threads_per_rank wins");
	is_str(json_string_value(json_object_get(k, "argv_shape")),
	       "pairs -x #", "key: the agent's argv_shape wins");
	json_decref(k);

	json_object_set_new(json_object_get(r, "identity"), "threads_per_rank",
			    json_string("8"));
	k = svc_model_key(r, &e);
	ok(!k && errno == EINVAL &&
	   strstr(e.text, "identity.threads_per_rank"),
	   "key: a malformed threads_per_rank is refused (%s)", e.text);
	json_object_del(json_object_get(r, "identity"), "threads_per_rank");

	json_object_set_new(json_object_get(r, "identity"), "exe_hash",
			    json_null());
	k = svc_model_key(r, &e);
	ok(!k && errno == ENOENT, "key: no exe_hash, no model");
	json_decref(r);

	r = result("2030-01-01T00:00:00Z",
		   "[{\"rank\":0,\"index\":0},{\"rank\":0,\"index\":1},"
		   "{\"rank\":0,\"index\":1}]", "[]", "[]");
	k = svc_model_key(r, &e);
	ok(!k && errno == EINVAL && strstr(e.text, "rank 0, index 1"),
	   "key: a repeated identity is refused (%s)", e.text);
	json_decref(r);

	r = result("2030-01-01T00:00:00Z", "[]", "[]", "[]");
	k = svc_model_key(r, &e);
	ok(!k && errno == ENOENT, "key: no threads, no model");
	json_decref(r);

	/* Without index: position among the rank's threads. */
	r = result("2030-01-01T00:00:00Z",
		   "[{\"rank\":1},{\"rank\":0},{\"rank\":1}]", "[]", "[]");
	k = svc_model_key(r, &e);
	is_int(json_integer_value(json_object_get(k, "threads_per_rank")), 2,
	       "key: missing indices are positions within the rank");
	json_decref(k);
	json_decref(r);
}

static void test_merge(void)
{
	struct cm_error e = { "" };
	json_t *r1, *r2, *m1, *m2, *copy, *m3, *bad;
	const char *now = "2030-01-02T00:00:00Z";

	/* Run 1: pairs (0,1) heavy, (2,3) half; placed 0..3 on PUs 3,2,1,0. */
	r1 = result("2030-01-01T00:00:00Z", T4,
		    "[[0,1,200.0],[2,3,100.0]]", "[3,2,1,0]");
	m1 = svc_model_merge(NULL, r1, 11, now, &e);
	ok(m1 != NULL, "first run makes a model (%s)", e.text);
	is_str(json_string_value(json_object_get(m1, "format")),
	       "commap-model", "format");
	is_int(json_integer_value(json_object_get(m1, "runs")), 1, "runs 1");
	ok(json_is_null(json_object_get(m1, "stability")),
	   "stability null after one run");
	is_double(weight(m1, 0, 1), 1.0, 1e-12, "run normalised: max is 1");
	is_double(weight(m1, 2, 3), 0.5, 1e-12, "run normalised: half");
	is_double(weight(m1, 0, 2), 0.0, 0, "no edge where none was seen");
	is_int(pu_of(m1, 0), 3, "last mapping: thread (0,0) on PU 3");
	is_int(pu_of(m1, 3), 0, "last mapping: thread (0,3) on PU 0");
	is_str(json_string_value(json_object_get(json_object_get(m1,
		"topology"), "synthetic")), "pack:1 core:2 pu:2",
	       "topology kept");
	is_str(json_string_value(json_object_get(m1, "app")), "pairs", "app");

	/* Run 2: the same identities in another order, other scale. Doc
	 * order 3,1,0,2: (0,1) is doc (2,1) with 50; (2,3) doc (3,0) 100. */
	r2 = result("2030-01-01T01:00:00Z", T4_SHUFFLED,
		    "[[1,2,50.0],[0,3,100.0]]", "[7,5,4,6]");
	copy = json_deep_copy(m1);
	m2 = svc_model_merge(m1, r2, 12, now, &e);
	ok(m2 != NULL, "second run merges (%s)", e.text);
	ok(json_equal(m1, copy), "the old model is not modified");
	is_int(json_integer_value(json_object_get(m2, "runs")), 2, "runs 2");
	is_double(weight(m2, 0, 1), 0.75, 1e-9,
		  "matched by identity: 0.5 * 1 + 0.5 * 0.5");
	is_double(weight(m2, 2, 3), 0.75, 1e-9,
		  "matched by identity: 0.5 * 0.5 + 0.5 * 1");
	is_double(json_real_value(json_object_get(m2, "stability")), 0.8,
		  1e-6, "stability: cosine of (1, .5) and (.5, 1)");
	is_int(json_array_size(json_object_get(m2, "stability_history")), 1,
	       "history has one value");
	is_int(pu_of(m2, 3), 7, "last mapping by identity: (0,3) on 7");
	is_int(pu_of(m2, 0), 4, "last mapping by identity: (0,0) on 4");
	is_int(pu_of(m2, 2), 6, "last mapping by identity: (0,2) on 6");

	/* The same run again: stability 1 against itself only if the model
	 * already looks like it; the model moves towards it. */
	m3 = svc_model_merge(m2, r2, 13, now, &e);
	is_double(weight(m3, 2, 3), 0.875, 1e-9, "third run: recent weighs more");
	json_decref(m3);

	/* An older run (spooled, late) feeds the matrix but not the
	 * mapping. */
	json_object_set_new(r1, "started_at",
			    json_string("2029-12-31T00:00:00.5Z"));
	m3 = svc_model_merge(m2, r1, 14, now, &e);
	is_int(json_integer_value(json_object_get(m3, "runs")), 3,
	       "late run counted");
	is_int(pu_of(m3, 3), 7, "late run does not replace the mapping");
	is_int(json_integer_value(json_object_get(json_object_get(m3,
		"last_mapping"), "result_id")), 12, "mapping still from 12");
	json_decref(m3);

	/* Shape or executable mismatch: another model, refused. */
	bad = json_deep_copy(r2);
	json_object_set_new(json_object_get(bad, "identity"),
			    "threads_per_rank", json_integer(8));
	m3 = svc_model_merge(m2, bad, 15, now, &e);
	ok(!m3 && errno == EINVAL && strstr(e.text, "key.threads_per_rank"),
	   "threads_per_rank mismatch refused (%s)", e.text);
	json_object_del(json_object_get(bad, "identity"), "threads_per_rank");
	json_object_set_new(json_object_get(bad, "identity"), "exe_hash",
			    json_string("sha256:ff"));
	m3 = svc_model_merge(m2, bad, 15, now, &e);
	ok(!m3 && errno == EINVAL && strstr(e.text, "key.exe_hash"),
	   "exe_hash mismatch refused (%s)", e.text);
	json_object_set_new(json_object_get(bad, "identity"), "exe_hash",
			    json_string(HASH));
	json_object_set_new(json_object_get(bad, "identity"), "ranks",
			    json_integer(2));
	m3 = svc_model_merge(m2, bad, 15, now, &e);
	ok(!m3 && errno == EINVAL && strstr(e.text, "key.ranks"),
	   "ranks mismatch refused (%s)", e.text);
	json_object_set_new(json_object_get(bad, "identity"), "ranks",
			    json_integer(1));
	json_array_set_new(json_object_get(json_object_get(bad, "identity"),
					   "argv"), 2, json_string("-v"));
	m3 = svc_model_merge(m2, bad, 15, now, &e);
	ok(!m3 && errno == EINVAL && strstr(e.text, "key.argv_shape"),
	   "argv shape mismatch refused (%s)", e.text);
	json_decref(bad);

	json_decref(copy);
	json_decref(m1);
	json_decref(m2);
	json_decref(r1);
	json_decref(r2);
}

static void test_weights_edges(void)
{
	struct cm_error e = { "" };
	json_t *a, *b, *m, *next;
	int k;

	/* Zero weights: nothing to learn, stability 0 against a pattern. */
	a = result("2030-01-01T00:00:00Z", T4, "[[0,1,1e300],[2,3,5e299]]",
		   "[0,1,2,3]");
	m = svc_model_merge(NULL, a, 1, "2030-01-02T00:00:00Z", &e);
	is_double(weight(m, 0, 1), 1.0, 1e-12, "huge weights normalise");
	b = result("2030-01-01T01:00:00Z", T4, "[[0,1,0.0]]", "[0,1,2,3]");
	next = svc_model_merge(m, b, 2, "2030-01-02T00:00:00Z", &e);
	is_double(json_real_value(json_object_get(next, "stability")), 0, 0,
		  "a run with zero weights: stability 0");
	is_double(weight(next, 0, 1), 0.5, 1e-12, "zero run halves the model");
	json_decref(next);
	json_decref(b);

	/* Another pattern for many runs: the old edges decay and vanish, and
	 * an identity that no longer appears is dropped. */
	b = result("2030-01-01T01:00:00Z",
		   "[{\"rank\":0,\"index\":0},{\"rank\":0,\"index\":2}]",
		   "[[0,1,3.0]]", "[1,0]");
	/* Same shape as the model: the agent says 4 threads per rank. */
	json_object_set_new(json_object_get(b, "identity"), "threads_per_rank",
			    json_integer(4));
	for (k = 0; k < 25; k++) {
		next = svc_model_merge(m, b, 3 + k, "2030-01-02T00:00:00Z", &e);
		json_decref(m);
		m = next;
	}
	is_int(json_integer_value(json_object_get(m, "runs")), 26, "26 runs");
	is_double(weight(m, 0, 2), 1.0, 1e-5, "new pattern learnt (weights kept to 6 digits)");
	is_int(json_array_size(json_object_get(m, "edges")), 1,
	       "old edges below epsilon dropped");
	is_int(json_array_size(json_object_get(m, "threads")), 2,
	       "identities neither in the last run nor on an edge dropped");
	is_int(json_array_size(json_object_get(m, "stability_history")),
	       SVC_MODEL_HISTORY, "history bounded");
	is_double(json_real_value(json_object_get(m, "stability")), 1, 1e-9,
		  "a stable application: stability 1");
	is_int(pu_of(m, 2), 0, "mapping of the 2-thread run");
	json_decref(m);
	json_decref(a);
	json_decref(b);

	/* One thread, no edges. */
	a = result("2030-01-01T00:00:00Z", "[{\"rank\":0,\"index\":0}]", "[]",
		   "[5]");
	m = svc_model_merge(NULL, a, 1, "2030-01-02T00:00:00Z", &e);
	ok(m && json_array_size(json_object_get(m, "threads")) == 1 &&
	   json_array_size(json_object_get(m, "edges")) == 0,
	   "one thread: a model with no edges");
	is_int(pu_of(m, 0), 5, "one thread: its PU");
	next = svc_model_merge(m, a, 2, "2030-01-02T00:00:00Z", &e);
	is_double(json_real_value(json_object_get(next, "stability")), 1, 0,
		  "both empty: stability 1");
	json_decref(next);
	json_decref(m);
	json_decref(a);

	/* A timeline shorter than the threads: unplaced threads are -1. */
	a = result("2030-01-01T00:00:00Z", T4, "[[0,1,1]]", "[2]");
	m = svc_model_merge(NULL, a, 1, "2030-01-02T00:00:00Z", &e);
	is_int(pu_of(m, 0), 2, "short timeline: placed thread");
	is_int(pu_of(m, 3), -1, "short timeline: others -1");
	json_decref(m);
	json_decref(a);
}

/* An idle main thread (identity 0) that first touched its workers'
 * buffers has a little weight to each of them: under a tenth of the mean
 * thread's, its edges are not kept, so the learned mapping leaves it
 * unpinned (8 workers on 8 PUs, not 9 threads).  A light thread that does
 * communicate (identity 9, a fifth of the mean) keeps its edge. */
static void test_negligible_thread(void)
{
	static const char T10[] = "[{\"index\":0},{\"index\":1},"
		"{\"index\":2},{\"index\":3},{\"index\":4},{\"index\":5},"
		"{\"index\":6},{\"index\":7},{\"index\":8},{\"index\":9}]";
	static const char E[] = "[[1,2,1.0],[3,4,1.0],[5,6,1.0],[7,8,1.0],"
		"[0,1,0.002],[0,2,0.002],[0,3,0.002],[0,4,0.002],[0,5,0.002],"
		"[0,6,0.002],[0,7,0.002],[0,8,0.002],[1,9,0.2]]";
	struct cm_error e = { "" };
	json_t *r, *m, *next;
	double main_w = 0;
	long k;

	r = result("2030-01-01T00:00:00Z", T10, E,
		   "[0,1,2,3,4,5,6,7,8,1]");
	m = svc_model_merge(NULL, r, 1, "2030-01-02T00:00:00Z", &e);
	ok(m != NULL, "a run with an idle main thread: a model (%s)", e.text);
	for (k = 1; k <= 8; k++)
		main_w += weight(m, 0, k);
	is_double(main_w, 0, 0, "the main thread (2% of the mean) has no "
		  "edge in the model");
	is_int(json_array_size(json_object_get(m, "threads")), 10,
	       "  it stays among the model's threads (the latest run's)");
	is_double(weight(m, 1, 2), 1.0, 1e-12, "  the pairs keep their weight");
	is_double(weight(m, 1, 9), 0.2, 1e-12,
		  "a light thread (a fifth of the mean) keeps its edge");
	next = svc_model_merge(m, r, 2, "2030-01-02T00:00:00Z", &e);
	main_w = 0;
	for (k = 1; k <= 8; k++)
		main_w += weight(next, 0, k);
	is_double(main_w, 0, 0, "  a second run: still none (no build-up)");
	is_int(json_array_size(json_object_get(next, "edges")), 5,
	       "  the model's edges: the 4 pairs and the light thread's");
	json_decref(next);
	json_decref(m);
	json_decref(r);
}

/* The service folds stored texts (svc_model_run_read), not jansson
 * documents: a text in another layout (blanks, key order, escaped keys,
 * unknown members holding brackets and quotes, exponents, a null rank)
 * must give the same key and model as the parsed document. */
static const char LAYOUT[] =
	"{ \"unknown\" : {\"a\": [\"]}\\\"[{\", {\"b\": [[]]}]},\n"
	"  \"edges\" : [ [0, 1, 2e2], [2,3,1.0E2] ],\n"
	"  \"\\u0074hreads\" : [ {\"tid\": 9, \"index\": 0, \"rank\": null},"
	" {\"index\":1},{\"index\":2,\"rank\":0},{\"rank\":0} ],\n"
	"  \"timeline\": [{\"pu_of_thread\": [9, 9, 9, 9]},"
	" {\"t\": 1, \"pu_of_thread\": [3, 2, -1, 0], \"x\": \"}\"}],\n"
	"  \"identity\": {\"job\": null, \"step\": null, \"node\": \"n1\","
	" \"user\": \"alice\", \"uid\": 1000, \"executable\": \"/opt/bin/pairs\","
	" \"exe_hash\": \"" HASH "\", \"argv\": [\"./pairs\", \"-n\", \"4\"],"
	" \"ranks\": 1, \"threads\": 4},\n"
	"  \"started_at\": \"2030-01-01T00:00:00Z\","
	" \"topology\": {\"cpuset\": \"0-3\", \"pus\": 4,"
	" \"synthetic\": \"pack:1 core:2 pu:2\"} }\n";

static void test_text_reader(void)
{
	static const char *const bad[] = {
		"", " ", "[]", "{", "{\"threads\": [}", "{} x", "{\"a\" 1}",
		"{\"edges\": [[0, 1, 2]", "\"threads\"", "{\"a\": \"open}",
	};
	struct cm_error e = { "" };
	json_t *doc = json_loads(LAYOUT, 0, NULL), *k1, *k2, *m1, *m2;
	struct svc_model_run *run;
	char deep[300];
	size_t i;

	ok(doc != NULL, "the layout text is JSON");
	run = svc_model_run_read(LAYOUT, strlen(LAYOUT), &e);
	ok(run != NULL, "the text reader reads it (%s)", e.text);
	if (!doc || !run) {
		json_decref(doc);
		svc_model_run_free(run);
		return;
	}
	k1 = svc_model_key(doc, &e);
	k2 = svc_model_run_key(run, &e);
	ok(k1 && k2 && json_equal(k1, k2), "  the same key as the document");
	m1 = svc_model_merge(NULL, doc, 5, "2030-01-02T00:00:00Z", &e);
	{
		struct svc_model_acc *acc = svc_model_acc_new(NULL, &e);

		m2 = acc && svc_model_acc_fold(acc, run, 5,
					       "2030-01-02T00:00:00Z",
					       &e) == 0 ?
		     svc_model_acc_doc(acc, &e) : NULL;
		svc_model_acc_free(acc);
	}
	ok(m1 && m2 && json_equal(m1, m2), "  the same model as the document");
	is_double(weight(m2, 0, 1), 1.0, 1e-9, "  weights with exponents (2e2)");
	is_double(weight(m2, 2, 3), 0.5, 1e-9, "  ... (1.0E2)");
	is_int(pu_of(m2, 0), 3, "  the last timeline entry's placement");
	is_int(pu_of(m2, 2), -1, "  ... -1 kept");
	is_int(pu_of(m2, 3), 0, "  a thread without index is placed by position");
	json_decref(k1);
	json_decref(k2);
	json_decref(m1);
	json_decref(m2);
	svc_model_run_free(run);
	json_decref(doc);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run = svc_model_run_read(bad[i], strlen(bad[i]), &e);
		ok(!run && errno == EINVAL && strstr(e.text, "not a JSON"),
		   "text %zu refused: '%s' (%s)", i, bad[i], e.text);
		svc_model_run_free(run);
	}
	/* Integers are read in place: a fraction is not an index (so the
	 * thread takes its position, 0, which repeats), the int64 extremes
	 * are. */
	{
		static const char real_index[] =
			"{\"identity\": {\"exe_hash\": \"" HASH "\", \"uid\": 1,"
			" \"executable\": \"/x\"}, \"threads\": [{\"index\": 1.0},"
			" {\"index\": 0}], \"edges\": []}";
		static const char extremes[] =
			"{\"identity\": {\"exe_hash\": \"" HASH "\", \"uid\": 1,"
			" \"user\": \"u\", \"executable\": \"/x\"},"
			" \"threads\": [{\"index\": 9223372036854775807},"
			" {\"index\": -9223372036854775808}],"
			" \"edges\": [[0, 1, 1]]}";
		struct svc_model_acc *acc = svc_model_acc_new(NULL, &e);
		json_t *k, *m;

		run = svc_model_run_read(real_index, strlen(real_index), &e);
		k = run ? svc_model_run_key(run, &e) : NULL;
		ok(!k && errno == EINVAL && strstr(e.text, "repeated"),
		   "index 1.0 is not an integer: position 0, repeated (%s)",
		   e.text);
		json_decref(k);
		svc_model_run_free(run);
		run = svc_model_run_read(extremes, strlen(extremes), &e);
		m = run && acc && svc_model_acc_fold(acc, run, 1,
				"2030-01-02T00:00:00Z", &e) == 0 ?
		    svc_model_acc_doc(acc, &e) : NULL;
		ok(m && json_integer_value(json_object_get(json_array_get(
			json_object_get(m, "threads"), 0), "index")) ==
		   INT64_MIN && json_integer_value(json_object_get(
			json_array_get(json_object_get(m, "threads"), 1),
			"index")) == INT64_MAX,
		   "indices at the int64 extremes (%s)", e.text);
		json_decref(m);
		svc_model_run_free(run);
		svc_model_acc_free(acc);
	}
	/* Weights are read without strtod when they are short decimals:
	 * the same model as jansson's reading, whatever the form. */
	{
		static const char *const w[] = {
			"0.1", "123.456789012345", "1234567890.12345", "7",
			"0.000000000000001", "99999999999999.9", "-0",
			"12345678901234567890.5", "0.30000000000000004",
			"1.5e-3", "250.0", "0.0",
		};
		const char *at = strstr(LAYOUT, "2e2");
		char text[sizeof(LAYOUT) + 64];
		size_t same = 0;

		for (i = 0; at && i < sizeof(w) / sizeof(w[0]); i++) {
			struct svc_model_acc *acc = svc_model_acc_new(NULL, &e);

			snprintf(text, sizeof(text), "%.*s%s%s",
				 (int)(at - LAYOUT), LAYOUT, w[i], at + 3);
			doc = json_loads(text, 0, NULL);
			run = svc_model_run_read(text, strlen(text), &e);
			m1 = doc ? svc_model_merge(NULL, doc, 5,
					"2030-01-02T00:00:00Z", &e) : NULL;
			m2 = run && acc && svc_model_acc_fold(acc, run, 5,
					"2030-01-02T00:00:00Z", &e) == 0 ?
			     svc_model_acc_doc(acc, &e) : NULL;
			if (m1 && m2 && json_equal(m1, m2))
				same++;
			else
				diag("weight %s: the models differ", w[i]);
			json_decref(m1);
			json_decref(m2);
			json_decref(doc);
			svc_model_run_free(run);
			svc_model_acc_free(acc);
		}
		is_int((int)same, (int)(sizeof(w) / sizeof(w[0])),
		       "decimal weights read in place give jansson's model");
	}
	/* Nesting deeper than the reader's limit is refused, not recursed. */
	memset(deep, '[', sizeof(deep));
	memcpy(deep, "{\"x\":", 5);
	run = svc_model_run_read(deep, sizeof(deep), &e);
	ok(!run && errno == EINVAL, "deep nesting refused (%s)", e.text);
	svc_model_run_free(run);
}

/* Stored text of a model, as svc_models.c writes it. */
static json_t *stored(const json_t *m)
{
	char *t = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS |
			     JSON_REAL_PRECISION(9));
	json_t *back = t ? json_loads(t, 0, NULL) : NULL;

	free(t);
	return back;
}

/* The worker folds a batch of runs in one accumulator and stores the
 * model once: the same model as storing it after every run. */
static void test_batch_equals_runs(void)
{
	const char *texts[4][3] = {
		{ T4, "[[0,1,200.0],[2,3,100.0]]", "[3,2,1,0]" },
		{ T4_SHUFFLED, "[[1,2,50.0],[0,3,100.0]]", "[7,5,4,6]" },
		{ T4, "[[0,2,7.5],[1,3,1e-9]]", "[0,1,2,3]" },
		{ T4_SHUFFLED, "[[0,1,3.0]]", "[1,1,1,1]" },
	};
	const char *started[4] = {
		"2030-01-01T00:00:00Z", "2030-01-01T01:00:00Z",
		"2029-12-31T00:00:00Z", "2030-01-01T02:00:00Z",
	};
	struct cm_error e = { "" };
	json_t *seq = NULL, *first, *batch = NULL, *doc;
	struct svc_model_acc *acc;
	int k, folded = 0;

	/* one run stored, then three folded in a batch on top of it */
	doc = result(started[0], texts[0][0], texts[0][1], texts[0][2]);
	first = svc_model_merge(NULL, doc, 1, "2030-01-02T00:00:00Z", &e);
	json_decref(doc);
	seq = stored(first);
	acc = svc_model_acc_new(seq, &e);
	ok(acc != NULL, "an accumulator from a stored model (%s)", e.text);
	for (k = 1; acc && k < 4; k++) {
		char *text;
		struct svc_model_run *run;
		json_t *next;

		doc = result(started[k], texts[k][0], texts[k][1],
			     texts[k][2]);
		next = svc_model_merge(seq, doc, k + 1,
				       "2030-01-02T00:00:00Z", &e);
		json_decref(seq);
		seq = stored(next);
		json_decref(next);
		text = json_dumps(doc, JSON_COMPACT);
		run = text ? svc_model_run_read(text, strlen(text), &e) : NULL;
		folded += run && svc_model_acc_fold(acc, run, k + 1,
						    "2030-01-02T00:00:00Z",
						    &e) == 0;
		svc_model_run_free(run);
		free(text);
		json_decref(doc);
	}
	is_int(folded, 3, "three runs folded in one accumulator");
	doc = acc ? svc_model_acc_doc(acc, &e) : NULL;
	batch = doc ? stored(doc) : NULL;	/* reals stored to 9 digits */
	json_decref(doc);
	ok(batch && seq && json_equal(batch, seq),
	   "  the same stored model as storing after each run");
	if (batch && seq && !json_equal(batch, seq)) {
		char *a = json_dumps(batch, JSON_SORT_KEYS | JSON_COMPACT);
		char *b = json_dumps(seq, JSON_SORT_KEYS | JSON_COMPACT);

		diag("batch %s", a);
		diag("runs  %s", b);
		free(a);
		free(b);
	}
	is_int(json_integer_value(json_object_get(batch, "runs")), 4,
	       "  4 runs");
	is_int(pu_of(batch, 0), 1, "  the latest run's placement (a late run "
	       "in between does not replace it)");
	json_decref(batch);
	json_decref(seq);
	json_decref(first);
	svc_model_acc_free(acc);

	acc = svc_model_acc_new(NULL, &e);
	batch = acc ? svc_model_acc_doc(acc, &e) : (json_t *)1;
	ok(!batch && errno == ENOENT, "no document before the first run");
	svc_model_acc_free(acc);
}

int main(void)
{
	test_argv_shape();
	test_key();
	test_merge();
	test_weights_edges();
	test_negligible_thread();
	test_text_reader();
	test_batch_equals_runs();
	return done_testing();
}
