/* matrix_io.c: communication matrix files (commap/matrix_io.h,
 * docs/formats.md).
 *
 * Readers never trust a declared size: a JSON "threads" count is checked
 * against CM_MATRIX_MAX_THREADS before anything is allocated, the JSON text
 * itself is limited to JSON_MAX_BYTES, and a CSV matrix's size comes from
 * the rows actually present, with only its non-zero cells kept in memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "commap/matrix_io.h"

/* Largest JSON text we parse: jansson needs ~20 bytes of memory per byte of
 * an edge list, so this keeps a hostile file below a few GiB. */
#define JSON_MAX_BYTES ((size_t)256 << 20)
/* Largest file cm_matrix_read_file loads. */
#define FILE_MAX_BYTES ((size_t)1 << 30)
/* CSV: relative tolerance between w(i,j) and w(j,i). */
#define CSV_SYMMETRY_TOL 1e-6
/* CSV: longest field (a number) and how much of a bad field is quoted. */
#define CSV_FIELD_MAX 128
#define QUOTE_MAX 32

/* ---- JSON reader ---------------------------------------------------- */

/* Read one edge [i, j, w] at edges[k] into m. */
static int json_edge(struct cm_matrix *m, size_t k, json_t *e,
		     struct cm_error *err)
{
	int n = cm_matrix_nthreads(m);
	json_int_t ij[2];
	double w;
	int rc;

	if (!json_is_array(e) || json_array_size(e) != 3)
		return cm_errorf(err, EINVAL,
				 "edges[%zu]: expected an array [i, j, w]", k);
	for (int f = 0; f < 2; f++) {
		json_t *v = json_array_get(e, (size_t)f);

		if (!json_is_integer(v))
			return cm_errorf(err, EINVAL,
					 "edges[%zu][%d]: thread index is not "
					 "an integer", k, f);
		ij[f] = json_integer_value(v);
		if (ij[f] < 0 || ij[f] >= n)
			return cm_errorf(err, EINVAL,
					 "edges[%zu][%d]: thread index %"
					 JSON_INTEGER_FORMAT " out of range "
					 "(threads: %d)", k, f, ij[f], n);
	}
	if (ij[0] >= ij[1])
		return cm_errorf(err, EINVAL,
				 "edges[%zu]: i = %" JSON_INTEGER_FORMAT
				 " must be less than j = %" JSON_INTEGER_FORMAT,
				 k, ij[0], ij[1]);
	if (!json_is_number(json_array_get(e, 2)))
		return cm_errorf(err, EINVAL,
				 "edges[%zu][2]: weight is not a number", k);
	w = json_number_value(json_array_get(e, 2));
	if (!isfinite(w))
		return cm_errorf(err, EINVAL,
				 "edges[%zu][2]: weight is not finite", k);
	if (w < 0)
		return cm_errorf(err, EINVAL,
				 "edges[%zu][2]: weight is negative", k);
	if (w > CM_MATRIX_WEIGHT_MAX)
		return cm_errorf(err, EINVAL, "edges[%zu][2]: weight is above "
				 "the limit of %g", k, CM_MATRIX_WEIGHT_MAX);
	rc = cm_matrix_add(m, (int)ij[0], (int)ij[1], w);
	if (rc < 0 && errno != ERANGE)
		return cm_errorf(err, errno, "edges[%zu]: %s", k,
				 strerror(errno));
	/* ERANGE (an infinite sum) or a sum above the bound. */
	if (rc < 0 || cm_matrix_get(m, (int)ij[0], (int)ij[1]) >
		      CM_MATRIX_WEIGHT_MAX)
		return cm_errorf(err, EINVAL, "edges[%zu][2]: sum of duplicate "
				 "edges overflows", k);
	return 0;
}

static int json_edges(struct cm_matrix *m, json_t *edges,
		      struct cm_error *err)
{
	size_t k;
	json_t *e;

