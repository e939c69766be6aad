/* spank_config.h: commap's SPANK plugin settings, parsed without Slurm.
 *
 * Two inputs, both parsed here so they can be unit-tested and fuzzed:
 *  - the user's mode, from --commap=off|dynamic|learned|static:FILE;
 *  - the site's plugstack.conf arguments (key=value words) or a config
 *    file (conf=PATH) holding the same keys one per line ('#' comments):
 *      default=MODE       mode when the user gives no --commap (off)
 *      allow=MODE[,MODE]  modes users may choose (off,dynamic,learned,static)
 *      agent=PATH         node agent binary (@AGENT_DEFAULT@)
 *      service=URL        central service, empty for none
 *      spool=DIR          where results wait when the service is down
 *      conf=PATH          read the keys from PATH instead
 *      mpi_traffic=yes|no collect the traffic between MPI ranks of every
 *                         step (Open MPI's monitoring; default no)
 *      place_nodes=yes|no place the ranks of every srun across the
 *                         allocation's nodes from the learned traffic, as
 *                         --commap-place-nodes (default no)
 *    Defaults are set first; an unknown key or bad value is an error that
 *    names it (the plugin then disables itself and never breaks srun).
 */
#ifndef COMMAP_SPANK_CONFIG_H
#define COMMAP_SPANK_CONFIG_H

#include <limits.h>
#include <stddef.h>

#include "commap/error.h"

enum cm_spank_mode {
	CM_MODE_OFF = 0,
	CM_MODE_DYNAMIC,
	CM_MODE_LEARNED,
	CM_MODE_STATIC,
	CM_MODE_COUNT
};

struct cm_spank_mode_value {
	enum cm_spank_mode mode;
	char static_file[PATH_MAX];	/* for CM_MODE_STATIC */
};

struct cm_spank_config {
	struct cm_spank_mode_value default_mode;
	unsigned allowed;		/* bit (1u << mode) per allowed mode */
	char agent[PATH_MAX];
	char service[1024];
	char spool[PATH_MAX];
	int mpi_traffic;		/* mpi_traffic=yes */
	int place_nodes;		/* place_nodes=yes */
};

/* Parse "off", "dynamic", "learned" or "static:FILE" (FILE non-empty,
 * absolute or relative).  0 or -1/EINVAL with err naming the value. */
int cm_spank_mode_parse(const char *text, struct cm_spank_mode_value *out,
			struct cm_error *err);
const char *cm_spank_mode_name(enum cm_spank_mode mode);

/* Defaults: default=off, allow=all modes, agent=default_agent,
 * service="", spool=default_spool. */
void cm_spank_config_defaults(struct cm_spank_config *cfg,
			      const char *default_agent,
			      const char *default_spool);

/* Apply one "key=value" setting.  conf= reads the named file.  0 or -1 with
 * err naming the key or value. */
int cm_spank_config_set(struct cm_spank_config *cfg, const char *word,
			struct cm_error *err);

/* Apply the plugstack.conf argument words in order (defaults first). */
int cm_spank_config_parse_args(struct cm_spank_config *cfg, int ac,
			       char **av, struct cm_error *err);

/* Parse a config file's text (key=value per line; blank and '#' lines
 * ignored; "conf=" inside a file is an error).  name is used in messages
 * ("FILE:LINE: ..."). */
int cm_spank_config_parse_text(struct cm_spank_config *cfg, const char *text,
			       const char *name, struct cm_error *err);

/* "http[s]://HOST[:PORT][/PATH]": scheme http or https, a non-empty host,
 * a port in 1..65535 when given.  0 or -1/EINVAL with err naming what is
 * wrong ("service: ..."). */
int cm_spank_service_check(const char *url, struct cm_error *err);

/* The ClusterName of a slurm.conf text (key case-insensitive, blanks
 * around '=' allowed, '#' comments), copied into out (size bytes) when it
 * is made of letters, digits, '-', '_', '.'.  0 found, -1 not found. */
int cm_spank_cluster_from_text(const char *text, char *out, size_t size);
/* The same from a file (at most 1 MiB read).  -1 also when unreadable. */
int cm_spank_cluster_from_file(const char *path, char *out, size_t size);

/* Room for the job's supplementary groups as "G,G,..." on the agent's
 * command line. */
#define CM_SPANK_GROUPS_MAX 2048

/* Is this mode allowed for users? */
int cm_spank_mode_allowed(const struct cm_spank_config *cfg,
			  enum cm_spank_mode mode);

#endif
