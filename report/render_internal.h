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

/* Default label count when opts->max_labels is 0. */
#define RD_MAX_LABELS 32

static inline const char *rd_str(const char *s)
{
	return s ? s : "";
}

#endif