	if (!edges)
		return cm_errorf(err, EINVAL, "edges: missing");
	if (!json_is_array(edges))
		return cm_errorf(err, EINVAL, "edges: expected an array");
	json_array_foreach(edges, k, e) {
		if (json_edge(m, k, e, err) < 0)
			return -1;
	}
	return 0;
}

/* The thread count N: an integer (commap-matrix) or the length of the
 * "threads" array (commap-result). */
static int json_nthreads(json_t *root, int result, int *n,
			 struct cm_error *err)
{
	json_t *t = json_object_get(root, "threads");
	json_int_t v;

	if (!t)
		return cm_errorf(err, EINVAL, "threads: missing");
	if (result) {
		if (!json_is_array(t))
			return cm_errorf(err, EINVAL,
					 "threads: expected an array");
		if (json_array_size(t) > CM_MATRIX_MAX_THREADS)
			return cm_errorf(err, EINVAL,
					 "threads: %zu threads, more than the "
					 "limit of %d", json_array_size(t),
					 CM_MATRIX_MAX_THREADS);
		*n = (int)json_array_size(t);
		return 0;
	}
	if (!json_is_integer(t))
		return cm_errorf(err, EINVAL, "threads: expected an integer");
	v = json_integer_value(t);
	if (v < 0)
		return cm_errorf(err, EINVAL,
				 "threads: %" JSON_INTEGER_FORMAT
				 " is negative", v);
	if (v > CM_MATRIX_MAX_THREADS)
		return cm_errorf(err, EINVAL,
				 "threads: %" JSON_INTEGER_FORMAT " is more "
				 "than the limit of %d", v,
				 CM_MATRIX_MAX_THREADS);
	*n = (int)v;
	return 0;
}

/* "format" and "version"; *result tells an agent result file. */
static int json_header(json_t *root, int *result, struct cm_error *err)
{
	json_t *f = json_object_get(root, "format");
	json_t *v = json_object_get(root, "version");
	const char *s;

	if (!f)
		return cm_errorf(err, EINVAL,
				 "format: missing (expected \"commap-matrix\" "
				 "or \"commap-result\")");
	s = json_string_value(f);
	if (!s)
		return cm_errorf(err, EINVAL, "format: expected a string");
	if (strcmp(s, "commap-matrix") == 0)
		*result = 0;
	else if (strcmp(s, "commap-result") == 0)
		*result = 1;
	else
		return cm_errorf(err, EINVAL,
				 "format: unknown format '%.*s' (expected "
				 "\"commap-matrix\" or \"commap-result\")",
				 QUOTE_MAX, s);
	if (!v)
		return cm_errorf(err, EINVAL, "version: missing");
	if (!json_is_integer(v))
		return cm_errorf(err, EINVAL, "version: expected an integer");
	if (json_integer_value(v) != 1)
		return cm_errorf(err, EINVAL,
				 "version: %" JSON_INTEGER_FORMAT " is not "
				 "supported (this commap reads version 1)",
				 json_integer_value(v));
	return 0;
}

/* commap-matrix has a closed set of keys (result files are open: see
 * docs/result-format.md). */
static int json_known_keys(json_t *root, struct cm_error *err)
{
	static const char *const keys[] = {
		"format", "version", "threads", "edges",
	};
	const char *key;
	json_t *v;

	json_object_foreach(root, key, v) {
		size_t k = 0;

		while (k < 4 && strcmp(key, keys[k]) != 0)
			k++;
		if (k == 4)
			return cm_errorf(err, EINVAL,
					 "%.*s: unknown key in a commap-matrix "
					 "document", QUOTE_MAX, key);
	}
	return 0;
}

static int json_matrix(json_t *root, struct cm_matrix **out,
		       struct cm_error *err)
{
	struct cm_matrix *m;
	int result = 0, n = 0;

	if (!json_is_object(root))
		return cm_errorf(err, EINVAL,
				 "top level: expected a JSON object");
	if (json_header(root, &result, err) < 0 ||
	    (!result && json_known_keys(root, err) < 0) ||
	    json_nthreads(root, result, &n, err) < 0)
		return -1;
	m = cm_matrix_new(n);
	if (!m)
		return cm_errorf(err, errno, "%d threads: %s", n,
				 strerror(errno));
	if (json_edges(m, json_object_get(root, "edges"), err) < 0) {
		cm_matrix_free(m);
		return -1;
	}
	*out = m;
	return 0;
}

