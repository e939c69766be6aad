/* test_svc_config.c: the commap-service configuration parser. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "svc_config.h"
#include "tap.h"

/* A text that must be refused, and a word the message must contain. */
struct bad_case {
	const char *text;
	const char *word;
};

static const struct bad_case bad_cases[] = {
	{ "nosuchkey = 1\n", "t.conf:1: nosuchkey: unknown key" },
	{ "\n# c\nlisten 127.0.0.1:1\n", "t.conf:3: expected 'key = value'" },
	{ "= 5\n", "t.conf:1: missing key" },
	{ "listen = 127.0.0.1\n", "listen: '127.0.0.1' is not ADDRESS:PORT" },
	{ "listen = localhost:80\n", "listen: 'localhost:80'" },
	{ "listen = 127.0.0.1:65536\n", "listen:" },
	{ "listen = 127.0.0.1:-1\n", "listen:" },
	{ "listen = 127.0.0.1:80x\n", "listen:" },
	{ "listen = :80\n", "listen:" },
	{ "listen = []:80\n", "listen:" },
	{ "database =\n", "database: empty value" },
	{ "admins = alice, b@d\n", "admins: 'b@d' is not a valid user or @group" },
	{ "admins = @\n", "admins: '@'" },
	{ "admins = -rf\n", "admins: '-rf'" },
	{ "writers = a;b\n", "writers: 'a;b'" },
	{ "max_body = 0\n", "max_body: '0' is not a size" },
	{ "max_body = 1023\n", "max_body: '1023'" },
	{ "max_body = 2G\n", "max_body: '2G'" },
	{ "max_body = 16X\n", "max_body: '16X'" },
	{ "max_body = 16MB\n", "max_body: '16MB'" },
	{ "max_body = -5\n", "max_body:" },
	{ "max_body = 99999999999999999999999\n", "max_body:" },
	{ "log_level = loud\n", "log_level: 'loud' is not one of" },
	{ "threads = 0\n", "threads: '0' is not an integer in [1, 64]" },
	{ "threads = 65\n", "threads:" },
	{ "threads = 4 4\n", "threads:" },
	{ "max_connections = 1e3\n", "max_connections:" },
	{ "timeout = \n", "timeout:" },
	{ "retention_days = -1\n", "retention_days:" },
	{ "retention_days = 36501\n", "retention_days: '36501' is not an integer in [0, 36500]" },
	{ "retention_days = 30d\n", "retention_days:" },
	{ "sync = fast\n", "sync: 'fast' is not 'normal' or 'full'" },
	{ "max_body = 1G\n", "t.conf: max_body_total (268435456) is smaller than max_body (1073741824)" },
	{ "max_body_total = 1M\n", "max_body_total (1048576) is smaller than max_body" },
	{ "per_ip_connections = 65537\n", "per_ip_connections: '65537' is not an integer in [0, 65536]" },
	{ "request_timeout = 0\n", "request_timeout: '0' is not an integer in [1, 3600]" },
	{ "web_login_ttl = 0\n", "web_login_ttl: '0' is not an integer in [1, 3600]" },
	{ "web_login_ttl = 3601\n", "web_login_ttl: '3601' is not an integer in [1, 3600]" },
	{ "connection_memory = 512\n", "connection_memory: '512' is not a size" },
	{ "web_proxy_secret_file = secret\n", "web_proxy_secret_file: 'secret' is not an absolute path" },
	{ "munge_socket = run/munge\n", "munge_socket: 'run/munge' is not an absolute path" },
	{ "slurm_user = sl urm\n", "slurm_user:" },
	{ "threads = 2\nthreads = 3\n", "t.conf:2: threads: repeated (first on line 1)" },
	{ "Listen = 127.0.0.1:1\n", "Listen: unknown key" },
};

static void test_defaults(void)
{
	struct svc_config c;

	svc_config_defaults(&c);
	is_str(c.listen_host, "127.0.0.1", "default listen address");
	is_int(c.listen_port, 7733, "default port 7733");
	is_int(c.max_body, 16 << 20, "default max_body 16 MiB");
	is_int(c.retention_days, 0, "default retention: keep forever");
	is_str(c.slurm_user, "slurm", "default slurm_user");
	is_int(c.log_level, SVC_LOG_INFO, "default log_level info");
	is_int(c.admins.n + c.writers.n, 0, "no admins or writers by default");
	is_int(c.sync_full, 0, "default sync normal");
}

