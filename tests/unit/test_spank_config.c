/* test_spank_config.c: the --commap mode and plugstack.conf parsers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spank_config.h"
#include "tap.h"

static void test_modes(void)
{
	static const struct {
		const char *text;
		int ok;
		enum cm_spank_mode mode;
		const char *err_has;
	} cases[] = {
		{ "off", 1, CM_MODE_OFF, NULL },
		{ "dynamic", 1, CM_MODE_DYNAMIC, NULL },
		{ "learned", 1, CM_MODE_LEARNED, NULL },
		{ "static:/tmp/map.json", 1, CM_MODE_STATIC, NULL },
		{ "static:rel.json", 1, CM_MODE_STATIC, NULL },
		{ "static:", 0, 0, "give the mapping file" },
		{ "static", 0, 0, "invalid mode 'static'" },
		{ "dynamicx", 0, 0, "invalid mode 'dynamicx'" },
		{ "DYNAMIC", 0, 0, "invalid mode 'DYNAMIC'" },
		{ "", 0, 0, "empty mode" },
		{ "on", 0, 0, "expected off, dynamic, learned or static:FILE" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cm_spank_mode_value v;
		struct cm_error err = { "" };
		int rc = cm_spank_mode_parse(cases[i].text, &v, &err);

		if (cases[i].ok)
			ok(rc == 0 && v.mode == cases[i].mode,
			   "mode '%s' parses as %s", cases[i].text,
			   cm_spank_mode_name(cases[i].mode));
		else
			ok(rc == -1 && errno == EINVAL &&
			   strstr(err.text, cases[i].err_has),
			   "mode '%s' rejected: %s", cases[i].text, err.text);
	}
	{
		struct cm_spank_mode_value v;

		cm_spank_mode_parse("static:/a/b.json", &v, NULL);
		is_str(v.static_file, "/a/b.json", "static file kept");
		ok(cm_spank_mode_parse(NULL, &v, NULL) == -1, "NULL mode rejected");
	}
}

static void test_defaults(void)
{
	struct cm_spank_config cfg;

	cm_spank_config_defaults(&cfg, "/opt/agent", "/var/spool/x");
	is_int(cfg.default_mode.mode, CM_MODE_OFF, "default mode is off");
	is_str(cfg.agent, "/opt/agent", "default agent");
	is_str(cfg.spool, "/var/spool/x", "default spool");
	is_str(cfg.service, "", "no service by default");
	for (int m = 0; m < CM_MODE_COUNT; m++)
		ok(cm_spank_mode_allowed(&cfg, m), "mode %s allowed by default",
		   cm_spank_mode_name(m));
}

static int parse_words(struct cm_spank_config *cfg, const char *line,
		       struct cm_error *err)
{
	char buf[1024], *av[32], *save = NULL;
	int ac = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *w = strtok_r(buf, " ", &save); w && ac < 32;
	     w = strtok_r(NULL, " ", &save))
		av[ac++] = w;
	cm_spank_config_defaults(cfg, "/agent", "/spool");
	return cm_spank_config_parse_args(cfg, ac, av, err);
}

static void test_args(void)
{
	static const struct {
		const char *args;
		const char *err_has;	/* NULL: must succeed */
	} cases[] = {
		{ "", NULL },
		{ "default=dynamic", NULL },
		{ "default=static:/etc/map.json allow=static,off", NULL },
		{ "allow=off,dynamic agent=/usr/bin/a spool=/tmp service=http://h:1/", NULL },
		{ "service=", NULL },
		{ "bogus=1", "unknown key 'bogus'" },
		{ "default", "expected key=value" },
		{ "=x", "expected key=value" },
		{ "default=fast", "invalid mode 'fast'" },
		{ "allow=dynamic,turbo", "unknown mode 'turbo'" },
		{ "allow=", "allow: empty list" },
		{ "agent=relative/path", "not an absolute path" },
		{ "spool=spool", "not an absolute path" },
		{ "service=ftp://x", "not an http:// or https:// URL" },
		{ "service=http://h:99999", "service: 'http://h:99999': port must be 1-65535" },
		{ "service=http://h:0", "port must be 1-65535" },
		{ "service=http://h:65536/x", "port must be 1-65535" },
		{ "service=http://h:12a", "port must be 1-65535" },
		{ "service=http://h:", "empty port" },
		{ "service=http://", "has no host" },
		{ "service=http://:80", "has no host" },
		{ "service=https:///v1", "has no host" },
		{ "service=http://h:65535/v1", NULL },
		{ "service=https://[::1]:7733", NULL },
		{ "service=http://127.0.0.1", NULL },
		{ "default=learned allow=off,dynamic", "default=learned is not in allow=" },
		{ "conf=/nonexistent/commap.conf", "/nonexistent/commap.conf" },
		{ "averyveryveryveryverylongkeyname=1", "unknown key" },
		{ "mpi_traffic=yes", NULL },
		{ "mpi_traffic=no", NULL },
		{ "mpi_traffic=1", "mpi_traffic: '1': expected yes or no" },
		{ "place_nodes=yes", NULL },
		{ "place_nodes=no", NULL },
		{ "place_nodes=on", "place_nodes: 'on': expected yes or no" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cm_spank_config cfg;
		struct cm_error err = { "" };
		int rc = parse_words(&cfg, cases[i].args, &err);

		if (!cases[i].err_has)
			ok(rc == 0, "args '%s' accepted", cases[i].args);
		else
			ok(rc == -1 && strstr(err.text, cases[i].err_has),
			   "args '%s' rejected: %s", cases[i].args, err.text);
	}
	{
		struct cm_spank_config cfg;

		parse_words(&cfg, "default=dynamic allow=off,dynamic "
			    "agent=/x/agent service=https://svc:8443", NULL);
		is_int(cfg.default_mode.mode, CM_MODE_DYNAMIC, "default= applied");
		is_int(cfg.mpi_traffic, 0, "mpi_traffic off by default");
		ok(!cm_spank_mode_allowed(&cfg, CM_MODE_LEARNED) &&
		   cm_spank_mode_allowed(&cfg, CM_MODE_DYNAMIC),
		   "allow= restricts modes");
		is_str(cfg.agent, "/x/agent", "agent= applied");
		is_str(cfg.service, "https://svc:8443", "service= applied");
		parse_words(&cfg, "mpi_traffic=yes", NULL);
		is_int(cfg.mpi_traffic, 1, "mpi_traffic=yes applied");
		is_int(cfg.place_nodes, 0, "place_nodes off by default");
		parse_words(&cfg, "place_nodes=yes", NULL);
		is_int(cfg.place_nodes, 1, "place_nodes=yes applied");
	}
}

