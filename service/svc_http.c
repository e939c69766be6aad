/* svc_http.c: libmicrohttpd glue.  On a request's first call (headers
 * only) the caller is authenticated and the body size checked, so a
 * refused upload is answered before its body is read; then the body is
 * collected (bounded by max_body for uploads, SMALL_BODY_MAX for every
 * other route) and the request handed to svc_api.  Connections are
 * limited in total, per client address and in memory; a request not
 * authenticated within request_timeout is cut (svc_conn_guard.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "svc_conn_guard.h"
#include "svc_http.h"
#include "svc_log.h"
#include "svc_metrics.h"
#include "svc_web.h"
#include "svc_web_login.h"

#define PATH_MAX_LOG 256
/* Bodies of every route but uploads: none needs one, so a client cannot
 * make the service hold max_body per connection without a credential. */
#define SMALL_BODY_MAX (64u << 10)
/* Descriptors besides connections: the database pool, munge, logs. */
#define SPARE_FDS 64
#define PROXY_SECRET_HEADER "X-Commap-Proxy-Secret"
#define BUSY_TEXT "busy: the bodies being received fill max_body_total, retry later"

struct svc_http {
	struct MHD_Daemon *daemon;
	const struct svc_config *config;
	const struct svc_auth *auth;
	struct svc_api api;
	unsigned port;
	void *web;		/* svc_web_start() */
	struct svc_conn_guard *guard;
	struct svc_sessions *sessions;	/* browser logins */
	/* Bytes of request bodies held or promised (max_body_total). */
	_Atomic size_t body_bytes;
};

struct request {
	struct timespec start;
	char method[16];
	char path[PATH_MAX_LOG];
	int is_upload;
	int authenticated;
	struct svc_caller caller;
	char *body;
	size_t len, cap, max;	/* max: the route's body limit */
	size_t reserved;	/* of h->body_bytes */
	int too_large, busy;
	int responded;
	unsigned status;
};

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

static enum MHD_Result send_response(struct MHD_Connection *conn,
				     struct request *rq,
				     struct svc_api_response *rs)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(rs->body_len, rs->body,
					       MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(rs->body);
		return MHD_NO;
	}
	if (rs->content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
					rs->content_type);
	if (rs->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
					rs->allow);
	if (rs->status == 401)
		MHD_add_response_header(resp, "WWW-Authenticate", "munge");
	if (rs->location)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION,
					rs->location);
	if (rs->set_cookie[0]) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE,
					rs->set_cookie);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
					"no-store");
		explicit_bzero(rs->set_cookie, sizeof(rs->set_cookie));
	}
	/* Pages are static HTML+SVG: no script may run even if escaping
	 * ever failed. */
	if (rs->content_type &&
	    strncmp(rs->content_type, "text/html", 9) == 0) {
		MHD_add_response_header(resp, "Content-Security-Policy",
			"default-src 'none'; style-src 'unsafe-inline'; "
			"img-src data:; form-action 'self'");
		MHD_add_response_header(resp, "X-Content-Type-Options",
					"nosniff");
	}
	ret = MHD_queue_response(conn, rs->status, resp);
	MHD_destroy_response(resp);
	rq->responded = 1;
	rq->status = rs->status;
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn,
				  struct request *rq, unsigned status,
				  const char *text)
{
	struct svc_api_response rs = { 0 };

	if (svc_web_is_page(rq->path))
		svc_web_error(&rs, status, "%s", text);
	else
		svc_api_error(&rs, status, "%s", text);
	return send_response(conn, rq, &rs);
}

