/* cmd_matrix.c: 'commap matrix gen': write synthetic test matrices. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "commap/matrix_gen.h"
#include "commap/matrix_io.h"

struct gen_args {
	const char *pattern;
	int threads;		/* 0: not given */
	uint64_t seed;
	uint64_t shuffle;
	int csv;
	const char *output;	/* NULL: stdout */
};

enum {
	OPT_PATTERN = 256, OPT_THREADS, OPT_SHUFFLE, OPT_SEED, OPT_FORMAT,
	OPT_OUTPUT,
};

static const struct option gen_options[] = {
	{ "pattern", required_argument, NULL, OPT_PATTERN },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "shuffle", required_argument, NULL, OPT_SHUFFLE },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

void cmd_matrix_help(FILE *f)
{
	fputs("usage: commap matrix gen --pattern PATTERN --threads N "
	      "[--shuffle SEED] [--seed N]\n"
	      "                         [--format csv|json] "
	      "[--output FILE]\n\n"
	      "Write a synthetic communication matrix with a known structure.\n\n"
	      "  --pattern PATTERN  stencil2d, stencil3d, ring, pairs, "
	      "clusters:K, all2all,\n"
	      "                     random\n"
	      "  --threads N        number of threads (1..1048576)\n"
	      "  --shuffle SEED     permute the thread numbers (seeded; "
	      "0: no shuffle)\n"
	      "  --seed N           seed of the random pattern (default 0)\n"
	      "  --format csv|json  output format (default json, the "
	      "commap-matrix format)\n"
	      "  --output FILE      write to FILE instead of standard "
	      "output\n", f);
}

static int gen_option(int c, struct gen_args *a, char *argv[])
{
	switch (c) {
	case OPT_PATTERN: a->pattern = optarg; return 0;
	case OPT_OUTPUT: a->output = optarg; return 0;
	case OPT_THREADS:
		return cli_parse_int("--threads", optarg, 1,
				     CM_MATRIX_MAX_THREADS, &a->threads) < 0 ?
			CLI_EXIT_USAGE : 0;
	case OPT_SHUFFLE:
		return cli_parse_u64("--shuffle", optarg, 0, UINT64_MAX,
				     &a->shuffle) < 0 ? CLI_EXIT_USAGE : 0;
	case OPT_SEED:
		return cli_parse_u64("--seed", optarg, 0, UINT64_MAX,
				     &a->seed) < 0 ? CLI_EXIT_USAGE : 0;
	case OPT_FORMAT:
		if (strcmp(optarg, "csv") && strcmp(optarg, "json"))
			return cli_usage_error("matrix gen", "--format: "
					       "unknown format '%s' (csv, json)",
					       optarg);
		a->csv = strcmp(optarg, "csv") == 0;
		return 0;
	case 'h':
		cmd_matrix_help(stdout);
		return -1;
	default:
		return cli_getopt_error("matrix gen", c, argv);
	}
}

static int gen_parse(int argc, char *argv[], struct gen_args *a)
{
	int c, rv;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", gen_options, NULL)) != -1)
		if ((rv = gen_option(c, a, argv)) != 0)
			return rv;
	if ((rv = cli_no_operands("matrix gen", argc, argv, optind)) != 0)
		return rv;
	if (!a->pattern)
		return cli_usage_error("matrix gen", "--pattern is required");
	if (!a->threads)
		return cli_usage_error("matrix gen", "--threads N is required");
	return 0;
}

static int gen_write(const struct gen_args *a, const struct cm_matrix *m)
{
	const char *name = a->output ? a->output : "standard output";
	FILE *f = a->output ? fopen(a->output, "w") : stdout;
	int rv;

	if (!f) {
		cli_error("cannot write '%s': %s", a->output, strerror(errno));
		return CLI_EXIT_RUNTIME;
	}
	rv = a->csv ? cm_matrix_write_csv(f, m) : cm_matrix_write_json(f, m);
	if (rv < 0 || fflush(f) == EOF || ferror(f))
		rv = -1;
	if (f != stdout && fclose(f) == EOF)
		rv = -1;
	if (rv < 0) {
		cli_error("writing '%s': %s", name, strerror(errno));
		return CLI_EXIT_RUNTIME;
	}
	return CLI_EXIT_OK;
}

static int matrix_gen(int argc, char *argv[])
{
	struct gen_args a = { .pattern = NULL };
	struct cm_error err = { "" };
	struct cm_matrix *m = NULL;
	int rv;

	rv = gen_parse(argc, argv, &a);
	if (rv)
		return rv < 0 ? CLI_EXIT_OK : rv;
	if (cm_matrix_generate(a.pattern, a.threads, a.seed, a.shuffle, &m,
			       &err) < 0) {
		/* Only command-line values go in: EINVAL is a usage error. */
		rv = errno == EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_RUNTIME;
		cli_error("matrix gen: %s",
			  err.text[0] ? err.text : strerror(errno));
		return rv;
	}
	rv = gen_write(&a, m);
	cm_matrix_free(m);
	return rv;
}

int cmd_matrix(int argc, char *argv[])
{
	if (argc < 2) {
		cmd_matrix_help(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		cmd_matrix_help(stdout);
		return CLI_EXIT_OK;
	}
	if (strcmp(argv[1], "gen") == 0)
		return matrix_gen(argc - 1, argv + 1);
	cli_error("matrix: unknown subcommand '%s' (only 'gen'; see "
		  "'commap help matrix')", argv[1]);
	return CLI_EXIT_USAGE;
}
