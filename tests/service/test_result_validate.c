/* test_result_validate.c: the upload validator (service/result_validate.c)
 * on a valid result and on one defect at a time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"
#include "tap.h"

static const char valid_doc[] =
	"{\"format\": \"commap-result\", \"version\": 1,"
	" \"identity\": {\"job\": 42, \"step\": 0, \"node\": \"vm\","
	"  \"user\": \"alice\", \"uid\": 1000,"
	"  \"executable\": \"/home/alice/app\", \"exe_hash\": \"sha256:ab\","
	"  \"argv\": [\"./app\", \"-n\", \"8\"], \"ranks\": 2, \"threads\": 3},"
	" \"mode\": \"dynamic\", \"backend\": \"sample\","
	" \"started_at\": \"2026-11-22T14:00:00.25Z\","
	" \"ended_at\": \"2026-11-22T14:01:10Z\","
	" \"topology\": {\"cpuset\": \"0-15\", \"pus\": 16,"
	"  \"synthetic\": \"pack:1 l3:2 core:4 pu:2\", \"dry_run\": false},"
	" \"threads\": [{\"rank\": 0, \"index\": 0, \"tid\": 1234, \"pid\": 1234,"
	"  \"cpu_s\": 12.5}, {\"rank\": 0, \"index\": 1, \"tid\": 1235},"
	"  {\"rank\": null, \"index\": 2, \"tid\": 1236}],"
	" \"edges\": [[0, 1, 153.0], [1, 2, 0], [0, 2, 7]],"
	" \"timeline\": [{\"t\": 0.2, \"pu_of_thread\": [0, 1, -1],"
	"  \"cost\": 12.0, \"reason\": \"initial\"},"
	"  {\"t\": 1, \"pu_of_thread\": [2, 3, 4], \"cost\": 9.5}],"
	" \"migrations\": [{\"t\": 0.2, \"thread\": 1, \"from\": 3, \"to\": 1}],"
	" \"stats\": {\"samples\": 19960, \"lost\": 0, \"mapping_ms\": 0.8,"
	"  \"future_counter\": \"x\"},"
	" \"rank_traffic\": {\"source\": \"ompi-monitoring\", \"ranks\": [0, 1],"
	"  \"pairs\": [[0, 1, 4096, 2], [1, 0, 100, 1], [0, 5, 0, 0]]},"
	" \"unknown_extra\": {\"ignored\": true}}";

/* Set (or delete, value NULL) the member at a dotted path such as
 * "edges.3.2" in doc, then expect the validator to refuse it with want. */
struct edit {
	const char *path;
	const char *value;
	const char *want;
};

