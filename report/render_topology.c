/* render_topology.c: the final mapping drawn on the node's topology, as
 * nested boxes in the spirit of lstopo: every node of commap's sharing
 * tree (docs/topology.md) is a box labelled with the kinds folded into
 * it; its children flow left to right and wrap at a row width; PUs are
 * the leaves, labelled with their OS index and the threads that ended
 * there. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/topology.h"
#include "render_internal.h"

#define PU_W 64
#define PU_LINE 12
#define PU_SHOWN 3		/* thread labels per PU, then "+k" */
#define PAD 6
#define HEAD 16
#define ROW_MAX 1100		/* px: a row of children wraps here */
#define GRID_COLS 16
#define MAX_PUS 8192

struct placed {			/* threads sorted by their final OS PU */
	int *order;
	int n;
};

struct topo_draw {
	FILE *out;
	const struct cm_report *r;
	struct cm_topo *topo;
	struct placed placed;
	double *w, *h;		/* per tree node */
	int *kind_index;	/* logical index among nodes of its kind */
};

/* An insertion sort: qsort would need the report through a static (no
 * qsort_r in C11), and thread lists are short and mostly in PU order. */
static void sort_placed(struct placed *p, const struct cm_report *r)
{
	int i, j;

	for (i = 1; i < p->n; i++) {
		int v = p->order[i];

		for (j = i; j > 0 && (r->threads[p->order[j - 1]].final_pu >
				      r->threads[v].final_pu); j--)
			p->order[j] = p->order[j - 1];
		p->order[j] = v;
	}
}

static int placed_init(struct placed *p, const struct cm_report *r)
{
	int i;

	p->order = malloc((r->nthreads ? (size_t)r->nthreads : 1) *
			  sizeof(int));
	if (!p->order)
		return -1;
	p->n = 0;
	for (i = 0; i < r->nthreads; i++)
		if (r->threads[i].final_pu >= 0)
			p->order[p->n++] = i;
	sort_placed(p, r);
	return 0;
}

/* First position in p->order whose thread ended on os, and the count. */
static int placed_on(const struct placed *p, const struct cm_report *r,
		     int os, int *count)
{
	int lo = 0, hi = p->n, first;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (r->threads[p->order[mid]].final_pu < os)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	while (lo < p->n && r->threads[p->order[lo]].final_pu == os)
		lo++;
	*count = lo - first;
	return first;
}

static double pu_height(int nthreads)
{
	int lines = nthreads > PU_SHOWN ? PU_SHOWN + 1 : nthreads;

	return 18 + PU_LINE * lines;
}

/* Width and height of node i and, recursively, its children. */
static void layout(struct topo_draw *d, int i, int depth)
{
	const struct cm_topo_node *nd = cm_topo_node(d->topo, i);
	double limit = ROW_MAX - 2 * PAD * depth, rw = 0, rh = 0, w = 0, h = 0;
	int c;

	if (nd->nchildren == 0) {
		int count;

		placed_on(&d->placed, d->r,
			  cm_topo_pu_os_index(d->topo, nd->pu), &count);
		d->w[i] = PU_W;
		d->h[i] = pu_height(count);
		return;
	}
	for (c = nd->first_child; c < nd->first_child + nd->nchildren; c++) {
		layout(d, c, depth + 1);
		if (rw > 0 && rw + PAD + d->w[c] > limit) {
			w = rw > w ? rw : w;
			h += rh + PAD;
			rw = rh = 0;
		}
		rw += (rw > 0 ? PAD : 0) + d->w[c];
		rh = d->h[c] > rh ? d->h[c] : rh;
	}
	w = rw > w ? rw : w;
	h += rh;
	d->w[i] = w + 2 * PAD;
	d->h[i] = h + HEAD + PAD;
}

static const char *fill_of(enum cm_level_kind k)
{
	switch (k) {
	case CM_LEVEL_MACHINE: return "#ffffff";
	case CM_LEVEL_PACKAGE: return "#dedede";
	case CM_LEVEL_NUMA: return "#d2e7a4";
	case CM_LEVEL_L3: case CM_LEVEL_L2: case CM_LEVEL_L1:
		return "#f6f6f6";
	case CM_LEVEL_CORE: return "#bebebe";
	default: return "#ffffff";
	}
}

