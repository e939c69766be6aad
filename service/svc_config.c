/* svc_config.c: the commap-service key=value configuration parser. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "svc_config.h"

#define SECRET_MIN 16

#define CONFIG_FILE_MAX (1 << 20)
#define CONFIG_LINE_MAX 4096

static const char *const log_level_names[] = {
	[SVC_LOG_ERROR] = "error",
	[SVC_LOG_WARNING] = "warning",
	[SVC_LOG_INFO] = "info",
	[SVC_LOG_DEBUG] = "debug",
};

const char *svc_log_level_name(enum svc_log_level level)
{
	if ((unsigned)level > SVC_LOG_DEBUG)
		return "?";
	return log_level_names[level];
}

void svc_config_defaults(struct svc_config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->listen_host, "127.0.0.1");
	c->listen_port = 7733;
	strcpy(c->database, "/var/lib/commap/service.db");
	strcpy(c->slurm_user, "slurm");
	c->max_body = 16u << 20;
	c->max_body_total = 256u << 20;
	c->log_level = SVC_LOG_INFO;
	c->threads = 4;
	c->max_connections = 1024;
	c->per_ip_connections = 64;
	c->timeout_s = 10;
	c->request_timeout_s = 20;
	c->connection_memory = 32u << 10;
	c->retention_days = 0;
	c->sync_full = 0;
	c->web_auth = SVC_WEB_AUTH_MUNGE;
	c->web_login_ttl_s = 600;
	strcpy(c->web_user_header, "X-Remote-User");
}

/* An unsigned decimal in [lo, hi]; no sign, no spaces, no trailing text. */
static int parse_uint(const char *s, unsigned long long lo,
		      unsigned long long hi, unsigned long long *out,
		      const char **end)
{
	unsigned long long v;
	char *e;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno || v < lo || v > hi)
		return -1;
	if (end)
		*end = e;
	else if (*e)
		return -1;
	*out = v;
	return 0;
}

static int set_uint(unsigned *dst, const char *key, const char *value,
		    unsigned long long lo, unsigned long long hi,
		    struct cm_error *err)
{
	unsigned long long v;

	if (parse_uint(value, lo, hi, &v, NULL) < 0)
		return cm_errorf(err, EINVAL,
				 "%s: '%s' is not an integer in [%llu, %llu]",
				 key, value, lo, hi);
	*dst = (unsigned)v;
	return 0;
}

/* Bytes with an optional binary suffix: 65536, 64k, 16M, 1G. */
static int set_size(size_t *dst, const char *key, const char *value,
		    struct cm_error *err)
{
	const unsigned long long lo = 1024, hi = 1ull << 30;
	unsigned long long v, mult = 1;
	const char *end;

	if (parse_uint(value, 0, ULLONG_MAX >> 31, &v, &end) < 0)
		goto bad;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mult = 1ull << 10; break;
		case 'm': case 'M': mult = 1ull << 20; break;
		case 'g': case 'G': mult = 1ull << 30; break;
		default: goto bad;
		}
		if (end[1])
			goto bad;
	}
	v *= mult;
	if (v < lo || v > hi)
		goto bad;
	*dst = (size_t)v;
	return 0;
bad:
	return cm_errorf(err, EINVAL,
			 "%s: '%s' is not a size from 1k to 1G (bytes, or with k, M, G)",
			 key, value);
}

/* "host:port", "[v6]:port" or "*:port" (any address). */
static int set_listen(struct svc_config *c, const char *key,
		      const char *value, struct cm_error *err)
{
	char host[64];
	const char *colon, *h = value;
	size_t hl;
	unsigned long long port;
	unsigned char buf[16];

	colon = strrchr(value, ':');
	if (!colon)
		goto bad;
	hl = (size_t)(colon - value);
	if (hl >= 2 && value[0] == '[' && value[hl - 1] == ']') {
		h = value + 1;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host))
		goto bad;
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (strcmp(host, "*") == 0)
		strcpy(host, "0.0.0.0");
	if (inet_pton(AF_INET, host, buf) != 1 &&
	    inet_pton(AF_INET6, host, buf) != 1)
		goto bad;
	if (parse_uint(colon + 1, 0, 65535, &port, NULL) < 0)
		goto bad;
	strcpy(c->listen_host, host);
	c->listen_port = (unsigned)port;
	return 0;
