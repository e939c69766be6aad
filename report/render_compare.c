/* render_compare.c: two runs of an application side by side, as Grafana
 * and XDMoD job views compare runs: what differs first (run time, cost,
 * how alike the two matrices are), then each run's outcome, matrix and
 * placement in two columns. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "render_internal.h"

#define STEP_SPECIAL 4294967290LL	/* batch, extern, interactive from here */

static void esc(FILE *out, const char *s)
{
	cm_render_escape(out, s);
}

/* The result shown for a job: its first srun step's (a batch script's
 * shell says little about the application), else its first.  *row is
 * the stored row (NULL for a bare document). */
static const json_t *shown_doc(const json_t *job, const json_t **row)
{
	const json_t *results = json_object_get(job, "results"), *r;
	size_t i;

	*row = NULL;
	if (!json_is_array(results))
		return job;
	json_array_foreach(results, i, r) {
		const json_t *step = json_object_get(r, "step");

		if (json_object_get(r, "document") && (!json_is_integer(step) ||
		    json_integer_value(step) < STEP_SPECIAL)) {
			*row = r;
			return json_object_get(r, "document");
		}
	}
	*row = json_array_get(results, 0);
	return json_object_get(*row, "document");
}

/* Cosine similarity of the two matrices (threads by index), or -1 when
 * they cannot be compared (other thread counts, no matrix, no edges). */
static double cosine(const struct cm_report *a, const struct cm_report *b)
{
	double dot = 0, na = 0, nb = 0;
	long k, n;

	if (a->nthreads != b->nthreads || !a->matrix || !b->matrix)
		return -1;
	n = (long)a->nthreads * a->nthreads;
	for (k = 0; k < n; k++) {
		dot += a->matrix[k] * b->matrix[k];
		na += a->matrix[k] * a->matrix[k];
		nb += b->matrix[k] * b->matrix[k];
	}
	return na > 0 && nb > 0 ? dot / sqrt(na * nb) : -1;
}

#define TOP_CHANGES 5

/* The pairs whose share of their matrix's communication changed most
 * (each matrix normalised to a total of 1), largest first: what moved
 * between the runs when the cosine says they differ. */
static void top_changes(FILE *out, const struct cm_report *a,
			const struct cm_report *b)
{
	int top[TOP_CHANGES][2], n = a->nthreads, i, j, k, m = 0;
	double d[TOP_CHANGES], x;

	if (cosine(a, b) < 0 || a->total_weight <= 0 || b->total_weight <= 0)
		return;
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++) {
			x = fabs(a->matrix[i * n + j] / a->total_weight -
				 b->matrix[i * n + j] / b->total_weight);
			if (x <= 1e-9 || (m == TOP_CHANGES && x <= d[m - 1]))
				continue;
			for (k = m < TOP_CHANGES ? m++ : m - 1;
			     k > 0 && d[k - 1] < x; k--) {
				d[k] = d[k - 1];
				top[k][0] = top[k - 1][0];
				top[k][1] = top[k - 1][1];
			}
			d[k] = x;
			top[k][0] = i;
			top[k][1] = j;
		}
	if (m == 0)
		return;
	fputs("<table class=\"changes\"><tr><th>pair</th><th>share in A</th>"
	      "<th>share in B</th></tr>\n", out);
	for (k = 0; k < m; k++) {
		i = top[k][0];
		j = top[k][1];
		fprintf(out, "<tr><td>%s \xe2\x80\x93 %s</td><td class=\"num\">"
			"%.1f%%</td><td class=\"num\">%.1f%%</td></tr>\n",
			a->threads[i].label, a->threads[j].label,
			100 * a->matrix[i * n + j] / a->total_weight,
			100 * b->matrix[i * n + j] / b->total_weight);
	}
	fputs("</table>\n", out);
}

static void job_title(FILE *out, const json_t *job, const char *which,
		      const struct cm_render_opts *o)
{
	const json_t *id = json_object_get(job, "job");

	fprintf(out, "<h2>%s: ", which);
	if (json_is_integer(id)) {
		fputs("<a href=\"", out);
		rd_base(out, o);
		fprintf(out, "jobs/%lld\">job %lld</a>",
			(long long)json_integer_value(id),
			(long long)json_integer_value(id));
	} else {
		fputs("run", out);
	}
	fputs("</h2>\n", out);
}

