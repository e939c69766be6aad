/* svc_model_ranks.c: an application's rank matrix from its steps' node
 * results (svc_model_ranks.h).  Pure: jansson documents in, one out. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commap/matrix.h"
#include "svc_model_ranks.h"

/* One step: its node results, in the order given (newest first). */
struct step {
	json_int_t job, step;
	const char *cluster;
	int first, ndocs;
	int *doc;
};

/* A step's figures once its matrix is built. */
struct run {
	const struct step *s;
	int nodes;
	double total, between;
	json_t *placement;	/* rank_traffic.placement of a node, or NULL */
};

static const json_t *traffic(const json_t *doc)
{
	const json_t *t = json_object_get(doc, "rank_traffic");

	return json_is_object(t) && json_is_array(json_object_get(t, "ranks"))
		&& json_is_array(json_object_get(t, "pairs")) ? t : NULL;
}

static const char *cluster_of(const json_t *doc)
{
	const char *c = json_string_value(json_object_get(doc, "cluster"));

	return c ? c : "";
}

/* The command line's shape as the agent wrote it (identity.argv_shape,
 * the models' key; every agent result has it). */
static int shape_matches(const json_t *id, const char *want)
{
	const char *have = json_string_value(json_object_get(id, "argv_shape"));

	return !want || (have && strcmp(have, want) == 0);
}

/* Group the usable documents by (cluster, job, step), in order of their
 * newest result.  The number of steps, -1 on ENOMEM. */
static int group(const json_t *docs, const struct svc_ranks_query *q,
		 struct step *steps)
{
	int nsteps = 0;
	size_t i;
	const json_t *doc;

	json_array_foreach(docs, i, doc) {
		const json_t *id = json_object_get(doc, "identity");
		json_t *jj = json_object_get(id, "job"),
		       *js = json_object_get(id, "step");
		int k;

		if (i >= SVC_RANKS_DOCS_MAX)
			break;
		if (!traffic(doc) || !json_is_integer(jj) ||
		    !json_is_integer(js) || !shape_matches(id, q->argv_shape))
			continue;
		for (k = 0; k < nsteps; k++)
			if (steps[k].job == json_integer_value(jj) &&
			    steps[k].step == json_integer_value(js) &&
			    strcmp(steps[k].cluster, cluster_of(doc)) == 0)
				break;
		if (k == nsteps) {
			steps[k] = (struct step){ json_integer_value(jj),
				json_integer_value(js), cluster_of(doc),
				(int)i, 0, NULL };
			steps[k].doc = malloc(sizeof(int) *
					      SVC_RANKS_DOCS_MAX);
			if (!steps[k].doc) {
				while (k-- > 0)
					free(steps[k].doc);
				return -1;
			}
			nsteps++;
		}
		steps[k].doc[steps[k].ndocs++] = (int)i;
	}
	return nsteps;
}

/* node_of[r] for the step's ranks: each of 0..N-1 listed by exactly one
 * node.  N, or -1 when the step is not complete (or too large). */
static int rank_nodes(const json_t *docs, const struct step *s,
		      int **node_of)
{
	int n = 0, *no;

	for (int d = 0; d < s->ndocs; d++)
		n += (int)json_array_size(json_object_get(
			traffic(json_array_get(docs, (size_t)s->doc[d])),
			"ranks"));
	if (n < 1 || n > SVC_RANKS_MAX)
		return -1;
	no = malloc(sizeof(int) * (size_t)n);
	if (!no)
		return -1;
	for (int r = 0; r < n; r++)
		no[r] = -1;
	for (int d = 0; d < s->ndocs; d++) {
		const json_t *ranks = json_object_get(traffic(json_array_get(
			docs, (size_t)s->doc[d])), "ranks"), *v;
		size_t k;

		json_array_foreach(ranks, k, v) {
			json_int_t r = json_integer_value(v);

			if (!json_is_integer(v) || r < 0 || r >= n ||
			    no[r] >= 0) {
				free(no);
				return -1;
			}
			no[r] = d;
		}
	}
	*node_of = no;
	return n;
}

/* The step's matrix (bytes both ways, i < j) with its figures in run;
 * NULL when a pair names a rank outside the step or is malformed. */
static struct cm_matrix *step_matrix(const json_t *docs, const struct step *s,
				     int n, const int *node_of,
				     struct run *run)
{
	struct cm_matrix *m = cm_matrix_new(n);

	run->s = s;
	run->nodes = s->ndocs;
	run->total = run->between = 0;
	run->placement = NULL;
	for (int d = 0; m && d < s->ndocs; d++) {
		const json_t *t = traffic(json_array_get(docs,
							 (size_t)s->doc[d]));
		const json_t *pairs = json_object_get(t, "pairs"), *p;
		json_t *pl = json_object_get(t, "placement");
		size_t k;

		if (json_is_object(pl) && !run->placement)
			run->placement = pl;

		json_array_foreach(pairs, k, p) {
			json_int_t i = json_integer_value(json_array_get(p, 0));
			json_int_t j = json_integer_value(json_array_get(p, 1));
			double b = json_number_value(json_array_get(p, 2));

			if (i < 0 || j < 0 || i >= n || j >= n ||
			    node_of[i] != d || !isfinite(b) || b < 0) {
				cm_matrix_free(m);
				return NULL;
			}
			if (i == j || b == 0)
				continue;
			cm_matrix_add(m, (int)i, (int)j, b);
			run->total += b;
			if (node_of[i] != node_of[j])
				run->between += b;
		}
	}
	return m;
}

