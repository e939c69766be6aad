/* plugstack.c: plugstack.conf lines and slurm.conf keys (plugstack.h). */
#include <config.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "plugstack.h"

static char *skip_blank(char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n' ||
	       *s == '\v' || *s == '\f')
		s++;
	return s;
}

/* The next word of *s, terminated in place; NULL at the end. */
static char *next_word(char **s)
{
	char *w = skip_blank(*s), *e = w;

	if (!*w)
		return NULL;
	while (*e && !isspace((unsigned char)*e))
		e++;
	if (*e)
		*e++ = '\0';
	*s = e;
	return w;
}

/* "include PATTERN": Slurm takes the rest of the line as one pattern;
 * its blanks at the end do not belong to it. */
static int include_line(char *rest, struct plugstack_line *out, char *why,
			size_t wsize)
{
	char *p = skip_blank(rest), *e = p + strlen(p);

	while (e > p && isspace((unsigned char)e[-1]))
		*--e = '\0';
	if (!*p) {
		snprintf(why, wsize, "include: no file pattern");
		return -1;
	}
	out->kind = PLUGSTACK_INCLUDE;
	out->path = p;
	return 0;
}

int plugstack_parse_line(char *line, struct plugstack_line *out, char *why,
			 size_t wsize)
{
	char *hash = strchr(line, '#'), *s = line, *w;

	memset(out, 0, sizeof(*out));
	if (hash)
		*hash = '\0';
	w = next_word(&s);
	if (!w)
		return 0;
	if (!strcmp(w, "include"))
		return include_line(s, out, why, wsize);
	if (strcmp(w, "required") && strcmp(w, "optional")) {
		snprintf(why, wsize, "'%.64s': not required, optional or "
			 "include", w);
		return -1;
	}
	out->required = w[0] == 'r';
	out->path = next_word(&s);
	if (!out->path) {
		snprintf(why, wsize, "%s: no plugin path", w);
		return -1;
	}
	while ((w = next_word(&s))) {
		if (out->argc == PLUGSTACK_MAX_ARGS) {
			snprintf(why, wsize, "more than %d arguments",
				 PLUGSTACK_MAX_ARGS);
			return -1;
		}
		out->argv[out->argc++] = w;
	}
	out->kind = PLUGSTACK_PLUGIN;
	return 0;
}

int plugstack_is_plugin(const char *path, const char *name)
{
	const char *base = strrchr(path, '/');

	return !strcmp(base ? base + 1 : path, name);
}

/* Does line (blanks skipped) set key?  Then the value's start. */
static const char *key_value(const char *line, const char *key)
{
	size_t n = strlen(key);

	if (strncasecmp(line, key, n))
		return NULL;
	line += n;
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line != '=')
		return NULL;
	line++;
	while (*line == ' ' || *line == '\t')
		line++;
	return line;
}

int plugstack_slurm_conf_value(const char *text, const char *key, char *out,
			       size_t size)
{
	const char *line = text, *v = NULL;
	size_t n;

	while (line && !v) {
		while (*line == ' ' || *line == '\t')
			line++;
		v = key_value(line, key);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	if (v) {
		/* Any blank (isspace: a form feed too) ends the value,
		 * and '#' starts a comment. */
		for (n = 0; v[n] && !isspace((unsigned char)v[n]) &&
			    v[n] != '#'; n++)
			;
		if (n == 0 || n >= size)
			return -1;
		memcpy(out, v, n);
		out[n] = '\0';
		return 0;
	}
	return -1;
}
