/* render_result.c: a commap-result document parsed for the renderers,
 * and the escaping helpers every renderer uses. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render_internal.h"

/* Above this many threads no dense matrix is kept (the heatmap bins the
 * edges itself); 1024^2 doubles are 8 MiB. */
#define DENSE_MAX 1024
/* Ranks are small integers; a larger one is treated as "no rank". */
#define RANK_MAX (1 << 20)

static const char *obj_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static long long obj_int(const json_t *o, const char *key, long long dflt)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

static double obj_num(const json_t *o, const char *key, double dflt)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : dflt;
}

/* "2026-11-22T14:00:00Z" (fraction allowed) as seconds since the epoch;
 * -1 if malformed. */
static double parse_utc(const char *s)
{
	struct tm tm = { 0 };
	double sec;
	int n = 0;

	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%lf%n", &tm.tm_year,
			 &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
			 &sec, &n) != 6 || s[n] != 'Z')
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	tm.tm_sec = 0;
	return (double)timegm(&tm) + sec;
}

/* Labels r<rank>.t<k>: k counts the threads of the same rank in
 * document order, so r1.t0 is rank 1's first thread. */
static int label_threads(struct cm_report *r, struct cm_error *err)
{
	int i, maxrank = -1, any_rank = 0;
	int *count, nolocal = 0;

	for (i = 0; i < r->nthreads; i++)
		if (r->threads[i].rank > maxrank)
			maxrank = r->threads[i].rank;
	count = calloc((size_t)maxrank + 2, sizeof(*count));
	if (!count)
		return cm_errorf(err, ENOMEM, "out of memory");
	for (i = 0; i < r->nthreads; i++) {
		struct cm_report_thread *t = &r->threads[i];

		if (t->rank >= 0) {
			t->local = count[t->rank]++;
			any_rank = 1;
		} else {
			t->local = nolocal++;
		}
	}
	for (i = 0; i < r->nthreads; i++) {
		struct cm_report_thread *t = &r->threads[i];

		if (t->rank >= 0)
			snprintf(t->label, sizeof(t->label), "r%d.t%d",
				 t->rank, t->local);
		else
			snprintf(t->label, sizeof(t->label), any_rank ?
				 "?.t%d" : "t%d", t->local);
	}
	free(count);
	return 0;
}

/* A sort key per thread (qsort takes no argument to reach the report,
 * and the library keeps no global state). */
struct display_key {
	unsigned rank;		/* -1 (none) sorts after every rank */
	int local, index;
};

static int cmp_display(const void *a, const void *b)
{
	const struct display_key *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->local != y->local)
		return x->local < y->local ? -1 : 1;
	return x->index - y->index;
}

/* Rank-major display order (ties by document index). */
static int display_order(struct cm_report *r, struct cm_error *err)
{
	size_t n = r->nthreads ? (size_t)r->nthreads : 1;
	struct display_key *k = malloc(n * sizeof(*k));
	int i;

	r->order = malloc(n * sizeof(int));
	r->pos = malloc(n * sizeof(int));
	if (!k || !r->order || !r->pos) {
		free(k);
		return cm_errorf(err, ENOMEM, "out of memory");
	}
	for (i = 0; i < r->nthreads; i++)
		k[i] = (struct display_key){ (unsigned)r->threads[i].rank,
					     r->threads[i].local, i };
	qsort(k, (size_t)r->nthreads, sizeof(*k), cmp_display);
	for (i = 0; i < r->nthreads; i++) {
		r->order[i] = k[i].index;
		r->pos[k[i].index] = i;
	}
	free(k);
	return 0;
}

static int parse_threads(struct cm_report *r, const json_t *arr,
			 struct cm_error *err)
{
	size_t i;

	if (!json_is_array(arr))
		return cm_errorf(err, EINVAL, "threads: not an array");
	if (json_array_size(arr) > 1000000)
		return cm_errorf(err, EINVAL, "threads: too many");
	r->nthreads = (int)json_array_size(arr);
	r->threads = calloc(r->nthreads ? (size_t)r->nthreads : 1,
			    sizeof(*r->threads));
	if (!r->threads)
		return cm_errorf(err, ENOMEM, "out of memory");
	for (i = 0; i < json_array_size(arr); i++) {
		const json_t *o = json_array_get(arr, i);
		struct cm_report_thread *t = &r->threads[i];
		long long rank = obj_int(o, "rank", -1);

		if (!json_is_object(o))
			return cm_errorf(err, EINVAL,
					 "threads[%zu]: not an object", i);
		t->index = (int)i;
		t->rank = rank >= 0 && rank < RANK_MAX ? (int)rank : -1;
		t->tid = obj_int(o, "tid", -1);
		t->cpu_s = obj_num(o, "cpu_s", -1);
		t->final_pu = -1;
	}
	if (label_threads(r, err) < 0)
		return -1;
	return display_order(r, err);
}