int cm_matrix_parse_json(const char *buf, size_t len, struct cm_matrix **out,
			 struct cm_error *err)
{
	json_error_t jerr;
	json_t *root;
	int rv;

	if (len > JSON_MAX_BYTES)
		return cm_errorf(err, EINVAL,
				 "JSON text of %zu bytes is larger than the "
				 "limit of %zu MiB", len, JSON_MAX_BYTES >> 20);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return cm_errorf(err, EINVAL,
				 "JSON error at line %d, column %d: %s",
				 jerr.line, jerr.column, jerr.text);
	rv = json_matrix(root, out, err);
	json_decref(root);
	return rv;
}

/* ---- CSV reader ----------------------------------------------------- */

/* A non-zero off-diagonal cell (row r, column c). */
struct cell {
	int r, c;
	double w;
};

struct csv {
	const char *p, *end;	/* unread input */
	int line;		/* current line number, 1-based */
	int ncols;		/* -1 until the first row */
	int nrows;
	int *row_line;		/* line number of each row */
	struct cell *cells;
	size_t ncells, capcells;
	struct cm_error *err;
};

static int csv_push_cell(struct csv *s, int r, int c, double w)
{
	if (s->ncells == s->capcells) {
		size_t cap = s->capcells ? s->capcells * 2 : 64;
		struct cell *p = realloc(s->cells, cap * sizeof(*p));

		if (!p)
			return cm_errorf(s->err, ENOMEM, "out of memory");
		s->cells = p;
		s->capcells = cap;
	}
	s->cells[s->ncells++] = (struct cell){ .r = r, .c = c, .w = w };
	return 0;
}

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

/* Parse field [a, b) of the current line as a weight. */
static int csv_number(struct csv *s, int field, const char *a, const char *b,
		      double *w)
{
	char tmp[CSV_FIELD_MAX + 1], *end;
	size_t n;

	while (a < b && is_blank(*a))
		a++;
	while (b > a && is_blank(b[-1]))
		b--;
	n = (size_t)(b - a);
	if (n == 0)
		return cm_errorf(s->err, EINVAL, "line %d, field %d: empty "
				 "field", s->line, field);
	if (n > CSV_FIELD_MAX)
		return cm_errorf(s->err, EINVAL, "line %d, field %d: field "
				 "too long '%.*s...'", s->line, field,
				 QUOTE_MAX, a);
	memcpy(tmp, a, n);
	tmp[n] = '\0';
	errno = 0;
	*w = strtod(tmp, &end);
	if (end == tmp || *end)
		return cm_errorf(s->err, EINVAL, "line %d, field %d: not a "
				 "number '%.*s'", s->line, field, QUOTE_MAX,
				 tmp);
	if (!isfinite(*w))
		return cm_errorf(s->err, EINVAL, "line %d, field %d: weight "
				 "is not finite '%.*s'", s->line, field,
				 QUOTE_MAX, tmp);
	if (*w < 0)
		return cm_errorf(s->err, EINVAL, "line %d, field %d: weight "
				 "is negative '%.*s'", s->line, field,
				 QUOTE_MAX, tmp);
	if (*w > CM_MATRIX_WEIGHT_MAX)
		return cm_errorf(s->err, EINVAL, "line %d, field %d: weight "
				 "is above the limit of %g", s->line, field,
				 CM_MATRIX_WEIGHT_MAX);
	return 0;
}

