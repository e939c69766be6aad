/* cli_common.h: what the commap subcommands share: exit codes, error
 * printing, strict number parsing, getopt error reporting and loading the
 * topology and the matrix named on the command line (docs/cli.md). */
#ifndef COMMAP_CLI_COMMON_H
#define COMMAP_CLI_COMMON_H

#include <stdint.h>

#include "commap/cost.h"
#include "commap/matrix.h"
#include "commap/topology.h"

/* Exit codes (docs/cli.md). */
enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_RUNTIME = 1,	/* a file, topology, cpuset or mapping failed */
	CLI_EXIT_USAGE = 2,	/* the command line itself is wrong */
};

/* "commap: <message>\n" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A usage error: prints "commap: <cmd>: <message>" and a hint to the
 * command's help, returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parse a whole string as a decimal integer in [min, max]: no sign, no
 * blanks, no trailing characters.  On error prints a message naming the
 * option and the value and returns -1. */
int cli_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max,
		  uint64_t *out);
int cli_parse_int(const char *opt, const char *s, int min, int max, int *out);

/* Report what getopt_long() returned as '?' or ':' (opterr must be 0 and
 * the optstring must begin with ':').  Returns CLI_EXIT_USAGE. */
int cli_getopt_error(const char *cmd, int c, char *const argv[]);

/* Reject arguments left after the options.  0 if none. */
int cli_no_operands(const char *cmd, int argc, char *const argv[], int optind_);

/* Where the topology comes from: exactly one of spec and xml. */
struct cli_topo_source {
	const char *spec;	/* --topology: "this" or an hwloc synthetic string */
	const char *xml;	/* --topology-xml FILE */
	const char *cpuset;	/* --cpuset LIST, or NULL */
};

/* Both or neither of spec/xml: usage error for cmd (CLI_EXIT_USAGE). */
int cli_topo_check(const char *cmd, const struct cli_topo_source *src);
/* Load and restrict.  CLI_EXIT_OK or CLI_EXIT_RUNTIME (message printed). */
int cli_topo_load(const struct cli_topo_source *src, struct cm_topo **out);
/* A description of the source for output: the spec or the XML path. */
const char *cli_topo_name(const struct cli_topo_source *src);

/* Read a matrix file ("-" is stdin).  CLI_EXIT_OK or CLI_EXIT_RUNTIME. */
int cli_matrix_load(const char *path, struct cm_matrix **out);

/* n threads on the topology's PUs: if n > npus and !oversubscribe, print
 * "N threads but only M PUs in cpuset L; use --oversubscribe" and return
 * CLI_EXIT_RUNTIME. */
int cli_check_capacity(const struct cm_topo *topo, int n, int oversubscribe);

/* The metrics printed for a mapping (PU indices, not OS indices). */
struct cli_metrics {
	double cost;
	double accuracy;
	double sharing[CM_LEVEL_COUNT];	/* valid for CORE..PACKAGE */
};

void cli_metrics_compute(const struct cm_topo *topo, const struct cm_matrix *m,
			 const int *pu_of_thread, struct cli_metrics *out);

/* The levels reported as "data_sharing", with their JSON/text key. */
extern const enum cm_level_kind cli_sharing_levels[];
extern const int cli_nsharing_levels;
const char *cli_level_key(enum cm_level_kind kind);

#endif
