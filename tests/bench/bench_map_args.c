/* bench_map_args.c: the mapping benchmark's command line (bench_map.c
 * runs it): options, their checks, and the tables of synthetic topologies
 * and communication families they select from.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_map.h"
#include "bench_map_args.h"

#include "commap/mapping.h"

/* Synthetic machines, one per N, with exactly N PUs: packages, NUMA nodes,
 * L3s, cores and SMT pairs in proportions like real servers. */
static const struct {
	int n;
	const char *spec;
} topo_table[] = {
	{ 8, "pack:2 core:2 pu:2" },
	{ 16, "pack:2 l3:2 core:2 pu:2" },
	{ 32, "pack:2 numa:2 core:4 pu:2" },
	{ 64, "pack:2 numa:2 l3:2 core:4 pu:2" },
	{ 128, "pack:2 numa:2 l3:2 core:8 pu:2" },
	{ 256, "pack:2 numa:2 l3:4 core:8 pu:2" },
	{ 512, "pack:2 numa:4 l3:4 core:8 pu:2" },
	{ 1024, "pack:4 numa:2 l3:4 core:16 pu:2" },
	{ 2048, "pack:4 numa:4 l3:4 core:16 pu:2" },
	{ 4096, "pack:8 numa:4 l3:4 core:16 pu:2" },
};

static const struct family family_table[] = {
	{ "stencil2d", "stencil2d", 1 },
	{ "stencil3d", "stencil3d", 1 },
	{ "clusters4", "clusters:4", 1 },
	{ "clusters8", "clusters:8", 1 },
	{ "clusters16", "clusters:16", 1 },
	{ "pairs", "pairs", 0 },
	{ "ring", "ring", 0 },
	{ "all2all", "all2all", 0 },
	{ "random", "random", 0 },
	/* not in the default list: the easy ones with hidden structure */
	{ "pairs-shuf", "pairs", 1 },
	{ "ring-shuf", "ring", 1 },
};
#define DEFAULT_FAMILIES 9

const char *const scotch_strategies[] = {
	[BENCH_SCOTCH_DEFAULT] = "default",
	[BENCH_SCOTCH_QUALITY] = "quality",
	[BENCH_SCOTCH_BALANCED] = "balanced",
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_map [options]\n"
"  --sizes LIST        thread counts N (default 16,64,256,1024,4096);\n"
"                      each N maps onto the table's N-PU topology\n"
"  --families LIST     stencil2d,stencil3d,clusters4,clusters8,clusters16,\n"
"                      pairs,ring,all2all,random (default: these),\n"
"                      pairs-shuf,ring-shuf\n"
"  --algorithms LIST   auto,greedy,matching,exact,compact,scatter,\n"
"                      roundrobin,random,scotch (default: all; exact only\n"
"                      when some N <= %d)\n"
"  --reps R            best of R runs per cell (default 3)\n"
"  --budget-ms MS      stop repeating a cell after MS ms (default 2000)\n"
"  --skip-ms MS        skip larger N of a family for a mapper that took\n"
"                      longer than MS ms (default 60000)\n"
"  --format FMT        text, csv or markdown (default text)\n"
"  --csv FILE          also write the results as CSV to FILE\n"
"  --seed S            matrix, shuffle and mapper seed (default 1)\n"
"  --topology SPEC     one hwloc synthetic topology for every size\n"
"  --scotch-threads T  Scotch worker threads (default 1, like commap)\n"
"  --scotch-strategy S default (Scotch's own, 1%% imbalance; doubled-up\n"
"                      PUs are then repaired), quality, or balanced\n"
"  --no-refine         set cm_map_options.no_refine\n"
"  --list-topologies   print the N -> topology table and exit\n"
"  --check             exit 1 if auto costs more than Scotch anywhere\n"
"  --quiet             no progress lines on stderr\n"
"  --by-level          also the weight of the links by the distance of\n"
"                      their threads (the level that joins them): cost\n"
"                      is the sum of distance x weight\n",
		CM_MAP_EXACT_MAX);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_sizes(struct config *cfg, char *list)
{
	cfg->nsizes = 0;
	for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
		long v;

		if (cfg->nsizes == MAX_SIZES ||
		    parse_long(t, 1, 1 << 20, &v) < 0) {
			fprintf(stderr, "bench_map: bad size '%s'\n", t);
			return -1;
		}
		cfg->sizes[cfg->nsizes++] = (int)v;
	}
	if (cfg->nsizes == 0)
		fprintf(stderr, "bench_map: --sizes needs a list\n");
	return cfg->nsizes ? 0 : -1;
}