bad:
	return cm_errorf(err, EINVAL,
			 "%s: '%s' is not ADDRESS:PORT (numeric address, [v6] or *, port 0-65535)",
			 key, value);
}

/* User and group names as useradd/groupadd allow them (plus a trailing
 * '$' for machine accounts). */
static int valid_name(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len >= SVC_NAME_MAX - 1 || s[0] == '-')
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (isalnum(ch) || ch == '_' || ch == '-' || ch == '.')
			continue;
		if (ch == '$' && i == len - 1)
			continue;
		return 0;
	}
	return 1;
}

/* A list separated by commas and/or blanks; may be empty. */
static int set_names(struct svc_name_list *dst, const char *key,
		     const char *value, int allow_groups,
		     struct cm_error *err)
{
	struct svc_name_list l = { 0 };
	const char *p = value;

	while (*p) {
		size_t len;
		int group;

		while (*p == ',' || *p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		len = strcspn(p, ", \t");
		group = p[0] == '@';
		if ((group && !allow_groups) ||
		    !valid_name(p + group, len - (size_t)group))
			return cm_errorf(err, EINVAL,
					 "%s: '%.*s' is not a valid %s name",
					 key, (int)len, p,
					 allow_groups ? "user or @group" :
					 "user");
		if (l.n == SVC_NAMES_MAX)
			return cm_errorf(err, EINVAL,
					 "%s: more than %d names", key,
					 SVC_NAMES_MAX);
		memcpy(l.name[l.n], p, len);
		l.name[l.n][len] = '\0';
		l.n++;
		p += len;
	}
	*dst = l;
	return 0;
}

static int set_string(char *dst, size_t size, const char *key,
		      const char *value, int allow_empty,
		      struct cm_error *err)
{
	size_t len = strlen(value);

	if (!allow_empty && len == 0)
		return cm_errorf(err, EINVAL, "%s: empty value", key);
	if (len >= size)
		return cm_errorf(err, EINVAL, "%s: longer than %zu bytes",
				 key, size - 1);
	memcpy(dst, value, len + 1);
	return 0;
}

static int set_log_level(struct svc_config *c, const char *key,
			 const char *value, struct cm_error *err)
{
	unsigned i;

	for (i = 0; i <= SVC_LOG_DEBUG; i++) {
		if (strcmp(value, log_level_names[i]) == 0) {
			c->log_level = (enum svc_log_level)i;
			return 0;
		}
	}
	return cm_errorf(err, EINVAL,
			 "%s: '%s' is not one of error, warning, info, debug",
			 key, value);
}

static int set_sync(struct svc_config *c, const char *key, const char *value,
		    struct cm_error *err)
{
	if (strcmp(value, "normal") == 0)
		c->sync_full = 0;
	else if (strcmp(value, "full") == 0)
		c->sync_full = 1;
	else
		return cm_errorf(err, EINVAL,
				 "%s: '%s' is not 'normal' or 'full'", key,
				 value);
	return 0;
}

static int set_web_auth(struct svc_config *c, const char *key,
			const char *value, struct cm_error *err)
{
	if (strcmp(value, "munge") == 0)
		c->web_auth = SVC_WEB_AUTH_MUNGE;
	else if (strcmp(value, "trusted-header") == 0)
		c->web_auth = SVC_WEB_AUTH_TRUSTED_HEADER;
	else if (strcmp(value, "none") == 0)
		c->web_auth = SVC_WEB_AUTH_NONE;
	else
		return cm_errorf(err, EINVAL,
				 "%s: '%s' is not 'munge', 'trusted-header' or 'none'",
				 key, value);
	return 0;
}

/* An HTTP header name: letters, digits and '-'. */
static int set_header_name(char *dst, size_t size, const char *key,
			   const char *value, struct cm_error *err)
{
	size_t i, n = strlen(value);

	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)value[i]) && value[i] != '-')
			break;
	if (n == 0 || i < n || n >= size)
		return cm_errorf(err, EINVAL,
				 "%s: '%s' is not a header name (1-%zu of A-Z a-z 0-9 -)",
				 key, value, size - 1);
	memcpy(dst, value, n + 1);
	return 0;
}

