/* svc_metrics.h: counters for GET /metrics (Prometheus text format). */
#ifndef COMMAP_SVC_METRICS_H
#define COMMAP_SVC_METRICS_H

#include <stddef.h>

/* Record one finished request: its status and latency in seconds; is_upload
 * marks POST /v1/results (uploads_total on 201/200, errors otherwise). */
void svc_metrics_request(unsigned status, double seconds, int is_upload);

/* Record the outcome of a learned-model update after an upload
 * (svc_models_after_upload): > 0 updated, 0 skipped, < 0 failed. */
void svc_metrics_model(int outcome);

/* The exposition text (malloc'd, NUL terminated) with the database size
 * read now from db_path (and its -wal file). */
char *svc_metrics_render(const char *db_path, size_t *len);

#endif
