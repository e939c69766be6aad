/* test_matrix_io.c: matrix readers and writers (lib/matrix_io.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "commap/matrix.h"
#include "commap/matrix_gen.h"
#include "commap/matrix_io.h"
#include "tap.h"

#define HDR "{\"format\":\"commap-matrix\",\"version\":1,"
#define RES "{\"format\":\"commap-result\",\"version\":1,"

struct bad_case {
	const char *in;
	const char *frag;
};

static void check_rejects(const struct bad_case *c, size_t n,
			  enum cm_matrix_format fmt, const char *what)
{
	for (size_t k = 0; k < n; k++) {
		struct cm_matrix *m = NULL;
		struct cm_error err = { "" };
		int rc;

		errno = 0;
		rc = cm_matrix_parse(c[k].in, strlen(c[k].in), fmt, &m, &err);
		if (!ok(rc == -1 && errno == EINVAL && !m &&
			strstr(err.text, c[k].frag),
			"%s %zu rejected: %s", what, k, err.text))
			diag("  input '%s', want fragment '%s'", c[k].in,
			     c[k].frag);
		cm_matrix_free(m);
	}
}

static struct cm_matrix *parse_ok(const char *in, enum cm_matrix_format fmt)
{
	struct cm_matrix *m = NULL;
	struct cm_error err = { "" };

	if (cm_matrix_parse(in, strlen(in), fmt, &m, &err) < 0)
		diag("unexpected error: %s", err.text);
	return m;
}

static void test_json_errors(void)
{
	static const struct bad_case c[] = {
		{ "{", "JSON error at line 1" },
		{ "{}x", "JSON error at line 1" },
		{ "[]", "top level: expected a JSON object" },
		{ "{\"version\":1,\"threads\":2,\"edges\":[]}",
		  "format: missing" },
		{ "{\"format\":5,\"version\":1}", "format: expected a string" },
		{ "{\"format\":\"commap-matrx\",\"version\":1}",
		  "format: unknown format 'commap-matrx'" },
		{ "{\"format\":\"commap-matrix\",\"threads\":2,\"edges\":[]}",
		  "version: missing" },
		/* a duplicate key */
		{ HDR "\"version\":1}", "duplicate object key" },
		{ "{\"format\":\"commap-matrix\",\"version\":\"1\"}",
		  "version: expected an integer" },
		{ "{\"format\":\"commap-matrix\",\"version\":2}",
		  "version: 2 is not supported (this commap reads version 1)" },
		{ "{\"format\":\"commap-result\",\"version\":0}",
		  "version: 0 is not supported" },
		{ HDR "\"edges\":[]}", "threads: missing" },
		{ HDR "\"threads\":-1,\"edges\":[]}",
		  "threads: -1 is negative" },
		{ HDR "\"threads\":2000000,\"edges\":[]}",
		  "threads: 2000000 is more than the limit of 1048576" },
		{ HDR "\"threads\":1e3,\"edges\":[]}",
		  "threads: expected an integer" },
		{ HDR "\"threads\":[],\"edges\":[]}",
		  "threads: expected an integer" },
		{ HDR "\"threads\":2}", "edges: missing" },
		{ HDR "\"threads\":2,\"edges\":{}}",
		  "edges: expected an array" },
		{ HDR "\"threads\":2,\"edges\":[[0,1]]}",
		  "edges[0]: expected an array [i, j, w]" },
		{ HDR "\"threads\":2,\"edges\":[[0,1,1],5]}",
		  "edges[1]: expected an array [i, j, w]" },
		{ HDR "\"threads\":2,\"edges\":[[0,1,1,1]]}",
		  "edges[0]: expected an array" },
		{ HDR "\"threads\":3,\"edges\":[[0,1,1],[0,\"a\",1]]}",
		  "edges[1][1]: thread index is not an integer" },
		{ HDR "\"threads\":3,\"edges\":[[0.0,1,1]]}",
		  "edges[0][0]: thread index is not an integer" },
		{ HDR "\"threads\":4,\"edges\":[[0,9,1]]}",
		  "edges[0][1]: thread index 9 out of range (threads: 4)" },
		{ HDR "\"threads\":4,\"edges\":[[-1,2,1]]}",
		  "edges[0][0]: thread index -1 out of range" },
		{ HDR "\"threads\":0,\"edges\":[[0,1,1]]}",
		  "edges[0][0]: thread index 0 out of range (threads: 0)" },
		{ HDR "\"threads\":4,\"edges\":[[0,1,1],[2,1,1]]}",
		  "edges[1]: i = 2 must be less than j = 1" },
		{ HDR "\"threads\":4,\"edges\":[[1,1,1]]}",
		  "edges[0]: i = 1 must be less than j = 1" },
		{ HDR "\"threads\":4,\"edges\":[[0,1,1],[0,2,1],"
		  "[0,3,1],[1,2,-0.5]]}", "edges[3][2]: weight is negative" },
		{ HDR "\"threads\":2,\"edges\":[[0,1,\"3\"]]}",
		  "edges[0][2]: weight is not a number" },
		{ HDR "\"threads\":2,\"edges\":[[0,1,null]]}",
		  "edges[0][2]: weight is not a number" },
		{ HDR "\"threads\":2,\"edges\":[[0,1,1e400]]}", "JSON error" },
		{ HDR "\"threads\":2,\"edges\":[[0,1,1e280],[0,1,1e280]]}",
		  "edges[1][2]: sum of duplicate edges overflows" },
		{ HDR "\"threads\":2,\"edges\":[[0,1,1.7e308]]}",
		  "edges[0][2]: weight is above the limit of 1e+280" },
		{ HDR "\"threads\":2,\"edges\":[[0,1,1.1e280]]}",
		  "edges[0][2]: weight is above the limit" },
		{ HDR "\"threads\":2,\"edges\":[],\"extra\":1}",
		  "extra: unknown key" },
		{ RES "\"threads\":2,\"edges\":[]}",
		  "threads: expected an array" },
		{ RES "\"threads\":[{},{}],\"edges\":[[0,2,1]]}",
		  "edges[0][1]: thread index 2 out of range (threads: 2)" },
		{ RES "\"threads\":[{}]}", "edges: missing" },
		{ "{\"format\":\"commap-result\",\"threads\":[],\"edges\":[]}",
		  "version: missing" },
	};

	check_rejects(c, sizeof(c) / sizeof(c[0]), CM_MATRIX_FORMAT_JSON,
		      "JSON");
	check_rejects(c + 3, sizeof(c) / sizeof(c[0]) - 3,
		      CM_MATRIX_FORMAT_AUTO, "JSON (auto)");

	struct cm_error err = { "" };
	struct cm_matrix *m = NULL;
	static const char tiny[] = "{}";

	/* The size is checked before the text is read: len is a lie here. */
	ok(cm_matrix_parse_json(tiny, (size_t)300 << 20, &m, &err) == -1 &&
	   strstr(err.text, "larger than the limit of 256 MiB"),
	   "JSON over the size limit rejected: %s", err.text);
	ok(cm_matrix_parse("x", 1, (enum cm_matrix_format)9, &m, &err) == -1 &&
	   strstr(err.text, "unknown matrix format"), "bad format enum");
}

