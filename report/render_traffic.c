/* render_traffic.c: a job's MPI ranks across its nodes (see
 * render_traffic.h). */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "render_traffic.h"

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* An integer in [0, hi), else -1. */
static long long int_below(const json_t *v, long long hi)
{
	long long x;

	if (!json_is_integer(v))
		return -1;
	x = (long long)json_integer_value(v);
	return x >= 0 && x < hi ? x : -1;
}

static long long row_step(const json_t *row)
{
	const json_t *s = json_object_get(row, "step");

	return json_is_integer(s) ? (long long)json_integer_value(s) : -1;
}

static const json_t *row_traffic(const json_t *row)
{
	const json_t *t = json_object_get(json_object_get(row, "document"),
					  "rank_traffic");

	return json_is_object(t) ? t : NULL;
}

int cm_traffic_steps(const json_t *job, long long *steps, int max)
{
	const json_t *rows = json_object_get(job, "results");
	int n = 0;

	for (size_t i = 0; i < json_array_size(rows); i++) {
		const json_t *row = json_array_get(rows, i);
		long long s = row_step(row);
		int seen = 0;

		if (!row_traffic(row))
			continue;
		for (int k = 0; k < n; k++)
			seen |= steps[k] == s;
		if (!seen && n < max)
			steps[n++] = s;
	}
	return n;
}

void cm_traffic_free(struct cm_traffic *t)
{
	free(t->nodes);
	free(t->node_of);
	free(t->matrix);
	memset(t, 0, sizeof(*t));
}

/* The first node's placement (every node of a step says the same). */
static void placement_of(struct cm_traffic *t, const json_t *p)
{
	const char *d = json_string_value(json_object_get(p, "distribution"));
	long long b = int_below(json_object_get(p, "predicted_block"),
				LLONG_MAX);
	long long l = int_below(json_object_get(p, "predicted"), LLONG_MAX);

	if (t->placement || !d || b < 0 || l < 0)
		return;
	t->placement = d;
	t->predicted_block = b;
	t->predicted = l;
}

static int node_index(struct cm_traffic *t, const char *name)
{
	for (int i = 0; i < t->nnodes; i++)
		if (strcmp(t->nodes[i].name, name) == 0)
			return i;
	if (t->nnodes >= CM_TRAFFIC_NODES_MAX)
		return -1;
	t->nodes[t->nnodes].name = name;
	return t->nnodes++;
}

/* Pass 1: the nodes and the highest rank; pass 2: each rank's node. */
static int map_ranks(const json_t *rows, struct cm_traffic *t, int pass)
{
	for (size_t i = 0; i < json_array_size(rows); i++) {
		const json_t *row = json_array_get(rows, i), *rt, *r;
		const char *name = json_string_value(json_object_get(row,
								     "node"));
		size_t k;
		int node;

		rt = row_step(row) == t->step ? row_traffic(row) : NULL;
		if (!rt)
			continue;
		if (!t->source)
			t->source = json_string_value(json_object_get(rt,
								     "source"));
		placement_of(t, json_object_get(rt, "placement"));
		node = node_index(t, name ? name : "?");
		json_array_foreach(json_object_get(rt, "ranks"), k, r) {
			long long x = int_below(r, CM_TRAFFIC_RANK_MAX);

			if (x < 0 || node < 0)
				continue;
			if (pass == 1 && x + 1 > t->rank_max)
				t->rank_max = (int)x + 1;
			if (pass == 2 && t->node_of[x] < 0) {
				t->node_of[x] = node;
				t->nodes[node].ranks++;
				t->nranks++;
			}
		}
	}
	return 0;
}

/* Pairs across nodes, (a, b) with a < b, summed both ways. */
struct cross {
	struct cm_traffic_pair *p;
	size_t n, cap;
};

static int cross_add(struct cross *c, int s, int d, int ns, int nd,
		     uint64_t bytes)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		void *np = realloc(c->p, cap * sizeof(*c->p));

		if (!np)
			return -1;
		c->p = np;
		c->cap = cap;
	}
	c->p[c->n++] = (struct cm_traffic_pair){
		s < d ? s : d, s < d ? d : s, s < d ? ns : nd, s < d ? nd : ns,
		bytes };
	return 0;
}

static void count_pair(struct cm_traffic *t, int s, int d, uint64_t bytes,
		       struct cross *c, int *oom)
{
	int ns = t->node_of[s];
	int nd = d < t->rank_max ? t->node_of[d] : -1;