static const struct edit edits[] = {
	{ "format", "\"commap-matrix\"", "format: expected \"commap-result\"" },
	{ "format", NULL, "format: missing" },
	{ "version", "2", "version: not supported" },
	{ "version", "\"1\"", "version: not supported" },
	{ "identity", NULL, "identity: missing" },
	{ "identity", "[]", "identity: expected an object" },
	{ "identity.job", "-1", "identity.job: -1 is out of range" },
	{ "identity.job", "4294967296", "identity.job: 4294967296 is out of range" },
	{ "identity.job", "\"42\"", "identity.job: expected an integer" },
	{ "identity.job", "null", "identity.step: must be null exactly when" },
	{ "identity.step", NULL, "identity.step: missing" },
	{ "identity.step", "1.5", "identity.step: expected an integer" },
	{ "identity.node", "\"\"", "identity.node: is empty" },
	{ "identity.node", "7", "identity.node: expected a string" },
	{ "identity.node", "\"a\\u0000b\"", "identity.node: contains a NUL" },
	{ "identity.user", NULL, "identity.user: missing" },
	{ "identity.uid", "-5", "identity.uid: -5 is out of range" },
	{ "identity.uid", "4294967295", "identity.uid: 4294967295 is out of range" },
	{ "identity.uid", "true", "identity.uid: expected an integer" },
	{ "identity.executable", "\"/usr/bin/\"", "identity.executable: ends with '/'" },
	{ "identity.exe_hash", "5", "identity.exe_hash: expected a string" },
	{ "identity.argv", "\"./app\"", "identity.argv: expected an array" },
	{ "identity.argv.1", "3", "identity.argv[1]: expected a string" },
	{ "identity.ranks", "-1", "identity.ranks: -1 is out of range" },
	{ "identity.threads", "70000", "identity.threads: 70000 is out of range" },
	{ "mode", "\"fast\"", "mode: 'fast' is not one of" },
	{ "mode", NULL, "mode: missing" },
	{ "backend", "[]", "backend: expected a string" },
	{ "started_at", "\"2026-11-22 14:00:00Z\"", "started_at: '2026-11-22 14:00:00Z' is not a UTC time" },
	{ "started_at", "\"2026-13-22T14:00:00Z\"", "started_at:" },
	{ "started_at", "\"2026-11-22T14:00:00+01:00\"", "started_at:" },
	{ "started_at", "\"2026-11-22T14:00:00.Z\"", "started_at:" },
	{ "ended_at", "\"2026-11-22T13:59:59Z\"", "ended_at: before started_at" },
	{ "ended_at", NULL, "ended_at: missing" },
	{ "topology", "null", "topology: expected an object" },
	{ "topology.cpuset", NULL, "topology.cpuset: missing" },
	{ "topology.pus", "0", "topology.pus: 0 is out of range" },
	{ "topology.dry_run", "\"no\"", "topology.dry_run: expected true or false" },
	{ "threads", "{}", "threads: expected an array" },
	{ "threads.1", "[]", "threads[1]: expected an object" },
	{ "threads.1.index", NULL, "threads[1].index: missing" },
	{ "threads.2.tid", "-3", "threads[2].tid: -3 is out of range" },
	{ "threads.0.rank", "\"0\"", "threads[0].rank: expected an integer" },
	{ "threads.0.cpu_s", "-0.5", "threads[0].cpu_s: is negative" },
	{ "threads.0.pid", "1.0", "threads[0].pid: expected an integer" },
	{ "edges", NULL, "edges: missing" },
	{ "edges.1", "[1, 2]", "edges[1]: expected [i, j, weight]" },
	{ "edges.1", "[1, 2, 3, 4]", "edges[1]: expected [i, j, weight]" },
	{ "edges.1", "{}", "edges[1]: expected [i, j, weight]" },
	{ "edges.2.2", "-1.5", "edges[2][2]: weight is negative" },
	{ "edges.2.2", "\"7\"", "edges[2][2]: weight is not a number" },
	{ "edges.0.0", "-1", "edges[0][0]: -1 is out of range [0, 2]" },
	{ "edges.0.1", "3", "edges[0][1]: 3 is out of range [0, 2]" },
	{ "edges.0.1", "0", "edges[0][1]: 0 is not greater than i (0)" },
	{ "edges.1.0", "2", "edges[1][1]: 2 is not greater than i (2)" },
	{ "edges.0.0", "0.0", "edges[0][0]: expected an integer" },
	{ "timeline", "7", "timeline: expected an array" },
	{ "timeline.0.t", NULL, "timeline[0].t: missing" },
	{ "timeline.0.t", "-1", "timeline[0].t: is negative" },
	{ "timeline.1.pu_of_thread", "[0, 1, 2, 3]", "timeline[1].pu_of_thread: 4 entries for 3 threads" },
	{ "timeline.1.pu_of_thread.2", "-2", "timeline[1].pu_of_thread[2]: -2 is out of range" },
	{ "timeline.1.cost", "-4", "timeline[1].cost: is negative" },
	{ "timeline.0.reason", "1", "timeline[0].reason: expected a string" },
	{ "migrations.0", "5", "migrations[0]: expected an object" },
	{ "migrations.0.thread", "3", "migrations[0].thread: 3 is out of range [0, 2]" },
	{ "migrations.0.from", "-2", "migrations[0].from: -2 is out of range" },
	{ "migrations.0.to", NULL, "migrations[0].to: missing" },
	{ "stats", NULL, "stats: missing" },
	{ "stats.samples", "-1", "stats.samples: is negative" },
	{ "stats.lost", "\"0\"", "stats.lost: expected a number" },
	{ "rank_traffic", "[]", "rank_traffic: expected an object" },
	{ "rank_traffic.source", "\"\"", "rank_traffic.source: expected a name" },
	{ "rank_traffic.ranks", NULL, "rank_traffic.ranks: expected an array" },
	{ "rank_traffic.pairs", "{}", "rank_traffic.pairs: expected an array" },
	{ "rank_traffic.ranks.1", "1048576", "rank_traffic.ranks[1]: expected a rank in [0, 1048576)" },
	{ "rank_traffic.ranks.1", "0", "rank_traffic.ranks: rank 0 twice" },
	{ "rank_traffic.ranks", "[]", "rank_traffic.pairs: 3 pairs for 0 ranks" },
	{ "rank_traffic.pairs.0", "[0, 1, 2]", "rank_traffic.pairs[0]: expected [src, dst, bytes, messages]" },
	{ "rank_traffic.pairs.0.0", "7", "rank_traffic.pairs[0][0]: not one of rank_traffic.ranks" },
	{ "rank_traffic.pairs.0.1", "-1", "rank_traffic.pairs[0][1]: expected a rank" },
	{ "rank_traffic.pairs.0.2", "-5", "rank_traffic.pairs[0][2]: expected an integer >= 0" },
	{ "rank_traffic.pairs.0.3", "1.5", "rank_traffic.pairs[0][3]: expected an integer >= 0" },
	{ "rank_traffic.pairs.2", "[0, 1, 1, 1]", "rank_traffic.pairs: (0, 1) twice" },
};

