/* render.h: reports of commap results as SVG and HTML (docs/reports.md).
 *
 * Shared by the service's web pages (service/svc_web.c) and the CLI
 * (`commap report JOBID --format svg|html`).  Build: link
 * report/librender.la (it needs lib/libcommap.la and jansson) and add
 * $(REPORT_CPPFLAGS) to the program's CPPFLAGS; then #include "render.h".
 *
 * Input documents are the service's JSON answers (docs/service.md) or a
 * bare commap-result document (docs/result-format.md), as parsed jansson
 * values; the renderers never modify them.
 *
 * Output goes to a caller's FILE (a file, stdout, or open_memstream(3)).
 * Every string that comes from a document (executables, argv, user and
 * node names, reasons) is escaped for HTML/XML, so a page can be served
 * as is.  Pages are complete, standalone HTML5 with inline SVG and CSS
 * and no JavaScript.
 *
 * Errors: functions return 0 on success, or -1 with errno and a message
 * in err (may be NULL): EINVAL for a document that is not what is
 * expected (the message names the field), ENOMEM, EIO when writing to
 * the FILE failed.  The library prints nothing else and keeps no global
 * state; every function is thread-safe on distinct arguments.
 */
#ifndef COMMAP_REPORT_RENDER_H
#define COMMAP_REPORT_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "commap/error.h"

/* ---- a parsed commap-result ------------------------------------------- */

struct cm_report_thread {
	int index;		/* position in the document's threads[] */
	int rank;		/* -1 when the document gives none */
	int local;		/* thread number within its rank */
	long long tid;		/* -1 when absent */
	double cpu_s;		/* -1 when absent */
	int final_pu;		/* OS index where it ended, or -1 */
	char label[24];		/* "r0.t3", or "t3" without ranks */
};

struct cm_report_migration {
	double t;		/* seconds since started_at */
	int thread;
	int from;		/* OS index, -1 = not placed before */
	int to;
};

struct cm_report_step {		/* a timeline entry: a mapping applied */
	double t;
	double cost;		/* -1 when absent */
	const char *reason;	/* borrowed from the document; may be NULL */
};

struct cm_report {
	const json_t *doc;	/* the document (a reference is held) */
	int nthreads;
	struct cm_report_thread *threads;
	/* Display order, rank-major then thread (r0.t0 r0.t1 r1.t0 ...)
	 * whatever the document's order: order[k] is the index of the k-th
	 * thread shown, pos[i] where thread i is shown. */
	int *order, *pos;
	/* Symmetric communication matrix, nthreads * nthreads row-major,
	 * summed over duplicate edges; diagonal 0.  NULL when nthreads is 0
	 * or above 1024 (8 MiB): then read the document's edges directly,
	 * as the heatmap does. */
	double *matrix;
	double max_weight;	/* largest entry, 0 for no edges */
	double total_weight;	/* sum over i < j */
	int nedges;
	/* Every pin of a thread: first placements (from -1) and moves. */
	int nmigrations;
	struct cm_report_migration *migrations;	/* sorted by t */
	/* The pins that moved a thread already placed: what the reports
	 * call migrations.  First placements are nmigrations - nmoves. */
	int nmoves;
	int nsteps;
	struct cm_report_step *timeline;
	double duration_s;	/* ended_at - started_at, -1 if unknown */
	/* Borrowed strings (NULL when absent). */
	const char *node, *user, *executable, *mode, *backend;
	const char *started_at, *ended_at;
	const char *cpuset, *synthetic;
	long long job, step;	/* -1 when null */
	int ranks;
	int pus;		/* topology.pus, -1 if absent */
};

/* Parse a commap-result document (format "commap-result", version 1).
 * Structural checks only (the service validates fully): a wrong format or
 * version, a missing or mistyped threads/edges array, an edge index out of
 * range is EINVAL naming the field.  The report holds a reference to doc
 * (json_incref) until cm_report_free. */
int cm_report_parse(struct cm_report **out, const json_t *doc,
		    struct cm_error *err);
void cm_report_free(struct cm_report *r);

/* ---- options ----------------------------------------------------------- */

enum cm_render_scale {
	CM_RENDER_SCALE_AUTO = 0,	/* log when max/min nonzero > 1000 */
	CM_RENDER_SCALE_LINEAR,
	CM_RENDER_SCALE_LOG,
};

struct cm_render_opts {
	enum cm_render_scale scale;	/* heatmap colour scale */
	int max_labels;		/* heatmap labels per axis; 0 = 32 */
	/* Prefix for links between pages ("" or NULL: "/", i.e. the
	 * service's root; the CLI may pass e.g. "http://host:7733/"). */
	const char *base_url;
	/* Extra text for the page footer (escaped), e.g. "commap 0.1";
	 * NULL for none. */
	const char *footer;
};

