/* svc_db_pool.c: a pool of connections for the service's threads, one
 * writer connection behind a write lock, and group commit: concurrent
 * uploads stored in one transaction by whichever waiting thread leads. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "svc_db.h"
#include "svc_db_internal.h"

/* Uploads committed together at most (svc_db_pool_store). */
#define GROUP_MAX 64
/* WAL length (4 KB pages) from which the models' worker checkpoints, and
 * from which a committing connection does it itself (wal_hook). */
#define WAL_SOFT_FRAMES 2000
#define WAL_HARD_FRAMES 16000

/* One upload waiting for its group commit (svc_db_pool_store). */
struct store_req {
	const struct svc_result_ident *id;
	const char *upload_id;
	uint32_t uploader;
	const char *document;
	size_t len;
	int64_t row_id;
	enum svc_store_outcome outcome;
	int rc, errnum;
	struct cm_error err;
	int done;
	struct store_req *next;
};

struct svc_db_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_mutex_t write_lock;
	struct svc_db *free_list;
	struct svc_db **all;
	unsigned n;
	/* Group commit: uploads queue here; one of the waiting threads (the
	 * leader) stores everything queued in one transaction on the
	 * writer connection, the others wait for its commit. */
	struct svc_db *writer;
	pthread_mutex_t group_lock;
	pthread_cond_t group_cond;
	struct store_req *queue, **queue_tail;
	int leading;
	unsigned long long groups, grouped;	/* under group_lock */
	int wal_frames;		/* after the last commit (wal_hook) */
};

/* After each commit on a pool connection (nframes: the WAL's length).
 * Checkpoints are the models' worker's job (svc_db_pool_checkpoint), off
 * the upload path; only when it falls far behind (a long burst while it
 * yields the CPU) does the committing connection copy the WAL back
 * itself, so the WAL stays bounded. */
static int wal_hook(void *arg, sqlite3 *conn, const char *name, int nframes)
{
	struct svc_db_pool *pool = arg;

	__atomic_store_n(&pool->wal_frames, nframes, __ATOMIC_RELAXED);
	if (nframes >= WAL_HARD_FRAMES)
		sqlite3_wal_checkpoint_v2(conn, name, SQLITE_CHECKPOINT_PASSIVE,
					  NULL, NULL);
	return SQLITE_OK;
}

void svc_db_pool_checkpoint(struct svc_db_pool *pool, struct svc_db *db)
{
	if (__atomic_load_n(&pool->wal_frames, __ATOMIC_RELAXED) <
	    WAL_SOFT_FRAMES)
		return;
	/* PASSIVE: copies what no reader still needs, never waits, never
	 * blocks a writer; the next commit restarts a fully copied WAL. */
	sqlite3_wal_checkpoint_v2(db->conn, NULL, SQLITE_CHECKPOINT_PASSIVE,
				  NULL, NULL);
	__atomic_store_n(&pool->wal_frames, 0, __ATOMIC_RELAXED);
}

void svc_db_pool_close(struct svc_db_pool *pool)
{
	unsigned i;

	if (!pool)
		return;
	for (i = 0; i < pool->n; i++)
		svc_db_close(pool->all[i]);
	svc_db_close(pool->writer);
	free(pool->all);
	pthread_mutex_destroy(&pool->lock);
	pthread_mutex_destroy(&pool->write_lock);
	pthread_mutex_destroy(&pool->group_lock);
	pthread_cond_destroy(&pool->cond);
	pthread_cond_destroy(&pool->group_cond);
	free(pool);
}

static struct svc_db *pool_conn(struct svc_db_pool *pool, const char *path,
				int sync_full, struct cm_error *err)
{
	struct svc_db *db = svc_db_open(path, sync_full, err);

	if (!db)
		return NULL;
	db->write_lock = &pool->write_lock;
	sqlite3_wal_hook(db->conn, wal_hook, pool);
	return db;
}

struct svc_db_pool *svc_db_pool_open(const char *path, unsigned n,
				     int sync_full, struct cm_error *err)
{
	struct svc_db_pool *pool = calloc(1, sizeof(*pool));
	int saved;

	if (!pool || !(pool->all = calloc(n, sizeof(*pool->all)))) {
		free(pool);
		cm_errorf(err, ENOMEM, "database: out of memory");
		return NULL;
	}
	pthread_mutex_init(&pool->lock, NULL);
	pthread_mutex_init(&pool->write_lock, NULL);
	pthread_mutex_init(&pool->group_lock, NULL);
	pthread_cond_init(&pool->cond, NULL);
	pthread_cond_init(&pool->group_cond, NULL);
	pool->queue_tail = &pool->queue;
	pool->writer = pool_conn(pool, path, sync_full, err);
	if (!pool->writer)
		goto fail;
	for (pool->n = 0; pool->n < n; pool->n++) {
		struct svc_db *db = pool_conn(pool, path, sync_full, err);

		if (!db)
			goto fail;
		db->next_free = pool->free_list;
		pool->free_list = db;
		pool->all[pool->n] = db;
	}
	return pool;
fail:
	saved = errno;
	svc_db_pool_close(pool);
	errno = saved;
	return NULL;
}

