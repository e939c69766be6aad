/* spank_config.c: parse the --commap mode and the plugin's site settings
 * (see spank_config.h).  Pure: no Slurm calls, no printing. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spank_config.h"

#define CONFIG_FILE_MAX (64 * 1024)

static const char *const mode_names[CM_MODE_COUNT] = {
	[CM_MODE_OFF] = "off",
	[CM_MODE_DYNAMIC] = "dynamic",
	[CM_MODE_LEARNED] = "learned",
	[CM_MODE_STATIC] = "static",
};

const char *cm_spank_mode_name(enum cm_spank_mode mode)
{
	return (unsigned)mode < CM_MODE_COUNT ? mode_names[mode] : "?";
}

/* Copy src into a fixed buffer; -1/ENAMETOOLONG if it does not fit. */
static int copy_value(char *dst, size_t size, const char *src,
		      const char *key, struct cm_error *err)
{
	if (strlen(src) >= size)
		return cm_errorf(err, ENAMETOOLONG, "%s: value too long (%zu "
				 "bytes, at most %zu)", key, strlen(src),
				 size - 1);
	strcpy(dst, src);
	return 0;
}

int cm_spank_mode_parse(const char *text, struct cm_spank_mode_value *out,
			struct cm_error *err)
{
	static const char static_prefix[] = "static:";

	memset(out, 0, sizeof(*out));
	if (!text || !*text)
		return cm_errorf(err, EINVAL, "empty mode: expected off, "
				 "dynamic, learned or static:FILE");
	if (strncmp(text, static_prefix, sizeof(static_prefix) - 1) == 0) {
		const char *file = text + sizeof(static_prefix) - 1;

		if (!*file)
			return cm_errorf(err, EINVAL, "invalid mode 'static:': "
					 "give the mapping file, static:FILE");
		out->mode = CM_MODE_STATIC;
		return copy_value(out->static_file, sizeof(out->static_file),
				  file, "static", err);
	}
	for (int m = 0; m < CM_MODE_COUNT; m++) {
		if (m != CM_MODE_STATIC && strcmp(text, mode_names[m]) == 0) {
			out->mode = (enum cm_spank_mode)m;
			return 0;
		}
	}
	return cm_errorf(err, EINVAL, "invalid mode '%s': expected off, "
			 "dynamic, learned or static:FILE", text);
}

void cm_spank_config_defaults(struct cm_spank_config *cfg,
			      const char *default_agent,
			      const char *default_spool)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->default_mode.mode = CM_MODE_OFF;
	cfg->allowed = (1u << CM_MODE_COUNT) - 1;
	snprintf(cfg->agent, sizeof(cfg->agent), "%s", default_agent);
	snprintf(cfg->spool, sizeof(cfg->spool), "%s", default_spool);
}

int cm_spank_mode_allowed(const struct cm_spank_config *cfg,
			  enum cm_spank_mode mode)
{
	return (unsigned)mode < CM_MODE_COUNT && (cfg->allowed & (1u << mode));
}