static void test_json_ok(void)
{
	struct cm_matrix *m;

	m = parse_ok(HDR "\"threads\":0,\"edges\":[]}", CM_MATRIX_FORMAT_AUTO);
	ok(m && cm_matrix_nthreads(m) == 0, "JSON: 0 threads");
	cm_matrix_free(m);

	m = parse_ok(" \n\t" HDR "\"threads\":5,\"edges\":[[0,1,1],"
		     "[3,4,2.5],[0,1,2.5],[1,2,0]]}", CM_MATRIX_FORMAT_AUTO);
	ok(m != NULL, "JSON with leading blanks detected");
	is_int(cm_matrix_nthreads(m), 5, "threads from the header");
	is_double(cm_matrix_get(m, 1, 0), 3.5, 0, "duplicate edges summed");
	is_double(cm_matrix_get(m, 3, 4), 2.5, 0, "real weight");
	is_int(cm_matrix_nedges(m), 2, "zero weight adds no edge");
	cm_matrix_free(m);

	/* Agent result file (docs/result-format.md), extra keys ignored. */
	m = parse_ok("{\"format\": \"commap-result\", \"version\": 1,"
		     " \"identity\": {\"job\": null}, \"mode\": \"dynamic\","
		     " \"threads\": [{\"rank\": 0, \"tid\": 1},"
		     " {\"rank\": 0, \"tid\": 2}, {\"rank\": 1, \"tid\": 3}],"
		     " \"edges\": [[0, 1, 153.0], [1, 2, 7]],"
		     " \"timeline\": [], \"stats\": {\"samples\": 3}}",
		     CM_MATRIX_FORMAT_AUTO);
	ok(m && cm_matrix_nthreads(m) == 3, "result: N from threads array");
	is_double(cm_matrix_get(m, 0, 1), 153, 0, "result: edge read");
	is_double(cm_matrix_total(m), 160, 0, "result: total");
	cm_matrix_free(m);
}

