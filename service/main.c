/* main.c: commap-service, the central store of agent results
 * (docs/service.md).  Startup order matters: configuration, database
 * migrations and the role setup are checked before detaching, so a bad
 * setup fails loudly on the terminal; threads (HTTP workers, the learned
 * models' worker) start only after the fork. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "svc_auth.h"
#include "svc_config.h"
#include "svc_db.h"
#include "svc_http.h"
#include "svc_log.h"
#include "svc_models.h"

#define DEFAULT_CONFIG SYSCONFDIR "/commap/service.conf"

struct options {
	const char *config_path;
	int config_given;
	const char *listen;
	const char *database;
	const char *log_level;
	int foreground;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: commap-service [OPTIONS]\n"
		"Store commap agent results and serve them over HTTP (docs/service.md).\n"
		"\n"
		"  -c, --config FILE     configuration file (default %s;\n"
		"                        a missing default file means all defaults)\n"
		"  -l, --listen ADDR:PORT  override 'listen' (port 0: any free port)\n"
		"  -d, --database PATH   override 'database'\n"
		"      --log-level LEVEL override 'log_level' (error|warning|info|debug)\n"
		"  -f, --foreground      stay attached, log to stderr\n"
		"  -h, --help            this text\n"
		"  -V, --version         print the version\n",
		DEFAULT_CONFIG);
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "listen", required_argument, NULL, 'l' },
		{ "database", required_argument, NULL, 'd' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->config_path = DEFAULT_CONFIG;
	while ((c = getopt_long(argc, argv, "c:l:d:fhV", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'c': o->config_path = optarg; o->config_given = 1; break;
		case 'l': o->listen = optarg; break;
		case 'd': o->database = optarg; break;
		case 'L': o->log_level = optarg; break;
		case 'f': o->foreground = 1; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("commap-service %s\n", PACKAGE_VERSION);
			exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "commap-service: unexpected argument '%s'\n",
			argv[optind]);
		return -1;
	}
	return 0;
}

/* The daemon changes to / when it detaches: keep the path meaningful. */
static int absolute_database(struct svc_config *c, struct cm_error *err)
{
	char cwd[PATH_MAX], path[sizeof(c->database)];

	if (c->database[0] == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd)) ||
	    snprintf(path, sizeof(path), "%s/%s", cwd, c->database) >=
	    (int)sizeof(path))
		return cm_errorf(err, ENAMETOOLONG,
				 "database: cannot make '%s' absolute",
				 c->database);
	strcpy(c->database, path);
	return 0;
}

static int load_config(const struct options *o, struct svc_config *c,
		       struct cm_error *err)
{
	svc_config_defaults(c);
	if (svc_config_load(c, o->config_path, err) < 0 &&
	    (o->config_given || errno != ENOENT))
		return -1;
	if (o->listen && svc_config_set(c, "listen", o->listen, err) < 0)
		return -1;
	if (o->database &&
	    svc_config_set(c, "database", o->database, err) < 0)
		return -1;
	if (o->log_level &&
	    svc_config_set(c, "log_level", o->log_level, err) < 0)
		return -1;
	if (svc_config_load_secret(c, err) < 0)
		return -1;
	return absolute_database(c, err);
}

/* Block the stop signals in every thread; main waits for them. */
static void block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int serve(const struct svc_config *c, struct cm_error *err)
{
	struct svc_db_pool *pool = NULL;
	struct svc_auth *auth = NULL;
	struct svc_http *http = NULL;
	struct svc_model_worker *models = NULL;
	sigset_t set;
	int sig = 0, rv = -1;

	block_signals(&set);
	auth = svc_auth_new(c, err);
	if (!auth)
		goto out;
	/* One connection more than HTTP threads: the model worker's. */
	pool = svc_db_pool_open(c->database, c->threads + 1, c->sync_full,
				err);
	if (!pool)
		goto out;
	models = svc_model_worker_start(pool, c->retention_days, err);
	if (!models)
		goto out;
	http = svc_http_start(c, pool, auth, err);
	if (!http)
		goto out;
	svc_log(SVC_LOG_INFO, "listening on %s:%u, database %s (schema %u)",
		c->listen_host, svc_http_port(http), c->database,
		svc_n_migrations);
	while (sig != SIGTERM && sig != SIGINT) {
		if (sigwait(&set, &sig) != 0)
			break;
		if (sig == SIGHUP)
			svc_log(SVC_LOG_INFO,
				"SIGHUP ignored: restart to reload the configuration");
	}
	svc_log(SVC_LOG_INFO, "signal %d: stopping", sig);
	rv = 0;
out:
	/* Stopping the server joins its threads: in-flight requests end
	 * (their transactions commit or roll back) before the pool closes. */
	svc_http_stop(http);
	/* Then the model worker: its batch in progress commits, the rest
	 * stays queued in the database for the next start. */
	svc_model_worker_stop(models);
	svc_db_pool_close(pool);
	svc_auth_free(auth);
	return rv;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct svc_config c;
	struct cm_error err = { "" };
	struct svc_db *db;
	struct svc_auth *auth;

	if (parse_options(argc, argv, &o) < 0)
		return 2;
	if (load_config(&o, &c, &err) < 0) {
		fprintf(stderr, "commap-service: %s\n", err.text);
		return 2;
	}
	svc_log_init(c.log_level, 0);
	/* Check the roles and migrate now, while errors reach the terminal. */
	auth = svc_auth_new(&c, &err);
	if (!auth) {
		svc_log(SVC_LOG_ERROR, "%s", err.text);
		return 1;
	}
	svc_auth_free(auth);
	db = svc_db_open(c.database, c.sync_full, &err);
	if (!db) {
		svc_log(SVC_LOG_ERROR, "%s", err.text);
		return 1;
	}
	svc_db_close(db);
	if (!o.foreground) {
		if (daemon(0, 0) < 0) {
			svc_log(SVC_LOG_ERROR, "daemon: %s", strerror(errno));
			return 1;
		}
		svc_log_init(c.log_level, 1);
	}
	if (serve(&c, &err) < 0) {
		svc_log(SVC_LOG_ERROR, "%s", err.text);
		return 1;
	}
	return 0;
}