/* allow=off,dynamic,...: each word a mode name ("static" without file). */
static int parse_allow(const char *value, unsigned *out, struct cm_error *err)
{
	char buf[256], *save = NULL;
	unsigned allowed = 0;

	if (copy_value(buf, sizeof(buf), value, "allow", err) < 0)
		return -1;
	for (char *w = strtok_r(buf, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		int found = 0;

		for (int m = 0; m < CM_MODE_COUNT; m++) {
			if (strcmp(w, mode_names[m]) == 0) {
				allowed |= 1u << m;
				found = 1;
			}
		}
		if (!found)
			return cm_errorf(err, EINVAL, "allow: unknown mode "
					 "'%s' (off, dynamic, learned, static)",
					 w);
	}
	if (!allowed)
		return cm_errorf(err, EINVAL, "allow: empty list");
	*out = allowed;
	return 0;
}

static int read_config_file(struct cm_spank_config *cfg, const char *path,
			    struct cm_error *err)
{
	char *text;
	size_t len;
	FILE *f = fopen(path, "r");
	int rv;

	if (!f)
		return cm_errorf(err, errno, "conf=%s: %s", path,
				 strerror(errno));
	text = malloc(CONFIG_FILE_MAX + 1);
	if (!text) {
		fclose(f);
		return cm_errorf(err, ENOMEM, "conf=%s: out of memory", path);
	}
	len = fread(text, 1, CONFIG_FILE_MAX + 1, f);
	fclose(f);
	if (len > CONFIG_FILE_MAX) {
		free(text);
		return cm_errorf(err, EFBIG, "conf=%s: larger than %d bytes",
				 path, CONFIG_FILE_MAX);
	}
	text[len] = '\0';
	rv = cm_spank_config_parse_text(cfg, text, path, err);
	free(text);
	return rv;
}

static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* One key=value (blanks around the key, '=' and the value ignored);
 * allow_conf says whether conf= may appear (not in files). */
static int config_set(struct cm_spank_config *cfg, const char *word,
		      int allow_conf, struct cm_error *err)
{
	const char *eq = strchr(word, '=');
	char key[32], vbuf[PATH_MAX + 1024];
	const char *value, *kend;
	size_t vlen;

	while (blank(*word))
		word++;
	if (!eq || eq == word)
		return cm_errorf(err, EINVAL, "'%s': expected key=value", word);
	for (kend = eq; kend > word && blank(kend[-1]); kend--)
		;
	if ((size_t)(kend - word) >= sizeof(key))
		return cm_errorf(err, EINVAL, "unknown key '%.*s'",
				 (int)(kend - word), word);
	memcpy(key, word, (size_t)(kend - word));
	key[kend - word] = '\0';
	for (value = eq + 1; blank(*value); value++)
		;
	vlen = strlen(value);
	while (vlen > 0 && blank(value[vlen - 1]))
		vlen--;
	if (vlen >= sizeof(vbuf))
		return cm_errorf(err, ENAMETOOLONG, "%s: value too long", key);
	memcpy(vbuf, value, vlen);
	vbuf[vlen] = '\0';
	value = vbuf;

	if (strcmp(key, "default") == 0) {
		struct cm_error sub;

		if (cm_spank_mode_parse(value, &cfg->default_mode, &sub) < 0)
			return cm_errorf(err, EINVAL, "default: %s", sub.text);
		return 0;
	}
	if (strcmp(key, "allow") == 0)
		return parse_allow(value, &cfg->allowed, err);
	if (strcmp(key, "agent") == 0) {
		if (value[0] != '/')
			return cm_errorf(err, EINVAL, "agent: '%s' is not an "
					 "absolute path", value);
		return copy_value(cfg->agent, sizeof(cfg->agent), value, key,
				  err);
	}
	if (strcmp(key, "service") == 0) {
		if (*value && cm_spank_service_check(value, err) < 0)
			return -1;
		return copy_value(cfg->service, sizeof(cfg->service), value,
				  key, err);
	}
	if (strcmp(key, "spool") == 0) {
		if (value[0] != '/')
			return cm_errorf(err, EINVAL, "spool: '%s' is not an "
					 "absolute path", value);
		return copy_value(cfg->spool, sizeof(cfg->spool), value, key,
				  err);
	}
	if (strcmp(key, "mpi_traffic") == 0) {
		if (strcmp(value, "yes") && strcmp(value, "no"))
			return cm_errorf(err, EINVAL, "mpi_traffic: '%s': "
					 "expected yes or no", value);
		cfg->mpi_traffic = strcmp(value, "yes") == 0;
		return 0;
	}
	if (strcmp(key, "place_nodes") == 0) {
		if (strcmp(value, "yes") && strcmp(value, "no"))
			return cm_errorf(err, EINVAL, "place_nodes: '%s': "
					 "expected yes or no", value);
		cfg->place_nodes = strcmp(value, "yes") == 0;
		return 0;
	}
	if (strcmp(key, "conf") == 0) {
		if (!allow_conf)
			return cm_errorf(err, EINVAL, "conf: not allowed inside "
					 "a config file");
		return read_config_file(cfg, value, err);
	}
	return cm_errorf(err, EINVAL, "unknown key '%s' (default, allow, "
			 "agent, service, spool, mpi_traffic, place_nodes, "
			 "conf)", key);
}

int cm_spank_config_set(struct cm_spank_config *cfg, const char *word,
			struct cm_error *err)
{
	return config_set(cfg, word, 1, err);
}

int cm_spank_config_parse_args(struct cm_spank_config *cfg, int ac,
			       char **av, struct cm_error *err)
{
	for (int i = 0; i < ac; i++)
		if (config_set(cfg, av[i], 1, err) < 0)
			return -1;
	if (cfg->default_mode.mode != CM_MODE_OFF &&
	    !cm_spank_mode_allowed(cfg, cfg->default_mode.mode))
		return cm_errorf(err, EINVAL, "default=%s is not in allow=",
				 cm_spank_mode_name(cfg->default_mode.mode));
	return 0;
}

/* Strip leading and trailing blanks in place; returns the start. */
static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
			   end[-1] == '\r'))
		*--end = '\0';
	return s;
}