/* Bytes as a JSON integer: a mean of counts each below 2^63 can still
 * round past it. */
static json_int_t bytes_int(double v)
{
	return v >= 9.2e18 ? (json_int_t)9.2e18 : (json_int_t)llround(v);
}

static int col_cmp(const void *a, const void *b)
{
	const struct cm_matrix_entry *x = a, *y = b;

	return (x->col > y->col) - (x->col < y->col);
}

/* [[i, j, bytes], ...] for i < j, by i then j, bytes rounded. */
static json_t *pairs_json(const struct cm_matrix *m, double scale)
{
	json_t *out = json_array();
	int n = cm_matrix_nthreads(m);
	struct cm_matrix_entry *row = malloc(sizeof(*row) * (size_t)(n + 1));

	for (int i = 0; out && row && i < n; i++) {
		const struct cm_matrix_entry *r;
		int k = cm_matrix_row(m, i, &r);

		if (k <= 0)	/* an empty row may have no entries at all */
			continue;
		memcpy(row, r, sizeof(*row) * (size_t)k);
		qsort(row, (size_t)k, sizeof(*row), col_cmp);
		for (int e = 0; e < k; e++)
			if (row[e].col > i)
				json_array_append_new(out, json_pack("[i,i,I]",
					i, row[e].col, bytes_int(
						row[e].w * scale)));
	}
	free(row);
	if (!row) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static json_t *runs_json(const struct run *runs, int nruns)
{
	json_t *out = json_array();

	for (int k = 0; out && k < nruns; k++)
		json_array_append_new(out, json_pack("{s:I, s:I, s:s, s:i, "
			"s:I, s:I, s:O}", "job", runs[k].s->job, "step",
			runs[k].s->step, "cluster", runs[k].s->cluster,
			"nodes", runs[k].nodes, "bytes_total",
			bytes_int(runs[k].total),
			"bytes_between_nodes",
			bytes_int(runs[k].between), "placement",
			runs[k].placement ? runs[k].placement : json_null()));
	return out;
}

/* Fold the complete steps of N ranks (N fixed by the first when
 * want <= 0) into sum; the number folded. */
static int fold_steps(const json_t *docs, const struct step *steps,
		      int nsteps, int want, struct cm_matrix **sum,
		      struct run *runs)
{
	int nruns = 0;

	for (int k = 0; k < nsteps && nruns < SVC_RANKS_RUNS_MAX; k++) {
		int *node_of = NULL, n = rank_nodes(docs, &steps[k], &node_of);
		struct cm_matrix *m;

		if (n < 0 || (want > 0 && n != want)) {
			free(node_of);
			continue;
		}
		m = step_matrix(docs, &steps[k], n, node_of, &runs[nruns]);
		free(node_of);
		if (!m)
			continue;
		if (!*sum)
			*sum = cm_matrix_new(n);
		want = n;
		if (*sum && cm_matrix_merge(*sum, m, 1.0) == 0)
			nruns++;
		cm_matrix_free(m);
	}
	return nruns;
}

json_t *svc_model_ranks_build(const json_t *docs,
			      const struct svc_ranks_query *q,
			      struct cm_error *err)
{
	struct step *steps = calloc(SVC_RANKS_DOCS_MAX, sizeof(*steps));
	struct run runs[SVC_RANKS_RUNS_MAX];
	struct cm_matrix *sum = NULL;
	json_t *out = NULL;
	int nsteps = steps ? group(docs, q, steps) : -1, nruns = 0;

	if (nsteps >= 0)
		nruns = fold_steps(docs, steps, nsteps, q->ranks, &sum, runs);
	if (nsteps < 0)
		cm_errorf(err, ENOMEM, "rank matrix: out of memory");
	else if (nruns == 0)
		cm_errorf(err, ENOENT, "no complete step with MPI traffic "
			  "counts%s", q->ranks > 0 ? " of that many ranks" : "");
	else
		out = json_pack("{s:i, s:o, s:o}", "ranks",
				cm_matrix_nthreads(sum), "pairs",
				pairs_json(sum, 1.0 / nruns), "runs",
				runs_json(runs, nruns));
	if (nruns > 0 && !out)
		cm_errorf(err, ENOMEM, "rank matrix: out of memory");
	cm_matrix_free(sum);
	for (int k = 0; k < (nsteps > 0 ? nsteps : 0); k++)
		free(steps[k].doc);
	free(steps);
	return out;
}
