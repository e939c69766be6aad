/* replay.c: `commap replay` (commap-agent --replay): a recording's matrix
 * mapped once onto its topology, written as a commap-result (replay.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_result.h"
#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/topology.h"
#include "remap_policy.h"
#include "replay.h"
#include "replay_clock.h"

/* Largest recording read (a few million accesses). */
#define MAX_RECORDING_BYTES (1ull << 30)

static char *read_all(const char *path, size_t *len, struct cm_error *err)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f) {
		cm_errorf(err, errno, "replay: cannot open %s: %s", path,
			  strerror(errno));
		return NULL;
	}
	for (;;) {
		if (n == cap) {
			char *b = cap >= MAX_RECORDING_BYTES ? NULL :
				  realloc(buf, cap ? cap * 2 : 65536);

			if (!b) {
				cm_errorf(err, cap >= MAX_RECORDING_BYTES ?
					  EFBIG : ENOMEM, "replay: %s: %s",
					  path, cap >= MAX_RECORDING_BYTES ?
					  "larger than 1 GiB" :
					  "out of memory");
				goto fail;
			}
			buf = b;
			cap = cap ? cap * 2 : 65536;
		}
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		cm_errorf(err, EIO, "replay: cannot read %s", path);
		goto fail;
	}
	fclose(f);
	*len = n;
	return buf;
fail:
	fclose(f);
	free(buf);
	return NULL;
}

/* The threads the agent would map (remap_policy.h): enough events of
 * their own, and a share of the busiest thread's.  Their count. */
static int mapped_set(const struct cm_matrix *m, int n, int *idx)
{
	double busiest = 0;
	int k = 0;

	for (int i = 0; i < n; i++) {
		double r = cm_matrix_row_sum(m, i);

		if (r > busiest)
			busiest = r;
	}
	for (int i = 0; i < n; i++) {
		double r = cm_matrix_row_sum(m, i);

		if (r >= CM_REMAP_MIN_THREAD_EVIDENCE &&
		    r >= CM_REMAP_MIN_THREAD_SHARE * busiest)
			idx[k++] = i;
	}
	return k;
}

static struct cm_matrix *sub_matrix(const struct cm_matrix *m,
				    const int *idx, int k)
{
	struct cm_matrix *s = cm_matrix_new(k);

	for (int a = 0; s && a < k; a++)
		for (int b = a + 1; b < k; b++) {
			double w = cm_matrix_get(m, idx[a], idx[b]);

			if (w > 0 && cm_matrix_set(s, a, b, w) < 0) {
				cm_matrix_free(s);
				return NULL;
			}
		}
	return s;
}

static int load_topology(const struct cm_replay *rp, struct cm_topo **topo,
			 struct cm_error *err)
{
	if (cm_topo_load_synthetic(topo, rp->synthetic, err) < 0)
		return -1;
	if (rp->cpuset && cm_topo_restrict(*topo, rp->cpuset, err) < 0) {
		cm_topo_free(*topo);
		*topo = NULL;
		return -1;
	}
	return 0;
}

/* One complete mapping of the communicating threads, as OS PUs per
 * thread (-1 not mapped), into the result's timeline. */
static int map_once(const struct cm_replay *rp, struct cm_agent_result *res,
		    struct cm_error *err)
{
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	int n = rp->nthreads, k, rc = -1;
	int *idx = malloc((size_t)(n ? n : 1) * sizeof(int));
	int *pu = malloc((size_t)(n ? n : 1) * sizeof(int));
	int *os = malloc((size_t)(n ? n : 1) * sizeof(int));
	struct cm_matrix *sub = NULL;
	struct cm_topo *topo = NULL;

	if (!idx || !pu || !os) {
		cm_errorf(err, ENOMEM, "replay: out of memory");
		goto out;
	}
	k = mapped_set(rp->m, n, idx);
	if (k < 2 || cm_matrix_total(rp->m) < CM_REMAP_MIN_EVIDENCE) {
		rc = 0;		/* too little evidence: no mapping */
		goto out;
	}
	if (load_topology(rp, &topo, err) < 0)
		goto out;
	sub = sub_matrix(rp->m, idx, k);
	mo.oversubscribe = k > cm_topo_npus(topo);
	if (!sub || cm_map(topo, sub, &mo, pu, err) < 0)
		goto out;
	for (int i = 0; i < n; i++)
		os[i] = -1;
	for (int a = 0; a < k; a++)
		os[idx[a]] = cm_topo_pu_os_index(topo, pu[a]);
	rc = cm_agent_result_add_mapping(res, (double)(rp->last_ns -
					 rp->start_mono_ns) / 1e9, os, n,
					 cm_cost(topo, sub, pu), "replay");
	if (rc == 0 && res->ntimeline > 0)
		res->timeline[res->ntimeline - 1].live = k;
	if (rc < 0)
		cm_errorf(err, ENOMEM, "replay: out of memory");
out:
	cm_matrix_free(sub);
	cm_topo_free(topo);
	free(idx);
	free(pu);
	free(os);
	return rc;
}