int cm_spank_config_parse_text(struct cm_spank_config *cfg, const char *text,
			       const char *name, struct cm_error *err)
{
	char *copy = strdup(text), *save = NULL, *line;
	int lineno = 0, rv = 0;

	if (!copy)
		return cm_errorf(err, ENOMEM, "%s: out of memory", name);
	/* strsep keeps empty lines so line numbers stay right. */
	save = copy;
	while ((line = strsep(&save, "\n")) != NULL) {
		struct cm_error sub;
		char *s = trim(line);

		lineno++;
		if (*s == '\0' || *s == '#')
			continue;
		if (config_set(cfg, s, 0, &sub) < 0) {
			rv = cm_errorf(err, errno, "%s:%d: %s", name, lineno,
				       sub.text);
			break;
		}
	}
	free(copy);
	return rv;
}

/* ---- service URL ---------------------------------------------------- */

int cm_spank_service_check(const char *url, struct cm_error *err)
{
	const char *host, *end, *colon;

	if (strncmp(url, "http://", 7) == 0)
		host = url + 7;
	else if (strncmp(url, "https://", 8) == 0)
		host = url + 8;
	else
		return cm_errorf(err, EINVAL, "service: '%s' is not an "
				 "http:// or https:// URL", url);
	end = host + strcspn(host, "/?#");
	/* an IPv6 literal's colons are inside its brackets */
	colon = *host == '[' ? memchr(host, ']', (size_t)(end - host)) : host;
	colon = colon ? memchr(colon, ':', (size_t)(end - colon)) : NULL;
	if ((colon ? colon : end) == host || (*host == '[' && !memchr(host,
						']', (size_t)(end - host))))
		return cm_errorf(err, EINVAL, "service: '%s' has no host", url);
	for (const char *c = host; c < (colon ? colon : end); c++)
		if (isspace((unsigned char)*c) || *c == '@')
			return cm_errorf(err, EINVAL, "service: '%s': invalid "
					 "host", url);
	if (colon) {
		long port = 0;
		const char *c = colon + 1;

		if (c == end)
			return cm_errorf(err, EINVAL, "service: '%s': empty "
					 "port", url);
		for (; c < end; c++) {
			if (!isdigit((unsigned char)*c) || port > 65535)
				return cm_errorf(err, EINVAL, "service: '%s': "
						 "port must be 1-65535", url);
			port = port * 10 + (*c - '0');
		}
		if (port < 1 || port > 65535)
			return cm_errorf(err, EINVAL, "service: '%s': port "
					 "must be 1-65535", url);
	}
	return 0;
}

/* ---- slurm.conf's ClusterName --------------------------------------- */

int cm_spank_cluster_from_text(const char *text, char *out, size_t size)
{
	static const char key[] = "clustername";
	const char *line = text;

	while (line && *line) {
		const char *p = line, *v;
		size_t n;

		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
		while (blank(*p))
			p++;
		if (strncasecmp(p, key, sizeof(key) - 1) != 0)
			continue;
		for (v = p + sizeof(key) - 1; blank(*v); v++)
			;
		if (*v++ != '=')
			continue;
		while (blank(*v))
			v++;
		n = strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "0123456789-_.");
		if (n == 0 || n >= size || (v[n] && !blank(v[n]) &&
					    v[n] != '\n' && v[n] != '#'))
			return -1;
		memcpy(out, v, n);
		out[n] = '\0';
		return 0;
	}
	return -1;
}

int cm_spank_cluster_from_file(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");
	char *text;
	size_t len;
	int rc;

	if (!f)
		return -1;
	text = malloc((1 << 20) + 1);
	if (!text) {
		fclose(f);
		return -1;
	}
	len = fread(text, 1, 1 << 20, f);
	fclose(f);
	text[len] = '\0';
	rc = cm_spank_cluster_from_text(text, out, size);
	free(text);
	return rc;
}