/* Is the client on this host (a reverse proxy in front of us)? */
static int peer_is_loopback(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
		MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

/* Compare all of the secret whatever the first difference, so the time
 * taken says nothing of how much of a guess was right. */
static int secret_equal(const char *given, const char *secret, size_t n)
{
	size_t glen = strlen(given), i;
	unsigned char d = glen != n;

	for (i = 0; i < n; i++)
		d |= (unsigned char)((i < glen ? given[i] : 0) ^ secret[i]);
	return d == 0;
}

/* trusted-header: any local user can reach a loopback listener and send
 * the user header; only the proxy knows the secret (svc_config.h). */
static int proxy_secret_ok(const struct svc_config *c,
			   struct MHD_Connection *conn)
{
	const char *given = MHD_lookup_connection_value(conn,
		MHD_HEADER_KIND, PROXY_SECRET_HEADER);

	return given && c->web_proxy_secret_len > 0 &&
	       secret_equal(given, c->web_proxy_secret,
			    c->web_proxy_secret_len);
}

/* A web page with a live session cookie (svc_web_login.h) is its user;
 * 1 if so.  A stale or forged cookie counts as none. */
static int session_begin(struct svc_http *h, struct MHD_Connection *conn,
			 struct request *rq)
{
	const char *sid = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND,
						      SVC_SESSION_COOKIE);

	if (!sid || svc_sessions_lookup(h->sessions, sid, svc_web_login_now(),
					&rq->caller) < 0)
		return 0;
	rq->authenticated = 1;
	svc_conn_guard_trust(conn);
	return 1;
}

/* A web page without a munge credential: the web_auth policy decides
 * (docs/reports.md).  Both alternatives to munge trust only loopback
 * peers. */
static enum MHD_Result web_begin(struct svc_http *h,
				 struct MHD_Connection *conn,
				 struct request *rq)
{
	const char *name;
	struct passwd pw, *res = NULL;
	char buf[4096], text[256];

	if (h->config->web_auth == SVC_WEB_AUTH_MUNGE)
		return send_error(conn, rq, 401,
			"this page needs a login: run `commap web` and open the "
			"link it prints (or send a munge credential, "
			"X-Munge-Credential; see web_auth in commap-service(8), "
			COMMAP_DOCDIR "/service.md)");
	if (!peer_is_loopback(conn))
		return send_error(conn, rq, 403,
			"web_auth: only requests from this host (a reverse proxy) "
			"may omit the munge credential");
	if (h->config->web_auth == SVC_WEB_AUTH_NONE) {
		memset(&rq->caller, 0, sizeof(rq->caller));
		rq->caller.uid = 65534;
		rq->caller.gid = 65534;
		strcpy(rq->caller.user, "anonymous");
		rq->caller.is_admin = 1;	/* web_auth = none: read all */
		rq->authenticated = 1;
		svc_conn_guard_trust(conn);
		return MHD_YES;
	}
	if (!proxy_secret_ok(h->config, conn))
		return send_error(conn, rq, 403,
			"web_auth = trusted-header: missing or wrong "
			PROXY_SECRET_HEADER " (only the reverse proxy may name the user)");
	name = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					   h->config->web_user_header);
	if (!name || !*name) {
		snprintf(text, sizeof(text), "missing %s header (web_auth = "
			 "trusted-header)", h->config->web_user_header);
		return send_error(conn, rq, 401, text);
	}
	if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) != 0 || !res) {
		snprintf(text, sizeof(text), "%s: unknown user '%.64s'",
			 h->config->web_user_header, name);
		return send_error(conn, rq, 403, text);
	}
	svc_auth_classify(h->auth, (uint32_t)res->pw_uid,
			  (uint32_t)res->pw_gid, &rq->caller);
	rq->authenticated = 1;
	svc_conn_guard_trust(conn);
	return MHD_YES;
}

/* Take body memory from the service-wide budget until rq holds total
 * bytes: 0, or -1 when the budget is spent (nothing taken). */
static int reserve_to(struct svc_http *h, struct request *rq, size_t total)
{
	size_t need, cur = atomic_load(&h->body_bytes);

	if (total <= rq->reserved)
		return 0;
	need = total - rq->reserved;
	do {
		if (cur > h->config->max_body_total ||
		    need > h->config->max_body_total - cur)
			return -1;
	} while (!atomic_compare_exchange_weak(&h->body_bytes, &cur,
					       cur + need));
	rq->reserved = total;
	return 0;
}

static void release(struct svc_http *h, struct request *rq)
{
	atomic_fetch_sub(&h->body_bytes, rq->reserved);
	rq->reserved = 0;
}