static int parse_edges(struct cm_report *r, const json_t *arr,
		       struct cm_error *err)
{
	size_t i, n = (size_t)r->nthreads;

	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return cm_errorf(err, EINVAL, "edges: not an array");
	if (n > 0 && n <= DENSE_MAX) {
		r->matrix = calloc(n * n, sizeof(double));
		if (!r->matrix)
			return cm_errorf(err, ENOMEM, "out of memory");
	}
	for (i = 0; i < json_array_size(arr); i++) {
		const json_t *e = json_array_get(arr, i);
		json_t *a = json_array_get(e, 0), *b = json_array_get(e, 1);
		json_t *w = json_array_get(e, 2);
		long long x, y;
		double v;

		if (!json_is_array(e) || json_array_size(e) != 3 ||
		    !json_is_integer(a) || !json_is_integer(b) ||
		    !json_is_number(w))
			return cm_errorf(err, EINVAL,
					 "edges[%zu]: not [i, j, weight]", i);
		x = json_integer_value(a);
		y = json_integer_value(b);
		v = json_number_value(w);
		if (x < 0 || y < 0 || x >= (long long)n || y >= (long long)n ||
		    x == y)
			return cm_errorf(err, EINVAL,
					 "edges[%zu]: thread index out of range",
					 i);
		if (!isfinite(v) || v < 0)
			return cm_errorf(err, EINVAL,
					 "edges[%zu][2]: weight is not a finite number >= 0",
					 i);
		r->nedges++;
		r->total_weight += v;
		if (r->matrix) {
			r->matrix[x * (long long)n + y] += v;
			r->matrix[y * (long long)n + x] += v;
			v = r->matrix[x * (long long)n + y];
		}
		if (v > r->max_weight)
			r->max_weight = v;
	}
	return 0;
}

static int parse_timeline(struct cm_report *r, const json_t *arr,
			  struct cm_error *err)
{
	const json_t *last = NULL;
	size_t i;

	if (!json_is_array(arr))
		return 0;
	r->timeline = calloc(json_array_size(arr) + 1, sizeof(*r->timeline));
	if (!r->timeline)
		return cm_errorf(err, ENOMEM, "out of memory");
	for (i = 0; i < json_array_size(arr); i++) {
		const json_t *o = json_array_get(arr, i);
		struct cm_report_step *s = &r->timeline[r->nsteps];

		if (!json_is_object(o))
			return cm_errorf(err, EINVAL,
					 "timeline[%zu]: not an object", i);
		s->t = obj_num(o, "t", 0);
		s->cost = obj_num(o, "cost", -1);
		s->reason = obj_str(o, "reason");
		r->nsteps++;
		last = o;
	}
	if (last) {
		const json_t *p = json_object_get(last, "pu_of_thread");

		for (i = 0; i < json_array_size(p) &&
		     i < (size_t)r->nthreads; i++) {
			long long pu = json_integer_value(json_array_get(p, i));

			r->threads[i].final_pu = pu >= 0 && pu < (1 << 24) ?
						 (int)pu : -1;
		}
	}
	return 0;
}

static int cmp_migration(const void *a, const void *b)
{
	const struct cm_report_migration *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->thread - y->thread;
}

static int parse_migrations(struct cm_report *r, const json_t *arr,
			    struct cm_error *err)
{
	double last_t = r->nsteps ? r->timeline[r->nsteps - 1].t : -1;
	size_t i;
	int k;

	if (!json_is_array(arr))
		return 0;
	r->migrations = calloc(json_array_size(arr) + 1,
			       sizeof(*r->migrations));
	if (!r->migrations)
		return cm_errorf(err, ENOMEM, "out of memory");
	for (i = 0; i < json_array_size(arr); i++) {
		const json_t *o = json_array_get(arr, i);
		struct cm_report_migration *m = &r->migrations[r->nmigrations];
		long long th = obj_int(o, "thread", -1);

		if (!json_is_object(o) || th < 0 || th >= r->nthreads)
			return cm_errorf(err, EINVAL,
					 "migrations[%zu]: thread out of range",
					 i);
		m->t = obj_num(o, "t", 0);
		m->thread = (int)th;
		m->from = (int)obj_int(o, "from", -1);
		m->to = (int)obj_int(o, "to", -1);
		r->nmigrations++;
		r->nmoves += m->from >= 0;
	}
	qsort(r->migrations, (size_t)r->nmigrations, sizeof(*r->migrations),
	      cmp_migration);
	/* Moves after the last mapping applied (or without any) decide
	 * where a thread ended. */
	for (k = 0; k < r->nmigrations; k++)
		if (r->migrations[k].t > last_t && r->migrations[k].to >= 0)
			r->threads[r->migrations[k].thread].final_pu =
				r->migrations[k].to;
	return 0;
}