/* "Package 0 · L3 1": every kind folded into the node, outermost first. */
static void node_label(struct topo_draw *d, int i)
{
	unsigned mask = cm_topo_node_kinds(d->topo, i);
	const struct cm_topo_node *nd = cm_topo_node(d->topo, i);
	int k, first = 1;

	for (k = CM_LEVEL_MACHINE; k > CM_LEVEL_PU; k--) {
		if (!(mask & (1u << k)) && k != (int)nd->kind)
			continue;
		fprintf(d->out, "%s%s", first ? "" : " \xc2\xb7 ",
			cm_level_name((enum cm_level_kind)k));
		if (k == (int)nd->kind && k != CM_LEVEL_MACHINE)
			fprintf(d->out, " %d", d->kind_index[i]);
		first = 0;
	}
	if (nd->kind == CM_LEVEL_MACHINE && d->r->node) {
		fputs(" (", d->out);
		cm_render_escape(d->out, d->r->node);
		fputs(")", d->out);
	}
}

static void draw_pu(struct topo_draw *d, int i, double x, double y)
{
	const struct cm_topo_node *nd = cm_topo_node(d->topo, i);
	int os = cm_topo_pu_os_index(d->topo, nd->pu), count, first, k;

	first = placed_on(&d->placed, d->r, os, &count);
	fprintf(d->out, "<g class=\"pu%s\" data-os=\"%d\" data-threads=\"%d\">"
		"<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
		"fill=\"%s\" stroke=\"#555\"/>", count ? " used" : "", os,
		count, x, y, d->w[i], d->h[i], count ? "#8ecae6" : "#ffffff");
	fprintf(d->out, "<text x=\"%.0f\" y=\"%.0f\">PU %d</text>", x + 4,
		y + 13, os);
	for (k = 0; k < count && k < PU_SHOWN; k++) {
		const struct cm_report_thread *t =
			&d->r->threads[d->placed.order[first + k]];

		/* the tid as a tooltip: what ps, top and gdb show */
		fprintf(d->out, "<text class=\"thread\" x=\"%.0f\" y=\"%.0f\" "
			"font-weight=\"bold\">%s", x + 6,
			y + 13 + PU_LINE * (k + 1), t->label);
		if (t->tid >= 0)
			fprintf(d->out, "<title>%s (tid %lld)</title>",
				t->label, t->tid);
		fputs("</text>", d->out);
	}
	if (count > PU_SHOWN) {
		fprintf(d->out, "<text x=\"%.0f\" y=\"%.0f\">+%d more<title>",
			x + 6, y + 13 + PU_LINE * (PU_SHOWN + 1),
			count - PU_SHOWN);
		for (k = 0; k < count; k++)
			fprintf(d->out, "%s%s", k ? " " : "",
				d->r->threads[d->placed.order[first + k]].label);
		fputs("</title></text>", d->out);
	}
	fputs("</g>\n", d->out);
}

static void draw(struct topo_draw *d, int i, double x, double y, int depth)
{
	const struct cm_topo_node *nd = cm_topo_node(d->topo, i);
	double limit = ROW_MAX - 2 * PAD * depth, rx = 0, ry = 0, rh = 0;
	int c;

	if (nd->nchildren == 0) {
		draw_pu(d, i, x, y);
		return;
	}
	fprintf(d->out, "<g class=\"obj %s\"><rect x=\"%.0f\" y=\"%.0f\" "
		"width=\"%.0f\" height=\"%.0f\" fill=\"%s\" stroke=\"#555\"/>"
		"<text x=\"%.0f\" y=\"%.0f\">", cm_level_name(nd->kind), x, y,
		d->w[i], d->h[i], fill_of(nd->kind), x + 4, y + 12);
	node_label(d, i);
	fputs("</text>\n", d->out);
	for (c = nd->first_child; c < nd->first_child + nd->nchildren; c++) {
		if (rx > 0 && rx + PAD + d->w[c] > limit) {
			ry += rh + PAD;
			rx = rh = 0;
		}
		if (rx > 0)
			rx += PAD;
		draw(d, c, x + PAD + rx, y + HEAD + ry, depth + 1);
		rx += d->w[c];
		rh = d->h[c] > rh ? d->h[c] : rh;
	}
	fputs("</g>\n", d->out);
}

static int kind_indexes(struct topo_draw *d)
{
	int n = cm_topo_nnodes(d->topo), counters[CM_LEVEL_COUNT] = { 0 }, i;

	d->kind_index = malloc((size_t)n * sizeof(int));
	d->w = malloc((size_t)n * sizeof(double));
	d->h = malloc((size_t)n * sizeof(double));
	if (!d->kind_index || !d->w || !d->h)
		return -1;
	for (i = 0; i < n; i++)
		d->kind_index[i] = counters[cm_topo_node(d->topo, i)->kind]++;
	return 0;
}

/* Text under the picture is wrapped to the picture's width, which is
 * never narrower than MIN_W: a one-core step would otherwise cut its
 * notes off at the SVG's edge.  CHAR_W over-estimates the width of an
 * 11 px sans-serif character, so a line never overflows. */
#define CHAR_W 7
#define MIN_W 360
#define LINE_H 14