static json_t *load_valid(void)
{
	json_t *doc = json_loads(valid_doc, 0, NULL);

	if (!doc) {
		diag("the valid document does not parse");
		exit(1);
	}
	return doc;
}

/* Apply one edit; 0 on success. */
static int apply(json_t *doc, const char *path, const char *value)
{
	char buf[128], *save = NULL, *tok, *next;
	json_t *cur = doc, *v = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	tok = strtok_r(buf, ".", &save);
	while (tok && (next = strtok_r(NULL, ".", &save))) {
		cur = json_is_array(cur) ?
		      json_array_get(cur, strtoul(tok, NULL, 10)) :
		      json_object_get(cur, tok);
		tok = next;
	}
	if (!cur || !tok)
		return -1;
	if (value) {
		v = json_loads(value, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (!v)
			return -1;
	}
	if (json_is_array(cur)) {
		size_t i = strtoul(tok, NULL, 10);

		return v ? json_array_set_new(cur, i, v) :
			   json_array_remove(cur, i);
	}
	return v ? json_object_set_new(cur, tok, v) : json_object_del(cur, tok);
}

static void test_valid(void)
{
	struct svc_result_ident id;
	struct cm_error e = { "" };
	json_t *doc = load_valid();

	ok(svc_result_validate(doc, &id, &e) == 0, "the example is valid (%s)",
	   e.text);
	is_int(id.job, 42, "job");
	is_int(id.step, 0, "step");
	is_str(id.node, "vm", "node");
	is_int(id.uid, 1000, "uid");
	is_str(id.app, "app", "app is the executable's basename");
	is_str(id.exe_hash, "sha256:ab", "exe_hash");
	is_str(id.started_at, "2026-11-22T14:00:00Z", "started_at without the fraction");
	is_int(id.n_threads, 3, "three threads");
	is_int(id.n_edges, 3, "three edges");
	is_int(id.n_timeline, 2, "two timeline entries");
	is_int(id.n_migrations, 1, "one migration");
	is_double(id.final_cost, 9.5, 0, "final cost from the last timeline entry");

	/* Optional members may be absent; null job/step outside Slurm. */
	apply(doc, "identity.job", "null");
	apply(doc, "identity.step", "null");
	apply(doc, "identity.exe_hash", NULL);
	apply(doc, "identity.argv", NULL);
	apply(doc, "backend", NULL);
	apply(doc, "topology.synthetic", NULL);
	apply(doc, "topology.dry_run", NULL);
	apply(doc, "timeline.1.cost", NULL);
	apply(doc, "identity.executable", "\"app\"");
	ok(svc_result_validate(doc, &id, &e) == 0 && id.job == -1 &&
	   id.step == -1 && !id.exe_hash && !id.backend && id.final_cost == -1,
	   "null job/step and absent optional members are valid (%s)", e.text);
	is_str(id.app, "app", "a bare executable name is its own app");
	json_decref(doc);

	doc = json_pack("{s:s, s:i, s:{s:n, s:n, s:s, s:s, s:i, s:s, s:i, s:i},"
			" s:s, s:s, s:s, s:{s:s, s:i}, s:[], s:[], s:[], s:[],"
			" s:{}}",
			"format", "commap-result", "version", 1, "identity",
			"job", "step", "node", "n", "user", "u", "uid", 0,
			"executable", "/x", "ranks", 0, "threads", 0,
			"mode", "off", "started_at", "2026-01-01T00:00:00Z",
			"ended_at", "2026-01-01T00:00:00Z", "topology",
			"cpuset", "0", "pus", 1, "threads", "edges",
			"timeline", "migrations", "stats");
	ok(svc_result_validate(doc, NULL, &e) == 0,
	   "an empty result (no threads) is valid (%s)", e.text);
	apply(doc, "edges", "[[0, 1, 1]]");
	ok(svc_result_validate(doc, NULL, &e) < 0 &&
	   strstr(e.text, "edges: 1 edges but only 0 threads"),
	   "edges without threads: %s", e.text);
	json_decref(doc);
}

static void test_edits(void)
{
	size_t i;

	for (i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		const struct edit *t = &edits[i];
		struct cm_error e = { "" };
		json_t *doc = load_valid();
		int rc;

		if (apply(doc, t->path, t->value) < 0) {
			ok(0, "edit %s applies", t->path);
			json_decref(doc);
			continue;
		}
		errno = 0;
		rc = svc_result_validate(doc, NULL, &e);
		ok(rc == -1 && errno == EINVAL && strstr(e.text, t->want),
		   "%s = %s refused", t->path, t->value ? t->value : "(deleted)");
		if (!strstr(e.text, t->want))
			diag("  message '%s', want '%s'", e.text, t->want);
		json_decref(doc);
	}
}

static void test_bodies(void)
{
	static const struct {
		const char *body;
		const char *want;
	} bodies[] = {
		{ "", "body: empty" },
		{ "{\"format\": \"commap-result\", \"version\": 1, \"ident",
		  "body: invalid JSON at line 1" },
		{ "[1, 2]", "body: expected a JSON object" },
		{ "{\"format\": 1} trailing", "body: invalid JSON" },
		{ "{\"format\": \"a\", \"format\": \"b\"}", "duplicate" },
		{ "{\"x\": NaN}", "body: invalid JSON" },
		{ "{\"x\": 1e999}", "body: invalid JSON" },
		{ "\xff\xfe{}", "body: invalid JSON" },
	};
	struct svc_result_ident id;
	struct cm_error e = { "" };
	json_t *doc = (json_t *)1;
	size_t i, len = strlen(valid_doc);

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		int rc = svc_result_parse(bodies[i].body,
					  strlen(bodies[i].body), 1 << 20,
					  &doc, &id, &e);

		ok(rc == -1 && !doc && strstr(e.text, bodies[i].want),
		   "body %zu refused: %s", i, e.text);
	}
	ok(svc_result_parse(valid_doc, len, len, &doc, &id, &e) == 0 && doc,
	   "a body of exactly max_len is accepted (%s)", e.text);
	json_decref(doc);
	ok(svc_result_parse(valid_doc, len, len - 1, &doc, &id, &e) < 0 &&
	   !doc && strstr(e.text, "more than max_body"),
	   "one byte over max_len is refused: %s", e.text);
	/* Every proper prefix of a valid document is refused, never stored. */
	for (i = 0; i < len; i++) {
		if (svc_result_parse(valid_doc, i, len, &doc, &id, &e) == 0) {
			json_decref(doc);
			break;
		}
	}
	ok(i == len, "every truncation of the valid body is refused");
}