/* Zero-initialised options are the defaults. */

/* ---- SVG pieces (standalone documents when standalone != 0) ------------
 *
 * With standalone != 0 the output starts with an XML declaration and the
 * root <svg> carries xmlns, so it can be written to a .svg file; with 0 it
 * is an <svg> element for inlining into HTML.  Every root element has an
 * id ("heatmap", "topology", "migrations"; inside cm_render_job_html
 * suffixed with the result's index in the job: "heatmap-0"), a class
 * ("cm-heatmap", ...) and a <title>. */

/* The communication matrix as a heatmap: rows and columns are threads
 * in document order, labelled r<rank>.t<n> (thinned to at most
 * opts->max_labels per axis at large n), a colour-scale legend with its
 * bounds, linear or log scale.  Readable at 256 threads (~2 px cells
 * inside a fixed ~560 px square); an empty matrix says so. */
int cm_render_heatmap_svg(FILE *out, const struct cm_report *r,
			  const struct cm_render_opts *opts, int standalone,
			  struct cm_error *err);

/* The final mapping drawn on the node's topology, in the spirit of
 * lstopo: nested boxes for packages, NUMA nodes, caches, cores and PUs
 * (loaded from topology.synthetic with cm_topo_load_synthetic and
 * restricted to topology.cpuset), each PU labelled with its OS index and
 * the threads that ended on it.  Without a synthetic description (or if
 * hwloc refuses it) a fallback grid of the PUs in topology.cpuset (or of
 * the PUs named in the timeline) is drawn, with a note saying so. */
int cm_render_topology_svg(FILE *out, const struct cm_report *r,
			   const struct cm_render_opts *opts, int standalone,
			   struct cm_error *err);

/* Migrations over time: one lane per thread that moved (all threads up
 * to 64 lanes, else the moved ones), time on the x axis, a mark per
 * migration labelled from->to, timeline entries as vertical lines.  No
 * migrations: a short SVG saying so. */
int cm_render_migrations_svg(FILE *out, const struct cm_report *r,
			     const struct cm_render_opts *opts, int standalone,
			     struct cm_error *err);

/* ---- HTML pages -------------------------------------------------------- */

/* A job page.  doc is either the answer of GET /v1/jobs/{job} (with
 * documents: {"job", "user", "summary", "results": [{..., "document"}]})
 * or a bare commap-result document.  For each result: identity, summary
 * (mode, backend, times, threads, final cost), detection statistics and
 * overhead (the stats object), the heatmap, the topology and the
 * migrations inline, and links to the job list and the application page.
 * Each result opens with what happened (cm_report_outcome) and whether
 * it helped (cm_report_benefit: <ul class="benefit">); its matrix is
 * linked as files (BASE/results/ID/matrix.json and .csv); "started from
 * model N" links BASE/models/N. */
int cm_render_job_html(FILE *out, const json_t *doc,
		       const struct cm_render_opts *opts,
		       struct cm_error *err);

/* The job list: jobs is the answer of GET /v1/jobs ({"jobs": [...],
 * "more": bool}); filters is the query used ({"user": "...", "app": ...,
 * "since", "until", "limit", "sort", "offset"}; NULL for none): shown in
 * a plain GET form so the page can be filtered without JavaScript; the
 * column headers sort (?sort=KEY, again for the other way) and previous
 * and next links page through the list. */
int cm_render_jobs_html(FILE *out, const json_t *jobs, const json_t *filters,
			const struct cm_render_opts *opts,
			struct cm_error *err);

/* An application page: app is the application name (basename); info is
 * its entry from GET /v1/apps (NULL if unknown); jobs is GET
 * /v1/jobs?app=... ({"jobs": [...]}).  Lists the runs with their
 * threads, migrations and links to the job pages. */
int cm_render_app_html(FILE *out, const char *app, const json_t *info,
		       const json_t *jobs, const struct cm_render_opts *opts,
		       struct cm_error *err);

/* The same page with the application's learned models (docs/service.md,
 * "Learned models"): models is {"models": [...]} of whole commap-model
 * documents (GET /v1/models/{id}), or NULL for none; each is drawn by
 * cm_render_model_html after the summary. */
int cm_render_app_models_html(FILE *out, const char *app, const json_t *info,
			      const json_t *jobs, const json_t *models,
			      const struct cm_render_opts *opts,
			      struct cm_error *err);

