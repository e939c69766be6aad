/* cli_common.c: option helpers and loaders shared by the subcommands. */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commap/error.h"
#include "commap/matrix_io.h"

const enum cm_level_kind cli_sharing_levels[] = {
	CM_LEVEL_CORE, CM_LEVEL_L1, CM_LEVEL_L2, CM_LEVEL_L3,
	CM_LEVEL_NUMA, CM_LEVEL_PACKAGE,
};
const int cli_nsharing_levels =
	sizeof(cli_sharing_levels) / sizeof(cli_sharing_levels[0]);

/* Our own names, so the output format does not depend on the library's
 * display names. */
const char *cli_level_key(enum cm_level_kind kind)
{
	static const char *const keys[CM_LEVEL_COUNT] = {
		[CM_LEVEL_PU] = "pu",	    [CM_LEVEL_CORE] = "core",
		[CM_LEVEL_L1] = "l1",	    [CM_LEVEL_L2] = "l2",
		[CM_LEVEL_L3] = "l3",	    [CM_LEVEL_NUMA] = "numa",
		[CM_LEVEL_PACKAGE] = "package", [CM_LEVEL_MACHINE] = "machine",
	};

	if ((int)kind < 0 || kind >= CM_LEVEL_COUNT)
		return "?";
	return keys[kind];
}

static void verror(const char *fmt, va_list ap)
{
	fputs("commap: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(fmt, ap);
	va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "commap: %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; see 'commap help %s'\n", cmd);
	return CLI_EXIT_USAGE;
}

int cli_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max,
		  uint64_t *out)
{
	unsigned long long v;
	char *end;

	/* strtoull accepts blanks, '+' and even '-' (wrapping around): only
	 * plain digits are a number here. */
	if (!isdigit((unsigned char)s[0])) {
		cli_error("%s: '%s' is not a non-negative integer", opt, s);
		return -1;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0') {
		cli_error("%s: '%s' is not a non-negative integer "
			  "(junk after the number)", opt, s);
		return -1;
	}
	if (errno == ERANGE || v < min || v > max) {
		cli_error("%s: %s is out of range (%" PRIu64 "..%" PRIu64 ")",
			  opt, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_parse_int(const char *opt, const char *s, int min, int max, int *out)
{
	uint64_t v;

	if (min < 0)
		min = 0;
	if (cli_parse_u64(opt, s, (uint64_t)min, (uint64_t)max, &v) < 0)
		return -1;
	*out = (int)v;
	return 0;
}

int cli_getopt_error(const char *cmd, int c, char *const argv[])
{
	/* getopt_long leaves optind just past the offending word. */
	const char *word = optind > 0 ? argv[optind - 1] : "?";

	if (c == ':')
		return cli_usage_error(cmd, "option '%s' needs a value", word);
	if (optopt && !(word[0] == '-' && word[1] == '-'))
		return cli_usage_error(cmd, "unknown option '-%c'", optopt);
	return cli_usage_error(cmd, "unknown option '%s'", word);
}

int cli_no_operands(const char *cmd, int argc, char *const argv[], int optind_)
{
	if (optind_ < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind_]);
	return 0;
}

int cli_topo_check(const char *cmd, const struct cli_topo_source *src)
{
	if (src->spec && src->xml)
		return cli_usage_error(cmd, "give either --topology or "
				       "--topology-xml, not both");
	if (!src->spec && !src->xml)
		return cli_usage_error(cmd, "a topology is needed: --topology "
				       "SPEC (or 'this') or --topology-xml FILE");
	return 0;
}

const char *cli_topo_name(const struct cli_topo_source *src)
{
	return src->xml ? src->xml : src->spec;
}

static int topo_load_source(const struct cli_topo_source *src,
			    struct cm_topo **out, struct cm_error *err)
{
	if (src->xml)
		return cm_topo_load_xml(out, src->xml, err);
	if (strcmp(src->spec, "this") == 0)
		return cm_topo_load_this(out, err);
	return cm_topo_load_synthetic(out, src->spec, err);
}

int cli_topo_load(const struct cli_topo_source *src, struct cm_topo **out)
{
	struct cm_error err = { "" };
	struct cm_topo *topo = NULL;

	if (topo_load_source(src, &topo, &err) < 0) {
		if (src->xml)
			cli_error("topology XML '%s': %s", src->xml,
				  err.text[0] ? err.text : strerror(errno));
		else
			cli_error("topology '%s': %s", src->spec,
				  err.text[0] ? err.text : strerror(errno));
		return CLI_EXIT_RUNTIME;
	}
	if (src->cpuset && cm_topo_restrict(topo, src->cpuset, &err) < 0) {
		cli_error("cpuset '%s': %s", src->cpuset,
			  err.text[0] ? err.text : strerror(errno));
		cm_topo_free(topo);
		return CLI_EXIT_RUNTIME;
	}
	*out = topo;
	return CLI_EXIT_OK;
}

int cli_matrix_load(const char *path, struct cm_matrix **out)
{
	struct cm_error err = { "" };

	if (cm_matrix_read_file(path, out, &err) < 0) {
		/* The library's message names the file; add it if not. */
		if (err.text[0] && strstr(err.text, path))
			cli_error("%s", err.text);
		else
			cli_error("matrix '%s': %s", path,
				  err.text[0] ? err.text : strerror(errno));
		return CLI_EXIT_RUNTIME;
	}
	return CLI_EXIT_OK;
}

int cli_check_capacity(const struct cm_topo *topo, int n, int oversubscribe)
{
	int npus = cm_topo_npus(topo);
	char *list;

	if (n <= npus || oversubscribe)
		return CLI_EXIT_OK;
	list = cm_topo_cpulist(topo);
	cli_error("%d threads but only %d PUs in cpuset %s; use --oversubscribe",
		  n, npus, list ? list : "?");
	free(list);
	return CLI_EXIT_RUNTIME;
}

void cli_metrics_compute(const struct cm_topo *topo, const struct cm_matrix *m,
			 const int *pu_of_thread, struct cli_metrics *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	out->cost = cm_cost(topo, m, pu_of_thread);
	out->accuracy = cm_mapping_accuracy(topo, m, pu_of_thread);
	for (i = 0; i < cli_nsharing_levels; i++) {
		enum cm_level_kind k = cli_sharing_levels[i];

		out->sharing[k] = cm_cost_data_sharing(topo, m, pu_of_thread, k);
	}
}