/* Refuse an announced body over the route's limit, or one the memory for
 * bodies in flight cannot take now, before reading it. */
static enum MHD_Result check_length(struct svc_http *h,
				    struct MHD_Connection *conn,
				    struct request *rq)
{
	const char *clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					MHD_HTTP_HEADER_CONTENT_LENGTH);
	unsigned long long n;
	char text[160];

	if (!clen)
		return MHD_YES;
	n = strtoull(clen, NULL, 10);
	if (n > rq->max) {
		snprintf(text, sizeof(text),
			 "body: %llu bytes is more than %s (%zu)", n,
			 rq->is_upload ? "max_body" : "this path takes",
			 rq->max);
		return send_error(conn, rq, rq->is_upload ? 400 : 413, text);
	}
	if (reserve_to(h, rq, (size_t)n) < 0)
		return send_error(conn, rq, 503, BUSY_TEXT);
	if (rq->is_upload)
		rq->cap = (size_t)n;	/* allocated once, as it arrives */
	return MHD_YES;
}

/* First call: who is it, may they, and is the announced body too big? */
static enum MHD_Result request_begin(struct svc_http *h,
				     struct MHD_Connection *conn,
				     struct request *rq)
{
	enum svc_route_auth need = svc_api_route_auth(rq->method, rq->path);
	const char *cred;
	struct cm_error e = { "" };

	rq->max = need == SVC_ROUTE_WRITER ? h->config->max_body :
		  SMALL_BODY_MAX;
	/* The login link is its own credential; the session cookie counts
	 * for the pages only, never for the API (no cross-site writes). */
	if (strcmp(rq->path, "/login") == 0)
		return check_length(h, conn, rq);
	if (svc_web_is_page(rq->path) && session_begin(h, conn, rq))
		return check_length(h, conn, rq);
	if (svc_web_is_page(rq->path) &&
	    !MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					 "X-Munge-Credential"))
		return web_begin(h, conn, rq) == MHD_YES && !rq->responded ?
		       check_length(h, conn, rq) : MHD_YES;
	if (need == SVC_ROUTE_PUBLIC)
		return check_length(h, conn, rq);
	cred = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					   "X-Munge-Credential");
	if (svc_auth_decode(h->auth, cred, &rq->caller, &e) < 0)
		return send_error(conn, rq, errno == EAGAIN ? 503 : 401,
				  e.text);
	rq->authenticated = 1;
	svc_conn_guard_trust(conn);
	if (need == SVC_ROUTE_WRITER && !rq->caller.is_writer) {
		snprintf(e.text, sizeof(e.text),
			 "uid %u (%s) may not upload results (writers: root, the Slurm user, 'writers')",
			 rq->caller.uid,
			 rq->caller.user[0] ? rq->caller.user : "?");
		return send_error(conn, rq, 403, e.text);
	}
	return check_length(h, conn, rq);
}

/* Drop what was collected: the answer will be an error. */
static void request_drop(struct svc_http *h, struct request *rq, int busy)
{
	if (busy)
		rq->busy = 1;
	else
		rq->too_large = 1;
	free(rq->body);
	rq->body = NULL;
	rq->len = 0;
	release(h, rq);
}

