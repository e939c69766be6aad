/* svc_conn_guard.h: a deadline on requests that are not yet trusted.
 *
 * libmicrohttpd's connection timeout counts idle time only: a client that
 * sends one header byte every few seconds (slowloris), or reads a
 * response as slowly, keeps its connection, and its slot, forever.  The
 * guard tracks every connection (MHD_OPTION_NOTIFY_CONNECTION) and shuts
 * down the socket of one whose request has not been authenticated or
 * answered within request_timeout seconds of the moment the service
 * started waiting for it (accept, or the end of the previous request on
 * the same connection).  libmicrohttpd then sees the end of the stream
 * and closes the connection itself.  An authenticated request (a munge
 * credential, or the web identity) has no deadline: a node's agent may
 * upload a large result over a slow link.
 */
#ifndef COMMAP_SVC_CONN_GUARD_H
#define COMMAP_SVC_CONN_GUARD_H

#include <microhttpd.h>

#include "commap/error.h"

struct svc_conn_guard;

/* Start the reaper thread.  NULL with errno and err on failure. */
struct svc_conn_guard *svc_conn_guard_start(unsigned request_timeout_s,
					    struct cm_error *err);

/* Stop the reaper; call after MHD_stop_daemon (no connection left). */
void svc_conn_guard_stop(struct svc_conn_guard *g);

/* The MHD_OPTION_NOTIFY_CONNECTION callback; cls is the guard. */
void svc_conn_guard_notify(void *cls, struct MHD_Connection *conn,
			   void **socket_context,
			   enum MHD_ConnectionNotificationCode code);

/* The connection's current request is authenticated: no deadline. */
void svc_conn_guard_trust(struct MHD_Connection *conn);

/* The current request is over: the next one's deadline starts now. */
void svc_conn_guard_rearm(struct MHD_Connection *conn);

#endif
