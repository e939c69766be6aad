/* svc_conn_guard.c: shut down connections whose untrusted request is too
 * slow (svc_conn_guard.h). */
#define _GNU_SOURCE		/* pthread_setname_np */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "svc_conn_guard.h"
#include "svc_log.h"
#include "svc_metrics.h"

/* How often the reaper looks: a deadline is kept to within this. */
#define SCAN_MS 250
/* At most one summary line per this many seconds under a flood. */
#define REPORT_S 60

struct tracked {
	struct svc_conn_guard *guard;
	MHD_socket fd;
	struct timespec since;		/* CLOCK_MONOTONIC */
	int trusted, dropped;
	struct tracked *prev, *next;
};

struct svc_conn_guard {
	unsigned timeout_s;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* CLOCK_MONOTONIC */
	struct tracked *head;
	int stop;
	unsigned long long dropped, reported;
	time_t next_report;
};

static void now(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

static void deadline_in(struct timespec *t, long ms)
{
	now(t);
	t->tv_nsec += (ms % 1000) * 1000000L;
	t->tv_sec += ms / 1000 + t->tv_nsec / 1000000000L;
	t->tv_nsec %= 1000000000L;
}

/* shutdown() rather than close(): the descriptor stays libmicrohttpd's,
 * which sees the end of the stream and cleans up in its own thread. */
static void reap_locked(struct svc_conn_guard *g)
{
	struct timespec t;
	struct tracked *c;

	now(&t);
	for (c = g->head; c; c = c->next) {
		if (c->trusted || c->dropped ||
		    t.tv_sec - c->since.tv_sec < (time_t)g->timeout_s)
			continue;
		c->dropped = 1;
		g->dropped++;
		svc_metrics_connection_cut();
		shutdown(c->fd, SHUT_RDWR);
	}
	if (g->dropped != g->reported && t.tv_sec >= g->next_report) {
		svc_log(SVC_LOG_WARNING,
			"http: closed %llu connection%s whose request took longer than request_timeout (%u s)",
			g->dropped - g->reported,
			g->dropped - g->reported == 1 ? "" : "s",
			g->timeout_s);
		g->reported = g->dropped;
		g->next_report = t.tv_sec + REPORT_S;
	}
}

static void *reaper_main(void *arg)
{
	struct svc_conn_guard *g = arg;
	struct timespec t;

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		deadline_in(&t, SCAN_MS);
		pthread_cond_timedwait(&g->cond, &g->lock, &t);
		if (!g->stop)
			reap_locked(g);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

struct svc_conn_guard *svc_conn_guard_start(unsigned request_timeout_s,
					    struct cm_error *err)
{
	struct svc_conn_guard *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;
	int rc;

	if (!g) {
		cm_errorf(err, ENOMEM, "out of memory");
		return NULL;
	}
	g->timeout_s = request_timeout_s;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&g->thread, NULL, reaper_main, g);
	if (rc != 0) {
		pthread_cond_destroy(&g->cond);
		pthread_mutex_destroy(&g->lock);
		free(g);
		cm_errorf(err, rc, "http: cannot start a thread: %s",
			  strerror(rc));
		return NULL;
	}
	pthread_setname_np(g->thread, "commap-reaper");
	return g;
}

void svc_conn_guard_stop(struct svc_conn_guard *g)
{
	struct tracked *c, *next;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = 1;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	for (c = g->head; c; c = next) {
		next = c->next;
		free(c);
	}
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

static void track(struct svc_conn_guard *g, struct MHD_Connection *conn,
		  void **socket_context)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
		MHD_CONNECTION_INFO_CONNECTION_FD);
	struct tracked *c = ci ? calloc(1, sizeof(*c)) : NULL;

	/* Untracked (out of memory): the idle timeout still applies. */
	*socket_context = c;
	if (!c)
		return;
	c->guard = g;
	c->fd = ci->connect_fd;
	now(&c->since);
	pthread_mutex_lock(&g->lock);
	c->next = g->head;
	if (g->head)
		g->head->prev = c;
	g->head = c;
	pthread_mutex_unlock(&g->lock);
}

/* Called before libmicrohttpd closes the descriptor: once this returns,
 * the reaper can no longer shut down a descriptor reused by another. */
static void untrack(struct tracked *c)
{
	struct svc_conn_guard *g = c->guard;

	pthread_mutex_lock(&g->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&g->lock);
	free(c);
}

void svc_conn_guard_notify(void *cls, struct MHD_Connection *conn,
			   void **socket_context,
			   enum MHD_ConnectionNotificationCode code)
{
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		track(cls, conn, socket_context);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
		untrack(*socket_context);
		*socket_context = NULL;
	}
}

static struct tracked *tracked_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
		MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void set_trusted(struct MHD_Connection *conn, int trusted)
{
	struct tracked *c = tracked_of(conn);

	if (!c)
		return;
	pthread_mutex_lock(&c->guard->lock);
	c->trusted = trusted;
	if (!trusted)
		now(&c->since);
	pthread_mutex_unlock(&c->guard->lock);
}

void svc_conn_guard_trust(struct MHD_Connection *conn)
{
	set_trusted(conn, 1);
}

void svc_conn_guard_rearm(struct MHD_Connection *conn)
{
	set_trusted(conn, 0);
}
