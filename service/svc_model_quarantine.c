/* svc_model_quarantine.c: move a model row the service cannot read out
 * of the way (sql/0007_model_quarantine.sql), so that the runs of its
 * key start a fresh model instead of failing their batch forever. */
#include <errno.h>

#include <sqlite3.h>

#include "svc_models.h"

static const char SQL_COPY[] =
	"INSERT INTO models_quarantine (model_id, uid, exe_hash, ranks,"
	" threads_per_rank, argv_shape, reason, quarantined_at, model)"
	" SELECT id, uid, exe_hash, ranks, threads_per_rank, argv_shape, ?2,"
	" strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), model"
	" FROM models WHERE id = ?1";
static const char SQL_DELETE[] = "DELETE FROM models WHERE id = ?1";

static int run_one(sqlite3 *conn, const char *sql, int64_t id,
		   const char *reason, struct cm_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(conn, sql, -1, &st, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, id);
	if (rc == SQLITE_OK && reason)
		rc = sqlite3_bind_text(st, 2, reason, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	sqlite3_finalize(st);
	if (rc != SQLITE_OK)
		return cm_errorf(err, EIO, "database: quarantine model %lld: %s",
				 (long long)id, sqlite3_errmsg(conn));
	return 0;
}

int svc_models_quarantine(sqlite3 *conn, int64_t model_id,
			  const char *reason, struct cm_error *err)
{
	if (run_one(conn, SQL_COPY, model_id, reason, err) < 0 ||
	    run_one(conn, SQL_DELETE, model_id, NULL, err) < 0)
		return -1;
	return 0;
}
