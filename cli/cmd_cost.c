/* cmd_cost.c: 'commap cost': the cost and metrics of a given mapping. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "report.h"

struct cost_args {
	struct cli_topo_source topo;
	const char *matrix;
	const char *mapping;
	int oversubscribe;
	int json;
};

/* The parsed --mapping: OS indices, one per thread. */
struct os_list {
	int *os;
	int n;
};

enum {
	OPT_TOPOLOGY = 256, OPT_TOPOLOGY_XML, OPT_CPUSET, OPT_MATRIX,
	OPT_MAPPING, OPT_OVERSUBSCRIBE, OPT_FORMAT,
};

static const struct option cost_options[] = {
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	{ "topology-xml", required_argument, NULL, OPT_TOPOLOGY_XML },
	{ "cpuset", required_argument, NULL, OPT_CPUSET },
	{ "matrix", required_argument, NULL, OPT_MATRIX },
	{ "mapping", required_argument, NULL, OPT_MAPPING },
	{ "oversubscribe", no_argument, NULL, OPT_OVERSUBSCRIBE },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

void cmd_cost_help(FILE *f)
{
	fputs("usage: commap cost (--topology SPEC | --topology-xml FILE) "
	      "[--cpuset LIST]\n"
	      "                   --matrix FILE --mapping LIST "
	      "[--oversubscribe]\n"
	      "                   [--format text|json]\n\n"
	      "Print the cost, data-sharing metric and mapping accuracy of a "
	      "given mapping.\n\n"
	      "  --topology SPEC      'this' (this machine) or an hwloc "
	      "synthetic string\n"
	      "  --topology-xml FILE  an hwloc XML topology\n"
	      "  --cpuset LIST        only these PUs (OS indices)\n"
	      "  --matrix FILE        commap-matrix JSON, agent result or CSV "
	      "('-': stdin)\n"
	      "  --mapping LIST       PU OS index of each thread, comma "
	      "separated (e.g. 0,1,4,5)\n"
	      "  --oversubscribe      allow several threads on one PU\n"
	      "  --format text|json   output format (default text)\n", f);
}

static int cost_option(int c, struct cost_args *a, char *argv[])
{
	switch (c) {
	case OPT_TOPOLOGY: a->topo.spec = optarg; return 0;
	case OPT_TOPOLOGY_XML: a->topo.xml = optarg; return 0;
	case OPT_CPUSET: a->topo.cpuset = optarg; return 0;
	case OPT_MATRIX: a->matrix = optarg; return 0;
	case OPT_MAPPING: a->mapping = optarg; return 0;
	case OPT_OVERSUBSCRIBE: a->oversubscribe = 1; return 0;
	case OPT_FORMAT:
		if (strcmp(optarg, "text") && strcmp(optarg, "json"))
			return cli_usage_error("cost", "--format: unknown "
					       "format '%s' (text, json)",
					       optarg);
		a->json = strcmp(optarg, "json") == 0;
		return 0;
	case 'h':
		cmd_cost_help(stdout);
		return -1;
	default:
		return cli_getopt_error("cost", c, argv);
	}
}

/* "0,1,4,5" -> os[]; every entry a plain non-negative integer. */
static int parse_mapping(const char *s, struct os_list *out)
{
	char *copy = strdup(s);
	char *p = copy, *comma;
	int cap = 1, i;

	for (i = 0; s[i]; i++)
		cap += s[i] == ',';
	out->os = calloc(cap, sizeof(*out->os));
	out->n = 0;
	if (!copy || !out->os) {
		free(copy);
		cli_error("out of memory");
		return CLI_EXIT_RUNTIME;
	}
	do {
		char what[48];

		comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		snprintf(what, sizeof(what), "--mapping entry %d (thread %d)",
			 out->n + 1, out->n);
		if (cli_parse_int(what, p, 0, INT_MAX, &out->os[out->n]) < 0) {
			free(copy);
			return CLI_EXIT_USAGE;
		}
		out->n++;
		p = comma + 1;
	} while (comma);
	free(copy);
	return 0;
}

static int cost_parse(int argc, char *argv[], struct cost_args *a,
		      struct os_list *map)
{
	int c, rv;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", cost_options, NULL)) != -1)
		if ((rv = cost_option(c, a, argv)) != 0)
			return rv;
	if ((rv = cli_no_operands("cost", argc, argv, optind)) != 0)
		return rv;
	if ((rv = cli_topo_check("cost", &a->topo)) != 0)
		return rv;
	if (!a->matrix)
		return cli_usage_error("cost", "--matrix FILE is required");
	if (!a->mapping)
		return cli_usage_error("cost", "--mapping LIST is required");
	return parse_mapping(a->mapping, map);
}

/* Why os_index is not usable: not in the machine at all, or outside the
 * cpuset.  Reloads the unrestricted topology to tell (error path only). */
static void report_bad_pu(const struct cost_args *a, const struct cm_topo *topo,
			  int thread, int os_index)
{
	struct cli_topo_source whole = a->topo;
	struct cm_topo *full = NULL;
	char *list = cm_topo_cpulist(topo);
	int exists = 0;

	whole.cpuset = NULL;
	if (a->topo.cpuset &&
	    cli_topo_load(&whole, &full) == CLI_EXIT_OK) {
		exists = cm_topo_pu_by_os_index(full, os_index) >= 0;
		cm_topo_free(full);
	}
	if (exists)
		cli_error("--mapping: thread %d: PU %d is not in the cpuset %s",
			  thread, os_index, list ? list : "?");
	else
		cli_error("--mapping: thread %d: PU %d does not exist in "
			  "topology '%s' (PUs: %s)", thread, os_index,
			  cli_topo_name(&a->topo), list ? list : "?");
	free(list);
}

/* OS indices -> PU indices, checking existence and sharing. */
static int to_pu_indices(const struct cost_args *a, const struct cm_topo *topo,
			 int n, const struct os_list *map, int *pu_of_thread)
{
	int npus = cm_topo_npus(topo);
	int *owner;
	int t, rv = CLI_EXIT_OK;

	owner = malloc((npus > 0 ? npus : 1) * sizeof(*owner));
	if (!owner) {
		cli_error("out of memory");
		return CLI_EXIT_RUNTIME;
	}
	memset(owner, -1, (npus > 0 ? npus : 1) * sizeof(*owner));
	for (t = 0; t < n && rv == CLI_EXIT_OK; t++) {
		int pu = cm_topo_pu_by_os_index(topo, map->os[t]);

		pu_of_thread[t] = pu;
		if (pu < 0) {
			report_bad_pu(a, topo, t, map->os[t]);
			rv = CLI_EXIT_RUNTIME;
		} else if (owner[pu] >= 0 && !a->oversubscribe) {
			cli_error("--mapping: PU %d is given to threads %d and "
				  "%d; use --oversubscribe", map->os[t],
				  owner[pu], t);
			rv = CLI_EXIT_RUNTIME;
		} else {
			owner[pu] = t;
		}
	}
	free(owner);
	return rv;
}

static int cost_print(const struct cost_args *a, const struct cm_topo *topo,
		      const struct cm_matrix *m, const int *pu_of_thread)
{
	struct cli_report r = {
		.topology = cli_topo_name(&a->topo),
		.n = cm_matrix_nthreads(m),
		.pu_of_thread = pu_of_thread,
		.time_ms = -1,
	};
	int rv;

	cli_metrics_compute(topo, m, pu_of_thread, &r.metrics);
	if (a->json)
		rv = cli_report_json(stdout, topo, &r);
	else
		rv = cli_report_text(stdout, topo, &r);
	if (rv < 0 || fflush(stdout) == EOF || ferror(stdout)) {
		cli_error("writing the output: %s", strerror(errno));
		return CLI_EXIT_RUNTIME;
	}
	return CLI_EXIT_OK;
}

static int cost_run(const struct cost_args *a, const struct cm_topo *topo,
		    const struct cm_matrix *m, const struct os_list *map)
{
	int n = cm_matrix_nthreads(m);
	int *pu_of_thread;
	int rv;

	if (map->n != n) {
		cli_error("--mapping has %d entries but the matrix has %d "
			  "threads (one PU per thread)", map->n, n);
		return CLI_EXIT_RUNTIME;
	}
	rv = cli_check_capacity(topo, n, a->oversubscribe);
	if (rv)
		return rv;
	pu_of_thread = calloc(n > 0 ? n : 1, sizeof(*pu_of_thread));
	if (!pu_of_thread) {
		cli_error("out of memory for %d threads", n);
		return CLI_EXIT_RUNTIME;
	}
	rv = to_pu_indices(a, topo, n, map, pu_of_thread);
	if (!rv)
		rv = cost_print(a, topo, m, pu_of_thread);
	free(pu_of_thread);
	return rv;
}

int cmd_cost(int argc, char *argv[])
{
	struct cost_args a = { .json = 0 };
	struct os_list map = { NULL, 0 };
	struct cm_topo *topo = NULL;
	struct cm_matrix *m = NULL;
	int rv;

	rv = cost_parse(argc, argv, &a, &map);
	if (!rv)
		rv = cli_topo_load(&a.topo, &topo);
	if (!rv)
		rv = cli_matrix_load(a.matrix, &m);
	if (!rv)
		rv = cost_run(&a, topo, m, &map);
	free(map.os);
	if (m)
		cm_matrix_free(m);
	if (topo)
		cm_topo_free(topo);
	return rv < 0 ? CLI_EXIT_OK : rv;
}