static void request_append(struct svc_http *h, struct request *rq,
			   const char *data, size_t n)
{
	if (rq->too_large || rq->busy)
		return;
	if (n > rq->max - rq->len) {
		request_drop(h, rq, 0);
		return;
	}
	if (!rq->body || rq->len + n > rq->cap) {
		size_t cap = rq->cap > rq->len + n ? rq->cap : rq->len + n;
		char *b;

		if (cap < 2 * rq->len)
			cap = 2 * rq->len;
		if (cap > rq->max)
			cap = rq->max;
		if (reserve_to(h, rq, cap) < 0) {
			request_drop(h, rq, 1);
			return;
		}
		b = realloc(rq->body, cap);
		if (!b) {
			request_drop(h, rq, 1);
			return;
		}
		rq->body = b;
		rq->cap = cap;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
}

static enum MHD_Result add_query_arg(void *cls, enum MHD_ValueKind kind,
				     const char *key, const char *value)
{
	json_object_set_new(cls, key, json_string(value ? value : ""));
	return MHD_YES;
}

static enum MHD_Result request_finish(struct svc_http *h,
				      struct MHD_Connection *conn,
				      struct request *rq)
{
	struct svc_api_request arq = { 0 };
	struct svc_api_response rs;
	json_t *query = json_object();

	if (!query)
		return MHD_NO;
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_query_arg,
				  query);
	arq.method = rq->method;
	arq.path = rq->path;
	arq.query = query;
	arq.upload_id = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    "X-Commap-Upload-Id");
	arq.body = rq->body;
	arq.body_len = rq->len;
	arq.body_too_large = rq->too_large;
	arq.caller = rq->authenticated ? &rq->caller : NULL;
	if (strcmp(rq->path, "/login") == 0)
		svc_web_login_open(h->sessions, &arq, &rs);
	else if (strcmp(rq->path, "/v1/web-login") == 0)
		svc_web_login_link(h->sessions, h->config->web_login_ttl_s,
				   &arq, &rs);
	else if (svc_web_is_page(rq->path))
		svc_web_handle(&h->api, &arq, &rs);
	else
		svc_api_handle(&h->api, &arq, &rs);
	json_decref(query);
	return send_response(conn, rq, &rs);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req_cls)
{
	struct svc_http *h = cls;
	struct request *rq = *req_cls;

	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*req_cls = rq;
		clock_gettime(CLOCK_MONOTONIC, &rq->start);
		snprintf(rq->method, sizeof(rq->method), "%s", method);
		if (strlen(url) >= sizeof(rq->path))
			return send_error(conn, rq, 404, "path too long");
		strcpy(rq->path, url);
		rq->is_upload = strcmp(method, "POST") == 0 &&
				strcmp(url, "/v1/results") == 0;
		return request_begin(h, conn, rq);
	}
	if (*upload_data_size) {
		if (!rq->responded)
			request_append(h, rq, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (rq->responded)
		return MHD_YES;
	if (rq->busy)
		return send_error(conn, rq, 503, BUSY_TEXT);
	if (rq->too_large && !rq->is_upload)
		return send_error(conn, rq, 413, "body: more than this path takes");
	return request_finish(h, conn, rq);
}

static void on_completed(void *cls, struct MHD_Connection *conn,
			 void **req_cls, enum MHD_RequestTerminationCode toe)
{
	struct svc_http *h = cls;
	struct request *rq = *req_cls;
	double dt;

	svc_conn_guard_rearm(conn);
	if (!rq)
		return;
	release(h, rq);
	dt = seconds_since(&rq->start);
	if (rq->status)
		svc_metrics_request(rq->status, dt, rq->is_upload);
	svc_log(SVC_LOG_DEBUG, "%s %s %u uid=%ld %zu bytes %.3f ms%s",
		rq->method, rq->path, rq->status,
		rq->authenticated ? (long)rq->caller.uid : -1L, rq->len,
		dt * 1e3, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" :
		" (connection ended early)");
	free(rq->body);
	free(rq);
	*req_cls = NULL;
}

/* libmicrohttpd logs one line per refused or broken connection: under a
 * flood, one warning a minute and the rest at debug level. */
static void __attribute__((format(printf, 2, 0)))
mhd_log(void *cls, const char *fmt, va_list ap)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static time_t next_warning;
	static unsigned long quiet;
	enum svc_log_level level = SVC_LOG_DEBUG;
	unsigned long skipped = 0;
	char line[512];
	time_t now = time(NULL);
	size_t n;

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	pthread_mutex_lock(&lock);
	if (now >= next_warning) {
		level = SVC_LOG_WARNING;
		skipped = quiet;
		quiet = 0;
		next_warning = now + 60;
	} else {
		quiet++;
	}
	pthread_mutex_unlock(&lock);
	if (skipped)
		svc_log(level, "http: %s (and %lu more such lines at debug level in the last minute)",
			line, skipped);
	else
		svc_log(level, "http: %s", line);
}

