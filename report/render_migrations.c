/* render_migrations.c: thread migrations over time.  One lane per
 * thread (all of them up to MAX_LANES, otherwise the threads that moved),
 * a mark per move, the mappings applied (timeline) as vertical lines, and
 * the mapping cost over time as a step plot above the lanes. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render_internal.h"

#define MAX_LANES 64
#define LANE_H 12
#define LEFT 72
#define PLOT_W 620
#define COST_H 60
#define TOP 24
#define LABELLED_MAX 150	/* write "from→to" next to the marks */

struct lanes {
	int *lane_of;		/* thread -> lane, -1 if not shown */
	int n;			/* lanes */
	int hidden;		/* threads that moved but have no lane */
};

static int lanes_init(struct lanes *l, const struct cm_report *r)
{
	char *moved = calloc((size_t)r->nthreads + 1, 1);
	int i, all = r->nthreads <= MAX_LANES;

	l->lane_of = malloc(((size_t)r->nthreads + 1) * sizeof(int));
	l->n = l->hidden = 0;
	if (!moved || !l->lane_of) {
		free(moved);
		free(l->lane_of);
		return -1;
	}
	for (i = 0; i < r->nmigrations; i++)
		moved[r->migrations[i].thread] = 1;
	for (i = 0; i < r->nthreads; i++) {
		l->lane_of[i] = -1;
		if (!all && !moved[i])
			continue;
		if (l->n < MAX_LANES)
			l->lane_of[i] = l->n++;
		else
			l->hidden++;
	}
	free(moved);
	return 0;
}

/* A round tick step (1, 2, 2.5 or 5 times a power of ten) giving at
 * most 6 intervals over span: ticks at 0, 2, 4 s rather than 1.606,
 * 3.212. */
static double tick_step(double span)
{
	static const double nice[] = { 1, 2, 2.5, 5, 10 };
	double p = pow(10, floor(log10(span / 6)));
	size_t i;

	for (i = 0; i < sizeof(nice) / sizeof(nice[0]); i++)
		if (span / (nice[i] * p) <= 6)
			return nice[i] * p;
	return 10 * p;
}

/* The time the x axis ends at: the run's end rounded up to a tick. */
static double span_of(const struct cm_report *r, double *step)
{
	double t = r->duration_s > 0 ? r->duration_s : 0;

	if (r->nmigrations && r->migrations[r->nmigrations - 1].t > t)
		t = r->migrations[r->nmigrations - 1].t;
	if (r->nsteps && r->timeline[r->nsteps - 1].t > t)
		t = r->timeline[r->nsteps - 1].t;
	if (!(t > 0))
		t = 1;
	*step = tick_step(t);
	return ceil(t / *step - 1e-9) * *step;
}

static void axis(FILE *out, double span, double step, double y)
{
	int k, n = (int)lround(span / step);

	fprintf(out, "<g class=\"axis\" fill=\"#333\">"
		"<line x1=\"%d\" y1=\"%.0f\" x2=\"%d\" y2=\"%.0f\" "
		"stroke=\"#333\"/>\n", LEFT, y, LEFT + PLOT_W, y);
	for (k = 0; k <= n; k++) {
		double x = LEFT + PLOT_W * k / (double)n;

		fprintf(out, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" "
			"y2=\"%.0f\" stroke=\"#333\"/><text class=\"tick\" "
			"x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g%s"
			"</text>\n", x, y, x, y + 4, x, y + 15, step * k,
			k == n ? " s" : "");
	}
	fputs("</g>\n", out);
}

/* Whether the label "from->to" (about w px) right of the mark of
 * migration i fits before the next mark of the same thread. */
static int label_fits(const struct cm_report *r, int i, double span,
		      double w)
{
	double x = PLOT_W * r->migrations[i].t / span;
	int j;

	for (j = i + 1; j < r->nmigrations; j++)
		if (r->migrations[j].thread == r->migrations[i].thread)
			return PLOT_W * r->migrations[j].t / span - 4 >
			       x + 5 + w;
	return x + 5 + w <= PLOT_W + 20;
}

/* The cost of the mapping in force over time. */
static void cost_plot(FILE *out, const struct cm_report *r, double span)
{
	double hi = 0, x0, y0;
	int i, n = 0;

	for (i = 0; i < r->nsteps; i++)
		if (r->timeline[i].cost >= 0) {
			n++;
			hi = r->timeline[i].cost > hi ? r->timeline[i].cost :
			     hi;
		}
	if (n == 0)
		return;
	fprintf(out, "<g class=\"cost\"><text x=\"%d\" y=\"%d\" "
		"text-anchor=\"end\">cost</text><text x=\"%d\" y=\"%d\" "
		"text-anchor=\"end\" fill=\"#666\">", LEFT - 4, TOP + 12,
		LEFT - 4, TOP + 24);
	rd_number(out, hi);
	fputs("</text><polyline fill=\"none\" stroke=\"#d62728\" "
	      "stroke-width=\"1.5\" points=\"", out);
	x0 = -1;
	y0 = 0;
	for (i = 0; i < r->nsteps; i++) {
		const struct cm_report_step *s = &r->timeline[i];
		double x = LEFT + PLOT_W * s->t / span;
		double y = TOP + COST_H - (hi > 0 ? s->cost / hi : 0) *
			   (COST_H - 8);

		if (s->cost < 0)
			continue;
		if (x0 >= 0)
			fprintf(out, "%.1f,%.1f ", x, y0);
		fprintf(out, "%.1f,%.1f ", x, y);
		x0 = x;
		y0 = y;
	}
	fprintf(out, "%d,%.1f\"/></g>\n", LEFT + PLOT_W, y0);
}

