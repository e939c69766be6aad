/* svc_model_worker.c: the thread that folds pending results into learned
 * models off the upload path (svc_models.h, docs/service.md "Learned
 * models").
 *
 * Uploads only queue their result (a trigger, in the upload's own
 * transaction) and call svc_model_worker_notify.  The worker waits a
 * short while after the first notification so that a burst of uploads
 * is folded in few batches (one load and one store of each model per
 * batch), then folds until the queue is empty.  It also sweeps the queue
 * every second, which resumes what a previous run of the service left
 * pending.  Stopping finishes the batch in progress; the rest stays
 * queued in the database.
 *
 * It is the service's one background thread, so it also does the other
 * maintenance off the request path: WAL checkpoints, and the retention
 * prune (svc_retention.h) after its first fold and then every hour. */
#define _GNU_SOURCE		/* pthread_setname_np */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "svc_db.h"
#include "svc_log.h"
#include "svc_metrics.h"
#include "svc_models.h"
#include "svc_retention.h"

/* Results folded per transaction: bounds how long a model read waits for
 * the worker (~0.3 ms of CPU per 256-thread run, 25 KB) and the work a
 * stop waits for. */
#define BATCH 64
/* Delay between a first notification and the fold: lets a batch gather.
 * A model read folds its own pending runs, so this is not a staleness
 * a client can see through GET /v1/models. */
#define GATHER_MS 100
#define SWEEP_MS 1000
/* After a storage error (busy, disk full), wait before retrying. */
#define BACKOFF_MS 1000
/* The worker's nice value: during an upload burst on a busy machine it
 * yields most of the CPU to the uploads (whose answer waits) and catches
 * up afterwards; it still gets ~10% of a contended CPU (nice 10 against
 * 0), so a steady load cannot starve it.  A model read folds its own
 * pending runs, so lagging here is not visible through the API. */
#define WORKER_NICE 10

struct svc_model_worker {
	struct svc_db_pool *pool;
	unsigned retention_days;	/* 0: keep results forever */
	struct timespec next_prune;	/* CLOCK_MONOTONIC; 0: at once */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* CLOCK_MONOTONIC */
	int kicked, stop;
};

/* The running worker, for the upload hook; guarded by running_lock. */
static pthread_mutex_t running_lock = PTHREAD_MUTEX_INITIALIZER;
static struct svc_model_worker *running;

void svc_model_worker_notify(void)
{
	pthread_mutex_lock(&running_lock);
	if (running) {
		pthread_mutex_lock(&running->lock);
		if (!running->kicked) {
			running->kicked = 1;
			pthread_cond_signal(&running->cond);
		}
		pthread_mutex_unlock(&running->lock);
	}
	pthread_mutex_unlock(&running_lock);
}