/* Parse the data line [a, b) as matrix row s->nrows. */
static int csv_row(struct csv *s, const char *a, const char *b)
{
	int r = s->nrows, field = 0;

	if (s->ncols >= 0 && r >= s->ncols)
		return cm_errorf(s->err, EINVAL, "line %d: more rows than "
				 "the %d columns (matrix must be square)",
				 s->line, s->ncols);
	for (const char *f = a;; field++) {
		const char *comma = memchr(f, ',', (size_t)(b - f));
		const char *fe = comma ? comma : b;
		double w = 0;

		if (field >= CM_MATRIX_MAX_THREADS)
			return cm_errorf(s->err, EINVAL, "line %d: more than "
					 "%d fields", s->line,
					 CM_MATRIX_MAX_THREADS);
		if (csv_number(s, field + 1, f, fe, &w) < 0)
			return -1;
		if (w != 0 && field != r && csv_push_cell(s, r, field, w) < 0)
			return -1;
		if (!comma)
			break;
		f = comma + 1;
	}
	field++;
	if (s->ncols < 0) {
		s->ncols = field;
		s->row_line = malloc((size_t)field * sizeof(*s->row_line));
		if (!s->row_line)
			return cm_errorf(s->err, ENOMEM, "out of memory");
	} else if (field != s->ncols) {
		return cm_errorf(s->err, EINVAL, "line %d: %d fields, "
				 "expected %d like the first row", s->line,
				 field, s->ncols);
	}
	s->row_line[r] = s->line;
	s->nrows++;
	return 0;
}

/* Split the input into lines; skip comments and blank lines. */
static int csv_lines(struct csv *s)
{
	while (s->p < s->end) {
		const char *nl = memchr(s->p, '\n', (size_t)(s->end - s->p));
		const char *b = nl ? nl : s->end, *a = s->p;

		s->line++;
		s->p = nl ? nl + 1 : s->end;
		while (a < b && is_blank(*a))
			a++;
		if (a == b || *a == '#')
			continue;
		if (csv_row(s, a, b) < 0)
			return -1;
	}
	return 0;
}

static int cell_cmp(const void *pa, const void *pb)
{
	const struct cell *a = pa, *b = pb;
	int alo = a->r < a->c ? a->r : a->c, blo = b->r < b->c ? b->r : b->c;
	int ahi = a->r ^ a->c ^ alo, bhi = b->r ^ b->c ^ blo;

	if (alo != blo)
		return alo < blo ? -1 : 1;
	if (ahi != bhi)
		return ahi < bhi ? -1 : 1;
	return (a->r > a->c) - (b->r > b->c);	/* upper half first */
}

/* Cells (i, j) and (j, i) must agree; store their mean. */
static int csv_symmetrize(struct csv *s, struct cm_matrix *m)
{
	if (s->ncells)
		qsort(s->cells, s->ncells, sizeof(*s->cells), cell_cmp);
	for (size_t k = 0; k < s->ncells;) {
		const struct cell *c = &s->cells[k];
		int lo = c->r < c->c ? c->r : c->c, hi = c->r ^ c->c ^ lo;
		double up = 0, down = 0, big;

		if (c->r < c->c)
			up = s->cells[k++].w;
		if (k < s->ncells && s->cells[k].r == hi &&
		    s->cells[k].c == lo)
			down = s->cells[k++].w;
		big = up > down ? up : down;
		if (fabs(up - down) > CSV_SYMMETRY_TOL * big)
			return cm_errorf(s->err, EINVAL, "line %d, field %d: "
					 "%g differs from %g at line %d, "
					 "field %d (matrix must be symmetric "
					 "within %g)", s->row_line[hi], lo + 1,
					 down, up, s->row_line[lo], hi + 1,
					 CSV_SYMMETRY_TOL);
		/* up / 2 + down / 2 cannot overflow; equal halves are kept
		 * as they are so a subnormal weight does not round to 0. */
		if (cm_matrix_set(m, lo, hi,
				  up == down ? up : up / 2 + down / 2) < 0)
			return cm_errorf(s->err, errno, "out of memory");
	}
	return 0;
}

int cm_matrix_parse_csv(const char *buf, size_t len, struct cm_matrix **out,
			struct cm_error *err)
{
	struct csv s = {
		.p = buf, .end = buf + len, .ncols = -1, .err = err,
	};
	struct cm_matrix *m = NULL;
	int rv = -1;