	t->total = add_sat(t->total, bytes);
	if (t->matrix && d < t->rank_max)
		t->matrix[s * t->rank_max + d] =
			add_sat(t->matrix[s * t->rank_max + d], bytes);
	if (nd < 0) {
		t->unknown = add_sat(t->unknown, bytes);
	} else if (nd == ns) {
		t->within = add_sat(t->within, bytes);
		t->nodes[ns].within = add_sat(t->nodes[ns].within, bytes);
	} else {
		t->between = add_sat(t->between, bytes);
		t->nodes[ns].out = add_sat(t->nodes[ns].out, bytes);
		t->nodes[nd].in = add_sat(t->nodes[nd].in, bytes);
		if (bytes && cross_add(c, s, d, ns, nd, bytes) < 0)
			*oom = 1;
	}
}

static int count_pairs(const json_t *rows, struct cm_traffic *t,
		       struct cross *c)
{
	int oom = 0;

	for (size_t i = 0; i < json_array_size(rows) && !oom; i++) {
		const json_t *row = json_array_get(rows, i), *rt, *p;
		size_t k;

		rt = row_step(row) == t->step ? row_traffic(row) : NULL;
		json_array_foreach(rt ? json_object_get(rt, "pairs") : NULL,
				   k, p) {
			long long s = int_below(json_array_get(p, 0),
						t->rank_max);
			long long d = int_below(json_array_get(p, 1),
						CM_TRAFFIC_RANK_MAX);
			long long b = int_below(json_array_get(p, 2),
						INT64_MAX);
			long long m = int_below(json_array_get(p, 3),
						INT64_MAX);

			if (s < 0 || d < 0 || b < 0 || m < 0 ||
			    t->node_of[s] < 0)
				continue;
			t->messages = add_sat(t->messages, (uint64_t)m);
			count_pair(t, (int)s, (int)d, (uint64_t)b, c, &oom);
		}
	}
	return oom ? -1 : 0;
}

static int by_ranks(const void *x, const void *y)
{
	const struct cm_traffic_pair *a = x, *b = y;

	if (a->a != b->a)
		return (a->a > b->a) - (a->a < b->a);
	return (a->b > b->b) - (a->b < b->b);
}

/* Sum both directions of each pair, keep the CM_TRAFFIC_TOP heaviest
 * (ties: lower ranks first). */
static void pick_top(struct cm_traffic *t, struct cross *c)
{
	size_t n = 0;

	if (c->n)
		qsort(c->p, c->n, sizeof(*c->p), by_ranks);
	for (size_t i = 0; i < c->n; i++) {
		if (n && c->p[n - 1].a == c->p[i].a &&
		    c->p[n - 1].b == c->p[i].b)
			c->p[n - 1].bytes = add_sat(c->p[n - 1].bytes,
						    c->p[i].bytes);
		else
			c->p[n++] = c->p[i];
	}
	for (size_t i = 0; i < n; i++) {
		int at = t->ntop < CM_TRAFFIC_TOP ? t->ntop++ : -1;

		if (at < 0) {
			if (c->p[i].bytes <= t->top[CM_TRAFFIC_TOP - 1].bytes)
				continue;
			at = CM_TRAFFIC_TOP - 1;
		}
		while (at > 0 && t->top[at - 1].bytes < c->p[i].bytes) {
			t->top[at] = t->top[at - 1];
			at--;
		}
		t->top[at] = c->p[i];
	}
}

int cm_traffic_compute(const json_t *job, long long step,
		       struct cm_traffic *t, struct cm_error *err)
{
	const json_t *rows = json_object_get(job, "results");
	struct cross c = { 0 };
	int rc;

