/* cmd_map.c: 'commap map': place the threads of a matrix on a topology. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "commands.h"
#include "commap/mapping.h"
#include "report.h"

struct map_args {
	struct cli_topo_source topo;
	const char *matrix;
	const char *algorithm;
	struct cm_map_options opts;
	int json;
};

enum {
	OPT_TOPOLOGY = 256, OPT_TOPOLOGY_XML, OPT_CPUSET, OPT_MATRIX,
	OPT_ALGORITHM, OPT_SEED, OPT_OVERSUBSCRIBE, OPT_NO_REFINE, OPT_FORMAT,
};

static const struct option map_options[] = {
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	{ "topology-xml", required_argument, NULL, OPT_TOPOLOGY_XML },
	{ "cpuset", required_argument, NULL, OPT_CPUSET },
	{ "matrix", required_argument, NULL, OPT_MATRIX },
	{ "algorithm", required_argument, NULL, OPT_ALGORITHM },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "oversubscribe", no_argument, NULL, OPT_OVERSUBSCRIBE },
	{ "no-refine", no_argument, NULL, OPT_NO_REFINE },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

void cmd_map_help(FILE *f)
{
	fputs("usage: commap map (--topology SPEC | --topology-xml FILE) "
	      "[--cpuset LIST]\n"
	      "                  --matrix FILE [--algorithm NAME] [--seed N]\n"
	      "                  [--oversubscribe] [--no-refine] "
	      "[--format text|json]\n\n"
	      "Map the threads of a communication matrix onto PUs and print "
	      "the mapping\nand its cost.\n\n"
	      "  --topology SPEC      'this' (this machine) or an hwloc "
	      "synthetic string,\n"
	      "                       e.g. \"pack:2 numa:2 l3:2 core:8 pu:2\"\n"
	      "  --topology-xml FILE  an hwloc XML topology\n"
	      "  --cpuset LIST        only these PUs (OS indices, e.g. "
	      "0-3,8,10-11)\n"
	      "  --matrix FILE        commap-matrix JSON, agent result or CSV "
	      "('-': stdin)\n"
	      "  --algorithm NAME     auto (default), greedy, matching, exact, "
	      "compact,\n"
	      "                       scatter, roundrobin, random\n"
	      "  --seed N             seed for random choices (default 0)\n"
	      "  --oversubscribe      allow more threads than PUs\n"
	      "  --no-refine          skip the swap refinement pass\n"
	      "  --format text|json   output format (default text)\n", f);
}

/* One option; 0 to go on, or an exit code. */
static int map_option(int c, struct map_args *a, char *argv[])
{
	switch (c) {
	case OPT_TOPOLOGY: a->topo.spec = optarg; return 0;
	case OPT_TOPOLOGY_XML: a->topo.xml = optarg; return 0;
	case OPT_CPUSET: a->topo.cpuset = optarg; return 0;
	case OPT_MATRIX: a->matrix = optarg; return 0;
	case OPT_ALGORITHM: a->algorithm = optarg; return 0;
	case OPT_OVERSUBSCRIBE: a->opts.oversubscribe = 1; return 0;
	case OPT_NO_REFINE: a->opts.no_refine = 1; return 0;
	case OPT_SEED:
		return cli_parse_u64("--seed", optarg, 0, INT64_MAX,
				     &a->opts.seed) < 0 ? CLI_EXIT_USAGE : 0;
	case OPT_FORMAT:
		if (strcmp(optarg, "text") && strcmp(optarg, "json"))
			return cli_usage_error("map", "--format: unknown format "
					       "'%s' (text, json)", optarg);
		a->json = strcmp(optarg, "json") == 0;
		return 0;
	case 'h':
		cmd_map_help(stdout);
		return -1;
	default:
		return cli_getopt_error("map", c, argv);
	}
}

/* Our own message, listing the names the library knows. */
static int unknown_algorithm(const char *name)
{
	char list[256] = "";
	size_t len = 0;
	int i;

	for (i = 0; i < CM_MAP_ALGORITHM_COUNT && len < sizeof(list); i++)
		len += snprintf(list + len, sizeof(list) - len, "%s%s",
				i ? ", " : "", cm_map_algorithm_name(i));
	return cli_usage_error("map", "unknown algorithm '%s' (valid: %s)",
			       name, list);
}

static int map_parse(int argc, char *argv[], struct map_args *a)
{
	struct cm_error err = { "" };
	int c, rv;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", map_options, NULL)) != -1)
		if ((rv = map_option(c, a, argv)) != 0)
			return rv;
	if ((rv = cli_no_operands("map", argc, argv, optind)) != 0)
		return rv;
	if ((rv = cli_topo_check("map", &a->topo)) != 0)
		return rv;
	if (!a->matrix)
		return cli_usage_error("map", "--matrix FILE is required");
	if (a->algorithm && cm_map_algorithm_parse(a->algorithm,
					&a->opts.algorithm, &err) < 0)
		return unknown_algorithm(a->algorithm);
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int map_print(const struct map_args *a, const struct cm_topo *topo,
		     const struct cm_matrix *m, const int *pu_of_thread,
		     double time_ms)
{
	struct cli_report r = {
		.topology = cli_topo_name(&a->topo),
		.algorithm = cm_map_algorithm_name(a->opts.algorithm),
		.seed = a->opts.seed,
		.n = cm_matrix_nthreads(m),
		.pu_of_thread = pu_of_thread,
		.time_ms = time_ms,
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

static int map_run(const struct map_args *a, const struct cm_topo *topo,
		   const struct cm_matrix *m)
{
	struct cm_error err = { "" };
	int n = cm_matrix_nthreads(m);
	int *pu_of_thread;
	double t0, t1;
	int rv;

	rv = cli_check_capacity(topo, n, a->opts.oversubscribe);
	if (rv)
		return rv;
	pu_of_thread = calloc(n > 0 ? n : 1, sizeof(*pu_of_thread));
	if (!pu_of_thread) {
		cli_error("out of memory for %d threads", n);
		return CLI_EXIT_RUNTIME;
	}
	t0 = now_ms();
	rv = cm_map(topo, m, &a->opts, pu_of_thread, &err);
	t1 = now_ms();
	if (rv < 0) {
		cli_error("mapping with %s failed: %s",
			  cm_map_algorithm_name(a->opts.algorithm),
			  err.text[0] ? err.text : strerror(errno));
		rv = CLI_EXIT_RUNTIME;
	} else {
		rv = map_print(a, topo, m, pu_of_thread, t1 - t0);
	}
	free(pu_of_thread);
	return rv;
}

int cmd_map(int argc, char *argv[])
{
	struct map_args a = { .opts = { .algorithm = CM_MAP_AUTO } };
	struct cm_topo *topo = NULL;
	struct cm_matrix *m = NULL;
	int rv;

	rv = map_parse(argc, argv, &a);
	if (rv)
		return rv < 0 ? CLI_EXIT_OK : rv;
	rv = cli_topo_load(&a.topo, &topo);
	if (!rv)
		rv = cli_matrix_load(a.matrix, &m);
	if (!rv)
		rv = map_run(&a, topo, m);
	if (m)
		cm_matrix_free(m);
	if (topo)
		cm_topo_free(topo);
	return rv;
}