/* "N threads not on a drawn PU: r0.t1@7 ...", malloc'd; NULL if none. */
static char *unplaced_text(const struct cm_report *r, struct cm_topo *topo)
{
	char *buf = NULL;
	size_t len;
	FILE *f;
	int k, shown = 0, missing = 0;

	for (k = 0; k < r->nthreads; k++) {
		int pu = r->threads[k].final_pu;

		missing += pu < 0 || (topo && cm_topo_pu_by_os_index(topo,
								     pu) < 0);
	}
	if (!missing || !(f = open_memstream(&buf, &len)))
		return NULL;
	fprintf(f, "%d thread%s not on a drawn PU:", missing,
		missing == 1 ? "" : "s");
	for (k = 0; k < r->nthreads && shown < 24; k++) {
		const struct cm_report_thread *t = &r->threads[r->order[k]];

		if (t->final_pu >= 0 && (!topo || cm_topo_pu_by_os_index(topo,
						  t->final_pu) >= 0))
			continue;
		fprintf(f, " %s", t->label);
		if (t->final_pu >= 0)
			fprintf(f, "@%d", t->final_pu);
		shown++;
	}
	fputs(missing > shown ? " \xe2\x80\xa6" : "", f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Length of the next line of s within cols characters (breaking after a
 * space when it can). */
static size_t line_len(const char *s, size_t cols)
{
	size_t n = strlen(s), cut;

	if (n <= cols)
		return n;
	for (cut = cols; cut > 0 && s[cut] != ' '; cut--)
		;
	return cut ? cut : cols;
}

static int wrapped_lines(const char *s, size_t cols)
{
	int lines = 0;

	while (s && *s) {
		s += line_len(s, cols);
		while (*s == ' ')
			s++;
		lines++;
	}
	return lines;
}

/* s as <text class=cls> lines from y down; returns the y after them. */
static double print_wrapped(FILE *out, const char *s, size_t cols,
			    double y, const char *cls)
{
	char line[1024];

	while (s && *s) {
		size_t n = line_len(s, cols < sizeof(line) ? cols :
				    sizeof(line) - 1);

		memcpy(line, s, n);
		line[n] = '\0';
		fprintf(out, "<text class=\"%s\" x=\"4\" y=\"%.0f\" "
			"fill=\"#555\">", cls, y);
		cm_render_escape(out, line);
		fputs("</text>\n", out);
		y += LINE_H;
		s += n;
		while (*s == ' ')
			s++;
	}
	return y;
}

static int draw_tree(FILE *out, const struct cm_report *r,
		     struct cm_topo *topo, const char *note, int standalone,
		     int suffix)
{
	struct topo_draw d = { out, r, topo, { 0 }, NULL, NULL, NULL };
	char *unplaced = NULL;
	double width;
	size_t cols;
	int rc = -1, lines;

	if (placed_init(&d.placed, r) < 0 || kind_indexes(&d) < 0)
		goto out;
	layout(&d, 0, 0);
	width = d.w[0] + 8 < MIN_W ? MIN_W : d.w[0] + 8;
	cols = (size_t)(width - 8) / CHAR_W;
	unplaced = unplaced_text(r, topo);
	lines = wrapped_lines(note, cols) + wrapped_lines(unplaced, cols);
	rd_svg_open(out, "topology", suffix, standalone, width,
		    d.h[0] + 12 + LINE_H * lines,
		    "Final placement of the threads on the node");
	draw(&d, 0, 4, 4, 0);
	print_wrapped(out, unplaced, cols, print_wrapped(out, note, cols,
			d.h[0] + 18, "note"), "unplaced");
	fputs("</svg>\n", out);
	rc = 0;
out:
	free(unplaced);
	free(d.placed.order);
	free(d.w);
	free(d.h);
	free(d.kind_index);
	return rc;
}

/* OS indices from a Linux cpu list; -1 if malformed. */
static int parse_cpulist(const char *s, int *pus, int max)
{
	int n = 0;

	while (s && *s) {
		char *end;
		long a = strtol(s, &end, 10), b;

		if (end == s || a < 0 || a >= (1 << 24))
			return -1;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b >= (1 << 24))
				return -1;
			s = end;
		}
		for (; a <= b && n < max; a++)
			pus[n++] = (int)a;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return n;
}

/* No usable description: a grid of the step's PUs (or of the PUs the
 * threads ended on). */
static int draw_grid(FILE *out, const struct cm_report *r, const char *why,
		     int standalone, int suffix)
{
	struct topo_draw d = { out, r, NULL, { 0 }, NULL, NULL, NULL };
	int *pus = malloc(MAX_PUS * sizeof(int)), n, i, rows;
	double cell_h = pu_height(PU_SHOWN + 1), w, h;

	if (!pus || placed_init(&d.placed, r) < 0) {
		free(pus);
		return -1;
	}
	n = parse_cpulist(r->cpuset, pus, MAX_PUS);
	if (n <= 0) {
		n = 0;
		for (i = 0; i < d.placed.n; i++) {
			int pu = r->threads[d.placed.order[i]].final_pu;

			if (n == 0 || pus[n - 1] != pu)
				pus[n++] = pu;
			if (n == MAX_PUS)
				break;
		}
	}
	rows = (n + GRID_COLS - 1) / GRID_COLS;
	w = (n < GRID_COLS ? n : GRID_COLS) * (PU_W + PAD) + PAD + 8;
	h = rows * (cell_h + PAD) + HEAD + PAD;
	if (w < MIN_W)
		w = MIN_W;
	rd_svg_open(out, "topology", suffix, standalone, w,
		    h + 30 + LINE_H * wrapped_lines(why,
				(size_t)(w - 8) / CHAR_W),
		    "Final placement of the threads (PU grid)");
	fprintf(out, "<g class=\"obj Machine\"><rect x=\"4\" y=\"4\" "
		"width=\"%.0f\" height=\"%.0f\" fill=\"#fff\" stroke=\"#555\"/>"
		"<text x=\"8\" y=\"16\">Machine", w - 8, h);
	if (r->node) {
		fputs(" (", out);
		cm_render_escape(out, r->node);
		fputs(")", out);
	}
	fputs("</text>\n", out);
	for (i = 0; i < n; i++) {
		double x = 4 + PAD + (i % GRID_COLS) * (PU_W + PAD);
		double y = 4 + HEAD + (i / GRID_COLS) * (cell_h + PAD);
		int count, first = placed_on(&d.placed, r, pus[i], &count), k;

		fprintf(out, "<g class=\"pu%s\" data-os=\"%d\" "
			"data-threads=\"%d\"><rect x=\"%.0f\" y=\"%.0f\" "
			"width=\"%d\" height=\"%.0f\" fill=\"%s\" "
			"stroke=\"#555\"/><text x=\"%.0f\" y=\"%.0f\">PU %d"
			"</text>", count ? " used" : "", pus[i], count, x, y,
			PU_W, cell_h, count ? "#8ecae6" : "#fff", x + 4,
			y + 13, pus[i]);
		for (k = 0; k < count && k < PU_SHOWN; k++)
			fprintf(out, "<text class=\"thread\" x=\"%.0f\" "
				"y=\"%.0f\" font-weight=\"bold\">%s</text>",
				x + 6, y + 13 + PU_LINE * (k + 1),
				r->threads[d.placed.order[first + k]].label);
		if (count > PU_SHOWN)
			fprintf(out, "<text x=\"%.0f\" y=\"%.0f\">+%d more"
				"</text>", x + 6,
				y + 13 + PU_LINE * (PU_SHOWN + 1),
				count - PU_SHOWN);
		fputs("</g>\n", out);
	}
	fputs("</g>\n", out);
	print_wrapped(out, why, (size_t)(w - 8) / CHAR_W, h + 22, "note");
	fputs("</svg>\n", out);
	free(pus);
	free(d.placed.order);
	return 0;
}

int rd_topology(FILE *out, const struct cm_report *r,
		const struct cm_render_opts *opts, int standalone, int suffix)
{
	struct cm_topo *topo = NULL;
	struct cm_error e = { "" };
	char note[CM_ERROR_TEXT_MAX + 64];
	int rc;

	(void)opts;
	if (!r->synthetic)
		return draw_grid(out, r, "no topology description in the "
				 "result: the PUs of the step's cpuset",
				 standalone, suffix);
	if (cm_topo_load_synthetic(&topo, r->synthetic, &e) < 0) {
		snprintf(note, sizeof(note), "topology not drawn (%s): the "
			 "PUs of the step's cpuset", e.text);
		return draw_grid(out, r, note, standalone, suffix);
	}
	snprintf(note, sizeof(note), "%s", r->synthetic);
	if (r->cpuset && cm_topo_restrict(topo, r->cpuset, &e) < 0)
		snprintf(note, sizeof(note), "%s; cpuset not applied: %s",
			 r->synthetic, e.text);
	else if (r->cpuset)
		snprintf(note, sizeof(note), "%s restricted to PUs %s",
			 r->synthetic, r->cpuset);
	rc = draw_tree(out, r, topo, note, standalone, suffix);
	cm_topo_free(topo);
	return rc;
}

int cm_render_topology_svg(FILE *out, const struct cm_report *r,
			   const struct cm_render_opts *opts, int standalone,
			   struct cm_error *err)
{
	if (rd_topology(out, r, opts, standalone, -1) < 0)
		return cm_errorf(err, ENOMEM, "out of memory");
	return rd_finish(out, err);
}
