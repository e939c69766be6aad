/* svc_retention.c: removing old results (see svc_retention.h). */
#include <errno.h>
#include <stdio.h>

#include <sqlite3.h>

#include "svc_db.h"
#include "svc_retention.h"

/* The oldest first, through the started_at index; results still queued
 * for their model (model_queue references them) are left for the next
 * prune, after the fold. */
static const char SQL_PRUNE[] =
	"DELETE FROM results WHERE id IN ("
	" SELECT id FROM results WHERE started_at < ?1"
	" AND id NOT IN (SELECT result_id FROM model_queue)"
	" ORDER BY started_at LIMIT ?2)";

int svc_retention_cutoff(unsigned days, time_t now, char out[21])
{
	struct tm tm;
	time_t t;

	if (days == 0 || (time_t)days > now / 86400)
		return errno = EINVAL, -1;
	t = now - (time_t)days * 86400;
	if (!gmtime_r(&t, &tm) ||
	    strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm) != 20)
		return errno = EINVAL, -1;
	return 0;
}

struct prune_args {
	const char *cutoff;
	int batch;
	long long deleted;
};

static int prune_txn(sqlite3 *conn, void *arg, struct cm_error *err)
{
	struct prune_args *a = arg;
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sqlite3_prepare_v2(conn, SQL_PRUNE, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(st, 1, a->cutoff, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(st, 2, a->batch);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return cm_errorf(err, EIO, "retention: %s",
				 sqlite3_errmsg(conn));
	a->deleted = sqlite3_changes(conn);
	return 0;
}

long long svc_retention_prune(struct svc_db *db, const char *cutoff,
			      int batch, struct cm_error *err)
{
	struct prune_args a = { cutoff, batch, 0 };

	if (!db || !cutoff || batch <= 0)
		return cm_errorf(err, EINVAL, "retention: bad argument");
	if (svc_db_write_txn(db, prune_txn, &a, err) < 0)
		return -1;
	return a.deleted;
}