static void test_csv_errors(void)
{
	static const struct bad_case c[] = {
		{ "", "no matrix rows (empty input)" },
		{ "# only a comment\n\n", "no matrix rows" },
		{ "0,1\n1,x\n", "line 2, field 2: not a number 'x'" },
		{ "# c\n0,1\n1,y\n", "line 3, field 2: not a number 'y'" },
		{ "0,1,2\n1,0\n2,0,0\n", "line 2: 2 fields, expected 3" },
		{ "0,1\n1,0,0\n", "line 2: 3 fields, expected 2" },
		{ "0,1,2\n1,0,3\n", "2 rows of 3 columns" },
		{ "0\n1\n", "line 2: more rows than the 1 columns" },
		{ "0,-1\n-1,0\n", "line 1, field 2: weight is negative '-1'" },
		{ "0,nan\nnan,0\n", "line 1, field 2: weight is not finite" },
		{ "0,1e400\n1e400,0\n", "weight is not finite '1e400'" },
		{ "0,inf\ninf,0\n", "weight is not finite 'inf'" },
		{ "0,1e308\n1e308,0\n",
		  "line 1, field 2: weight is above the limit of 1e+280" },
		{ "0,1\n2,0\n",
		  "line 2, field 1: 2 differs from 1 at line 1, field 2" },
		{ "0,1\n0,0\n", "line 2, field 1: 0 differs from 1" },
		{ "0,0,0\n0,0,0\n0,5,0\n", "line 3, field 2: 5 differs" },
		{ "0,1\n1.00001,0\n", "must be symmetric" },
		{ "0,,1\n", "line 1, field 2: empty field" },
		{ "0,1,\n", "line 1, field 3: empty field" },
		{ "0,1 2\n", "line 1, field 2: not a number '1 2'" },
		{ "0,1x\n", "not a number '1x'" },
		{ "0,0x\n", "not a number '0x'" },
		{ "0,1\n1,0\n0,0\n", "line 3: more rows than the 2 columns" },
		{ "0,"
		  "1111111111111111111111111111111111111111111111111111111111"
		  "1111111111111111111111111111111111111111111111111111111111"
		  "1111111111111111111111111111111111111111111111111111111111"
		  "\n", "line 1, field 2: field too long" },
		{ "\"0\",1\n", "line 1, field 1: not a number '\"0\"'" },
	};

	check_rejects(c, sizeof(c) / sizeof(c[0]), CM_MATRIX_FORMAT_CSV,
		      "CSV");
	check_rejects(c, sizeof(c) / sizeof(c[0]), CM_MATRIX_FORMAT_AUTO,
		      "CSV (auto)");
}