static int fill_threads(const struct cm_replay *rp,
			struct cm_agent_result *res)
{
	struct cm_result_thread *th = calloc((size_t)(rp->nthreads ?
						      rp->nthreads : 1),
					     sizeof(*th));
	int rc;

	if (!th)
		return -1;
	for (int i = 0; i < rp->nthreads; i++)
		th[i] = (struct cm_result_thread){
			.rank = rp->threads[i].rank,
			.index = rp->threads[i].index,
			.tid = rp->threads[i].tid, .pid = rp->threads[i].pid,
			.cpu_s = -1 };
	rc = cm_agent_result_set_threads(res, th, rp->nthreads);
	free(th);
	return rc;
}

/* A version 3 recording with its intervals: the agent's decisions made
 * again, the whole timeline (replay_clock.h). */
static int replay_decisions(const char *text, size_t len,
			    struct cm_replay *rp, struct cm_agent_result *res,
			    struct cm_error *err)
{
	struct cm_topo *topo = NULL;
	struct cm_matrix *total = NULL;
	int rc;

	if (load_topology(rp, &topo, err) < 0)
		return -1;
	rc = cm_replay_clock_run(text, len, rp, topo, res, &total, err);
	cm_topo_free(topo);
	if (rc == 0) {
		cm_matrix_free(rp->m);
		rp->m = total;
	}
	return rc;
}

/* Everything in the result from the recording alone: no clock, no host,
 * no user of the machine that replays. */
static int fill_result(const char *text, size_t len, struct cm_replay *rp,
		       struct cm_agent_result *res, struct cm_error *err)
{
	uint64_t end = rp->start_real_ns + (rp->last_ns > rp->start_mono_ns ?
					     rp->last_ns - rp->start_mono_ns
					     : 0);

	res->node[0] = res->user[0] = '\0';
	res->uid = 0;
	res->mode = "replay";
	res->backend = "replay";
	res->started_at.tv_sec = (time_t)(rp->start_real_ns / 1000000000u);
	res->started_at.tv_nsec = (long)(rp->start_real_ns % 1000000000u);
	res->ended_at.tv_sec = (time_t)(end / 1000000000u);
	res->ended_at.tv_nsec = (long)(end % 1000000000u);
	res->dry_run = rp->dry_run;
	res->cpuset = strdup(rp->cpuset ? rp->cpuset : "");
	res->synthetic = rp->synthetic ? strdup(rp->synthetic) : NULL;
	res->stats.decoded = rp->accesses;
	if (!res->cpuset || (rp->synthetic && !res->synthetic) ||
	    fill_threads(rp, res) < 0)
		return cm_errorf(err, ENOMEM, "replay: out of memory");
	if (!rp->complete)
		cm_agent_result_warn(res, "the recording ends early (no 'end' "
				     "line): the agent did not finish it");
	if (rp->dropped)
		cm_agent_result_warn(res, "the recording reached its size limit: "
				     "later accesses were left out");
	if (!rp->synthetic) {
		cm_agent_result_warn(res, "the recording has no topology: no "
				     "mapping");
		return 0;
	}
	if (rp->has_options && rp->nintervals > 0 &&
	    strcmp(rp->opt_mode, "dynamic") == 0)
		return replay_decisions(text, len, rp, res, err);
	if (rp->has_options && strcmp(rp->opt_mode, "dynamic") != 0)
		cm_agent_result_warn(res, "the recorded run was not dynamic: "
				     "its decisions are not replayed, one "
				     "mapping at the end");
	return map_once(rp, res, err);
}

static int pus_of(const struct cm_replay *rp)
{
	struct cm_topo *topo = NULL;
	struct cm_error e;
	int n;

	if (!rp->synthetic || load_topology(rp, &topo, &e) < 0)
		return 0;
	n = cm_topo_npus(topo);
	cm_topo_free(topo);
	return n;
}

int cm_replay_run(const char *path, const char *output)
{
	struct cm_replay rp;
	struct cm_agent_result res;
	struct cm_error err = { 0 };
	size_t len = 0;
	char *text = read_all(path, &len, &err), *doc = NULL;
	int rc = 1;

	cm_agent_result_init(&res);
	if (!text || cm_replay_parse(text, len, &rp, &err) < 0)
		goto out;
	res.pus = pus_of(&rp);
	if (fill_result(text, len, &rp, &res, &err) == 0 &&
	    (doc = cm_agent_result_json(&res, rp.m, &err)) != NULL) {
		if (output)
			rc = cm_result_write_file(output, doc, &err) < 0;
		else
			rc = fputs(doc, stdout) < 0 || fflush(stdout) != 0;
	}
	cm_replay_free(&rp);
out:
	if (rc)
		fprintf(stderr, "commap-agent: %s\n", err.text[0] ? err.text :
			"replay: cannot write the result");
	free(doc);
	free(text);
	cm_agent_result_free(&res);
	return rc;
}
