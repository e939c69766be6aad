/* render_heatmap.c: the communication matrix as an SVG heatmap.
 *
 * The plot is a fixed square of about PLOT px whatever the thread count:
 * up to PLOT threads one cell per thread pair (2 px at 256 threads);
 * beyond, threads are binned.  Colours are quantised to NCOLOURS levels,
 * each a CSS class, and equal neighbours in a row are merged into one
 * rect, which keeps a 256-thread page small and fast to render. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render_internal.h"

#define PLOT 512
#define NCOLOURS 32
#define MARGIN_LEFT 64
#define MARGIN_TOP 64
#define LEGEND_W 110
#define SMALL_N 32		/* below: a <title> per cell */

/* A perceptually ordered ramp (viridis-like), drawn from light (level 0,
 * little communication) to dark (the strongest edge), as readers of a
 * heatmap expect; 0 communication is the pale background. */
static const unsigned char ramp[][3] = {
	{ 68, 1, 84 }, { 59, 82, 139 }, { 33, 145, 140 },
	{ 94, 201, 98 }, { 253, 231, 37 },
};
#define NRAMP (sizeof(ramp) / sizeof(ramp[0]))

static void colour_of(int level, char buf[8])
{
	double x = (double)(NCOLOURS - 1 - level) / (NCOLOURS - 1) *
		   (NRAMP - 1);
	int k = (int)x;
	double f;
	int c[3], i;

	if (k >= (int)NRAMP - 1)
		k = NRAMP - 2;
	f = x - k;
	for (i = 0; i < 3; i++)
		c[i] = (int)lround(ramp[k][i] + f * (ramp[k + 1][i] -
						      ramp[k][i]));
	snprintf(buf, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

struct heat {
	int n;			/* threads */
	int g;			/* grid cells per axis */
	int bin;		/* threads per cell */
	int cell;		/* px per cell */
	double *v;		/* g * g binned weights */
	double lo, hi;		/* smallest nonzero, largest */
	int log;
};

static int heat_bin(struct heat *h, const struct cm_report *r)
{
	const json_t *edges = json_object_get(r->doc, "edges");
	size_t k;
	int i;

	h->n = r->nthreads;
	h->bin = (h->n + PLOT - 1) / PLOT;
	if (h->bin < 1)
		h->bin = 1;
	h->g = (h->n + h->bin - 1) / h->bin;
	h->cell = h->g ? PLOT / h->g : PLOT;
	h->v = calloc(h->g ? (size_t)h->g * (size_t)h->g : 1, sizeof(double));
	if (!h->v)
		return -1;
	for (k = 0; k < json_array_size(edges); k++) {
		const json_t *e = json_array_get(edges, k);
		int a = (int)json_integer_value(json_array_get(e, 0));
		int b = (int)json_integer_value(json_array_get(e, 1));
		double w = json_number_value(json_array_get(e, 2));
		int x, y;

		if (a < 0 || b < 0 || a >= h->n || b >= h->n)
			continue;	/* parse_edges refused those already */
		x = r->pos[a] / h->bin;
		y = r->pos[b] / h->bin;

		h->v[(size_t)x * h->g + y] += w;
		if (x != y)
			h->v[(size_t)y * h->g + x] += w;
		else
			h->v[(size_t)x * h->g + y] += w;
	}
	h->lo = INFINITY;
	h->hi = 0;
	for (i = 0; i < h->g * h->g; i++) {
		if (h->v[i] > 0 && h->v[i] < h->lo)
			h->lo = h->v[i];
		if (h->v[i] > h->hi)
			h->hi = h->v[i];
	}
	if (h->hi == 0)
		h->lo = 0;
	return 0;
}

static void heat_choose_scale(struct heat *h, enum cm_render_scale s)
{
	if (s == CM_RENDER_SCALE_LOG)
		h->log = h->hi > 0;
	else if (s == CM_RENDER_SCALE_LINEAR)
		h->log = 0;
	else
		h->log = h->hi > 0 && h->hi / h->lo > 1000;
}

/* Colour level 0..NCOLOURS-1 of a nonzero value. */
static int heat_level(const struct heat *h, double v)
{
	double f;

	if (h->log)
		f = h->hi > h->lo ? log(v / h->lo) / log(h->hi / h->lo) : 1;
	else
		f = v / h->hi;
	if (f < 0)
		f = 0;
	if (f > 1)
		f = 1;
	return (int)lround(f * (NCOLOURS - 1));
}

/* Label every step-th thread: 1, 2, 4, 5, 8, 10, 16, 20, 25, 32, ...
 * the smallest "round" step that keeps at most max labels. */
static int label_step(int n, int max)
{
	static const int nice[] = { 1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50,
				    64, 100, 128, 200, 250, 256, 500, 512,
				    1000, 1024 };
	size_t i;
	int step;

	for (i = 0; i < sizeof(nice) / sizeof(nice[0]); i++)
		if ((n + nice[i] - 1) / nice[i] <= max)
			return nice[i];
	step = (n + max - 1) / max;
	return step < 1 ? 1 : step;
}

static void heat_style(FILE *out, const char *kind, int suffix)
{
	char c[8];
	int i;

	fputs("<style>", out);
	for (i = 0; i < NCOLOURS; i++) {
		colour_of(i, c);
		if (suffix >= 0)
			fprintf(out, "#%s-%d .h%d{fill:%s}", kind, suffix, i,
				c);
		else
			fprintf(out, "#%s .h%d{fill:%s}", kind, i, c);
	}
	fputs("</style>\n", out);
}

static void heat_cells(FILE *out, const struct heat *h,
		       const struct cm_report *r)
{
	int x, y;

	fprintf(out, "<g class=\"cells\" transform=\"translate(%d,%d)\">\n",
		MARGIN_LEFT, MARGIN_TOP);
	fprintf(out, "<rect class=\"zero\" width=\"%d\" height=\"%d\" "
		"fill=\"#f3f3f3\" stroke=\"#999\"/>\n", h->g * h->cell,
		h->g * h->cell);
	for (y = 0; y < h->g; y++) {
		for (x = 0; x < h->g;) {
			double v = h->v[(size_t)y * h->g + x];
			int lvl, run = 1;

			if (v <= 0) {
				x++;
				continue;
			}
			lvl = heat_level(h, v);
			if (h->g > SMALL_N)
				while (x + run < h->g &&
				       h->v[(size_t)y * h->g + x + run] > 0 &&
				       heat_level(h, h->v[(size_t)y * h->g +
						  x + run]) == lvl)
					run++;
			fprintf(out, "<rect class=\"h%d\" x=\"%d\" y=\"%d\" "
				"width=\"%d\" height=\"%d\"", lvl, x * h->cell,
				y * h->cell, run * h->cell, h->cell);
			if (h->g <= SMALL_N && h->bin == 1) {
				fprintf(out, "><title>%s \xe2\x86\x94 %s: ",
					r->threads[r->order[y]].label,
					r->threads[r->order[x]].label);
				rd_number(out, v);
				fputs("</title></rect>\n", out);
			} else {
				fputs("/>\n", out);
			}
			x += run;
		}
	}
	fputs("</g>\n", out);
}

/* Thin lines between ranks, when there are several. */
static void heat_rank_lines(FILE *out, const struct heat *h,
			    const struct cm_report *r)
{
	int i, size = h->g * h->cell;

	if (h->bin != 1)
		return;
	fprintf(out, "<g class=\"ranks\" stroke=\"#fff\" stroke-width=\"0.6\" "
		"transform=\"translate(%d,%d)\">\n", MARGIN_LEFT, MARGIN_TOP);
	for (i = 1; i < r->nthreads; i++) {
		if (r->threads[r->order[i]].rank ==
		    r->threads[r->order[i - 1]].rank)
			continue;
		fprintf(out, "<line x1=\"%d\" y1=\"0\" x2=\"%d\" y2=\"%d\"/>"
			"<line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n",
			i * h->cell, i * h->cell, size, i * h->cell, size,
			i * h->cell);
	}
	fputs("</g>\n", out);
}

static void heat_labels(FILE *out, const struct heat *h,
			const struct cm_report *r, int max_labels)
{
	int step = label_step(h->n, max_labels), i;
	double half = h->cell / 2.0;
	double px_per_thread = (double)h->cell / h->bin;

	fprintf(out, "<g class=\"labels\" font-size=\"%d\" fill=\"#333\">\n",
		max_labels > 40 ? 8 : 10);
	for (i = 0; i < h->n; i += step) {
		double pos = i * px_per_thread + (h->bin == 1 ? half : 0);
		const char *l = r->threads[r->order[i]].label;

		fprintf(out, "<text class=\"row\" x=\"%d\" y=\"%.1f\" "
			"text-anchor=\"end\" dominant-baseline=\"middle\">%s"
			"</text>", MARGIN_LEFT - 4, MARGIN_TOP + pos, l);
		fprintf(out, "<text class=\"col\" "
			"transform=\"translate(%.1f,%d) rotate(-90)\" "
			"dominant-baseline=\"middle\">%s</text>\n",
			MARGIN_LEFT + pos, MARGIN_TOP - 4, l);
	}
	fputs("</g>\n", out);
}

/* The unit: events on a job's matrix; a learned model's weights are
 * normalised (the largest is 1). */
static void heat_legend(FILE *out, const struct heat *h, const char *kind,
			int suffix)
{
	const char *unit = strcmp(kind, "heatmap") == 0 ? "events" : "weight";

	int x = MARGIN_LEFT + h->g * h->cell + 24, y = MARGIN_TOP, i;
	int bar = 256, step = bar / NCOLOURS;

	fprintf(out, "<g class=\"legend\" transform=\"translate(%d,%d)\">\n",
		x, y);
	fprintf(out, "<text x=\"0\" y=\"-8\">%s%s</text>\n", unit,
		h->log ? " (log scale)" : "");
	for (i = 0; i < NCOLOURS; i++)
		fprintf(out, "<rect class=\"h%d\" x=\"0\" y=\"%d\" "
			"width=\"16\" height=\"%d\"/>", NCOLOURS - 1 - i, i * step, step);
	fputs("\n", out);
	fprintf(out, "<text x=\"22\" y=\"8\">");
	rd_number(out, h->hi);
	fprintf(out, "</text><text x=\"22\" y=\"%d\">", bar / 2 + 4);
	rd_number(out, h->log ? sqrt(h->lo * h->hi) : h->hi / 2);
	fprintf(out, "</text><text x=\"22\" y=\"%d\">", bar);
	rd_number(out, h->log ? h->lo : 0);
	fprintf(out, "</text>\n<rect x=\"0\" y=\"%d\" width=\"16\" "
		"height=\"10\" fill=\"#f3f3f3\" stroke=\"#999\"/>"
		"<text x=\"22\" y=\"%d\">none</text>\n", bar + 12, bar + 21);
	if (h->bin > 1)
		fprintf(out, "<text x=\"0\" y=\"%d\">%d threads per cell"
			"</text>\n", bar + 40, h->bin);
	(void)suffix;
	fputs("</g>\n", out);
}

int rd_heatmap(FILE *out, const struct cm_report *r,
	       const struct cm_render_opts *opts, int standalone, int suffix)
{
	return rd_heatmap_kind(out, r, opts, standalone, suffix, "heatmap");
}

int rd_heatmap_kind(FILE *out, const struct cm_report *r,
		    const struct cm_render_opts *opts, int standalone,
		    int suffix, const char *kind)
{
	struct heat h = { 0 };
	int max_labels = opts && opts->max_labels > 0 ? opts->max_labels :
			 RD_MAX_LABELS;
	char title[96];
	int w, ht;

	if (heat_bin(&h, r) < 0)
		return -1;
	heat_choose_scale(&h, opts ? opts->scale : CM_RENDER_SCALE_AUTO);
	w = MARGIN_LEFT + h.g * h.cell + 24 + LEGEND_W;
	ht = MARGIN_TOP + (h.g * h.cell > 320 ? h.g * h.cell : 320) + 16;
	snprintf(title, sizeof(title),
		 "Communication matrix, %d threads, %d pairs", r->nthreads,
		 r->nedges);
	rd_svg_open(out, kind, suffix, standalone, w, ht, title);
	heat_style(out, kind, suffix);
	if (h.n == 0 || h.hi == 0) {
		fprintf(out, "<text x=\"%d\" y=\"%d\">%s</text>\n",
			MARGIN_LEFT, MARGIN_TOP + 20, h.n == 0 ?
			"no threads recorded" : "no communication recorded");
	}
	if (h.n > 0) {
		heat_cells(out, &h, r);
		heat_rank_lines(out, &h, r);
		heat_labels(out, &h, r, max_labels);
	}
	heat_legend(out, &h, kind, suffix);
	fputs("</svg>\n", out);
	free(h.v);
	return 0;
}

int cm_render_heatmap_svg(FILE *out, const struct cm_report *r,
			  const struct cm_render_opts *opts, int standalone,
			  struct cm_error *err)
{
	if (rd_heatmap(out, r, opts, standalone, -1) < 0)
		return cm_errorf(err, ENOMEM, "out of memory");
	return rd_finish(out, err);
}