static void store_one(struct svc_db *db, struct store_req *r)
{
	r->rc = svc_db_store_locked(db, r->id, r->upload_id, r->uploader,
				    r->document, r->len, &r->row_id,
				    &r->outcome, &r->err);
	r->errnum = errno;
}

/* Store a group in one transaction: one WAL append and one commit for
 * all (the indexes' pages, most of what a commit writes, are shared).
 * If anything fails, the group is rolled back and each upload is stored
 * in a transaction of its own, so every one gets its own answer. */
static void store_group(struct svc_db *db, struct store_req *group)
{
	struct store_req *r;

	if (!group->next) {
		store_one(db, group);
		return;
	}
	if (svc_db_step_done(db, db->st[ST_BEGIN], "begin", &group->err) < 0)
		goto one_by_one;
	for (r = group; r; r = r->next)
		if (svc_db_store_in_txn(db, r->id, r->upload_id, r->uploader,
					r->document, r->len, &r->row_id,
					&r->outcome, &r->err) < 0)
			break;
	if (!r && svc_db_step_done(db, db->st[ST_COMMIT], "commit",
				   &group->err) == 0) {
		for (r = group; r; r = r->next)
			r->rc = 0;
		return;
	}
	svc_db_rollback(db);
one_by_one:
	for (r = group; r; r = r->next)
		store_one(db, r);
}

/* Lead one group: take everything queued, store it, wake its owners.
 * Called and returns with group_lock held. */
static void lead_group(struct svc_db_pool *pool)
{
	struct store_req *group = pool->queue, *r;
	unsigned n;

	pool->leading = 1;
	for (n = 1, r = group; r->next && n < GROUP_MAX; r = r->next, n++)
		;
	pool->queue = r->next;
	if (!pool->queue)
		pool->queue_tail = &pool->queue;
	r->next = NULL;
	pthread_mutex_unlock(&pool->group_lock);

	pthread_mutex_lock(&pool->write_lock);
	store_group(pool->writer, group);
	pthread_mutex_unlock(&pool->write_lock);

	pthread_mutex_lock(&pool->group_lock);
	for (r = group; r; r = r->next)
		r->done = 1;
	pool->groups++;
	pool->grouped += n;
	pool->leading = 0;
	pthread_cond_broadcast(&pool->group_cond);
}

void svc_db_pool_store_stats(struct svc_db_pool *pool,
			     unsigned long long *stores,
			     unsigned long long *groups)
{
	pthread_mutex_lock(&pool->group_lock);
	*stores = pool->grouped;
	*groups = pool->groups;
	pthread_mutex_unlock(&pool->group_lock);
}

int svc_db_pool_store(struct svc_db_pool *pool,
		      const struct svc_result_ident *id,
		      const char *upload_id, uint32_t uploader_uid,
		      const char *document, size_t len, int64_t *row_id,
		      enum svc_store_outcome *outcome, struct cm_error *err)
{
	struct store_req me = {
		.id = id, .upload_id = upload_id, .uploader = uploader_uid,
		.document = document, .len = len, .rc = -1,
	};

	pthread_mutex_lock(&pool->group_lock);
	*pool->queue_tail = &me;
	pool->queue_tail = &me.next;
	/* Whoever finds no leader at work leads; the others wait, and
	 * meanwhile queue up into the next group. */
	while (!me.done) {
		if (!pool->leading)
			lead_group(pool);
		else
			pthread_cond_wait(&pool->group_cond, &pool->group_lock);
	}
	pthread_mutex_unlock(&pool->group_lock);
	*row_id = me.row_id;
	*outcome = me.outcome;
	if (me.rc < 0) {
		if (err)
			*err = me.err;
		errno = me.errnum;
	}
	return me.rc;
}

struct svc_db *svc_db_pool_get(struct svc_db_pool *pool)
{
	struct svc_db *db;

	pthread_mutex_lock(&pool->lock);
	while (!pool->free_list)
		pthread_cond_wait(&pool->cond, &pool->lock);
	db = pool->free_list;
	pool->free_list = db->next_free;
	pthread_mutex_unlock(&pool->lock);
	return db;
}

void svc_db_pool_put(struct svc_db_pool *pool, struct svc_db *db)
{
	pthread_mutex_lock(&pool->lock);
	db->next_free = pool->free_list;
	pool->free_list = db;
	pthread_cond_signal(&pool->cond);
	pthread_mutex_unlock(&pool->lock);
}