static const char *const config_keys[] = {
	"listen", "database", "admins", "writers", "slurm_user",
	"munge_socket", "max_body", "log_level", "threads",
	"max_connections", "timeout", "sync", "web_auth", "web_user_header",
	"retention_days", "per_ip_connections", "request_timeout",
	"connection_memory", "web_proxy_secret_file", "max_body_total",
	"web_login_ttl",
};
#define N_CONFIG_KEYS (sizeof(config_keys) / sizeof(config_keys[0]))

static int key_index(const char *key)
{
	size_t i;

	for (i = 0; i < N_CONFIG_KEYS; i++)
		if (strcmp(key, config_keys[i]) == 0)
			return (int)i;
	return -1;
}

int svc_config_set(struct svc_config *c, const char *key, const char *value,
		   struct cm_error *err)
{
	const char *slurm = value;

	switch (key_index(key)) {
	case 0:
		return set_listen(c, key, value, err);
	case 1:
		return set_string(c->database, sizeof(c->database), key,
				  value, 0, err);
	case 2:
		return set_names(&c->admins, key, value, 1, err);
	case 3:
		return set_names(&c->writers, key, value, 1, err);
	case 4:
		if (*slurm && !valid_name(slurm, strlen(slurm)))
			return cm_errorf(err, EINVAL,
					 "%s: '%s' is not a valid user name",
					 key, value);
		return set_string(c->slurm_user, sizeof(c->slurm_user), key,
				  value, 1, err);
	case 5:
		if (*value && *value != '/')
			return cm_errorf(err, EINVAL,
					 "%s: '%s' is not an absolute path",
					 key, value);
		return set_string(c->munge_socket, sizeof(c->munge_socket),
				  key, value, 1, err);
	case 6:
		return set_size(&c->max_body, key, value, err);
	case 7:
		return set_log_level(c, key, value, err);
	case 8:
		return set_uint(&c->threads, key, value, 1, 64, err);
	case 9:
		return set_uint(&c->max_connections, key, value, 1, 65536,
				err);
	case 10:
		return set_uint(&c->timeout_s, key, value, 1, 3600, err);
	case 11:
		return set_sync(c, key, value, err);
	case 12:
		return set_web_auth(c, key, value, err);
	case 13:
		return set_header_name(c->web_user_header,
				       sizeof(c->web_user_header), key, value,
				       err);
	case 14:
		return set_uint(&c->retention_days, key, value, 0, 36500, err);
	case 15:
		return set_uint(&c->per_ip_connections, key, value, 0, 65536,
				err);
	case 16:
		return set_uint(&c->request_timeout_s, key, value, 1, 3600,
				err);
	case 17:
		return set_size(&c->connection_memory, key, value, err);
	case 18:
		if (*value && *value != '/')
			return cm_errorf(err, EINVAL,
					 "%s: '%s' is not an absolute path",
					 key, value);
		return set_string(c->web_proxy_secret_file,
				  sizeof(c->web_proxy_secret_file), key, value,
				  1, err);
	case 19:
		return set_size(&c->max_body_total, key, value, err);
	case 20:
		return set_uint(&c->web_login_ttl_s, key, value, 1, 3600, err);
	}
	return cm_errorf(err, EINVAL, "%s: unknown key", key);
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* One line (NUL terminated, no newline).  seen[] catches repeated keys;
 * *kout is the key's index, or -1 for a blank or comment line. */
static int parse_line(struct svc_config *c, char *line, const int seen[],
		      int *kout, struct cm_error *err)
{
	char *eq, *key, *value;
	int k;

	*kout = -1;
	line = trim(line);
	if (*line == '\0' || *line == '#')
		return 0;
	eq = strchr(line, '=');
	if (!eq)
		return cm_errorf(err, EINVAL, "expected 'key = value', got '%.40s'",
				 line);
	*eq = '\0';
	key = trim(line);
	value = trim(eq + 1);
	if (*key == '\0')
		return cm_errorf(err, EINVAL, "missing key before '='");
	k = key_index(key);
	if (k >= 0 && seen[k])
		return cm_errorf(err, EINVAL, "%s: repeated (first on line %d)",
				 key, seen[k]);
	if (svc_config_set(c, key, value, err) < 0)
		return -1;
	*kout = k;
	return 0;
}

int svc_config_parse(struct svc_config *c, const char *text, size_t len,
		     const char *name, struct cm_error *err)
{
	struct svc_config tmp = *c;
	int seen[N_CONFIG_KEYS] = { 0 };
	char line[CONFIG_LINE_MAX];
	struct cm_error e;
	size_t pos = 0;
	int lineno = 0;

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - text - pos) : len - pos;
		int k;

