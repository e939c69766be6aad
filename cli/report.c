/* report.c: a mapping as a table (thread -> PU and the core, caches, NUMA
 * node and package it lands in) or as one JSON object. */
#include <config.h>

#include <errno.h>
#include <stdlib.h>

#include <jansson.h>

#include "report.h"

/* The tree levels shown as table columns, outermost last. */
static const enum cm_level_kind table_levels[] = {
	CM_LEVEL_CORE, CM_LEVEL_L1, CM_LEVEL_L2, CM_LEVEL_L3,
	CM_LEVEL_NUMA, CM_LEVEL_PACKAGE,
};
#define NTABLE_LEVELS ((int)(sizeof(table_levels) / sizeof(table_levels[0])))

/* ordinal[i * CM_LEVEL_COUNT + k]: the number of tree node i among the
 * nodes of kind k, in node order (tree order: the library stores parents
 * first and children contiguously).  A node can stand for several kinds
 * (a package with one L3 is folded into one node, docs/topology.md), so
 * every kind folded into it gets a column.  present[k]: some node below
 * the root has kind k (a kind folded into the root, like the one NUMA node
 * of a small machine, spans everything and is not worth a column). */
static int *node_ordinals(const struct cm_topo *topo, int present[])
{
	int nnodes = cm_topo_nnodes(topo);
	int next[CM_LEVEL_COUNT] = { 0 };
	int *ordinal = calloc((size_t)(nnodes > 0 ? nnodes : 1) *
			      CM_LEVEL_COUNT, sizeof(*ordinal));
	int i, k;

	if (!ordinal)
		return NULL;
	for (i = 0; i < nnodes; i++) {
		unsigned kinds = cm_topo_node_kinds(topo, i);

		for (k = 0; k < CM_LEVEL_COUNT; k++) {
			if (!(kinds & (1u << k)))
				continue;
			ordinal[i * CM_LEVEL_COUNT + k] = next[k]++;
			if (i > 0)
				present[k] = 1;
		}
	}
	return ordinal;
}

/* The ordinal of the ancestor of kind k of the leaf of pu, or -1. */
static int ancestor_ordinal(const struct cm_topo *topo, const int *ordinal,
			    int pu, enum cm_level_kind k)
{
	int node = cm_topo_leaf_of_pu(topo, pu);

	while (node >= 0) {
		if (cm_topo_node_kinds(topo, node) & (1u << k))
			return ordinal[node * CM_LEVEL_COUNT + k];
		node = cm_topo_node(topo, node)->parent;
	}
	return -1;
}

static void print_table(FILE *f, const struct cm_topo *topo,
			const struct cli_report *r, const int *ordinal,
			const int present[])
{
	int t, j;

	fprintf(f, "%6s %6s", "thread", "pu");
	for (j = 0; j < NTABLE_LEVELS; j++)
		if (present[table_levels[j]])
			fprintf(f, " %7s", cli_level_key(table_levels[j]));
	fputc('\n', f);
	for (t = 0; t < r->n; t++) {
		int pu = r->pu_of_thread[t];

		fprintf(f, "%6d %6d", t, cm_topo_pu_os_index(topo, pu));
		for (j = 0; j < NTABLE_LEVELS; j++)
			if (present[table_levels[j]])
				fprintf(f, " %7d", ancestor_ordinal(topo,
					ordinal, pu, table_levels[j]));
		fputc('\n', f);
	}
}

static void print_metrics(FILE *f, const struct cli_metrics *mx)
{
	int i;

	fprintf(f, "cost: %.10g\n", mx->cost);
	fprintf(f, "mapping accuracy: %.4f\n", mx->accuracy);
	fputs("data sharing:", f);
	for (i = 0; i < cli_nsharing_levels; i++) {
		enum cm_level_kind k = cli_sharing_levels[i];

		fprintf(f, " %s %.4f", cli_level_key(k), mx->sharing[k]);
	}
	fputc('\n', f);
}

int cli_report_text(FILE *f, const struct cm_topo *topo,
		    const struct cli_report *r)
{
	int present[CM_LEVEL_COUNT] = { 0 };
	int *ordinal = node_ordinals(topo, present);
	char *list = cm_topo_cpulist(topo);
	int rv = -1;

	if (!ordinal || !list) {
		errno = ENOMEM;
		goto out;
	}
	fprintf(f, "topology: %s (%d PUs, cpuset %s)\n", r->topology,
		cm_topo_npus(topo), list);
	if (r->algorithm)
		fprintf(f, "algorithm: %s (seed %llu), %.3f ms\n", r->algorithm,
			(unsigned long long)r->seed, r->time_ms);
	fprintf(f, "threads: %d\n\n", r->n);
	print_table(f, topo, r, ordinal, present);
	fputc('\n', f);
	/* The metrics come last, so that 'tail -n 3' shows them. */
	print_metrics(f, &r->metrics);
	rv = 0;
out:
	free(ordinal);
	free(list);
	return rv;
}

static json_t *os_indices_json(const struct cm_topo *topo,
			       const struct cli_report *r)
{
	json_t *a = json_array();
	int t;

	for (t = 0; a && t < r->n; t++) {
		int os = cm_topo_pu_os_index(topo, r->pu_of_thread[t]);

		if (json_array_append_new(a, json_integer(os)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *sharing_json(const struct cli_metrics *mx)
{
	json_t *o = json_object();
	int i;

	for (i = 0; o && i < cli_nsharing_levels; i++) {
		enum cm_level_kind k = cli_sharing_levels[i];

		if (json_object_set_new(o, cli_level_key(k),
					json_real(mx->sharing[k])) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* Build the object; every json_object_set_new() takes its value's
 * reference even on failure, so one check at the end is enough. */
static json_t *report_json(const struct cm_topo *topo,
			   const struct cli_report *r)
{
	json_t *o = json_object();
	char *list = cm_topo_cpulist(topo);
	int bad = !o || !list;

	if (bad)
		goto out;
	bad |= json_object_set_new(o, "topology", json_string(r->topology));
	bad |= json_object_set_new(o, "cpuset", json_string(list));
	bad |= json_object_set_new(o, "pus", json_integer(cm_topo_npus(topo)));
	bad |= json_object_set_new(o, "threads", json_integer(r->n));
	if (r->algorithm) {
		bad |= json_object_set_new(o, "algorithm",
					   json_string(r->algorithm));
		bad |= json_object_set_new(o, "seed",
					   json_integer((json_int_t)r->seed));
	}
	bad |= json_object_set_new(o, "pu_of_thread", os_indices_json(topo, r));
	bad |= json_object_set_new(o, "cost", json_real(r->metrics.cost));
	bad |= json_object_set_new(o, "data_sharing", sharing_json(&r->metrics));
	bad |= json_object_set_new(o, "mapping_accuracy",
				   json_real(r->metrics.accuracy));
	if (r->time_ms >= 0)
		bad |= json_object_set_new(o, "time_ms", json_real(r->time_ms));
out:
	free(list);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int cli_report_json(FILE *f, const struct cm_topo *topo,
		    const struct cli_report *r)
{
	json_t *o = report_json(topo, r);
	int rv;

	if (!o) {
		errno = ENOMEM;
		return -1;
	}
	rv = json_dumpf(o, f, JSON_COMPACT);
	json_decref(o);
	if (rv < 0 || fputc('\n', f) == EOF)
		return -1;
	return 0;
}
