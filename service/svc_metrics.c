/* svc_metrics.c: lock-free counters shared by the HTTP worker threads. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "result_validate.h"
#include "svc_metrics.h"

static const double latency_bounds[] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
	2.5, 5,
};
#define N_BOUNDS (sizeof(latency_bounds) / sizeof(latency_bounds[0]))

static atomic_ullong uploads_total;
static atomic_ullong upload_errors_total;
static atomic_ullong requests_by_code[600];
static atomic_ullong latency_bucket[N_BOUNDS + 1];	/* last: +Inf */
static atomic_ullong latency_sum_us;
static atomic_ullong model_updates, model_errors, model_skipped;
static atomic_ullong results_pruned;
static atomic_ullong connections_cut;

/* Agent-side figures from the stored results: a fixed label set each. */
static const char *const placements[] = {
	"pinned", "dry_run", "equidistant", "little_gain",
	"not_pinned_other", "mode_off", "no_mapping",
};
#define N_PLACEMENTS (sizeof(placements) / sizeof(placements[0]))
static const char *const modes[] = { "off", "dynamic", "learned", "static" };
#define N_MODES (sizeof(modes) / sizeof(modes[0]))
static atomic_ullong results_by_placement[N_PLACEMENTS];
static atomic_ullong results_by_mode[N_MODES];
static atomic_ullong results_warned, results_forced;
static atomic_ullong mappings_applied, guard_checks, guard_undone;

void svc_metrics_connection_cut(void)
{
	atomic_fetch_add(&connections_cut, 1);
}

void svc_metrics_pruned(long long n)
{
	if (n > 0)
		atomic_fetch_add(&results_pruned, (unsigned long long)n);
}

void svc_metrics_model(int outcome)
{
	atomic_fetch_add(outcome > 0 ? &model_updates : outcome == 0 ?
			 &model_skipped : &model_errors, 1);
}

/* The agent's not_pinned text starts with its reason's name
 * (docs/result-format.md); an unknown one is counted as other. */
static const char *not_pinned_label(const char *why)
{
	if (!strncmp(why, "equidistant", 11))
		return "equidistant";
	if (!strncmp(why, "little-gain", 11))
		return "little_gain";
	return "not_pinned_other";
}

const char *svc_metrics_placement(const struct svc_result_ident *id)
{
	if (id->mode && !strcmp(id->mode, "off"))
		return "mode_off";
	if (id->n_timeline > 0)
		return id->dry_run ? "dry_run" : "pinned";
	if (id->not_pinned)
		return not_pinned_label(id->not_pinned);
	return "no_mapping";
}

static size_t label_index(const char *const *set, size_t n, const char *s)
{
	size_t i;

	for (i = 0; s && i < n; i++)
		if (!strcmp(set[i], s))
			return i;
	return n;
}

void svc_metrics_result(const struct svc_result_ident *id)
{
	size_t p = label_index(placements, N_PLACEMENTS,
			       svc_metrics_placement(id));
	size_t m = label_index(modes, N_MODES, id->mode);

	if (p < N_PLACEMENTS)
		atomic_fetch_add(&results_by_placement[p], 1);
	if (m < N_MODES)
		atomic_fetch_add(&results_by_mode[m], 1);
	if (id->n_warnings)
		atomic_fetch_add(&results_warned, 1);
	if (id->n_forced)
		atomic_fetch_add(&results_forced, 1);
	if (!id->dry_run)	/* mapped, never pinned */
		atomic_fetch_add(&mappings_applied, id->n_timeline);
	atomic_fetch_add(&guard_checks, (unsigned long long)id->guard_checked);
	atomic_fetch_add(&guard_undone, (unsigned long long)id->guard_undone);
}

/* One labelled counter family: every label, zeros included, so a
 * dashboard sees the whole fixed set from the start. */
static void render_family(FILE *f, const char *name, const char *help,
			  const char *label, const char *const *set,
			  atomic_ullong *v, size_t n)
{
	size_t i;

	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (i = 0; i < n; i++)
		fprintf(f, "%s{%s=\"%s\"} %llu\n", name, label, set[i],
			atomic_load(&v[i]));
}

static void render_counter(FILE *f, const char *name, const char *help,
			   atomic_ullong *v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help,
		name, name, atomic_load(v));
}

/* What the agents did, from the results stored since the start. */
static void render_agents(FILE *f)
{
	render_family(f, "commap_results_placement_total",
		"New results by what became of the step's placement: pinned, dry_run (mapped, not pinned), equidistant or little_gain (the agent chose not to pin), not_pinned_other, mode_off, no_mapping (no mapping applied and no reason given: too little evidence, a refused static file).",
		"placement", placements, results_by_placement, N_PLACEMENTS);
	render_family(f, "commap_results_mode_total",
		"New results by the agent's mode.", "mode", modes,
		results_by_mode, N_MODES);
	render_counter(f, "commap_results_warned_total",
		"New results whose agent reported a warning (something degraded or failed: a backend, a static file, a model).",
		&results_warned);
	render_counter(f, "commap_results_forced_total",
		"New results with a forced mapping (an explicit static mapping file).",
		&results_forced);
	render_counter(f, "commap_mappings_applied_total",
		"Mappings the agents applied (timeline entries of new results, dry runs left out).",
		&mappings_applied);
	render_counter(f, "commap_guard_checks_total",
		"Mappings the progress guard judged (guard.checked of new results).",
		&guard_checks);
	render_counter(f, "commap_guard_undone_total",
		"Mappings the progress guard undid as harmful (guard.undone of new results).",
		&guard_undone);
}