static void test_full_file(void)
{
	static const char text[] =
		"# commap-service\n"
		"\n"
		"   listen = [::1]:8080   \n"
		"database=/tmp/x.db\r\n"
		"\t# indented comment\n"
		"admins = alice, @hpc-admins bob\n"
		"writers = agent1,agent2\n"
		"slurm_user =\n"
		"munge_socket = /run/munge/munge.socket.2\n"
		"max_body = 64k\n"
		"log_level = debug\n"
		"threads = 8\n"
		"max_connections = 1000\n"
		"timeout = 5\n"
		"retention_days = 180\n"
		"per_ip_connections = 0\n"
		"request_timeout = 7\n"
		"web_login_ttl = 2\n"
		"connection_memory = 16k\n"
		"web_proxy_secret_file = /etc/commap/proxy.secret\n"
		"sync = full";		/* no final newline */
	struct svc_config c;
	struct cm_error e = { "" };

	svc_config_defaults(&c);
	ok(svc_config_parse(&c, text, strlen(text), "t.conf", &e) == 0,
	   "a file using every key parses (%s)", e.text);
	is_str(c.listen_host, "::1", "listen [::1] gives the bare address");
	is_int(c.listen_port, 8080, "listen port");
	is_str(c.database, "/tmp/x.db", "database, CR stripped");
	is_int(c.admins.n, 3, "three admins");
	is_str(c.admins.name[1], "@hpc-admins", "admin group kept with @");
	is_str(c.admins.name[2], "bob", "blank separates names too");
	is_int(c.writers.n, 2, "two writers");
	is_str(c.slurm_user, "", "empty slurm_user disables it");
	is_int(c.max_body, 65536, "64k is 65536 bytes");
	is_int(c.log_level, SVC_LOG_DEBUG, "log_level debug");
	is_int(c.threads, 8, "threads");
	is_int(c.max_connections, 1000, "max_connections");
	is_int(c.timeout_s, 5, "timeout");
	is_int(c.retention_days, 180, "retention_days");
	is_int(c.sync_full, 1, "sync full");
	is_int(c.per_ip_connections, 0, "per_ip_connections 0: no limit");
	is_int(c.request_timeout_s, 7, "request_timeout");
	is_int(c.web_login_ttl_s, 2, "web_login_ttl");
	is_int(c.connection_memory, 16384, "connection_memory 16k");
	is_str(c.web_proxy_secret_file, "/etc/commap/proxy.secret",
	       "web_proxy_secret_file");
}

static void test_bad_cases(void)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *b = &bad_cases[i];
		struct svc_config c, before;
		struct cm_error e = { "" };
		int rc;

		svc_config_defaults(&c);
		before = c;
		errno = 0;
		rc = svc_config_parse(&c, b->text, strlen(b->text), "t.conf",
				      &e);
		ok(rc == -1 && errno == EINVAL && strstr(e.text, b->word),
		   "refused: %.*s", (int)strcspn(b->text, "\n"), b->text);
		if (!strstr(e.text, b->word))
			diag("  message '%s', want '%s'", e.text, b->word);
		ok(memcmp(&c, &before, sizeof(c)) == 0,
		   "  config unchanged after the error");
	}
}

static void test_edges(void)
{
	struct svc_config c;
	struct cm_error e = { "" };
	char big[5000], names[2048];
	int i, n = 0;

	svc_config_defaults(&c);
	ok(svc_config_parse(&c, "", 0, "t.conf", &e) == 0,
	   "an empty file is valid");
	ok(svc_config_parse(&c, "\n\n# x\n", 6, "t.conf", &e) == 0,
	   "blank and comment lines only");
	ok(svc_config_parse(&c, "listen = *:0\n", 13, "t.conf", &e) == 0 &&
	   strcmp(c.listen_host, "0.0.0.0") == 0 && c.listen_port == 0,
	   "listen *:0 means any address, any free port");
	ok(svc_config_parse(&c, "admins =\n", 9, "t.conf", &e) == 0 &&
	   c.admins.n == 0, "an empty admins list is allowed");
	ok(svc_config_parse(&c, "threads = 3\0x\n", 14, "t.conf", &e) < 0 &&
	   strstr(e.text, "NUL"), "a NUL byte is refused: %s", e.text);
	memset(big, 'a', sizeof(big));
	memcpy(big, "database = /", 12);
	ok(svc_config_parse(&c, big, sizeof(big), "t.conf", &e) < 0 &&
	   strstr(e.text, "t.conf:1: line longer"),
	   "an over-long line is refused: %s", e.text);
	n = snprintf(names, sizeof(names), "writers =");
	for (i = 0; i <= SVC_NAMES_MAX; i++)
		n += snprintf(names + n, sizeof(names) - (size_t)n, " u%d", i);
	ok(svc_config_parse(&c, names, (size_t)n, "t.conf", &e) < 0 &&
	   strstr(e.text, "more than"), "too many names: %s", e.text);
	ok(svc_config_set(&c, "listen", "10.1.2.3:99", &e) == 0 &&
	   c.listen_port == 99, "svc_config_set (command-line override)");
	ok(svc_config_set(&c, "bogus", "1", &e) < 0 &&
	   strcmp(e.text, "bogus: unknown key") == 0,
	   "svc_config_set names an unknown key");
}

static void test_load(void)
{
	char path[] = "/tmp/commap-svc-config-XXXXXX";
	struct svc_config c;
	struct cm_error e = { "" };
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!ok(f != NULL, "temp file"))
		return;
	fputs("log_level = warning\nmax_body = 1M\nwhat = 1\n", f);
	fclose(f);
	svc_config_defaults(&c);
	ok(svc_config_load(&c, path, &e) < 0 && strstr(e.text, ":3: what"),
	   "load names the file, line and key: %s", e.text);
	ok(strstr(e.text, path) != NULL, "  the message has the path");
	unlink(path);
	ok(svc_config_load(&c, path, &e) < 0 && errno == ENOENT,
	   "a missing file gives ENOENT");
}

int main(void)
{
	test_defaults();
	test_full_file();
	test_bad_cases();
	test_edges();
	test_load();
	return done_testing();
}