static const struct family *find_family(const char *name)
{
	for (size_t i = 0; i < sizeof(family_table) / sizeof(*family_table);
	     i++)
		if (strcmp(family_table[i].name, name) == 0)
			return &family_table[i];
	return NULL;
}

static int parse_families(struct config *cfg, char *list)
{
	cfg->nfamilies = 0;
	for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
		const struct family *f = find_family(t);

		if (!f || cfg->nfamilies == MAX_FAMILIES) {
			fprintf(stderr, "bench_map: unknown family '%s'\n", t);
			return -1;
		}
		cfg->families[cfg->nfamilies++] = f;
	}
	if (cfg->nfamilies == 0)
		fprintf(stderr, "bench_map: --families needs a list\n");
	return cfg->nfamilies ? 0 : -1;
}

static int parse_algorithms(struct config *cfg, char *list)
{
	memset(cfg->selected, 0, sizeof(cfg->selected));
	for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
		int c;

		for (c = 0; c < COL_COUNT; c++)
			if (strcmp(t, bench_col_name(c)) == 0)
				break;
		if (c == COL_COUNT) {
			fprintf(stderr, "bench_map: unknown algorithm '%s'\n",
				t);
			return -1;
		}
		cfg->selected[c] = 1;
	}
	cfg->explicit_algorithms = 1;
	return 0;
}

static int parse_scotch_strategy(struct config *cfg, const char *s)
{
	for (int i = 0; i <= BENCH_SCOTCH_BALANCED; i++) {
		if (strcmp(s, scotch_strategies[i]) == 0) {
			cfg->scotch.strategy = i;
			return 0;
		}
	}
	fprintf(stderr, "bench_map: unknown Scotch strategy '%s'\n", s);
	return -1;
}

static int parse_format(struct config *cfg, const char *s)
{
	if (strcmp(s, "text") == 0)
		cfg->format = FMT_TEXT;
	else if (strcmp(s, "csv") == 0)
		cfg->format = FMT_CSV;
	else if (strcmp(s, "markdown") == 0)
		cfg->format = FMT_MARKDOWN;
	else {
		fprintf(stderr, "bench_map: unknown format '%s'\n", s);
		return -1;
	}
	return 0;
}

static void config_defaults(struct config *cfg)
{
	static const int sizes[] = { 16, 64, 256, 1024, 4096 };

	memset(cfg, 0, sizeof(*cfg));
	cfg->nsizes = 5;
	memcpy(cfg->sizes, sizes, sizeof(sizes));
	for (int i = 0; i < DEFAULT_FAMILIES; i++)
		cfg->families[cfg->nfamilies++] = &family_table[i];
	for (int c = 0; c < COL_COUNT; c++)
		cfg->selected[c] = 1;
	cfg->reps = 3;
	cfg->budget_ms = 2000;
	cfg->skip_ms = 60000;
	cfg->seed = 1;
	cfg->scotch.nthreads = 1;
}

const char *table_topology(int n)
{
	for (size_t i = 0; i < sizeof(topo_table) / sizeof(*topo_table); i++)
		if (topo_table[i].n == n)
			return topo_table[i].spec;
	return NULL;
}

static void list_topologies(void)
{
	for (size_t i = 0; i < sizeof(topo_table) / sizeof(*topo_table); i++)
		printf("%d\t%s\n", topo_table[i].n, topo_table[i].spec);
}

enum {
	OPT_SIZES = 256, OPT_FAMILIES, OPT_REPS, OPT_ALGORITHMS, OPT_FORMAT,
	OPT_SEED, OPT_TOPOLOGY, OPT_CHECK, OPT_BUDGET, OPT_SKIP,
	OPT_SCOTCH_THREADS, OPT_SCOTCH_STRATEGY, OPT_NO_REFINE, OPT_LIST,
	OPT_QUIET, OPT_CSV, OPT_BY_LEVEL, OPT_HELP
};

static const struct option long_options[] = {
	{ "sizes", required_argument, NULL, OPT_SIZES },
	{ "families", required_argument, NULL, OPT_FAMILIES },
	{ "reps", required_argument, NULL, OPT_REPS },
	{ "algorithms", required_argument, NULL, OPT_ALGORITHMS },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "budget-ms", required_argument, NULL, OPT_BUDGET },
	{ "skip-ms", required_argument, NULL, OPT_SKIP },
	{ "scotch-threads", required_argument, NULL, OPT_SCOTCH_THREADS },
	{ "scotch-strategy", required_argument, NULL, OPT_SCOTCH_STRATEGY },
	{ "no-refine", no_argument, NULL, OPT_NO_REFINE },
	{ "list-topologies", no_argument, NULL, OPT_LIST },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "csv", required_argument, NULL, OPT_CSV },
	{ "by-level", no_argument, NULL, OPT_BY_LEVEL },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* One option with a number argument; -1 on a bad value. */