void svc_metrics_request(unsigned status, double seconds, int is_upload)
{
	size_t b = 0;

	if (status < 600)
		atomic_fetch_add(&requests_by_code[status], 1);
	if (is_upload && (status == 200 || status == 201))
		atomic_fetch_add(&uploads_total, 1);
	else if (is_upload)
		atomic_fetch_add(&upload_errors_total, 1);
	while (b < N_BOUNDS && seconds > latency_bounds[b])
		b++;
	atomic_fetch_add(&latency_bucket[b], 1);
	atomic_fetch_add(&latency_sum_us,
			 (unsigned long long)(seconds * 1e6 + 0.5));
}

static long long file_size(const char *path, const char *suffix)
{
	char p[4096];
	struct stat st;

	snprintf(p, sizeof(p), "%s%s", path, suffix);
	return stat(p, &st) == 0 ? (long long)st.st_size : 0;
}

char *svc_metrics_render(const char *db_path, size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	unsigned long long cum = 0;
	size_t i;

	if (!f)
		return NULL;
	fprintf(f, "# HELP commap_uploads_total Results stored or re-acknowledged.\n"
		"# TYPE commap_uploads_total counter\n"
		"commap_uploads_total %llu\n", atomic_load(&uploads_total));
	fprintf(f, "# HELP commap_upload_errors_total Uploads refused (4xx/5xx).\n"
		"# TYPE commap_upload_errors_total counter\n"
		"commap_upload_errors_total %llu\n",
		atomic_load(&upload_errors_total));
	/* Models are folded off the upload path: by the models' worker
	 * thread, or by a model read folding its own pending runs first. */
	fprintf(f, "# HELP commap_model_updates_total Stored results folded into their learned model (by the background worker or a model read).\n"
		"# TYPE commap_model_updates_total counter\n"
		"commap_model_updates_total %llu\n"
		"# HELP commap_model_update_errors_total Stored results whose fold into a model failed (the result stays stored).\n"
		"# TYPE commap_model_update_errors_total counter\n"
		"commap_model_update_errors_total %llu\n"
		"# HELP commap_model_skipped_total New results that feed no model (no exe_hash, repeated thread identity).\n"
		"# TYPE commap_model_skipped_total counter\n"
		"commap_model_skipped_total %llu\n",
		atomic_load(&model_updates), atomic_load(&model_errors),
		atomic_load(&model_skipped));
	fprintf(f, "# HELP commap_results_pruned_total Results deleted by the retention (retention_days).\n"
		"# TYPE commap_results_pruned_total counter\n"
		"commap_results_pruned_total %llu\n",
		atomic_load(&results_pruned));
	fprintf(f, "# HELP commap_http_connections_cut_total Connections closed because their request was neither authenticated nor answered within request_timeout.\n"
		"# TYPE commap_http_connections_cut_total counter\n"
		"commap_http_connections_cut_total %llu\n",
		atomic_load(&connections_cut));
	render_agents(f);
	fprintf(f, "# HELP commap_http_requests_total Requests by status code.\n"
		"# TYPE commap_http_requests_total counter\n");
	for (i = 100; i < 600; i++) {
		unsigned long long n = atomic_load(&requests_by_code[i]);

		if (n)
			fprintf(f, "commap_http_requests_total{code=\"%zu\"} %llu\n",
				i, n);
	}
	fprintf(f, "# HELP commap_db_size_bytes Database file plus its WAL.\n"
		"# TYPE commap_db_size_bytes gauge\n"
		"commap_db_size_bytes %lld\n",
		file_size(db_path, "") + file_size(db_path, "-wal"));
	fprintf(f, "# HELP commap_http_request_duration_seconds Request latency.\n"
		"# TYPE commap_http_request_duration_seconds histogram\n");
	for (i = 0; i <= N_BOUNDS; i++) {
		cum += atomic_load(&latency_bucket[i]);
		if (i < N_BOUNDS)
			fprintf(f, "commap_http_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
				latency_bounds[i], cum);
		else
			fprintf(f, "commap_http_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
				cum);
	}
	fprintf(f, "commap_http_request_duration_seconds_sum %.6f\n"
		"commap_http_request_duration_seconds_count %llu\n",
		atomic_load(&latency_sum_us) / 1e6, cum);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = size;
	return buf;
}
