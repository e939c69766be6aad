/* test_model_fetch.c: the agent's side of learned models
 * (nodeagent/model_fetch.h): the request's percent-encoding, reading
 * commap-model documents (good and malformed), identity lookup, the
 * distance between a run and its model, and a fetch from a service that
 * is not there.  The fetch from a real service is in t0720-learned.sh. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_fetch.h"
#include "tap.h"

static void query(void)
{
	struct cm_model_key k = { .exe_hash = "sha256:00ff", .ranks = 2,
				  .argv_shape = "app -n # a&b=c/d~e",
				  .threads_per_rank = 0, .uid = -1 };
	char out[512], small[40];

	ok(cm_model_query(&k, out, sizeof(out)) == 0, "query built");
	is_str(out, "/v1/models?exe_hash=sha256%3A00ff&ranks=2&argv_shape="
	       "app%20-n%20%23%20a%26b%3Dc%2Fd~e",
	       "values percent-encoded, threads_per_rank and uid omitted");
	k.threads_per_rank = 9;
	k.uid = 1000;
	k.ranks = 0;
	cm_model_query(&k, out, sizeof(out));
	ok(strstr(out, "ranks=1&") && strstr(out, "&threads_per_rank=9") &&
	   strstr(out, "&uid=1000"), "ranks 0 sent as 1; tpr and uid added");
	errno = 0;
	ok(cm_model_query(&k, small, sizeof(small)) == -1 &&
	   errno == ENAMETOOLONG, "too small a buffer: ENAMETOOLONG");
}

static const char *good =
	"{\"format\":\"commap-model\",\"version\":1,\"id\":7,\"runs\":3,"
	"\"key\":{\"exe_hash\":\"sha256:00\",\"ranks\":1,"
	"\"threads_per_rank\":5,\"argv_shape\":\"pairs -p #\"},"
	"\"threads\":[{\"rank\":0,\"index\":0},{\"rank\":0,\"index\":1},"
	"{\"rank\":0,\"index\":2},{\"rank\":0,\"index\":3},"
	"{\"rank\":0,\"index\":4}],"
	"\"edges\":[[1,2,1.0],[3,4,0.5]],"
	"\"topology\":{\"synthetic\":\"pack:1 core:2 pu:2\",\"cpuset\":\"0-3\","
	"\"pus\":4},"
	"\"last_mapping\":{\"pu_of_thread\":[-1,0,1,2,3]},\"extra\":1}";

static void parse_good(void)
{
	struct cm_model m;
	struct cm_error err;

	ok(cm_model_parse(good, &m, &err) == 0, "a model parses");
	ok(m.id == 7 && m.runs == 3 && m.threads_per_rank == 5 && m.n == 5,
	   "id, runs, threads per rank, identities");
	is_double(cm_matrix_get(m.m, 1, 2), 1.0, 1e-12, "edge 1-2");
	is_double(cm_matrix_get(m.m, 4, 3), 0.5, 1e-12, "edge 3-4");
	ok(m.last_os && m.last_os[0] == -1 && m.last_os[4] == 3,
	   "last mapping read");
	is_str(m.cpuset, "0-3", "topology cpuset");
	is_int(cm_model_find(&m, 0, 3), 3, "find (0, 3)");
	is_int(cm_model_find(&m, 0, 5), -1, "find (0, 5): not in the model");
	is_int(cm_model_find(&m, 1, 0), -1, "find (1, 0): another rank");
	cm_model_free(&m);
}

static void parse_bad(void)
{
	static const struct {
		const char *doc, *want;
	} t[] = {
		{ "", "not JSON" },
		{ "[]", "format" },
		{ "{\"format\":\"commap-result\",\"version\":1}", "format" },
		{ "{\"format\":\"commap-model\",\"version\":2,\"id\":1}",
		  "version" },
		{ "{\"format\":\"commap-model\",\"version\":1}", "id" },
		{ "{\"format\":\"commap-model\",\"version\":1,\"id\":1,"
		  "\"threads\":{},\"edges\":[]}", "threads" },
		{ "{\"format\":\"commap-model\",\"version\":1,\"id\":1,"
		  "\"threads\":[{\"rank\":0}],\"edges\":[]}", "threads[0]" },
		{ "{\"format\":\"commap-model\",\"version\":1,\"id\":1,"
		  "\"threads\":[{\"rank\":-1,\"index\":0}],\"edges\":[]}",
		  "threads[0]" },
		{ "{\"format\":\"commap-model\",\"version\":1,\"id\":1,"
		  "\"threads\":[{\"rank\":0,\"index\":0}],\"edges\":[[0,1,1]]}",
		  "edges[0]" },
		{ "{\"format\":\"commap-model\",\"version\":1,\"id\":1,"
		  "\"threads\":[{\"rank\":0,\"index\":0},"
		  "{\"rank\":0,\"index\":1}],"
		  "\"edges\":[[0,1,-1]]}", "edges[0]" },
		{ "{\"format\":\"commap-model\",\"version\":1,\"id\":1,"
		  "\"threads\":[{\"rank\":0,\"index\":0},"
		  "{\"rank\":0,\"index\":1}],"
		  "\"edges\":[[0,0,1]]}", "edges[0]" },
		{ "{\"format\":\"commap-model\",\"version\":1,\"id\":1,"
		  "\"threads\":[],\"edges\":\"x\"}", "edges" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct cm_model m;
		struct cm_error err = { 0 };
		int rc = cm_model_parse(t[i].doc, &m, &err);

		ok(rc == -1 && strstr(err.text, t[i].want) && m.n == 0 &&
		   !m.m, "malformed %zu: refused naming '%s' (%s)", i,
		   t[i].want, err.text);
	}
	{
		struct cm_model m;
		struct cm_error err;
		const char *empty =
			"{\"format\":\"commap-model\",\"version\":1,"
			"\"id\":3,\"threads\":[],\"edges\":[],"
			"\"last_mapping\":{\"pu_of_thread\":[1]}}";

		ok(cm_model_parse(empty, &m, &err) == 0 && m.n == 0 &&
		   !m.last_os, "no identities: parsed, a last mapping of the "
		   "wrong length ignored");
		cm_model_free(&m);
	}
}

static void distance(void)
{
	struct cm_model m;
	struct cm_error err;
	struct cm_matrix *d = cm_matrix_new(5);
	/* the run's threads in another order: run thread r is identity
	 * (0, idx[r]) */
	int rank[5] = { 0, 0, 0, 0, 0 }, idx[5] = { 0, 2, 1, 4, 3 };

	cm_model_parse(good, &m, &err);
	cm_matrix_add(d, 1, 2, 10);
	cm_matrix_add(d, 3, 4, 5);
	is_double(cm_model_distance(&m, d, rank, idx, 5), 0, 1e-9,
		  "same pattern, other order, other scale: distance 0");
	cm_matrix_free(d);
	d = cm_matrix_new(5);
	cm_matrix_add(d, 1, 3, 1);
	is_double(cm_model_distance(&m, d, rank, idx, 5), 1, 1e-9,
		  "disjoint pattern: distance 1");
	is_double(cm_model_distance(&m, d, rank, idx, 0), 1, 1e-9,
		  "no threads: distance 1");
	cm_matrix_add(d, 1, 2, 1);
	is_double(cm_model_distance(&m, d, rank, idx, 5),
		  1 - (1.0 / (sqrt(2) * sqrt(1.25))), 1e-9,
		  "half the pattern: 1 - cosine");
	rank[3] = rank[4] = 1;	/* identities the model does not have */
	cm_matrix_free(d);
	d = cm_matrix_new(5);
	cm_matrix_add(d, 1, 2, 1);
	cm_matrix_add(d, 3, 4, 100);
	is_double(cm_model_distance(&m, d, rank, idx, 5), 0, 1e-9,
		  "only identities both know count");
	cm_matrix_free(d);
	cm_model_free(&m);
}

static void fetch_nothing_there(void)
{
	struct cm_deliver_opts o = { .service_url = "http://127.0.0.1:1",
				     .timeout_ms = 300 };
	struct cm_model_key k = { .exe_hash = "sha256:00", .ranks = 1,
				  .argv_shape = "x", .uid = -1 };
	struct cm_model m;
	struct cm_error err = { 0 };

	ok(cm_model_fetch(&o, &k, NULL, &m, &err) == -1 && err.text[0] &&
	   m.n == 0,
	   "no service there: -1 with a reason (%s)", err.text);
	o.service_url = NULL;
	ok(cm_model_fetch(&o, &k, NULL, &m, &err) == -1 && errno == EINVAL,
	   "no service configured: -1/EINVAL");
}

int main(void)
{
	query();
	parse_good();
	parse_bad();
	distance();
	fetch_nothing_there();
	return done_testing();
}
