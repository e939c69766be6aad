/* svc_db_internal.h: what the parts of the database (svc_db.c,
 * svc_db_read.c, svc_db_pool.c) share: a connection and its prepared
 * statements.  Not for other modules: they use svc_db.h. */
#ifndef COMMAP_SERVICE_SVC_DB_INTERNAL_H
#define COMMAP_SERVICE_SVC_DB_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <sqlite3.h>

#include "svc_db.h"

enum stmt_id {
	ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_FIND_STEP, ST_FIND_UPLOAD,
	ST_INSERT, ST_LIST_JOBS, ST_LIST_APPS, ST_JOB, ST_RESULT, ST_COUNT
};

struct svc_db {
	sqlite3 *conn;
	sqlite3_stmt *st[ST_COUNT];
	pthread_mutex_t *write_lock;	/* the pool's, or NULL */
	struct svc_db *next_free;
};

/* Sets err from the connection's last SQLite error (errno EBUSY, ENOSPC,
 * ENOMEM or EIO); returns -1. */
int svc_db_error(struct svc_db *db, struct cm_error *err, const char *what);

/* Step a statement that returns no rows, then reset it.  0 or -1. */
int svc_db_step_done(struct svc_db *db, sqlite3_stmt *st, const char *what,
		     struct cm_error *err);

/* Binds s, or NULL when s is NULL; v, or NULL when v < 0. */
int svc_db_bind_text_or_null(sqlite3_stmt *st, int i, const char *s);
int svc_db_bind_id_or_null(sqlite3_stmt *st, int i, int64_t v);

/* Store one result inside an open transaction (svc_db_store_text's
 * contract, without the transaction). */
int svc_db_store_in_txn(struct svc_db *db, const struct svc_result_ident *id,
			const char *upload_id, uint32_t uploader,
			const char *document, size_t len, int64_t *row_id,
			enum svc_store_outcome *outcome, struct cm_error *err);

/* Store one result in a transaction of its own; the caller holds the
 * write lock. */
int svc_db_store_locked(struct svc_db *db, const struct svc_result_ident *id,
			const char *upload_id, uint32_t uploader,
			const char *document, size_t len, int64_t *row_id,
			enum svc_store_outcome *outcome, struct cm_error *err);

/* Roll back the open transaction, errno kept. */
void svc_db_rollback(struct svc_db *db);

#endif
