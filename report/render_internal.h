/* render_internal.h: helpers shared by the report renderers (not part of
 * the API in render.h). */
#ifndef COMMAP_REPORT_RENDER_INTERNAL_H
#define COMMAP_REPORT_RENDER_INTERNAL_H

#include <stdio.h>

#include "render.h"

/* The SVGs of a job page carry an id suffix ("heatmap-2"); standalone
 * ones have none (suffix < 0). */
int rd_heatmap(FILE *out, const struct cm_report *r,
	       const struct cm_render_opts *opts, int standalone, int suffix);
/* The same with another id and class stem ("model-heatmap-7"). */
int rd_heatmap_kind(FILE *out, const struct cm_report *r,
		    const struct cm_render_opts *opts, int standalone,
		    int suffix, const char *kind);
int rd_topology(FILE *out, const struct cm_report *r,
		const struct cm_render_opts *opts, int standalone, int suffix);
int rd_migrations(FILE *out, const struct cm_report *r,
		  const struct cm_render_opts *opts, int standalone,
		  int suffix);

/* The opening <svg ...> tag, with <title>; kind is "heatmap" etc. */
void rd_svg_open(FILE *out, const char *kind, int suffix, int standalone,
		 double width, double height, const char *title);

/* Write a number compactly (at most 4 significant digits, k/M/G). */
void rd_number(FILE *out, double v);

/* Percent-encode s for a URL path segment or query value. */
void rd_url_escape(FILE *out, const char *s);

/* 0, or -1 with EIO and a message when the stream failed. */
int rd_finish(FILE *out, struct cm_error *err);

/* ---- pieces of the HTML pages (render_html.c) ---- */

extern const char rd_css[];
/* The base of every link, always ending in '/'. */
void rd_base(FILE *out, const struct cm_render_opts *o);
/* <!DOCTYPE ...> through <h1>title title2</h1>, with the navigation. */
void rd_page_head(FILE *out, const struct cm_render_opts *o,
		  const char *title, const char *title2);
void rd_page_foot(FILE *out, const struct cm_render_opts *o);
/* A table row "name | value", escaped; NULL values are skipped. */
void rd_kv(FILE *out, const char *name, const char *value);
void rd_kv_json(FILE *out, const char *name, const json_t *v);
/* A JSON scalar as text: integers in full, reals compactly. */
void rd_scalar(FILE *out, const json_t *v);
const char *rd_jstr(const json_t *o, const char *k);
/* <a href="BASE/apps/APP">APP</a> */
void rd_app_link(FILE *out, const struct cm_render_opts *o,
		 const char *app);
const char *rd_basename(const char *path);
/* What happened, then whether it helped: <ul class="outcome"> and
 * <ul class="benefit"> of a result (row: its stored row, or NULL).
 * 0, or -1 on ENOMEM. */
int rd_outcome_lists(FILE *out, const json_t *doc, const json_t *row);
/* The jobs table of a listing (render_lists.c); query is the listing's
 * query ({"sort", "offset", "limit", filters}; NULL for none) and path
 * the page it is on ("jobs", "apps/NAME"): the column headers link to
 * the same page sorted by them. */
void rd_jobs_table(FILE *out, const json_t *jobs, const json_t *query,
		   const char *path, const struct cm_render_opts *o);

/* ---- lines of the outcome and benefit lists (render_lines.c) ---- */

/* o's number at k, or dflt when it is not a number. */
double rd_jnum(const json_t *o, const char *k, double dflt);
/* Append {"kind": kind, "text": the formatted text, cut at 1 KiB} to a;
 * 0, or -1 (ENOMEM). */
int rd_line(json_t *a, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Default label count when opts->max_labels is 0. */
#define RD_MAX_LABELS 32

static inline const char *rd_str(const char *s)
{
	return s ? s : "";
}

#endif
