/* check_plugin.c: the Slurm half of 'commap check' (docs/cli.md): does
 * plugstack.conf (and what it includes) name commap's SPANK plugin with
 * settings the plugin accepts, does the plugin load as Slurm loads it,
 * and are the agent and the spool it names fit for root?  One line per
 * check, in the agent's --check format; the plugin's own parser
 * (spank/spank_config.c) reads the settings, so a setting the plugin
 * would refuse (and then disable itself on every step) is refused here
 * with the plugin's own message. */
#define _GNU_SOURCE
#include <config.h>

#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugstack.h"
#include "spank_config.h"

#ifndef COMMAP_AGENT_DEFAULT
#define COMMAP_AGENT_DEFAULT "/usr/local/libexec/commap/commap-agent"
#endif
#ifndef COMMAP_SPOOL_DEFAULT
#define COMMAP_SPOOL_DEFAULT "/usr/local/var/spool/commap"
#endif
#define SLURM_CONF_DEFAULT "/etc/slurm/slurm.conf"
#define PLUGIN_NAME "commap_spank.so"
#define INCLUDE_DEPTH 8
#define CONF_MAX (1 << 20)	/* slurm.conf, read for two keys */

/* Where Slurm would look, and what was found there. */
struct plug_found {
	char file[PATH_MAX];	/* the plugstack file naming the plugin */
	int lineno;
	char line[4096];	/* that line, kept for its words */
	struct plugstack_line pl;
	int count;		/* lines naming the plugin */
	char plugindir[PATH_MAX];	/* slurm.conf's PluginDir, or "" */
};

static void line_out(const char *status, const char *what, const char *fmt,
		     ...) __attribute__((format(printf, 3, 4)));