static int parse_number_option(struct config *cfg, int opt, const char *arg)
{
	long v;

	if (parse_long(arg, opt == OPT_SEED ? 0 : 1, LONG_MAX, &v) < 0) {
		fprintf(stderr, "bench_map: bad number '%s'\n", arg);
		return -1;
	}
	switch (opt) {
	case OPT_REPS:
		cfg->reps = v > 1000 ? 1000 : (int)v;
		break;
	case OPT_SEED:
		cfg->seed = (uint64_t)v;
		break;
	case OPT_BUDGET:
		cfg->budget_ms = (double)v;
		break;
	case OPT_SKIP:
		cfg->skip_ms = (double)v;
		break;
	default:
		cfg->scotch.nthreads = v > 64 ? 64 : (int)v;
		break;
	}
	return 0;
}

/* 0 to run, 1 to exit successfully (help, list), -1 on a usage error. */
static int parse_option(struct config *cfg, int opt, char *arg)
{
	switch (opt) {
	case OPT_SIZES:
		return parse_sizes(cfg, arg);
	case OPT_FAMILIES:
		return parse_families(cfg, arg);
	case OPT_ALGORITHMS:
		return parse_algorithms(cfg, arg);
	case OPT_FORMAT:
		return parse_format(cfg, arg);
	case OPT_SCOTCH_STRATEGY:
		return parse_scotch_strategy(cfg, arg);
	case OPT_TOPOLOGY:
		cfg->topology = arg;
		return 0;
	case OPT_CSV:
		cfg->csv_path = arg;
		return 0;
	case OPT_CHECK:
		cfg->check = 1;
		return 0;
	case OPT_NO_REFINE:
		cfg->no_refine = 1;
		return 0;
	case OPT_QUIET:
		cfg->quiet = 1;
		return 0;
	case OPT_BY_LEVEL:
		cfg->by_level = 1;
		return 0;
	case OPT_LIST:
		list_topologies();
		return 1;
	case OPT_HELP:
		usage(stdout);
		return 1;
	case OPT_REPS:
	case OPT_SEED:
	case OPT_BUDGET:
	case OPT_SKIP:
	case OPT_SCOTCH_THREADS:
		return parse_number_option(cfg, opt, arg);
	default:
		usage(stderr);
		return -1;
	}
}

static int cmp_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) -
	       (*(const int *)a < *(const int *)b);
}

/* Checks that need the whole command line. */
static int config_finish(struct config *cfg)
{
	int small = 0;

	qsort(cfg->sizes, (size_t)cfg->nsizes, sizeof(int), cmp_int);
	for (int i = 0; i < cfg->nsizes; i++) {
		if (!cfg->topology && !table_topology(cfg->sizes[i])) {
			fprintf(stderr, "bench_map: no topology for N=%d "
				"(see --list-topologies, or --topology)\n",
				cfg->sizes[i]);
			return -1;
		}
		small |= cfg->sizes[i] <= CM_MAP_EXACT_MAX;
	}
	if (!cfg->explicit_algorithms && !small)
		cfg->selected[COL_EXACT] = 0;
	if (!cfg->explicit_algorithms && !bench_scotch_available()) {
		fprintf(stderr, "bench_map: built without Scotch "
			"(libscotch-dev): no scotch column\n");
		cfg->selected[COL_SCOTCH] = 0;
	}
	if (cfg->check && !bench_scotch_available()) {
		fprintf(stderr, "bench_map: --check needs Scotch, and this "
			"build has none\n");
		return -1;
	}
	if (cfg->check)
		cfg->selected[COL_AUTO] = cfg->selected[COL_SCOTCH] = 1;
	return 0;
}

int parse_args(struct config *cfg, int argc, char **argv)
{
	int opt, rv;

	config_defaults(cfg);
	while ((opt = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		rv = parse_option(cfg, opt, optarg);
		if (rv != 0)
			return rv;
	}
	if (optind < argc) {
		fprintf(stderr, "bench_map: unexpected argument '%s'\n",
			argv[optind]);
		return -1;
	}
	cfg->scotch.seed = cfg->seed;
	return config_finish(cfg) < 0 ? -1 : 0;
}