static void test_csv_ok(void)
{
	struct cm_matrix *m;

	m = parse_ok("0\n", CM_MATRIX_FORMAT_AUTO);
	ok(m && cm_matrix_nthreads(m) == 1 && cm_matrix_nedges(m) == 0,
	   "CSV: one thread");
	cm_matrix_free(m);

	m = parse_ok("# header\r\n 5 , 1 ,0\r\n1,7,\t0\r\n\n0,0,9", 0);
	ok(m && cm_matrix_nthreads(m) == 3, "CSV: CRLF, blanks, no final "
	   "newline, blank line, diagonal");
	is_double(cm_matrix_get(m, 0, 1), 1, 0, "CSV value");
	is_int(cm_matrix_nedges(m), 1, "CSV: diagonal ignored");
	cm_matrix_free(m);

	m = parse_ok("0,1\n1.0000001,0\n", CM_MATRIX_FORMAT_CSV);
	is_double(m ? cm_matrix_get(m, 0, 1) : -1, 1.00000005, 1e-15,
		  "CSV: within tolerance, mean of both halves");
	cm_matrix_free(m);

	m = parse_ok("0,1e280\n1e280,0\n", CM_MATRIX_FORMAT_CSV);
	is_double(m ? cm_matrix_get(m, 0, 1) : -1, 1e280, 0,
		  "CSV: the largest weight allowed is kept");
	cm_matrix_free(m);

	m = parse_ok("0,5e-324\n5e-324,0\n", CM_MATRIX_FORMAT_CSV);
	ok(m && cm_matrix_get(m, 0, 1) == 5e-324,
	   "CSV: smallest subnormal weight kept");
	cm_matrix_free(m);

	m = parse_ok("0,0,0\n0,0,0\n0,0,0\n", CM_MATRIX_FORMAT_CSV);
	ok(m && cm_matrix_nthreads(m) == 3 && cm_matrix_nedges(m) == 0,
	   "CSV: zero matrix");
	cm_matrix_free(m);
}

/* Write with fn into a string. */
static char *write_str(int (*fn)(FILE *, const struct cm_matrix *),
		       const struct cm_matrix *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (fn(f, m) < 0)
		diag("write failed");
	fclose(f);
	return buf;
}

static int same_matrix(const struct cm_matrix *a, const struct cm_matrix *b)
{
	int n = cm_matrix_nthreads(a);

	if (!a || !b || n != cm_matrix_nthreads(b) ||
	    cm_matrix_nedges(a) != cm_matrix_nedges(b))
		return 0;
	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(a, i, &e);

		for (int k = 0; k < len; k++)
			if (cm_matrix_get(b, i, e[k].col) != e[k].w)
				return 0;
	}
	return 1;
}

static void test_writers(void)
{
	struct cm_matrix *m = cm_matrix_new(3);
	char *s;

	cm_matrix_set(m, 2, 1, 0.01);
	cm_matrix_set(m, 0, 2, 0.5);
	cm_matrix_set(m, 1, 0, 2);
	s = write_str(cm_matrix_write_json, m);
	is_str(s, HDR "\"threads\":3,\"edges\":[[0,1,2.0],[0,2,0.5],"
	       "[1,2,0.01]]}\n", "JSON: one line, edges sorted, reals");
	free(s);
	s = write_str(cm_matrix_write_csv, m);
	is_str(s, "0,2,0.5\n2,0,0.01\n0.5,0.01,0\n", "CSV: n lines");
	free(s);

	json_t *j = cm_matrix_edges_to_json(m);
	char *d = json_dumps(j, JSON_COMPACT);

	is_str(d, "[[0,1,2.0],[0,2,0.5],[1,2,0.01]]", "edges_to_json sorted");
	free(d);
	json_decref(j);
	cm_matrix_free(m);

	m = cm_matrix_new(0);
	s = write_str(cm_matrix_write_json, m);
	is_str(s, HDR "\"threads\":0,\"edges\":[]}\n", "JSON: empty matrix");
	free(s);
	s = write_str(cm_matrix_write_csv, m);
	is_str(s, "", "CSV: empty matrix writes nothing");
	free(s);
	j = cm_matrix_edges_to_json(m);
	ok(json_is_array(j) && json_array_size(j) == 0, "edges_to_json []");
	json_decref(j);
	cm_matrix_free(m);
}