static void deadline_in(struct timespec *t, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

/* Sleep up to ms (w->lock held) unless stopped; with until_kicked, wake
 * on a notification too.  Returns 0 when stopping. */
static int wait_locked(struct svc_model_worker *w, long ms, int until_kicked)
{
	struct timespec t;

	deadline_in(&t, ms);
	while (!w->stop && !(until_kicked && w->kicked))
		if (pthread_cond_timedwait(&w->cond, &w->lock, &t) ==
		    ETIMEDOUT)
			break;
	return !w->stop;
}

static int stopping(struct svc_model_worker *w)
{
	int stop;

	pthread_mutex_lock(&w->lock);
	stop = w->stop;
	pthread_mutex_unlock(&w->lock);
	return stop;
}

/* Fold batches until the queue is empty, a stop, or an error (-1). */
static int drain(struct svc_model_worker *w)
{
	struct cm_error e = { "" };
	struct svc_db *db = svc_db_pool_get(w->pool);
	int n;

	do {
		n = svc_models_fold_pending(db, -1, NULL, BATCH, &e);
		/* Uploads do not checkpoint the WAL (svc_db.c): do it here,
		 * off their path, outside any write transaction. */
		svc_db_pool_checkpoint(w->pool, db);
	} while (n == BATCH && !stopping(w));
	svc_db_pool_put(w->pool, db);
	if (n < 0)
		svc_log(SVC_LOG_ERROR, "model worker: %s (retrying in %d ms)",
			e.text, BACKOFF_MS);
	return n < 0 ? -1 : 0;
}

/* Delete the results older than the retention, a batch per transaction,
 * when the hour since the last prune is up.  A failure is logged and
 * retried at the next hour: retention is never urgent. */
static void prune_if_due(struct svc_model_worker *w)
{
	struct cm_error e = { "" };
	struct timespec now;
	struct svc_db *db;
	long long n = 0, total = 0;
	char cutoff[21];

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!w->retention_days || now.tv_sec < w->next_prune.tv_sec)
		return;
	w->next_prune.tv_sec = now.tv_sec + SVC_RETENTION_INTERVAL_S;
	if (svc_retention_cutoff(w->retention_days, time(NULL), cutoff) < 0)
		return;
	db = svc_db_pool_get(w->pool);
	do {
		n = svc_retention_prune(db, cutoff, SVC_RETENTION_BATCH, &e);
		if (n > 0)
			total += n;
	} while (n == SVC_RETENTION_BATCH && !stopping(w));
	if (total > 0)
		svc_db_pool_checkpoint(w->pool, db);
	svc_db_pool_put(w->pool, db);
	if (n < 0)
		svc_log(SVC_LOG_ERROR, "retention: %s (retrying in an hour)",
			e.text);
	svc_metrics_pruned(total);
	if (total > 0)
		svc_log(SVC_LOG_INFO, "retention: deleted %lld result%s of "
			"steps started before %s (retention_days = %u)", total,
			total == 1 ? "" : "s", cutoff, w->retention_days);
}

static void *worker_main(void *arg)
{
	struct svc_model_worker *w = arg;
	int failed = 0;

	/* Linux: the nice value is per thread.  Failing is harmless. */
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), WORKER_NICE) < 0)
		svc_log(SVC_LOG_DEBUG, "model worker: cannot renice: %s",
			strerror(errno));
	pthread_mutex_lock(&w->lock);
	for (;;) {
		if (!wait_locked(w, failed ? BACKOFF_MS : SWEEP_MS, !failed))
			break;
		if (w->kicked && !wait_locked(w, GATHER_MS, 0))
			break;
		w->kicked = 0;
		pthread_mutex_unlock(&w->lock);
		failed = drain(w) < 0;
		if (!failed)
			prune_if_due(w);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void worker_free(struct svc_model_worker *w)
{
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

struct svc_model_worker *svc_model_worker_start(struct svc_db_pool *pool,
						unsigned retention_days,
						struct cm_error *err)
{
	struct svc_model_worker *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;
	struct svc_db *db;
	long long pending;
	int rc;

	if (!w) {
		cm_errorf(err, ENOMEM, "model worker: out of memory");
		return NULL;
	}
	w->pool = pool;
	w->retention_days = retention_days;
	w->kicked = 1;		/* resume what the last run left pending */
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	db = svc_db_pool_get(pool);
	pending = svc_models_count_pending(db, err);
	svc_db_pool_put(pool, db);
	if (pending < 0) {
		worker_free(w);
		return NULL;
	}
	if (pending > 0)
		svc_log(SVC_LOG_INFO, "learned models: %lld result%s pending from the last run, folding",
			pending, pending == 1 ? "" : "s");
	rc = pthread_create(&w->thread, NULL, worker_main, w);
	if (rc != 0) {
		cm_errorf(err, rc, "model worker: cannot start a thread: %s",
			  strerror(rc));
		worker_free(w);
		return NULL;
	}
	/* Named, so its CPU time can be told apart (tests/bench/service). */
	pthread_setname_np(w->thread, "commap-models");
	pthread_mutex_lock(&running_lock);
	running = w;
	pthread_mutex_unlock(&running_lock);
	return w;
}

void svc_model_worker_stop(struct svc_model_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&running_lock);
	running = NULL;
	pthread_mutex_unlock(&running_lock);
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	worker_free(w);
}
