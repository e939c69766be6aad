/* render_outcome.c: what happened to a result and why, as the first lines
 * of every report (terminal and web; docs/reports.md "What happened").
 *
 * A user whose job was not pinned cannot read the agent's log; the result
 * is all they have.  So the reasons the agent stores (warnings, not_pinned,
 * the progress guard, a learned model not used) and the one the reader can
 * infer (too few samples or events to trust) are gathered here once, in
 * order of importance, for both renderers. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "render_internal.h"

/* Below these, the matrix rests on too little to map by (docs/reports.md):
 * a few hundred decoded samples spread over many pairs is noise. */
#define THIN_SAMPLES 1000.0
#define THIN_EVENTS 100.0

/* Slurm's special step ids (slurm.h: SLURM_BATCH_SCRIPT etc.). */
#define STEP_INTERACTIVE 4294967290LL
#define STEP_BATCH 4294967291LL
#define STEP_EXTERN 4294967292LL

const char *cm_report_step_name(long long step, char *buf, size_t size)
{
	if (step == STEP_BATCH)
		return "batch";
	if (step == STEP_EXTERN)
		return "extern";
	if (step == STEP_INTERACTIVE)
		return "interactive";
	snprintf(buf, size, "%lld", step);
	return buf;
}

long long cm_report_step_parse(const char *s)
{
	char *end;
	long long v;

	if (!strcmp(s, "batch"))
		return STEP_BATCH;
	if (!strcmp(s, "extern"))
		return STEP_EXTERN;
	if (!strcmp(s, "interactive"))
		return STEP_INTERACTIVE;
	if (*s < '0' || *s > '9' || strlen(s) > 10)
		return -1;
	v = strtoll(s, &end, 10);
	return *end || v > 4294967295LL ? -1 : v;
}

static double edge_events(const json_t *doc)
{
	const json_t *edges = json_object_get(doc, "edges"), *e;
	double sum = 0;
	size_t i;

	json_array_foreach(edges, i, e) {
		double w = json_number_value(json_array_get(e, 2));

		if (w > 0)
			sum += w;
	}
	return sum;
}

/* "too little evidence: ..." or "" when the evidence is enough (or the
 * mode does not detect: static and off map by no matrix). */
static void thin_evidence(const json_t *doc, char *buf, size_t size)
{
	const json_t *st = json_object_get(doc, "stats");
	const char *mode = rd_jstr(doc, "mode");
	double seen = rd_jnum(st, "decoded", 0) + rd_jnum(st, "faults", 0);
	double events = edge_events(doc);

	buf[0] = '\0';
	if (!st || json_array_size(json_object_get(doc, "threads")) < 2 ||
	    (mode && (!strcmp(mode, "static") || !strcmp(mode, "off"))))
		return;
	if (seen < THIN_SAMPLES)
		snprintf(buf, size, "evidence too thin: %.0f decoded samples "
			 "and faults (fewer than %.0f), %.0f communication "
			 "events", seen, THIN_SAMPLES, events);
	else if (events < THIN_EVENTS)
		snprintf(buf, size, "evidence too thin: %.0f communication "
			 "events between threads (fewer than %.0f) from %.0f "
			 "samples: the threads shared little memory",
			 events, THIN_EVENTS, seen);
}

/* The headline: pinned, dry run, or nothing and the main reason. */
static int headline(json_t *a, const json_t *doc, const char *thin)
{
	const json_t *st = json_object_get(doc, "stats");
	const json_t *topo = json_object_get(doc, "topology");
	size_t maps = json_array_size(json_object_get(doc, "timeline"));
	size_t warns = json_array_size(json_object_get(doc, "warnings"));
	double pins = rd_jnum(st, "pins", 0);
	const char *np = rd_jstr(doc, "not_pinned");
	const char *mode = rd_jstr(doc, "mode");

	if (json_is_true(json_object_get(topo, "dry_run")))
		return rd_line(a, "outcome", "dry run: %zu mapping%s computed, "
			       "nothing pinned", maps, maps == 1 ? "" : "s");
	if (pins > 0)
		return rd_line(a, "outcome", "pinned: %zu mapping%s applied, "
			       "%.0f pin%s", maps, maps == 1 ? "" : "s", pins,
			       pins == 1 ? "" : "s");
	if (np)
		return rd_line(a, "outcome", "nothing pinned: %s", np);
	if (mode && !strcmp(mode, "off"))
		return rd_line(a, "outcome", "nothing pinned: mode off "
			       "(detection only)");
	if (warns)
		return rd_line(a, "outcome", "nothing pinned: see the "
			       "warning%s below", warns == 1 ? "" : "s");
	if (*thin)
		return rd_line(a, "outcome", "nothing pinned: %s", thin);
	if (json_array_size(json_object_get(doc, "threads")) < 2)
		return rd_line(a, "outcome", "nothing pinned: fewer than two "
			       "threads, nothing to place relative to each "
			       "other");
	return rd_line(a, "outcome", "nothing pinned: no mapping gained enough "
		       "over the threads' own placement");
}