		lineno++;
		if (ll >= sizeof(line))
			return cm_errorf(err, EINVAL, "%s:%d: line longer than %d bytes",
					 name, lineno, CONFIG_LINE_MAX - 1);
		if (memchr(text + pos, '\0', ll))
			return cm_errorf(err, EINVAL, "%s:%d: NUL byte in line",
					 name, lineno);
		memcpy(line, text + pos, ll);
		line[ll] = '\0';
		pos += ll + (nl != NULL);
		if (parse_line(&tmp, line, seen, &k, &e) < 0)
			return cm_errorf(err, EINVAL, "%s:%d: %s", name, lineno,
					 e.text);
		if (k >= 0)
			seen[k] = lineno;
	}
	if (tmp.max_body_total < tmp.max_body)
		return cm_errorf(err, EINVAL,
				 "%s: max_body_total (%zu) is smaller than max_body (%zu): no upload of max_body could ever be taken",
				 name, tmp.max_body_total, tmp.max_body);
	*c = tmp;
	return 0;
}

int svc_config_load(struct svc_config *c, const char *path,
		    struct cm_error *err)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;
	int rv = -1, saved;

	if (!f)
		return cm_errorf(err, errno, "%s: %s", path, strerror(errno));
	buf = malloc(CONFIG_FILE_MAX + 1);
	if (!buf) {
		cm_errorf(err, ENOMEM, "%s: out of memory", path);
		goto out;
	}
	n = fread(buf, 1, CONFIG_FILE_MAX + 1, f);
	if (ferror(f)) {
		cm_errorf(err, EIO, "%s: read error", path);
		goto out;
	}
	if (n > CONFIG_FILE_MAX) {
		cm_errorf(err, EFBIG, "%s: larger than %d bytes", path,
			  CONFIG_FILE_MAX);
		goto out;
	}
	rv = svc_config_parse(c, buf, n, path, err);
out:
	saved = errno;
	free(buf);
	fclose(f);
	errno = saved;
	return rv;
}

/* The secret as read: printable ASCII but blanks, since it travels as a
 * header value; one final newline (echo > file) is not part of it. */
static int secret_text_ok(struct svc_config *c, const char *buf, size_t n,
			  struct cm_error *err)
{
	const char *f = c->web_proxy_secret_file;
	size_t i;

	if (n && buf[n - 1] == '\n')
		n--;
	if (n < SECRET_MIN || n >= sizeof(c->web_proxy_secret))
		return cm_errorf(err, EINVAL,
				 "web_proxy_secret_file: %s: expected %d to %zu characters",
				 f, SECRET_MIN, sizeof(c->web_proxy_secret) - 1);
	for (i = 0; i < n; i++)
		if (buf[i] <= ' ' || buf[i] > '~')
			return cm_errorf(err, EINVAL,
					 "web_proxy_secret_file: %s: byte %zu is not a printable non-blank character",
					 f, i + 1);
	memcpy(c->web_proxy_secret, buf, n);
	c->web_proxy_secret[n] = '\0';
	c->web_proxy_secret_len = n;
	return 0;
}

int svc_config_load_secret(struct svc_config *c, struct cm_error *err)
{
	const char *f = c->web_proxy_secret_file;
	char buf[sizeof(c->web_proxy_secret) + 1];
	struct stat st;
	ssize_t n;
	int fd, rv;

	if (c->web_auth != SVC_WEB_AUTH_TRUSTED_HEADER)
		return 0;
	if (!*f)
		return cm_errorf(err, EINVAL,
				 "web_auth = trusted-header needs web_proxy_secret_file (a secret shared with the reverse proxy)");
	fd = open(f, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return cm_errorf(err, errno, "web_proxy_secret_file: %s: %s",
				 f, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & 077)) {
		close(fd);
		return cm_errorf(err, EPERM,
				 "web_proxy_secret_file: %s: must be a regular file only its owner can read (chmod 600)",
				 f);
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return cm_errorf(err, EIO, "web_proxy_secret_file: %s: %s", f,
				 strerror(errno));
	rv = secret_text_ok(c, buf, (size_t)n, err);
	explicit_bzero(buf, sizeof(buf));
	return rv;
}