/* The same with the query the jobs were listed with (GET /v1/jobs's
 * sort, offset, limit, filters: the table's headers sort and its links
 * page with it; NULL for none). */
int cm_render_app_page_html(FILE *out, const char *app, const json_t *info,
			    const json_t *jobs, const json_t *query,
			    const json_t *models,
			    const struct cm_render_opts *opts,
			    struct cm_error *err);

/* The applications: apps is GET /v1/apps ({"apps": [...]}), each linked
 * to its page. */
int cm_render_apps_html(FILE *out, const json_t *apps,
			const struct cm_render_opts *opts,
			struct cm_error *err);

/* The learned models: GET /v1/models ({"models": [...]} summaries), each
 * linked to its page and its application's. */
int cm_render_models_html(FILE *out, const json_t *models,
			  const struct cm_render_opts *opts,
			  struct cm_error *err);

/* A model's page: the model (a whole commap-model document with "id"),
 * the results folded into it (its stability history) and runs, the
 * runs that started from it ({"runs": [{"job", "step", "node",
 * "started_at", "duration_s"}]}, NULL for none). */
int cm_render_model_page_html(FILE *out, const json_t *model,
			      const json_t *runs,
			      const struct cm_render_opts *opts,
			      struct cm_error *err);

/* Two runs side by side: a and b are GET /v1/jobs/{job} answers with
 * documents (or bare commap-result documents).  The first result of
 * each (an srun step before the batch script) is shown: what happened,
 * whether it helped, the heatmaps and the placements; above them the
 * difference: run times, threads, pins, modes and the cosine of the two
 * matrices when the thread counts agree. */
int cm_render_compare_html(FILE *out, const json_t *a, const json_t *b,
			   const struct cm_render_opts *opts,
			   struct cm_error *err);

/* One learned model as an HTML <section>: its key (executable hash, ranks,
 * threads per rank, command-line shape), runs, stability and its recent
 * history, the topology and mapping of the latest run, and the aggregated
 * matrix as a heatmap (<svg id="model-heatmap-ID">, ID the model's id).
 * EINVAL when model is not a commap-model document (the message names
 * the field). */
int cm_render_model_html(FILE *out, const json_t *model,
			 const struct cm_render_opts *opts,
			 struct cm_error *err);

/* ---- what happened (docs/reports.md "What happened") ------------------- */

/* What happened to a result and why, for the top of every report: a new
 * JSON array of {"kind": K, "text": T}, the headline first (kind
 * "outcome": pinned, dry run, or nothing pinned and the main reason), then
 * "warning" (each of the result's warnings), "not-pinned", "guard"
 * (progress guard decisions), "evidence" (fewer than 1000 decoded samples
 * and faults, or fewer than 100 communication events), "model" (no
 * learned model, and why).  doc is a commap-result document.  NULL on
 * ENOMEM. */
json_t *cm_report_outcome(const json_t *doc);

/* Whether commap helped, and what the matrix rests on (docs/reports.md
 * "Did it help"): a new JSON array of {"kind": K, "text": T}: "cost"
 * (the cost model of the applied mapping against random, unpinned
 * placement on the step's PUs), "time" (this run against the row's
 * "earlier_runs", the service's; left out when row has none), "latency"
 * (thread start to first pin), "samples" (what the matrix rests on:
 * samples, decoded share, events, then a line for each breakdown the
 * stats carry: "levels", "evidence", "phases", "sample_budget",
 * "dropped").  doc is a commap-result document, row its stored row or
 * NULL.  NULL on ENOMEM. */
json_t *cm_report_benefit(const json_t *doc, const json_t *row);

/* Why no learned model was used, readable: the service's internal key
 * (exe_hash=... argv_shape=...) becomes the application's name and
 * command line.  Returns the document's reason, buf, or "". */
const char *cm_report_model_reason(const json_t *doc, char *buf,
				   size_t size);

/* A Slurm step id as sacct writes it: "batch", "extern", "interactive"
 * for Slurm's special ids, else the number in buf. */
const char *cm_report_step_name(long long step, char *buf, size_t size);

/* The inverse: "batch", "extern", "interactive" or a number 0..2^32-1;
 * -1 for anything else. */
long long cm_report_step_parse(const char *s);

/* ---- helpers ----------------------------------------------------------- */

/* Write s escaped for HTML text and attribute values (& < > " ' become
 * entities; invalid UTF-8 bytes and control characters other than tab
 * and newline become U+FFFD).  NULL writes nothing.  0 or -1 (EIO). */
int cm_render_escape(FILE *out, const char *s);

#endif
