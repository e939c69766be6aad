/* svc_metrics.h: counters for GET /metrics (Prometheus text format). */
#ifndef COMMAP_SVC_METRICS_H
#define COMMAP_SVC_METRICS_H

#include <stddef.h>

/* Record one finished request: its status and latency in seconds; is_upload
 * marks POST /v1/results (uploads_total on 201/200, errors otherwise). */
void svc_metrics_request(unsigned status, double seconds, int is_upload);

/* Record what became of one stored result for its learned model: > 0
 * folded into it, 0 skipped (feeds no model: at the upload when it has
 * no exe_hash, else when folded), < 0 its fold failed.  Folds happen off
 * the upload path (svc_models_fold_pending: the worker or a model read). */
void svc_metrics_model(int outcome);

/* Record one retention prune that deleted n results (svc_retention.h). */
void svc_metrics_pruned(long long n);

/* Record one connection cut at request_timeout (svc_conn_guard.h). */
void svc_metrics_connection_cut(void);

/* Record what the agent did in one newly stored result (not a
 * duplicate): its placement outcome, warnings, guard decisions, forced
 * and applied mappings.  Labels come from fixed sets (svc_metrics.c),
 * never from the result's strings. */
struct svc_result_ident;
void svc_metrics_result(const struct svc_result_ident *id);

/* The placement label of a result: "pinned", "dry_run", "equidistant",
 * "little_gain", "not_pinned_other", "mode_off" or "no_mapping" (a
 * mapping was neither applied nor refused with a reason: too little
 * evidence, a failed static file). */
const char *svc_metrics_placement(const struct svc_result_ident *id);

/* The exposition text (malloc'd, NUL terminated) with the database size
 * read now from db_path (and its -wal file). */
char *svc_metrics_render(const char *db_path, size_t *len);

#endif
