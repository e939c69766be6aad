/* svc_config.h: the commap-service configuration (docs/service.md).
 *
 * A key=value file: one "key = value" per line, blank lines and lines
 * starting with '#' ignored.  Unknown keys, repeated keys and bad values are
 * errors naming the key and the line.  The parser works on a buffer (no
 * I/O) so unit tests and fuzzers can feed it directly.
 */
#ifndef COMMAP_SVC_CONFIG_H
#define COMMAP_SVC_CONFIG_H

#include <stddef.h>

#include "commap/error.h"

#define SVC_NAME_MAX 64		/* a user or "@group" name, with its NUL */
#define SVC_NAMES_MAX 32	/* entries in one admins/writers list */
#define SVC_PATH_MAX 1024

enum svc_log_level {
	SVC_LOG_ERROR,
	SVC_LOG_WARNING,
	SVC_LOG_INFO,
	SVC_LOG_DEBUG,
};

/* web_auth: munge only (default); a user name in web_user_header from a
 * reverse proxy on loopback; or no authentication (loopback only). */
enum svc_web_auth {
	SVC_WEB_AUTH_MUNGE,
	SVC_WEB_AUTH_TRUSTED_HEADER,
	SVC_WEB_AUTH_NONE,
};

/* Users ("alice") and groups ("@hpc") in configuration order. */
struct svc_name_list {
	size_t n;
	char name[SVC_NAMES_MAX][SVC_NAME_MAX];
};

struct svc_config {
	char listen_host[64];		/* numeric IPv4 or IPv6 address */
	unsigned listen_port;		/* 0: any free port (logged) */
	char database[SVC_PATH_MAX];
	struct svc_name_list admins;	/* may read every job */
	struct svc_name_list writers;	/* may upload, besides root/slurm */
	char slurm_user[SVC_NAME_MAX];	/* the agents' user; "" for none */
	char munge_socket[108];		/* "" for munge's default */
	size_t max_body;		/* largest accepted request body */
	size_t max_body_total;		/* all bodies being received */
	enum svc_log_level log_level;
	unsigned threads;		/* HTTP worker threads */
	unsigned max_connections;	/* open at once, in total */
	unsigned per_ip_connections;	/* from one address; 0: no limit */
	unsigned timeout_s;		/* idle connection timeout */
	/* A request's headers (and a body not behind a munge credential)
	 * must arrive within this many seconds of its first byte being
	 * awaited, however slowly they trickle (svc_conn_guard.h). */
	unsigned request_timeout_s;
	size_t connection_memory;	/* libmicrohttpd's pool per connection */
	int sync_full;			/* PRAGMA synchronous=FULL */
	/* Web pages (docs/reports.md): who a browser request is when it
	 * carries no munge credential. */
	enum svc_web_auth web_auth;
	char web_user_header[64];	/* set by a reverse proxy */
	/* trusted-header: a file holding the secret the proxy sends in
	 * X-Commap-Proxy-Secret; without it the user header is refused. */
	char web_proxy_secret_file[SVC_PATH_MAX];
	char web_proxy_secret[256];	/* svc_config_load_secret */
	size_t web_proxy_secret_len;
	/* How long a login link (POST /v1/web-login) stays valid. */
	unsigned web_login_ttl_s;
	/* Results of steps started more than this many days ago are
	 * deleted (svc_retention.h); 0 keeps them forever. */
	unsigned retention_days;
};

/* Fill every field with its default (docs/service.md). */
void svc_config_defaults(struct svc_config *c);

/* Set one key from its text value.  0 on success; -1 with EINVAL and a
 * message "KEY: ..." for an unknown key or a bad value (c unchanged). */
int svc_config_set(struct svc_config *c, const char *key, const char *value,
		   struct cm_error *err);

/* Parse a whole configuration text of len bytes (need not be NUL
 * terminated); name is used in messages ("NAME:LINE: ...").  Keys not in the
 * text keep their current values.  0 on success, -1 with EINVAL. */
int svc_config_parse(struct svc_config *c, const char *text, size_t len,
		     const char *name, struct cm_error *err);

/* Read and parse a file (at most 1 MiB).  0 on success, -1 with errno. */
int svc_config_load(struct svc_config *c, const char *path,
		    struct cm_error *err);

/* After parsing: web_auth = trusted-header needs web_proxy_secret_file,
 * a regular file of 16-255 printable bytes (a final newline ignored) that
 * only its owner may read or write; read it into web_proxy_secret.  0 on
 * success (also when not needed), -1 with errno and a message naming the
 * file and the problem. */
int svc_config_load_secret(struct svc_config *c, struct cm_error *err);

/* "error", "warning", "info", "debug". */
const char *svc_log_level_name(enum svc_log_level level);

#endif