/* Every connection is a descriptor: raise the soft limit to what
 * max_connections needs, as far as the hard limit allows. */
static void raise_fd_limit(unsigned max_connections)
{
	rlim_t want = (rlim_t)max_connections + SPARE_FDS;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ?
		      want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < want)
		svc_log(SVC_LOG_WARNING,
			"http: max_connections = %u needs %llu open files, the limit is %llu (raise LimitNOFILE)",
			max_connections, (unsigned long long)want,
			(unsigned long long)rl.rlim_cur);
}

static struct MHD_Daemon *start_daemon(struct svc_http *h, unsigned flags,
				       const struct sockaddr *sa)
{
	const struct svc_config *c = h->config;

	return MHD_start_daemon(flags, (uint16_t)c->listen_port,
			NULL, NULL, on_request, h,
			MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
			MHD_OPTION_SOCK_ADDR, sa,
			MHD_OPTION_THREAD_POOL_SIZE, (unsigned)c->threads,
			MHD_OPTION_CONNECTION_LIMIT,
			(unsigned)c->max_connections,
			MHD_OPTION_PER_IP_CONNECTION_LIMIT,
			(unsigned)c->per_ip_connections,
			MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)c->timeout_s,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT,
			(size_t)c->connection_memory,
			MHD_OPTION_NOTIFY_CONNECTION, svc_conn_guard_notify,
			h->guard,
			MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
			MHD_OPTION_END);
}

struct svc_http *svc_http_start(const struct svc_config *config,
				struct svc_db_pool *pool,
				const struct svc_auth *auth,
				struct cm_error *err)
{
	struct svc_http *h = calloc(1, sizeof(*h));
	struct sockaddr_in6 a6 = { 0 };
	struct sockaddr_in a4 = { 0 };
	struct sockaddr *sa;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;

	if (!h) {
		cm_errorf(err, ENOMEM, "out of memory");
		return NULL;
	}
	h->config = config;
	h->auth = auth;
	h->api.config = config;
	h->api.pool = pool;
	h->web = svc_web_start();
	h->sessions = svc_sessions_new(SVC_SESSION_TOKENS_MAX,
				       config->web_login_ttl_s,
				       SVC_SESSION_SESSIONS_MAX,
				       SVC_SESSION_LIFETIME_S);
	if (!h->sessions) {
		cm_errorf(err, ENOMEM, "out of memory");
		svc_web_stop(h->web);
		free(h);
		return NULL;
	}
	if (inet_pton(AF_INET, config->listen_host, &a4.sin_addr) == 1) {
		a4.sin_family = AF_INET;
		a4.sin_port = htons((uint16_t)config->listen_port);
		sa = (struct sockaddr *)&a4;
	} else {
		inet_pton(AF_INET6, config->listen_host, &a6.sin6_addr);
		a6.sin6_family = AF_INET6;
		a6.sin6_port = htons((uint16_t)config->listen_port);
		sa = (struct sockaddr *)&a6;
		flags |= MHD_USE_IPv6;
	}
	raise_fd_limit(config->max_connections);
	h->guard = svc_conn_guard_start(config->request_timeout_s, err);
	h->daemon = h->guard ? start_daemon(h, flags, sa) : NULL;
	if (!h->daemon) {
		if (h->guard)
			cm_errorf(err, EADDRNOTAVAIL,
				  "listen: cannot serve on %s:%u",
				  config->listen_host, config->listen_port);
		svc_conn_guard_stop(h->guard);
		svc_web_stop(h->web);
		svc_sessions_free(h->sessions);
		free(h);
		return NULL;
	}
	info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : config->listen_port;
	return h;
}

unsigned svc_http_port(const struct svc_http *h)
{
	return h->port;
}

void svc_http_stop(struct svc_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->daemon);
	svc_conn_guard_stop(h->guard);
	svc_web_stop(h->web);
	svc_sessions_free(h->sessions);
	free(h);
}