	memset(t, 0, sizeof(*t));
	t->step = step;
	t->nodes = calloc(CM_TRAFFIC_NODES_MAX, sizeof(*t->nodes));
	if (!t->nodes)
		return cm_errorf(err, ENOMEM, "out of memory");
	map_ranks(rows, t, 1);
	if (t->nnodes == 0) {
		cm_traffic_free(t);
		return cm_errorf(err, ENOENT, "no traffic between ranks for "
				 "step %lld", step);
	}
	t->node_of = malloc((size_t)(t->rank_max ? t->rank_max : 1) *
			    sizeof(int));
	if (t->rank_max && t->rank_max <= CM_TRAFFIC_MATRIX_MAX)
		t->matrix = calloc((size_t)t->rank_max * (size_t)t->rank_max,
				   sizeof(uint64_t));
	if (!t->node_of || (t->rank_max && t->rank_max <=
			    CM_TRAFFIC_MATRIX_MAX && !t->matrix)) {
		cm_traffic_free(t);
		return cm_errorf(err, ENOMEM, "out of memory");
	}
	for (int r = 0; r < t->rank_max; r++)
		t->node_of[r] = -1;
	map_ranks(rows, t, 2);
	rc = count_pairs(rows, t, &c);
	if (rc == 0)
		pick_top(t, &c);
	free(c.p);
	if (rc < 0) {
		cm_traffic_free(t);
		return cm_errorf(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* ---- text ------------------------------------------------------------- */

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* "12.3M": bytes in at most 6 characters. */
static const char *human(uint64_t v, char *buf, size_t len)
{
	static const char unit[] = "KMGTPE";
	double x = (double)v;
	int u = -1;

	while (x >= 1000 && u < 5) {
		x /= 1000;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%.3g%c", x, unit[u]);
	return buf;
}

/* Ranks ordered by node, then number: the matrix's rows and columns. */
static int matrix_order(const struct cm_traffic *t, int *order)
{
	int n = 0;

	for (int node = 0; node < t->nnodes; node++)
		for (int r = 0; r < t->rank_max; r++)
			if (t->node_of[r] == node)
				order[n++] = r;
	return n;
}

static void matrix_text(FILE *out, const struct cm_traffic *t)
{
	int order[CM_TRAFFIC_MATRIX_MAX], n = matrix_order(t, order);
	char b[16];

	fputs("  bytes from rank (row) to rank (column), ranks by node:\n"
	      "  FROM\\TO", out);
	for (int j = 0; j < n; j++)
		fprintf(out, " %6d", order[j]);
	fputs("\n", out);
	for (int i = 0; i < n; i++) {
		fprintf(out, "  %-7d", order[i]);
		for (int j = 0; j < n; j++) {
			uint64_t v = t->matrix[order[i] * t->rank_max +
					       order[j]];

			fprintf(out, " %6s", v ? human(v, b, sizeof(b)) : ".");
		}
		fprintf(out, "  %.16s\n", t->nodes[t->node_of[order[i]]].name);
	}
}

int cm_traffic_text(FILE *out, const struct cm_traffic *t)
{
	char step[24];

	fprintf(out, "MPI ranks across nodes, step %s (%s): %d ranks on %d "
		"nodes\n", cm_report_step_name(t->step, step, sizeof(step)),
		t->source ? t->source : "?", t->nranks, t->nnodes);
	fprintf(out, "  bytes within nodes:  %llu (%.1f%%)\n",
		(unsigned long long)t->within, pct(t->within, t->total));
	fprintf(out, "  bytes between nodes: %llu (%.1f%%)\n",
		(unsigned long long)t->between, pct(t->between, t->total));
	if (t->unknown)
		fprintf(out, "  bytes to ranks of nodes without a result: "
			"%llu\n", (unsigned long long)t->unknown);
	if (t->placement)
		fprintf(out, "  ranks placed across nodes: %s (between nodes "
			"predicted from earlier runs: %lld under block "
			"distribution, %lld so)\n", strcmp(t->placement,
			"learned") ? "block distribution kept" :
			"from the learned traffic", t->predicted_block,
			t->predicted);
	fprintf(out, "  bytes total:         %llu in %llu messages\n",
		(unsigned long long)t->total,
		(unsigned long long)t->messages);
	fprintf(out, "  %-16s %5s %14s %14s %14s\n", "NODE", "RANKS",
		"WITHIN", "TO OTHERS", "FROM OTHERS");
	for (int i = 0; i < t->nnodes; i++)
		fprintf(out, "  %-16.16s %5d %14llu %14llu %14llu\n",
			t->nodes[i].name, t->nodes[i].ranks,
			(unsigned long long)t->nodes[i].within,
			(unsigned long long)t->nodes[i].out,
			(unsigned long long)t->nodes[i].in);
	if (t->ntop)
		fputs("  heaviest rank pairs across nodes (bytes both ways):\n",
		      out);
	for (int i = 0; i < t->ntop; i++)
		fprintf(out, "    ranks %d and %d (%s, %s): %llu\n",
			t->top[i].a, t->top[i].b, t->nodes[t->top[i].na].name,
			t->nodes[t->top[i].nb].name,
			(unsigned long long)t->top[i].bytes);
	if (t->matrix)
		matrix_text(out, t);
	return ferror(out) ? -1 : 0;
}

/* ---- HTML -------------------------------------------------------------- */

static void html_matrix(FILE *out, const struct cm_traffic *t)
{
	int order[CM_TRAFFIC_MATRIX_MAX], n = matrix_order(t, order);
	char b[16];

	fputs("<table class=\"traffic-matrix\">\n<caption>bytes from rank "
	      "(row) to rank (column), ranks by node</caption>\n<tr><th>"
	      "</th>", out);
	for (int j = 0; j < n; j++)
		fprintf(out, "<th>%d</th>", order[j]);
	fputs("</tr>\n", out);
	for (int i = 0; i < n; i++) {
		fprintf(out, "<tr><th>%d <span class=\"muted\">", order[i]);
		cm_render_escape(out, t->nodes[t->node_of[order[i]]].name);
		fputs("</span></th>", out);
		for (int j = 0; j < n; j++) {
			uint64_t v = t->matrix[order[i] * t->rank_max +
					       order[j]];
			int cross = t->node_of[order[i]] !=
				    t->node_of[order[j]];

			fprintf(out, "<td%s title=\"%llu\">%s</td>",
				cross && v ? " class=\"cross\"" : "",
				(unsigned long long)v,
				v ? human(v, b, sizeof(b)) : ".");
		}
		fputs("</tr>\n", out);
	}
	fputs("</table>\n", out);
}

int cm_traffic_html(FILE *out, const struct cm_traffic *t)
{
	char step[24];

	fprintf(out, "<section class=\"traffic\">\n<h2>MPI ranks across nodes, "
		"step %s</h2>\n<table class=\"summary\">\n",
		cm_report_step_name(t->step, step, sizeof(step)));
	fputs("<tr><th>counted by</th><td>", out);
	cm_render_escape(out, t->source ? t->source : "?");
	fprintf(out, "</td></tr>\n<tr><th>ranks</th><td>%d on %d nodes</td>"
		"</tr>\n", t->nranks, t->nnodes);
	fprintf(out, "<tr><th>bytes within nodes</th><td>%llu (%.1f%%)</td>"
		"</tr>\n<tr><th>bytes between nodes</th><td>%llu (%.1f%%)"
		"</td></tr>\n", (unsigned long long)t->within,
		pct(t->within, t->total), (unsigned long long)t->between,
		pct(t->between, t->total));
	if (t->unknown)
		fprintf(out, "<tr><th>bytes to nodes without a result</th>"
			"<td>%llu</td></tr>\n", (unsigned long long)t->unknown);
	if (t->placement)
		fprintf(out, "<tr><th>ranks placed across nodes</th><td>%s "
			"(between nodes predicted from earlier runs: %lld "
			"under block distribution, %lld so)</td></tr>\n",
			strcmp(t->placement, "learned") ?
			"block distribution kept" : "from the learned traffic",
			t->predicted_block, t->predicted);
	fprintf(out, "<tr><th>bytes total</th><td>%llu in %llu messages</td>"
		"</tr>\n</table>\n", (unsigned long long)t->total,
		(unsigned long long)t->messages);
	fputs("<table class=\"traffic-nodes\">\n<tr><th>node</th><th>ranks"
	      "</th><th>within</th><th>to others</th><th>from others</th>"
	      "</tr>\n", out);
	for (int i = 0; i < t->nnodes; i++) {
		fputs("<tr><td>", out);
		cm_render_escape(out, t->nodes[i].name);
		fprintf(out, "</td><td>%d</td><td>%llu</td><td>%llu</td><td>"
			"%llu</td></tr>\n", t->nodes[i].ranks,
			(unsigned long long)t->nodes[i].within,
			(unsigned long long)t->nodes[i].out,
			(unsigned long long)t->nodes[i].in);
	}
	fputs("</table>\n", out);
	if (t->ntop)
		fputs("<table class=\"traffic-pairs\">\n<caption>heaviest rank "
		      "pairs across nodes (bytes both ways)</caption>\n<tr><th>"
		      "ranks</th><th>nodes</th><th>bytes</th></tr>\n", out);
	for (int i = 0; i < t->ntop; i++) {
		fprintf(out, "<tr><td>%d, %d</td><td>", t->top[i].a,
			t->top[i].b);
		cm_render_escape(out, t->nodes[t->top[i].na].name);
		fputs(", ", out);
		cm_render_escape(out, t->nodes[t->top[i].nb].name);
		fprintf(out, "</td><td>%llu</td></tr>\n",
			(unsigned long long)t->top[i].bytes);
	}
	if (t->ntop)
		fputs("</table>\n", out);
	if (t->matrix)
		html_matrix(out, t);
	fputs("</section>\n", out);
	return ferror(out) ? -1 : 0;
}

static int each_step(FILE *out, const json_t *job,
		     int (*show)(FILE *, const struct cm_traffic *))
{
	long long steps[64];
	int n = cm_traffic_steps(job, steps, 64), shown = 0;

	for (int i = 0; i < n; i++) {
		struct cm_traffic t;
		struct cm_error err;
		int rc;

		if (cm_traffic_compute(job, steps[i], &t, &err) < 0)
			continue;
		/* asked for, but no rank counted (not Open MPI): nothing
		 * to show */
		rc = t.nranks ? show(out, &t) : 0;
		shown += t.nranks > 0;
		cm_traffic_free(&t);
		if (rc < 0)
			return -1;
	}
	return shown;
}

int cm_traffic_job_text(FILE *out, const json_t *job)
{
	return each_step(out, job, cm_traffic_text);
}

int cm_traffic_job_html(FILE *out, const json_t *job)
{
	return each_step(out, job, cm_traffic_html);
}