/* s with control and non-ASCII bytes as '?', for test names. */
static const char *printable(const char *s)
{
	static char buf[128];
	size_t i;

	for (i = 0; s[i] && i < sizeof(buf) - 1; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* The service's parser (svc_result_check) must refuse exactly what
 * jansson refuses, so that a stored body always reads back: each value is
 * put in {"x": VALUE} (validation then fails on "format", not on syntax). */
static void test_parser_agrees(void)
{
	static const char *const values[] = {
		"1", "-0", "0.5", "-12.25e-3", "1E5", "1e-400", "1e999",
		"-1e999", "01", "-", "1.", ".5", "1e", "1e+", "+1",
		"9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809",
		"123456789012345678901234567890.5", "0.1234567890123456789",
		"true", "false", "null", "nul", "truex", "True", "NaN",
		"\"\"", "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "\"\\x\"",
		"\"\\u00e9\\u20AC\"", "\"\\ud83d\\ude00\"", "\"\\ud83d\"",
		"\"\\ude00\"", "\"\\ud83d\\u0041\"", "\"\\u0000\"", "\"\\u12\"",
		"\"\xc3\xa9\"", "\"\xe2\x82\xac\"", "\"\xf0\x9f\x98\x80\"",
		"\"\xc0\xaf\"", "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"",
		"\"\xf4\x90\x80\x80\"", "\"\xc3\"", "\"\x80\"", "\"\xff\"",
		"\"tab\there\"", "\"line\nbreak\"", "\"open",
		"[]", "[1,]", "[,1]", "[1 2]", "{}", "{\"a\":1,}", "{\"a\" 1}",
		"{1:2}", "{\"a\":1,\"a\":2}", "{\"a\":{\"b\":1,\"b\":1}}",
		"{\"k1\":1,\"k2\":1,\"k3\":1,\"k4\":1,\"k5\":1,\"k6\":1,"
		"\"k7\":1,\"k8\":1,\"k9\":1,\"k3\":1}",
		"{\"\\u0061\":1,\"a\":2}", "{\"a\\u0000\":1}", "[[[[[]]]]]",
		" [ 1 , { \"a\" : [ ] } ]\r\n\t",
	};
	size_t i;

	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		struct svc_result_parsed *pr = NULL;
		struct svc_result_ident id;
		struct cm_error e = { "" };
		char body[512];
		json_t *j;
		int mine, jansson;

		snprintf(body, sizeof(body), "{\"x\": %s}", values[i]);
		j = json_loadb(body, strlen(body), JSON_REJECT_DUPLICATES,
			       NULL);
		jansson = j != NULL;
		json_decref(j);
		svc_result_check(body, strlen(body), 1 << 20, &pr, &id, &e);
		mine = strncmp(e.text, "body: invalid JSON", 18) != 0;
		ok(mine == jansson && !pr, "%s: %s as jansson (%s)",
		   printable(values[i]), jansson ? "accepted" : "refused",
		   e.text);
	}
	{
		/* jansson's depth limit: 2048 nested arrays. */
		static char deep[2 * 2049 + 16];
		int n;

		for (n = 2048; n <= 2049; n++) {
			struct svc_result_parsed *pr = NULL;
			struct svc_result_ident id;
			struct cm_error e = { "" };
			json_t *j;
			int k, len = 0;

			for (k = 0; k < n; k++)
				deep[len++] = '[';
			for (k = 0; k < n; k++)
				deep[len++] = ']';
			j = json_loadb(deep, (size_t)len, 0, NULL);
			svc_result_check(deep, (size_t)len, 1 << 20, &pr, &id,
					 &e);
			ok((j != NULL) == !strstr(e.text, "invalid JSON"),
			   "%d nested arrays: as jansson (%s)", n, e.text);
			json_decref(j);
		}
	}
}

/* svc_result_check: the same verdicts and fields as the json_t path. */
static void test_check(void)
{
	struct svc_result_parsed *pr = NULL;
	struct svc_result_ident id;
	struct cm_error e = { "" };
	size_t len = strlen(valid_doc), i;

	ok(svc_result_check(valid_doc, len, len, &pr, &id, &e) == 0 && pr,
	   "svc_result_check accepts the example (%s)", e.text);
	is_int(id.job, 42, "  job");
	is_str(id.node, "vm", "  node");
	is_str(id.executable, "/home/alice/app", "  executable");
	is_str(id.app, "app", "  app");
	is_str(id.exe_hash, "sha256:ab", "  exe_hash");
	is_str(id.mode, "dynamic", "  mode");
	is_str(id.backend, "sample", "  backend");
	is_str(id.ended_at, "2026-11-22T14:01:10Z", "  ended_at");
	is_int(id.n_edges, 3, "  edges");
	is_double(id.final_cost, 9.5, 0, "  final cost");
	svc_result_parsed_free(pr);
	/* Every edit of the table refused with the same message. */
	for (i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		struct cm_error e1 = { "" }, e2 = { "" };
		json_t *doc = load_valid();
		char *text;

		apply(doc, edits[i].path, edits[i].value);
		text = json_dumps(doc, JSON_COMPACT);
		svc_result_validate(doc, NULL, &e1);
		pr = (struct svc_result_parsed *)1;
		if (strstr(edits[i].want, "NUL"))
			ok(svc_result_check(text, strlen(text), 1 << 20, &pr,
					    &id, &e2) < 0 && !pr &&
			   strstr(e2.text, "body: invalid JSON"),
			   "%s: \\u0000 refused in a body (%s)",
			   edits[i].path, e2.text);
		else
			ok(svc_result_check(text, strlen(text), 1 << 20, &pr,
					    &id, &e2) < 0 && !pr &&
			   strcmp(e1.text, e2.text) == 0,
			   "%s: svc_result_check says '%s'", edits[i].path,
			   e2.text);
		free(text);
		json_decref(doc);
	}
	/* Escaped strings are decoded: "v\u006d" is "vm". */
	{
		char body[sizeof(valid_doc) + 16];
		const char *p = strstr(valid_doc, "\"vm\"");

		snprintf(body, sizeof(body), "%.*s\"v\\u006d\"%s",
			 (int)(p - valid_doc), valid_doc, p + 4);
		ok(svc_result_check(body, strlen(body), 1 << 20, &pr, &id,
				    &e) == 0 && strcmp(id.node, "vm") == 0,
		   "an escaped node name is decoded (%s)", e.text);
		svc_result_parsed_free(pr);
	}
}

static void test_same(void)
{
	const char *a = "{\"a\": 1, \"b\": [1.5, {\"c\": null}]}";
	const char *b = "{\"b\":[1.5,{\"c\":null}],\"a\":1}";
	const char *c = "{\"b\":[1.5,{\"c\":null}],\"a\":1.0}";

	is_int(svc_result_same(a, strlen(a), a, strlen(a)), 1, "same bytes");
	is_int(svc_result_same(a, strlen(a), b, strlen(b)), 1,
	       "other key order and spacing: same");
	is_int(svc_result_same(a, strlen(a), c, strlen(c)), 0,
	       "1 and 1.0 differ (as in canonical form)");
	is_int(svc_result_same(a, strlen(a), "{", 1), -1, "unparsable: -1");
}

static void test_timestamps(void)
{
	char out[21];

	ok(svc_timestamp_valid("2026-02-28T23:59:60Z", out) &&
	   strcmp(out, "2026-02-28T23:59:60Z") == 0, "leap second accepted");
	ok(svc_timestamp_valid("2026-02-28T23:59:59.123456Z", out) &&
	   strcmp(out, "2026-02-28T23:59:59Z") == 0, "fraction cut");
	ok(!svc_timestamp_valid("2026-02-28T24:00:00Z", NULL), "hour 24");
	ok(!svc_timestamp_valid("2026-02-28T23:59:59", NULL), "no Z");
	ok(!svc_timestamp_valid("2026-02-28T23:59:59Zx", NULL), "trailing");
	ok(!svc_timestamp_valid("1969-12-31T23:59:59Z", NULL), "before 1970");
	ok(!svc_timestamp_valid("", NULL), "empty");
}

int main(void)
{
	test_valid();
	test_edits();
	test_bodies();
	test_parser_agrees();
	test_check();
	test_same();
	test_timestamps();
	return done_testing();
}