static void timeline_lines(FILE *out, const struct cm_report *r,
			   double span, double bottom)
{
	int i;

	fputs("<g class=\"mappings\" stroke=\"#999\" "
	      "stroke-dasharray=\"3,3\">\n", out);
	for (i = 0; i < r->nsteps; i++) {
		const struct cm_report_step *s = &r->timeline[i];
		double x = LEFT + PLOT_W * s->t / span;

		fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
			"y2=\"%.0f\"><title>t=", x, TOP, x, bottom);
		rd_number(out, s->t);
		fputs(" s: mapping applied", out);
		if (s->reason) {
			fputs(" (", out);
			cm_render_escape(out, s->reason);
			fputs(")", out);
		}
		if (s->cost >= 0) {
			fputs(", cost ", out);
			rd_number(out, s->cost);
		}
		fputs("</title></line>\n", out);
	}
	fputs("</g>\n", out);
}

static void lane_marks(FILE *out, const struct cm_report *r,
		       const struct lanes *l, double span, double top)
{
	int i, labelled = r->nmigrations <= LABELLED_MAX;
	char lab[32];

	fputs("<g class=\"lanes\">\n", out);
	for (i = 0; i < r->nthreads; i++) {
		double y = top + l->lane_of[i] * LANE_H + LANE_H / 2.0;

		if (l->lane_of[i] < 0)
			continue;
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
			"dominant-baseline=\"middle\" font-size=\"9\">%s</text>"
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			"stroke=\"#ddd\"/>\n", LEFT - 4, y,
			r->threads[i].label, LEFT, y, LEFT + PLOT_W, y);
	}
	for (i = 0; i < r->nmigrations; i++) {
		const struct cm_report_migration *m = &r->migrations[i];
		double x = LEFT + PLOT_W * m->t / span;
		double y = top + l->lane_of[m->thread] * LANE_H + LANE_H / 2.0;

		if (l->lane_of[m->thread] < 0)
			continue;
		fprintf(out, "<circle class=\"migration\" cx=\"%.1f\" "
			"cy=\"%.1f\" r=\"3.5\" fill=\"#1f77b4\"><title>t=", x,
			y);
		rd_number(out, m->t);
		fprintf(out, " s: %s moved from PU %d to PU %d</title>"
			"</circle>", r->threads[m->thread].label, m->from,
			m->to);
		/* inside the lane, right of the mark, and only where the
		 * next mark of the lane leaves room (else the title says
		 * it) */
		snprintf(lab, sizeof(lab), "%d\xe2\x86\x92%d", m->from,
			 m->to);
		if (labelled && label_fits(r, i, span, 5.0 * (strlen(lab) - 2)))
			fprintf(out, "<text class=\"move\" x=\"%.1f\" "
				"y=\"%.1f\" dominant-baseline=\"middle\" "
				"font-size=\"8\" fill=\"#1f77b4\">%s</text>",
				x + 5, y, lab);
		fputs("\n", out);
	}
	fputs("</g>\n", out);
}

int rd_migrations(FILE *out, const struct cm_report *r,
		  const struct cm_render_opts *opts, int standalone,
		  int suffix)
{
	struct lanes l;
	double step, span = span_of(r, &step), lanes_top = TOP + COST_H + 8, bottom;
	char title[96];

	(void)opts;
	if (lanes_init(&l, r) < 0)
		return -1;
	bottom = lanes_top + (l.n ? l.n : 1) * LANE_H;
	snprintf(title, sizeof(title), "Migrations over time: %d moves, "
		 "%d first placements, %d mappings applied", r->nmoves,
		 r->nmigrations - r->nmoves, r->nsteps);
	rd_svg_open(out, "migrations", suffix, standalone,
		    LEFT + PLOT_W + 24, bottom + 48, title);
	fprintf(out, "<text x=\"%d\" y=\"14\">%d migration%s, %d first "
		"placement%s, %d mapping%s applied</text>\n", LEFT, r->nmoves,
		r->nmoves == 1 ? "" : "s", r->nmigrations - r->nmoves,
		r->nmigrations - r->nmoves == 1 ? "" : "s", r->nsteps,
		r->nsteps == 1 ? "" : "s");
	cost_plot(out, r, span);
	timeline_lines(out, r, span, bottom);
	if (r->nmoves == 0)
		fprintf(out, "<text class=\"none\" x=\"%d\" y=\"%.0f\" "
			"fill=\"#555\">no thread migrated</text>\n", LEFT + 8,
			lanes_top + LANE_H);
	lane_marks(out, r, &l, span, lanes_top);
	axis(out, span, step, bottom + 4);
	if (l.hidden)
		fprintf(out, "<text x=\"%d\" y=\"%.0f\" fill=\"#555\">and %d "
			"more threads moved</text>\n", LEFT, bottom + 40,
			l.hidden);
	fputs("</svg>\n", out);
	free(l.lane_of);
	return 0;
}

int cm_render_migrations_svg(FILE *out, const struct cm_report *r,
			     const struct cm_render_opts *opts, int standalone,
			     struct cm_error *err)
{
	if (rd_migrations(out, r, opts, standalone, -1) < 0)
		return cm_errorf(err, ENOMEM, "out of memory");
	return rd_finish(out, err);
}