static void test_round_trips(void)
{
	static const char *const pats[] = { "random", "clusters:4" };

	for (size_t p = 0; p < 2; p++) {
		struct cm_matrix *m = NULL, *a = NULL, *b = NULL, *c = NULL;
		struct cm_error err = { "" };
		char *js, *csv, *js2;

		cm_matrix_generate(pats[p], 30, 11, 5, &m, &err);
		cm_matrix_set(m, 0, 29, CM_MATRIX_WEIGHT_MAX);
		cm_matrix_set(m, 1, 28, 1.0 / 3);
		js = write_str(cm_matrix_write_json, m);
		cm_matrix_parse(js, strlen(js), 0, &a, &err);
		ok(same_matrix(m, a), "%s: JSON round trip is exact", pats[p]);
		csv = write_str(cm_matrix_write_csv, a);
		cm_matrix_parse(csv, strlen(csv), 0, &b, &err);
		ok(same_matrix(m, b), "%s: JSON -> CSV -> matrix is exact",
		   pats[p]);
		js2 = write_str(cm_matrix_write_json, b);
		is_str(js2, js, "CSV -> JSON gives the same JSON text");
		cm_matrix_parse(js2, strlen(js2), CM_MATRIX_FORMAT_JSON, &c,
				&err);
		ok(same_matrix(m, c), "%s: second JSON round trip", pats[p]);
		free(js);
		free(js2);
		free(csv);
		cm_matrix_free(m);
		cm_matrix_free(a);
		cm_matrix_free(b);
		cm_matrix_free(c);
	}
}

static void test_read_file(void)
{
	char path[] = "/tmp/commap-test-matrix-XXXXXX";
	int fd = mkstemp(path);
	struct cm_matrix *m = NULL;
	struct cm_error err = { "" };
	FILE *f = fdopen(fd, "w");

	fputs("0,3\n3,0\n", f);
	fclose(f);
	ok(cm_matrix_read_file(path, &m, &err) == 0 &&
	   cm_matrix_get(m, 0, 1) == 3, "read CSV file");
	cm_matrix_free(m);
	m = NULL;

	f = fopen(path, "w");
	fputs("0,3\n3,z\n", f);
	fclose(f);
	ok(cm_matrix_read_file(path, &m, &err) == -1 &&
	   strncmp(err.text, path, strlen(path)) == 0 &&
	   strstr(err.text, "line 2, field 2: not a number 'z'"),
	   "bad file: error names the file and line: %s", err.text);

	f = fopen(path, "w");
	fputs(HDR "\"threads\":2,\"edges\":[[0,1,4]]}", f);
	fclose(f);
	ok(freopen(path, "r", stdin) != NULL, "stdin redirected");
	ok(cm_matrix_read_file("-", &m, &err) == 0 &&
	   cm_matrix_get(m, 1, 0) == 4, "read JSON from '-' (stdin)");
	cm_matrix_free(m);
	m = NULL;
	unlink(path);

	errno = 0;
	ok(cm_matrix_read_file("/nonexistent/m.json", &m, &err) == -1 &&
	   errno == ENOENT &&
	   strstr(err.text, "/nonexistent/m.json: No such file"),
	   "missing file: %s", err.text);
	ok(cm_matrix_read_file("/tmp", &m, &err) == -1 &&
	   strstr(err.text, "/tmp: Is a directory"),
	   "directory rejected: %s", err.text);
}

int main(void)
{
	test_json_errors();
	test_json_ok();
	test_csv_errors();
	test_csv_ok();
	test_writers();
	test_round_trips();
	test_read_file();
	return done_testing();
}