	if (csv_lines(&s) < 0)
		goto done;
	if (s.nrows == 0) {
		cm_errorf(err, EINVAL, "no matrix rows (empty input)");
		goto done;
	}
	if (s.nrows != s.ncols) {
		cm_errorf(err, EINVAL, "line %d: %d rows of %d columns "
			  "(matrix must be square)", s.line, s.nrows,
			  s.ncols);
		goto done;
	}
	m = cm_matrix_new(s.nrows);
	if (!m) {
		cm_errorf(err, errno, "out of memory");
		goto done;
	}
	if (csv_symmetrize(&s, m) < 0)
		goto done;
	*out = m;
	m = NULL;
	rv = 0;
done:
	cm_matrix_free(m);
	free(s.cells);
	free(s.row_line);
	return rv;
}

/* ---- dispatch and files --------------------------------------------- */

int cm_matrix_parse(const char *buf, size_t len, enum cm_matrix_format fmt,
		    struct cm_matrix **out, struct cm_error *err)
{
	size_t k = 0;

	if (fmt == CM_MATRIX_FORMAT_AUTO) {
		while (k < len && (buf[k] == ' ' || buf[k] == '\t' ||
				   buf[k] == '\r' || buf[k] == '\n'))
			k++;
		fmt = k < len && buf[k] == '{' ? CM_MATRIX_FORMAT_JSON :
						 CM_MATRIX_FORMAT_CSV;
	}
	switch (fmt) {
	case CM_MATRIX_FORMAT_JSON:
		return cm_matrix_parse_json(buf, len, out, err);
	case CM_MATRIX_FORMAT_CSV:
		return cm_matrix_parse_csv(buf, len, out, err);
	default:
		return cm_errorf(err, EINVAL, "unknown matrix format %d",
				 (int)fmt);
	}
}

/* Read all of f into a new buffer (at most FILE_MAX_BYTES). */
static int slurp(FILE *f, char **out, size_t *outlen)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);

	if (!buf)
		return -1;
	errno = 0;
	for (;;) {
		char *p;

		/* fread stops short only at end of file or on an error. */
		len += fread(buf + len, 1, cap - len, f);
		if (len < cap)
			break;
		if (cap >= FILE_MAX_BYTES) {
			free(buf);
			return errno = EFBIG, -1;
		}
		p = realloc(buf, cap * 2);
		if (!p) {
			free(buf);
			return -1;
		}
		buf = p;
		cap *= 2;
	}
	if (ferror(f)) {
		free(buf);
		/* Keep read()'s reason (EISDIR for a directory). */
		return errno = errno ? errno : EIO, -1;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

int cm_matrix_read_file(const char *path, struct cm_matrix **out,
			struct cm_error *err)
{
	int is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? "standard input" : path;
	struct cm_error perr = { "" };
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	char *buf;
	size_t len;
	int rv;

	if (!f)
		return cm_errorf(err, errno, "%s: %s", name, strerror(errno));
	rv = slurp(f, &buf, &len);
	if (!is_stdin)
		fclose(f);
	if (rv < 0)
		return cm_errorf(err, errno, "%s: %s", name,
				 errno == EFBIG ? "file larger than 1 GiB" :
				 strerror(errno));
	rv = cm_matrix_parse(buf, len, CM_MATRIX_FORMAT_AUTO, out, &perr);
	free(buf);
	if (rv < 0)
		return cm_errorf(err, EINVAL, "%s: %s", name, perr.text);
	return 0;
}

/* ---- writers -------------------------------------------------------- */

static int entry_col_cmp(const void *pa, const void *pb)
{
	const struct cm_matrix_entry *a = pa, *b = pb;

	return (a->col > b->col) - (a->col < b->col);
}

/* The neighbours j > i of row i, sorted by j, copied into tmp (room for
 * the largest row).  Returns their number. */
static int upper_row(const struct cm_matrix *m, int i,
		     struct cm_matrix_entry *tmp)
{
	const struct cm_matrix_entry *e;
	int len = cm_matrix_row(m, i, &e), cnt = 0;

	for (int k = 0; k < len; k++) {
		if (e[k].col > i)
			tmp[cnt++] = e[k];
	}
	qsort(tmp, (size_t)cnt, sizeof(*tmp), entry_col_cmp);
	return cnt;
}

static struct cm_matrix_entry *row_buffer(const struct cm_matrix *m)
{
	int n = cm_matrix_nthreads(m), max = 1;

	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(m, i, &e);

		max = len > max ? len : max;
	}
	return malloc((size_t)max * sizeof(struct cm_matrix_entry));
}