/* The differences, one row each: a's value, b's, b against a. */
static void diff_table(FILE *out, const struct cm_report *a,
		       const struct cm_report *b)
{
	double c = cosine(a, b);

	fputs("<table class=\"diff\"><tr><th></th><th>A</th><th>B</th>"
	      "<th>B against A</th></tr>\n", out);
	fputs("<tr><th>run time</th><td class=\"num\">", out);
	rd_number(out, a->duration_s);
	fputs(" s</td><td class=\"num\">", out);
	rd_number(out, b->duration_s);
	fputs(" s</td><td class=\"num\">", out);
	if (a->duration_s > 0 && b->duration_s >= 0)
		fprintf(out, "%.2fx", b->duration_s / a->duration_s);
	fprintf(out, "</td></tr>\n<tr><th>threads</th><td class=\"num\">%d"
		"</td><td class=\"num\">%d</td><td></td></tr>\n"
		"<tr><th>pins</th><td class=\"num\">%d</td><td class=\"num\">"
		"%d</td><td></td></tr>\n", a->nthreads, b->nthreads,
		a->nmigrations, b->nmigrations);
	fputs("<tr><th>mode</th><td>", out);
	esc(out, a->mode);
	fputs("</td><td>", out);
	esc(out, b->mode);
	fputs("</td><td></td></tr>\n<tr><th>matrices alike (cosine)</th>"
	      "<td></td><td></td><td class=\"num cosine\">", out);
	if (c >= 0)
		fprintf(out, "%.3f", c);
	else
		fputs("not comparable (other thread counts or no "
		      "communication)", out);
	fputs("</td></tr>\n</table>\n", out);
}

static int column(FILE *out, const json_t *job, const json_t *row,
		  const struct cm_report *r, int k, const char *which,
		  const struct cm_render_opts *o)
{
	fputs("<div>\n", out);
	job_title(out, job, which, o);
	if (r->executable) {
		fputs("<p>Application ", out);
		rd_app_link(out, o, rd_basename(r->executable));
		fputs("</p>\n", out);
	}
	if (rd_outcome_lists(out, r->doc, row) < 0)
		return -1;
	fputs("<h3>Communication matrix</h3>\n<div class=\"fig\">\n", out);
	if (rd_heatmap(out, r, o, 0, k) < 0)
		return -1;
	fputs("</div>\n<h3>Placement on the node</h3>\n<div class=\"fig\">\n",
	      out);
	if (rd_topology(out, r, o, 0, k) < 0)
		return -1;
	fputs("</div>\n</div>\n", out);
	return 0;
}

int cm_render_compare_html(FILE *out, const json_t *a, const json_t *b,
			   const struct cm_render_opts *o,
			   struct cm_error *err)
{
	const json_t *row_a, *row_b;
	const json_t *da = shown_doc(a, &row_a), *db = shown_doc(b, &row_b);
	struct cm_report *ra = NULL, *rb = NULL;
	int rc = -1;

	if (!da || !db)
		return cm_errorf(err, EINVAL, "results: a job without a "
				 "stored document");
	if (cm_report_parse(&ra, da, err) < 0 ||
	    cm_report_parse(&rb, db, err) < 0)
		goto out;
	rd_page_head(out, o, "Compare two runs", NULL);
	diff_table(out, ra, rb);
	top_changes(out, ra, rb);
	fputs("<div class=\"compare\">\n", out);
	if (column(out, a, row_a, ra, 0, "A", o) < 0 ||
	    column(out, b, row_b, rb, 1, "B", o) < 0) {
		cm_errorf(err, ENOMEM, "out of memory");
		goto out;
	}
	fputs("</div>\n", out);
	rd_page_foot(out, o);
	rc = rd_finish(out, err);
out:
	cm_report_free(ra);
	cm_report_free(rb);
	return rc;
}
