/* test_plugstack.c: plugstack.conf lines and slurm.conf keys as 'commap
 * check' reads them (cli/plugstack.c). */
#include <stdio.h>
#include <string.h>

#include "plugstack.h"
#include "tap.h"

static void test_lines(void)
{
	static const struct {
		const char *text;
		int rc;
		enum plugstack_kind kind;
		const char *path;	/* or the error's words */
		int argc;
		const char *last_arg;
	} cases[] = {
		{ "", 0, PLUGSTACK_BLANK, NULL, 0, NULL },
		{ "   \t\n", 0, PLUGSTACK_BLANK, NULL, 0, NULL },
		{ "# optional /x.so", 0, PLUGSTACK_BLANK, NULL, 0, NULL },
		{ "optional /a/commap_spank.so\n", 0, PLUGSTACK_PLUGIN,
		  "/a/commap_spank.so", 0, NULL },
		{ "required  x.so default=dynamic\tspool=/s  # c", 0,
		  PLUGSTACK_PLUGIN, "x.so", 2, "spool=/s" },
		{ "optional /x.so a#b", 0, PLUGSTACK_PLUGIN, "/x.so", 1, "a" },
		{ "include /etc/slurm/plugstack.conf.d/*.conf  \n", 0,
		  PLUGSTACK_INCLUDE, "/etc/slurm/plugstack.conf.d/*.conf", 0,
		  NULL },
		{ "include  a b.conf", 0, PLUGSTACK_INCLUDE, "a b.conf", 0,
		  NULL },
		{ "include", -1, 0, "include: no file pattern", 0, NULL },
		{ "optional", -1, 0, "optional: no plugin path", 0, NULL },
		{ "requird /x.so", -1, 0,
		  "'requird': not required, optional or include", 0, NULL },
		{ "Optional /x.so", -1, 0, "'Optional'", 0, NULL },
	};
	char line[256], why[160];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct plugstack_line pl;
		int rc;

		snprintf(line, sizeof(line), "%s", cases[i].text);
		why[0] = '\0';
		rc = plugstack_parse_line(line, &pl, why, sizeof(why));
		if (cases[i].rc < 0) {
			ok(rc < 0 && strstr(why, cases[i].path),
			   "line %zu refused: %s", i, why);
			continue;
		}
		ok(rc == 0 && pl.kind == cases[i].kind &&
		   (!cases[i].path || !strcmp(pl.path, cases[i].path)) &&
		   pl.argc == cases[i].argc &&
		   (!cases[i].last_arg ||
		    !strcmp(pl.argv[pl.argc - 1], cases[i].last_arg)),
		   "line %zu ('%.*s') parses", i,
		   (int)strcspn(cases[i].text, "\r\n"), cases[i].text);
	}
}

static void test_many_args(void)
{
	char line[1024] = "optional /x.so", why[160] = "";
	struct plugstack_line pl;
	int i;

	for (i = 0; i < PLUGSTACK_MAX_ARGS; i++)
		strcat(line, " a");
	ok(plugstack_parse_line(line, &pl, why, sizeof(why)) == 0 &&
	   pl.argc == PLUGSTACK_MAX_ARGS, "%d arguments are read",
	   PLUGSTACK_MAX_ARGS);
	snprintf(line, sizeof(line), "optional /x.so");
	for (i = 0; i <= PLUGSTACK_MAX_ARGS; i++)
		strcat(line, " a");
	ok(plugstack_parse_line(line, &pl, why, sizeof(why)) < 0 &&
	   strstr(why, "more than"), "one more is refused: %s", why);
}

static void test_names(void)
{
	ok(plugstack_is_plugin("/usr/lib/commap_spank.so", "commap_spank.so"),
	   "an absolute path names the plugin");
	ok(plugstack_is_plugin("commap_spank.so", "commap_spank.so"),
	   "a bare name does");
	ok(!plugstack_is_plugin("/usr/lib/xcommap_spank.so",
				"commap_spank.so"), "a longer name does not");
	ok(!plugstack_is_plugin("/commap_spank.so/x.so", "commap_spank.so"),
	   "a directory of that name does not");
}

static void test_slurm_conf(void)
{
	static const char conf[] =
		"# PlugStackConfig=/commented\n"
		"ClusterName=c\n"
		"  pluginDir = /usr/lib/slurm:/opt/slurm # comment\n"
		"PlugStackConfigX=/wrong\n"
		"PLUGSTACKCONFIG=/etc/slurm/ps.conf\r\n"
		"Empty=\n";
	char out[64], small[4];

	ok(plugstack_slurm_conf_value(conf, "PlugStackConfig", out,
				      sizeof(out)) == 0 &&
	   !strcmp(out, "/etc/slurm/ps.conf"),
	   "a key in any case, not a commented or longer one: %s", out);
	ok(plugstack_slurm_conf_value(conf, "PluginDir", out, sizeof(out)) ==
	   0 && !strcmp(out, "/usr/lib/slurm:/opt/slurm"),
	   "blanks around '=' and a comment after the value: %s", out);
	ok(plugstack_slurm_conf_value(conf, "SlurmdSpoolDir", out,
				      sizeof(out)) < 0, "an absent key");
	ok(plugstack_slurm_conf_value(conf, "Empty", out, sizeof(out)) < 0,
	   "an empty value is absent");
	ok(plugstack_slurm_conf_value(conf, "PluginDir", small,
				      sizeof(small)) < 0,
	   "a value longer than the buffer is refused, not cut");
	ok(plugstack_slurm_conf_value("", "PluginDir", out, sizeof(out)) < 0,
	   "an empty file");
}

int main(void)
{
	test_lines();
	test_many_args();
	test_names();
	test_slurm_conf();
	return done_testing();
}