static void line_out(const char *status, const char *what, const char *fmt,
		     ...)
{
	va_list ap;

	printf("  %-5s %-16s ", status, what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* The whole of a small text file, malloc'ed; NULL (errno) otherwise. */
static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = malloc(CONF_MAX + 1);
	n = buf ? fread(buf, 1, CONF_MAX, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

/* plugstack.conf as slurmd finds it: slurm.conf's PlugStackConfig, else
 * plugstack.conf beside slurm.conf.  PluginDir is kept for a plugin
 * named by a relative path. */
static void find_plugstack(char *out, size_t size, struct plug_found *pf)
{
	const char *env = getenv("SLURM_CONF");
	const char *conf = env && *env ? env : SLURM_CONF_DEFAULT;
	char *text = read_text(conf), *slash;

	if (!text ||
	    plugstack_slurm_conf_value(text, "PlugStackConfig", out, size)) {
		snprintf(out, size, "%s", conf);
		slash = strrchr(out, '/');
		if (slash)
			snprintf(slash + 1, size - (size_t)(slash + 1 - out),
				 "plugstack.conf");
		else
			snprintf(out, size, "plugstack.conf");
	}
	if (text)
		plugstack_slurm_conf_value(text, "PluginDir", pf->plugindir,
					   sizeof(pf->plugindir));
	free(text);
}

static int scan_file(const char *path, int depth, struct plug_found *pf);

/* include PATTERN: every file it matches (none is fine, as for Slurm);
 * a relative pattern is taken from the including file's directory. */
static int scan_include(const char *from, const char *pattern, int depth,
			struct plug_found *pf)
{
	char full[PATH_MAX];
	const char *slash = strrchr(from, '/');
	glob_t g;
	size_t i;
	int rv = 0;

	if (pattern[0] != '/' && slash)
		snprintf(full, sizeof(full), "%.*s/%s", (int)(slash - from),
			 from, pattern);
	else
		snprintf(full, sizeof(full), "%s", pattern);
	if (glob(full, 0, NULL, &g) != 0)
		return 0;
	for (i = 0; i < g.gl_pathc && rv == 0; i++)
		rv = scan_file(g.gl_pathv[i], depth + 1, pf);
	globfree(&g);
	return rv;
}

/* One line: remember the plugin's; -1 after a FAIL line. */
static int scan_line(const char *path, int lineno, char *line, int depth,
		     struct plug_found *pf)
{
	char copy[sizeof(pf->line)], why[160];
	struct plugstack_line pl;

	snprintf(copy, sizeof(copy), "%s", line);
	if (plugstack_parse_line(line, &pl, why, sizeof(why)) < 0) {
		line_out("FAIL", "plugstack", "%s:%d: %s (Slurm refuses the "
			 "whole file: every srun fails)", path, lineno, why);
		return -1;
	}
	if (pl.kind == PLUGSTACK_INCLUDE)
		return scan_include(path, pl.path, depth, pf);
	if (pl.kind != PLUGSTACK_PLUGIN ||
	    !plugstack_is_plugin(pl.path, PLUGIN_NAME))
		return 0;
	if (pf->count++ == 0) {
		snprintf(pf->file, sizeof(pf->file), "%s", path);
		pf->lineno = lineno;
		snprintf(pf->line, sizeof(pf->line), "%s", copy);
	} else {
		line_out("FAIL", "plugstack", "%s:%d names %s again (first at "
			 "%s:%d): Slurm would load it twice", path, lineno,
			 PLUGIN_NAME, pf->file, pf->lineno);
		return -1;
	}
	return 0;
}

static int scan_file(const char *path, int depth, struct plug_found *pf)
{
	char line[sizeof(pf->line)];
	int lineno = 0, rv = 0;
	FILE *f;

	if (depth > INCLUDE_DEPTH) {
		line_out("FAIL", "plugstack", "%s: includes nested deeper than "
			 "%d (a loop?)", path, INCLUDE_DEPTH);
		return -1;
	}
	f = fopen(path, "r");
	if (!f) {
		line_out("FAIL", "plugstack", "cannot read %s: %s", path,
			 strerror(errno));
		return -1;
	}
	while (rv == 0 && fgets(line, sizeof(line), f))
		rv = scan_line(path, ++lineno, line, depth, pf);
	fclose(f);
	return rv;
}

/* The settings, read by the plugin's own parser. */
static int check_settings(const struct plug_found *pf,
			  struct cm_spank_config *cfg)
{
	struct cm_error err = { "" };
	char *av[PLUGSTACK_MAX_ARGS];
	int i;

	for (i = 0; i < pf->pl.argc; i++)
		av[i] = pf->pl.argv[i];
	cm_spank_config_defaults(cfg, COMMAP_AGENT_DEFAULT,
				 COMMAP_SPOOL_DEFAULT);
	if (cm_spank_config_parse_args(cfg, pf->pl.argc, av, &err) < 0) {
		line_out("FAIL", "settings", "%s:%d: %s (the plugin disables "
			 "itself: jobs run unpinned)", pf->file, pf->lineno,
			 err.text);
		return -1;
	}
	line_out("ok", "settings", "default=%s service=%s agent=%s spool=%s",
		 cm_spank_mode_name(cfg->default_mode.mode),
		 cfg->service[0] ? cfg->service : "(none: results stay in "
		 "the spool)", cfg->agent, cfg->spool);
	return 0;
}

/* The plugin's file as slurmstepd opens it: absolute, or under
 * PluginDir (a colon-separated list). */
static int plugin_path(const struct plug_found *pf, char *out, size_t size)
{
	char dirs[PATH_MAX], *save = NULL, *d;
	struct stat st;

	if (pf->pl.path[0] == '/') {
		snprintf(out, size, "%s", pf->pl.path);
		return 0;
	}
	snprintf(dirs, sizeof(dirs), "%s", pf->plugindir);
	for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, size, "%s/%s", d, pf->pl.path);
		if (stat(out, &st) == 0)
			return 0;
	}
	line_out("FAIL", "plugin", "%s:%d: %s is a relative path and not in "
		 "slurm.conf's PluginDir (%s)", pf->file, pf->lineno,
		 pf->pl.path, pf->plugindir[0] ? pf->plugindir : "not set");
	return -1;
}

/* Slurm's library of the functions a plugin calls (spank_getenv, ...),
 * which slurmstepd and srun carry: the plugin is linked -z now, so it
 * loads only where they are.  PluginDir first, then the usual places. */
static void *load_slurm_library(const struct plug_found *pf)
{
	static const char *const usual[] = {
		"/usr/lib/x86_64-linux-gnu/slurm-wlm",
		"/usr/lib/aarch64-linux-gnu/slurm-wlm", "/usr/lib64/slurm",
		"/usr/lib/slurm", "/usr/local/lib/slurm",
	};
	char dirs[PATH_MAX], lib[PATH_MAX], *save = NULL, *d;
	void *h = NULL;
	size_t i;

	snprintf(dirs, sizeof(dirs), "%s", pf->plugindir);
	for (d = strtok_r(dirs, ":", &save); d && !h;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(lib, sizeof(lib), "%s/libslurmfull.so", d);
		h = dlopen(lib, RTLD_LAZY | RTLD_GLOBAL);
	}
	for (i = 0; !h && i < sizeof(usual) / sizeof(usual[0]); i++) {
		snprintf(lib, sizeof(lib), "%s/libslurmfull.so", usual[i]);
		h = dlopen(lib, RTLD_LAZY | RTLD_GLOBAL);
	}
	return h;
}

/* Loads beside Slurm's library as slurmstepd loads it, and has what
 * Slurm looks up in a SPANK plugin. */
static int check_load(const char *path, const struct plug_found *pf)
{
	const char *type, *name;
	void *h, *slurm = load_slurm_library(pf);
	struct stat st;

	if (stat(path, &st) < 0) {
		line_out("FAIL", "plugin", "%s: %s (srun has no --commap: "
			 "Slurm skips an optional plugin it cannot load and "
			 "refuses every job for a required one)", path,
			 strerror(errno));
		return -1;
	}
	if (!slurm) {
		line_out("no", "plugin", "%s exists, not loaded: Slurm's "
			 "libslurmfull.so is not in PluginDir (%s) or the "
			 "usual places", path,
			 pf->plugindir[0] ? pf->plugindir : "not set");
		return 0;
	}
	dlerror();
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		line_out("FAIL", "plugin", "%s does not load: %s", path,
			 dlerror());
		return -1;
	}
	type = dlsym(h, "plugin_type");
	name = dlsym(h, "plugin_name");
	if (!type || strcmp(type, "spank") || !name ||
	    !dlsym(h, "plugin_version") || !dlsym(h, "slurm_spank_init")) {
		line_out("FAIL", "plugin", "%s loads but is not a SPANK plugin "
			 "(plugin_type \"spank\", plugin_name, plugin_version, "
			 "slurm_spank_init)", path);
		dlclose(h);
		return -1;
	}
	line_out("ok", "plugin", "%s loads: SPANK plugin '%.32s'", path, name);
	dlclose(h);
	return 0;
}

