/* report.h: printing a mapping and its metrics, as a table or as one JSON
 * object (docs/cli.md, "Output").  Shared by 'commap map' and
 * 'commap cost'. */
#ifndef COMMAP_CLI_REPORT_H
#define COMMAP_CLI_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "cli_common.h"

struct cli_report {
	const char *topology;	/* the spec or XML path given */
	const char *algorithm;	/* NULL for 'cost' */
	uint64_t seed;
	int n;			/* threads */
	const int *pu_of_thread;	/* PU indices (not OS indices) */
	struct cli_metrics metrics;
	double time_ms;		/* < 0: not printed */
};

/* 0 on success, -1 with errno (ENOMEM, or the write failed). */
int cli_report_text(FILE *f, const struct cm_topo *topo,
		    const struct cli_report *r);
int cli_report_json(FILE *f, const struct cm_topo *topo,
		    const struct cli_report *r);

#endif
