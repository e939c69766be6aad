/* svc_retention.h: removing old results (docs/service.md, "Retention").
 *
 * With retention_days = N > 0 in the configuration, results of job steps
 * that started more than N days ago are deleted by the service's
 * background worker (svc_model_worker.c) at start and then every hour, in
 * small transactions so uploads never wait long.  Learned models are
 * aggregates and are kept; a result still waiting to be folded into its
 * model is kept until it has been.
 */
#ifndef COMMAP_SVC_RETENTION_H
#define COMMAP_SVC_RETENTION_H

#include <time.h>

#include "commap/error.h"

struct svc_db;

/* Results removed per transaction. */
#define SVC_RETENTION_BATCH 500
/* Seconds between two prunes. */
#define SVC_RETENTION_INTERVAL_S 3600

/* The cutoff for keeping days days before now, in the form of the
 * started_at column ("YYYY-MM-DDTHH:MM:SSZ", UTC) into out[21].
 * 0, or -1/EINVAL when days is 0 or the date cannot be formed. */
int svc_retention_cutoff(unsigned days, time_t now, char out[21]);

/* Delete at most batch results that started before cutoff and are not
 * pending for a model, in one write transaction.  Returns how many were
 * deleted, or -1 with errno and err. */
long long svc_retention_prune(struct svc_db *db, const char *cutoff,
			      int batch, struct cm_error *err);

#endif