/* Root runs the agent: a regular file it may execute, that no one else
 * may change (a binary others can write is a way to root). */
static int check_agent(const char *agent)
{
	struct stat st;

	if (stat(agent, &st) < 0) {
		line_out("FAIL", "agent", "%s: %s (jobs run unpinned)", agent,
			 strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111)) {
		line_out("FAIL", "agent", "%s is not an executable file (mode "
			 "%04o)", agent, (unsigned)(st.st_mode & 07777));
		return -1;
	}
	if (st.st_uid != 0 || (st.st_mode & 022)) {
		line_out("FAIL", "agent", "%s is owned by uid %u, mode %04o: "
			 "root runs it, so only root may change it (want "
			 "root's, not group/other-writable)", agent,
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -1;
	}
	line_out("ok", "agent", "%s: root's, executable", agent);
	return 0;
}

/* Why the plugin would refuse the spool, or NULL (spank/: a link or a
 * directory others may write would let them plant files that the root
 * agent follows). */
static const char *spool_refusal(const char *spool, mode_t *mode)
{
	struct stat st;

	if (lstat(spool, &st) < 0)
		return strerror(errno);
	*mode = st.st_mode & 07777;
	if (!S_ISDIR(st.st_mode))
		return "not a directory (a link?)";
	if (st.st_uid != 0)
		return "not root's";
	if (st.st_mode & 022)
		return "writable by group or others";
	return NULL;
}

/* The spool; a missing one is made by the first step (mkdir 0700), so
 * its parent must exist. */
static int check_spool(const char *spool)
{
	char parent[PATH_MAX], *slash;
	const char *why;
	struct stat st;
	mode_t mode = 0;

	snprintf(parent, sizeof(parent), "%s", spool);
	slash = strrchr(parent, '/');
	if (slash)
		*(slash == parent ? slash + 1 : slash) = '\0';
	if (lstat(spool, &st) < 0 && errno == ENOENT &&
	    stat(parent, &st) == 0 && S_ISDIR(st.st_mode)) {
		line_out("ok", "spool", "%s does not exist yet: the first step "
			 "makes it (root's, 0700)", spool);
		return 0;
	}
	why = spool_refusal(spool, &mode);
	if (why) {
		line_out("FAIL", "spool", "%s: %s (the plugin refuses it, jobs "
			 "run unpinned; want a directory of root's, mode 0700)",
			 spool, why);
		return -1;
	}
	line_out("ok", "spool", "%s: root's, mode %04o", spool,
		 (unsigned)mode);
	return 0;
}

/* Root acts on what the plugin's files say (the agent= it runs): a file
 * others may change is a way to root. */
static int check_root_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		line_out("FAIL", "config", "%s: %s", path, strerror(errno));
		return -1;
	}
	if (st.st_uid != 0 || (st.st_mode & 022)) {
		line_out("FAIL", "config", "%s is owned by uid %u, mode %04o: "
			 "root acts on it (agent=), so only root may change it",
			 path, (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		return -1;
	}
	line_out("ok", "config", "%s: root's, not writable by others", path);
	return 0;
}

/* The file naming the plugin and a conf= file it reads. */
static int check_config_files(const struct plug_found *pf)
{
	int i, bad = check_root_file(pf->file) < 0;

	for (i = 0; i < pf->pl.argc; i++)
		if (!strncmp(pf->pl.argv[i], "conf=", 5) &&
		    pf->pl.argv[i][5])
			bad |= check_root_file(pf->pl.argv[i] + 5) < 0;
	return bad ? -1 : 0;
}

/* The plugin's line was found: its plugin, settings, agent and spool. */
static int check_found(struct plug_found *pf)
{
	struct cm_spank_config cfg;
	char so[PATH_MAX];
	int bad = 0;

	/* The kept copy of the line, split again for its words. */
	plugstack_parse_line(pf->line, &pf->pl, so, sizeof(so));
	line_out("ok", "plugstack", "%s:%d: %s %s", pf->file, pf->lineno,
		 pf->pl.required ? "required" : "optional", pf->pl.path);
	if (plugin_path(pf, so, sizeof(so)) < 0 || check_load(so, pf) < 0)
		bad = 1;
	if (check_config_files(pf) < 0)
		bad = 1;
	if (check_settings(pf, &cfg) < 0)
		return 1;	/* no agent or spool to check */
	bad |= check_agent(cfg.agent) < 0;
	bad |= check_spool(cfg.spool) < 0;
	return bad;
}

int check_plugin(const char *given)
{
	static struct plug_found pf;	/* large; pf.pl points into it */
	char conf[PATH_MAX];

	memset(&pf, 0, sizeof(pf));
	/* slurm.conf is read for PluginDir even when a file is given. */
	find_plugstack(conf, sizeof(conf), &pf);
	if (given)
		snprintf(conf, sizeof(conf), "%s", given);
	printf("slurm plugin (%s):\n", conf);
	if (!given && access(conf, F_OK) < 0) {
		line_out("info", "plugstack", "%s does not exist: Slurm is not "
			 "set up here (--plugstack FILE names another)", conf);
		return 0;
	}
	if (scan_file(conf, 0, &pf) < 0)
		return 1;
	if (!pf.count) {
		line_out("FAIL", "plugstack", "%s (and its includes) does not "
			 "name %s: srun has no --commap here", conf,
			 PLUGIN_NAME);
		return 1;
	}
	return check_found(&pf);
}