/* The shortest %g form that reads back as the same double. */
static void format_weight(char *out, size_t size, double w)
{
	snprintf(out, size, "%.15g", w);
	if (strtod(out, NULL) != w)
		snprintf(out, size, "%.17g", w);
}

/* The same as a JSON real ("2.0", not "2"), as jansson writes weights in
 * agent results, so JSON readers see one number type. */
static void format_json_weight(char *out, size_t size, double w)
{
	format_weight(out, size, w);
	if (!strpbrk(out, ".e"))
		strncat(out, ".0", size - strlen(out) - 1);
}

/* Report a failed write (a full disk shows up here, not in fprintf). */
static int finish(FILE *f)
{
	if (fflush(f) != 0 || ferror(f))
		return errno = EIO, -1;
	return 0;
}

int cm_matrix_write_json(FILE *f, const struct cm_matrix *m)
{
	struct cm_matrix_entry *tmp = row_buffer(m);
	const char *sep = "";
	char num[32];

	if (!tmp)
		return -1;
	fprintf(f, "{\"format\":\"commap-matrix\",\"version\":1,"
		"\"threads\":%d,\"edges\":[", cm_matrix_nthreads(m));
	for (int i = 0; i < cm_matrix_nthreads(m); i++) {
		int cnt = upper_row(m, i, tmp);

		for (int k = 0; k < cnt; k++) {
			format_json_weight(num, sizeof(num), tmp[k].w);
			fprintf(f, "%s[%d,%d,%s]", sep, i, tmp[k].col, num);
			sep = ",";
		}
	}
	fputs("]}\n", f);
	free(tmp);
	return finish(f);
}

int cm_matrix_write_csv(FILE *f, const struct cm_matrix *m)
{
	int n = cm_matrix_nthreads(m);
	double *dense = calloc(n ? (size_t)n : 1, sizeof(*dense));
	char num[32];

	if (!dense)
		return -1;
	for (int i = 0; i < n; i++) {
		const struct cm_matrix_entry *e;
		int len = cm_matrix_row(m, i, &e);

		for (int k = 0; k < len; k++)
			dense[e[k].col] = e[k].w;
		for (int j = 0; j < n; j++) {
			format_weight(num, sizeof(num), dense[j]);
			fprintf(f, "%s%s", num, j + 1 < n ? "," : "\n");
		}
		for (int k = 0; k < len; k++)
			dense[e[k].col] = 0;
	}
	free(dense);
	return finish(f);
}

static json_t *edge_json(int i, int j, double w)
{
	json_t *e = json_array();

	if (!e || json_array_append_new(e, json_integer(i)) < 0 ||
	    json_array_append_new(e, json_integer(j)) < 0 ||
	    json_array_append_new(e, json_real(w)) < 0) {
		json_decref(e);
		return NULL;
	}
	return e;
}

void *cm_matrix_edges_to_json(const struct cm_matrix *m)
{
	struct cm_matrix_entry *tmp = row_buffer(m);
	json_t *a = json_array();

	if (!tmp || !a)
		goto fail;
	for (int i = 0; i < cm_matrix_nthreads(m); i++) {
		int cnt = upper_row(m, i, tmp);

		for (int k = 0; k < cnt; k++) {
			if (json_array_append_new(a, edge_json(i, tmp[k].col,
							       tmp[k].w)) < 0)
				goto fail;
		}
	}
	free(tmp);
	return a;
fail:
	free(tmp);
	json_decref(a);
	errno = ENOMEM;
	return NULL;
}
