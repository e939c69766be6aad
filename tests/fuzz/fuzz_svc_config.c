/* fuzz_svc_config.c: the service's configuration parser
 * (service/svc_config.c) on arbitrary bytes.
 *
 * Invariants: a refused file leaves the configuration exactly as it was and
 * says where ("NAME:LINE: ..."); an accepted one has every value in the
 * ranges docs/service.md gives and every string terminated in its field;
 * parsing is deterministic.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "svc_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_names(const struct svc_name_list *l)
{
	fuzz_require(l->n <= SVC_NAMES_MAX, "name list bounded");
	for (size_t i = 0; i < l->n; i++)
		fuzz_require(l->name[i][0] != '\0' &&
			     fuzz_terminated(l->name[i], SVC_NAME_MAX),
			     "names non-empty and terminated");
}

static void check_config(const struct svc_config *c)
{
	fuzz_require(fuzz_terminated(c->listen_host, sizeof(c->listen_host)) &&
		     fuzz_terminated(c->database, sizeof(c->database)) &&
		     fuzz_terminated(c->slurm_user, sizeof(c->slurm_user)) &&
		     fuzz_terminated(c->munge_socket, sizeof(c->munge_socket)) &&
		     fuzz_terminated(c->web_user_header,
				     sizeof(c->web_user_header)) &&
		     fuzz_terminated(c->web_proxy_secret_file,
				     sizeof(c->web_proxy_secret_file)),
		     "string fields terminated");
	fuzz_require(c->listen_port <= 65535, "port in range");
	fuzz_require(c->database[0] != '\0', "a database path");
	fuzz_require(c->max_body >= 1024 && c->max_body <= (1u << 30),
		     "max_body from 1k to 1G");
	fuzz_require(c->log_level <= SVC_LOG_DEBUG, "log level");
	fuzz_require(c->web_auth <= SVC_WEB_AUTH_NONE, "web auth");
	fuzz_require(c->threads >= 1 && c->max_connections >= 1,
		     "threads and connections");
	fuzz_require(c->retention_days <= 36500, "retention up to 100 years");
	fuzz_require(c->per_ip_connections <= 65536 &&
		     c->request_timeout_s >= 1 &&
		     c->request_timeout_s <= 3600, "connection limits");
	fuzz_require(c->connection_memory >= 1024 &&
		     c->connection_memory <= (1u << 30),
		     "connection_memory from 1k to 1G");
	fuzz_require(c->web_proxy_secret_file[0] == '\0' ||
		     c->web_proxy_secret_file[0] == '/',
		     "the secret file is an absolute path");
	/* The parser never reads the secret: svc_config_load_secret does. */
	fuzz_require(c->web_proxy_secret_len == 0, "no secret from parsing");
	check_names(&c->admins);
	check_names(&c->writers);
}

/* Field by field: struct padding is not part of the value. */
static int same_names(const struct svc_name_list *a,
		      const struct svc_name_list *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->name[i], b->name[i]) != 0)
			return 0;
	return 1;
}

static int same_config(const struct svc_config *a, const struct svc_config *b)
{
	return strcmp(a->listen_host, b->listen_host) == 0 &&
	       a->listen_port == b->listen_port &&
	       strcmp(a->database, b->database) == 0 &&
	       same_names(&a->admins, &b->admins) &&
	       same_names(&a->writers, &b->writers) &&
	       strcmp(a->slurm_user, b->slurm_user) == 0 &&
	       strcmp(a->munge_socket, b->munge_socket) == 0 &&
	       a->max_body == b->max_body && a->log_level == b->log_level &&
	       a->threads == b->threads &&
	       a->max_connections == b->max_connections &&
	       a->timeout_s == b->timeout_s && a->sync_full == b->sync_full &&
	       a->web_auth == b->web_auth &&
	       a->retention_days == b->retention_days &&
	       a->per_ip_connections == b->per_ip_connections &&
	       a->request_timeout_s == b->request_timeout_s &&
	       a->connection_memory == b->connection_memory &&
	       strcmp(a->web_proxy_secret_file, b->web_proxy_secret_file) == 0 &&
	       strcmp(a->web_user_header, b->web_user_header) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_bytes(data, size);
	struct svc_config c, before, again;
	struct cm_error err = { "" };

	svc_config_defaults(&c);
	before = c;
	if (svc_config_parse(&c, text, size, "fuzz.conf", &err) < 0) {
		fuzz_require(strncmp(err.text, "fuzz.conf:", 10) == 0,
			     "an error names the file and line");
		fuzz_require(same_config(&c, &before),
			     "a refused file changes nothing");
		free(text);
		return 0;
	}
	check_config(&c);
	svc_config_defaults(&again);
	fuzz_require(svc_config_parse(&again, text, size, "fuzz.conf",
				      &err) == 0 &&
		     same_config(&c, &again),
		     "parsing is deterministic");
	free(text);
	return 0;
}