static int guard_lines(json_t *a, const json_t *doc)
{
	const json_t *g = json_object_get(doc, "guard");
	const json_t *tl = json_object_get(doc, "timeline"), *e;
	double checked = rd_jnum(g, "checked", 0);
	double undone = rd_jnum(g, "undone", 0);
	size_t k;
	int bad = 0;

	if (checked > 0)
		bad |= rd_line(a, "guard", "progress guard: checked %.0f "
			       "mapping%s, undid %.0f", checked,
			       checked == 1 ? "" : "s", undone);
	json_array_foreach(tl, k, e) {
		const char *why = rd_jstr(e, "reason");
		const char *note = rd_jstr(e, "note");

		if (why && !strcmp(why, "guard-undo"))
			bad |= rd_line(a, "guard", "progress guard undid the "
				       "mapping at %.2f s%s%s",
				       rd_jnum(e, "t", 0), note ? ": " : "",
				       note ? note : "");
	}
	return bad;
}

/* The service answers a model lookup it cannot satisfy with its internal
 * key ("no model for exe_hash=sha256:... ranks=1 argv_shape=..."); the
 * agent stores that as the reason.  Users know their application by name
 * and command line, so say it with those. */
const char *cm_report_model_reason(const json_t *doc, char *buf,
				   size_t size)
{
	const json_t *id = json_object_get(doc, "identity");
	const char *why = rd_jstr(json_object_get(doc, "model"), "reason");
	const char *exe = rd_jstr(id, "executable");
	const char *shape = rd_jstr(id, "argv_shape");
	const char *app = exe && strrchr(exe, '/') ? strrchr(exe, '/') + 1 :
						      exe;
	long long ranks = (long long)json_integer_value(json_object_get(id,
								"ranks"));

	if (!why || !strstr(why, "no model for exe_hash="))
		return why ? why : "";
	snprintf(buf, size, "none learned yet for %s with %lld rank%s%s%s%s "
		 "(a model is learned from this run)", app ? app : "this "
		 "application", ranks, ranks == 1 ? "" : "s",
		 shape ? " and command line \"" : "", shape ? shape : "",
		 shape ? "\"" : "");
	return buf;
}

json_t *cm_report_outcome(const json_t *doc)
{
	json_t *a = json_array(), *w;
	const json_t *m = json_object_get(doc, "model");
	const char *np = rd_jstr(doc, "not_pinned");
	const char *why = rd_jstr(m, "reason");
	char thin[256], mbuf[512];
	size_t i;
	int bad;

	if (!a)
		return NULL;
	thin_evidence(doc, thin, sizeof(thin));
	bad = headline(a, doc, thin);
	json_array_foreach(json_object_get(doc, "warnings"), i, w)
		if (json_string_value(w))
			bad |= rd_line(a, "warning", "warning: %s",
				       json_string_value(w));
	if (np && rd_jnum(json_object_get(doc, "stats"), "pins", 0) > 0)
		bad |= rd_line(a, "not-pinned", "not pinned at the end: %s",
			       np);
	bad |= guard_lines(a, doc);
	/* the headline may already give thin evidence as the reason */
	if (*thin && !strstr(json_string_value(json_object_get(
		    json_array_get(a, 0), "text")), thin))
		bad |= rd_line(a, "evidence", "%s", thin);
	if (m && !json_is_true(json_object_get(m, "used")) && why)
		bad |= rd_line(a, "model", "no learned model: %s",
			       cm_report_model_reason(doc, mbuf, sizeof(mbuf)));
	if (bad) {
		json_decref(a);
		return NULL;
	}
	return a;
}