static void test_conf_file(void)
{
	char path[] = "/tmp/commap-spank-conf-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	struct cm_spank_config cfg;
	struct cm_error err = { "" };
	char arg[64], *av[1] = { arg };

	fputs("# site policy\n\n  default=dynamic  \nallow=off,dynamic\r\n"
	      "spool=/var/tmp/cm\n", f);
	fclose(f);
	snprintf(arg, sizeof(arg), "conf=%s", path);
	cm_spank_config_defaults(&cfg, "/a", "/s");
	ok(cm_spank_config_parse_args(&cfg, 1, av, &err) == 0,
	   "conf= file read (%s)", err.text);
	is_int(cfg.default_mode.mode, CM_MODE_DYNAMIC, "file default= applied");
	is_str(cfg.spool, "/var/tmp/cm", "file spool= applied");

	cm_spank_config_defaults(&cfg, "/a", "/s");
	ok(cm_spank_config_parse_text(&cfg, "default=off\n\nfoo=bar\n",
				      "site.conf", &err) == -1 &&
	   strstr(err.text, "site.conf:3: unknown key 'foo'"),
	   "file error names file and line: %s", err.text);
	cm_spank_config_defaults(&cfg, "/a", "/s");
	ok(cm_spank_config_parse_text(&cfg, "default = dynamic\n"
				      " spool =\t/var/tmp/cm2 \n"
				      "service= http://h:7733\n", "site.conf",
				      &err) == 0 &&
	   cfg.default_mode.mode == CM_MODE_DYNAMIC &&
	   strcmp(cfg.spool, "/var/tmp/cm2") == 0 &&
	   strcmp(cfg.service, "http://h:7733") == 0,
	   "blanks around '=' and the value are trimmed (%s)", err.text);
	ok(cm_spank_config_parse_text(&cfg, "default =\n", "site.conf",
				      &err) == -1 && strstr(err.text, "empty"),
	   "a key with only blanks after '=' has an empty value: %s",
	   err.text);
	ok(cm_spank_config_parse_text(&cfg, "conf=/etc/x\n", "site.conf",
				      &err) == -1 &&
	   strstr(err.text, "not allowed inside a config file"),
	   "conf= inside a file rejected: %s", err.text);
	unlink(path);
}