static void parse_identity(struct cm_report *r, const json_t *doc)
{
	const json_t *id = json_object_get(doc, "identity");
	const json_t *topo = json_object_get(doc, "topology");
	double t0, t1;

	r->node = obj_str(id, "node");
	r->user = obj_str(id, "user");
	r->executable = obj_str(id, "executable");
	r->job = obj_int(id, "job", -1);
	r->step = obj_int(id, "step", -1);
	r->ranks = (int)obj_int(id, "ranks", 0);
	r->mode = obj_str(doc, "mode");
	r->backend = obj_str(doc, "backend");
	r->started_at = obj_str(doc, "started_at");
	r->ended_at = obj_str(doc, "ended_at");
	r->cpuset = obj_str(topo, "cpuset");
	r->synthetic = obj_str(topo, "synthetic");
	r->pus = (int)obj_int(topo, "pus", -1);
	t0 = parse_utc(r->started_at);
	t1 = parse_utc(r->ended_at);
	r->duration_s = t0 >= 0 && t1 >= t0 ? t1 - t0 : -1;
}

int cm_report_parse(struct cm_report **out, const json_t *doc,
		    struct cm_error *err)
{
	struct cm_report *r;
	const char *format = obj_str(doc, "format");

	*out = NULL;
	if (!json_is_object(doc))
		return cm_errorf(err, EINVAL, "result: not a JSON object");
	if (!format || strcmp(format, "commap-result") != 0)
		return cm_errorf(err, EINVAL,
				 "format: expected \"commap-result\"");
	if (obj_int(doc, "version", -1) != 1)
		return cm_errorf(err, EINVAL,
				 "version: only version 1 is known");
	r = calloc(1, sizeof(*r));
	if (!r)
		return cm_errorf(err, ENOMEM, "out of memory");
	r->doc = json_incref((json_t *)doc);
	parse_identity(r, doc);
	if (parse_threads(r, json_object_get(doc, "threads"), err) < 0 ||
	    parse_edges(r, json_object_get(doc, "edges"), err) < 0 ||
	    parse_timeline(r, json_object_get(doc, "timeline"), err) < 0 ||
	    parse_migrations(r, json_object_get(doc, "migrations"), err) < 0) {
		int e = errno;

		cm_report_free(r);
		errno = e;
		return -1;
	}
	*out = r;
	return 0;
}

void cm_report_free(struct cm_report *r)
{
	if (!r)
		return;
	json_decref((json_t *)r->doc);
	free(r->threads);
	free(r->order);
	free(r->pos);
	free(r->matrix);
	free(r->migrations);
	free(r->timeline);
	free(r);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if invalid. */
static int utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	int n, i;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and code points past U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ||
	    cp == 0xfffe || cp == 0xffff)
		return 0;
	return n;
}

int cm_render_escape(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s)
		return 0;
	while (*p) {
		int n = utf8_len(p);

		if (n == 0 || (*p < 0x20 && *p != '\t' && *p != '\n') ||
		    *p == 0x7f) {
			fputs("\xef\xbf\xbd", out);	/* U+FFFD */
			p++;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fwrite(p, 1, (size_t)n, out);
		}
		p += n;
	}
	return ferror(out) ? (errno = EIO, -1) : 0;
}

void rd_url_escape(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; p && *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p))
			fputc(*p, out);
		else
			fprintf(out, "%%%02X", *p);
	}
}

void rd_number(FILE *out, double v)
{
	static const char suffix[] = " kMGTP";
	double a = fabs(v);
	int k = 0;

	if (!isfinite(v)) {
		fputs("?", out);
		return;
	}
	if (a != 0 && a < 0.01) {
		fprintf(out, "%.2g", v);
		return;
	}
	while (a >= 10000 && k < 5) {
		a /= 1000;
		v /= 1000;
		k++;
	}
	if (k)
		fprintf(out, "%.4g%c", v, suffix[k]);
	else
		fprintf(out, "%.4g", v);
}

int rd_finish(FILE *out, struct cm_error *err)
{
	if (fflush(out) != 0 || ferror(out))
		return cm_errorf(err, EIO, "writing the report failed");
	return 0;
}

void rd_svg_open(FILE *out, const char *kind, int suffix, int standalone,
		 double width, double height, const char *title)
{
	if (standalone)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" ");
	if (suffix >= 0)
		fprintf(out, "id=\"%s-%d\" ", kind, suffix);
	else
		fprintf(out, "id=\"%s\" ", kind);
	fprintf(out, "class=\"cm-%s\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
		"font-size=\"11\" role=\"img\">\n<title>", kind, width, height,
		width, height);
	cm_render_escape(out, title);
	fputs("</title>\n", out);
}
