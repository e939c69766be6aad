/* plugstack.h: reading Slurm's plugstack.conf and slurm.conf for 'commap
 * check' (cli/check_plugin.c), without Slurm.  Pure functions on text, so
 * the unit test and the fuzz target (tests/fuzz/fuzz_plugstack.c) share
 * them with the command.
 *
 * plugstack.conf, as Slurm's SPANK loader reads it: '#' starts a comment;
 * a line is blank, "include PATTERN" (a glob, one or more files), or
 * "required|optional PLUGIN [ARG...]" with words split at blanks.  Any
 * other line makes Slurm refuse the whole stack (every srun fails), so it
 * is an error here too. */
#ifndef COMMAP_CLI_PLUGSTACK_H
#define COMMAP_CLI_PLUGSTACK_H

#include <stddef.h>

#define PLUGSTACK_MAX_ARGS 64

enum plugstack_kind {
	PLUGSTACK_BLANK,	/* empty or a comment */
	PLUGSTACK_PLUGIN,	/* required|optional PLUGIN ARGS */
	PLUGSTACK_INCLUDE,	/* include PATTERN */
};

struct plugstack_line {
	enum plugstack_kind kind;
	int required;		/* "required" rather than "optional" */
	const char *path;	/* the plugin or the include pattern */
	int argc;
	char *argv[PLUGSTACK_MAX_ARGS];
};

/* Split one line (changed in place: words are terminated, the comment
 * cut).  0 with *out filled (pointers into line), or -1 with why saying
 * what is wrong ("'requird': not required, optional or include"). */
int plugstack_parse_line(char *line, struct plugstack_line *out, char *why,
			 size_t wsize);

/* Is path's last component name ("commap_spank.so")? */
int plugstack_is_plugin(const char *path, const char *name);

/* The value of key (case-insensitive, as Slurm reads slurm.conf) in a
 * slurm.conf text: "Key=Value", blanks around '=' allowed, '#' comments;
 * the first word of the value, at most size - 1 bytes.  0 found (out
 * filled), -1 absent or too long. */
int plugstack_slurm_conf_value(const char *text, const char *key, char *out,
			       size_t size);

/* 'commap check's Slurm part (check_plugin.c): plugstack.conf (given, or
 * as slurmd finds it through $SLURM_CONF or /etc/slurm/slurm.conf) names
 * the plugin with settings it accepts; it loads; its agent and spool are
 * fit for root.  Prints one line per check; 0 when all pass or Slurm is
 * not set up here (and no file was given), 1 otherwise. */
int check_plugin(const char *given);

#endif