/* Split the first non-comment line of plugstack.conf into words. */
static int plugstack_words(const char *path, char *line, size_t len,
			   char **w, int max)
{
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, (int)len, f))
		if (line[0] != '#' && line[0] != '\n')
			break;
	fclose(f);
	for (char *tok = strtok(line, " \t\n"); tok && n < max;
	     tok = strtok(NULL, " \t\n"))
		w[n++] = tok;
	return n;
}

/* deploy/config/: the examples a site copies must parse, and say what
 * docs/slurm.md says they do (opt-in default, every mode allowed). */
static void test_shipped_examples(void)
{
	struct cm_spank_config cfg;
	struct cm_error err = { "" };
	char conf[4096], plug[4096], line[1024], confarg[4200];
	char *w[16];
	int n;

	TAP_SRCDIR_PATH(conf, sizeof(conf), "deploy/config/commap.conf");
	TAP_SRCDIR_PATH(plug, sizeof(plug), "deploy/config/plugstack.conf");
	n = plugstack_words(plug, line, sizeof(line), w, 16);
	ok(n == 3 && strcmp(w[0], "optional") == 0 &&
	   strstr(w[1], "/commap_spank.so") && strncmp(w[2], "conf=", 5) == 0,
	   "plugstack.conf example: optional PLUGIN conf=FILE (%d words)", n);
	if (n != 3)
		return;
	/* its conf= names the installed path; read the shipped file */
	snprintf(confarg, sizeof(confarg), "conf=%s", conf);
	w[2] = confarg;
	cm_spank_config_defaults(&cfg, "/default/agent", "/default/spool");
	ok(cm_spank_config_parse_args(&cfg, 1, &w[2], &err) == 0,
	   "commap.conf example parses: %s", err.text);
	is_int(cfg.default_mode.mode, CM_MODE_OFF, "example: default=off");
	ok(cm_spank_mode_allowed(&cfg, CM_MODE_DYNAMIC) &&
	   cm_spank_mode_allowed(&cfg, CM_MODE_LEARNED) &&
	   cm_spank_mode_allowed(&cfg, CM_MODE_STATIC) &&
	   cm_spank_mode_allowed(&cfg, CM_MODE_OFF), "example: all modes allowed");
	ok(strstr(cfg.agent, "/libexec/commap/commap-agent") != NULL,
	   "example: the installed agent (%s)", cfg.agent);
	ok(strncmp(cfg.service, "http://", 7) == 0 && cfg.spool[0] == '/',
	   "example: a service URL and an absolute spool");
}

static void test_cluster_name(void)
{
	static const struct {
		const char *text, *want;	/* NULL: not found */
	} cases[] = {
		{ "ClusterName=demo\n", "demo" },
		{ "# x\nSlurmctldHost=h\n  clustername = big-1 \n", "big-1" },
		{ "CLUSTERNAME=a.b_c # comment\n", "a.b_c" },
		{ "ClusterNameX=no\n", NULL },
		{ "#ClusterName=commented\n", NULL },
		{ "ClusterName=\n", NULL },
		{ "ClusterName=bad\"quote\n", NULL },
		{ "ClusterName=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaa\n", NULL },
		{ "", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[64] = "";
		int rc = cm_spank_cluster_from_text(cases[i].text, out,
						    sizeof(out));

		if (cases[i].want)
			ok(rc == 0 && strcmp(out, cases[i].want) == 0,
			   "ClusterName case %zu: '%s'", i, out);
		else
			ok(rc == -1, "ClusterName case %zu: none", i);
	}
}

int main(void)
{
	test_cluster_name();
	test_modes();
	test_defaults();
	test_args();
	test_conf_file();
	test_shipped_examples();
	return done_testing();
}
