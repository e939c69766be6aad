/* agent_fill.c: the agent's result at the end of a step (agent_result.h):
 * identity, threads, topology and statistics filled in, then written to
 * --output or delivered to the service or the spool (upload.h).
 */
#include <config.h>

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent_internal.h"
#include "ompi_monitoring.h"
#include "upload.h"
#include "user_file.h"

static void fill_identity(struct agent *a)
{
	struct cm_agent_result *r = &a->res;
	const struct cm_tracked_proc *p = cm_tracker_proc(a->tr, 0);
	struct passwd *pw;
	uid_t uid = a->o->uid;

	r->job = a->o->job;
	r->step = a->o->step;
	gethostname(r->node, sizeof(r->node) - 1);
	snprintf(r->cluster, sizeof(r->cluster), "%s",
		 a->o->cluster ? a->o->cluster : "");
	if (uid == (uid_t)-1 && (!p || cm_proc_read_uid("/proc", p->pid,
							&uid) < 0))
		uid = getuid();
	r->uid = uid;
	pw = getpwuid(uid);
	if (pw)
		snprintf(r->user, sizeof(r->user), "%s", pw->pw_name);
	else
		snprintf(r->user, sizeof(r->user), "%u", (unsigned)uid);
}

static void fill_threads(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr), ranks = 0;
	struct cm_result_thread *th = calloc((size_t)(n ? n : 1),
					     sizeof(*th));

	if (!th)
		return;
	a->res.threads_per_rank = 0;
	for (int i = 0; i < n; i++) {
		const struct cm_tracked_thread *t = cm_tracker_thread(a->tr, i);
		const struct cm_tracked_proc *p = cm_tracker_proc(a->tr,
								  t->proc);

		cm_tracker_thread_ident(a->tr, i, &th[i].rank, &th[i].index);
		th[i].tid = t->tid;
		th[i].pid = p->pid;
		th[i].cpu_s = i < a->cap ? a->cpu_s[i] : -1;
	}
	/* ranks on this node (distinct), and the most threads of one rank
	 * (the learned model's key, docs/service.md) */
	for (int i = 0; i < n; i++) {
		int same = 0, first = 1;

		for (int j = 0; j < n; j++) {
			same += th[j].rank == th[i].rank;
			first &= !(j < i && th[j].rank == th[i].rank);
		}
		ranks += first;
		if (same > a->res.threads_per_rank)
			a->res.threads_per_rank = same;
	}
	cm_agent_result_set_threads(&a->res, th, n);
	a->res.ranks = ranks;
	free(th);
}

static void fill_topology(struct agent *a)
{
	struct cm_agent_result *r = &a->res;

	struct cm_topo *t = a->topo;

	r->dry_run = a->dry_run;
	/* No process was ever followed: describe the whole machine. */
	if (!t && cm_topo_load_this(&t, NULL) < 0)
		return;
	r->cpuset = cm_topo_cpulist(t);
	r->pus = cm_topo_npus(t);
	r->synthetic = cm_topo_synthetic(t);
	if (t != a->topo)
		cm_topo_free(t);
}

static void fill_stats(struct agent *a)
{
	struct cm_result_stats *s = &a->res.stats;
	struct rusage ru;

	if (a->col) {
		struct cm_collect_stats cs;

		cm_collect_stats(a->col, &cs);
		s->samples = cs.samples;
		s->lost = cs.lost + cs.fault_lost + cs.cma.lost;
		s->decoded = cs.backend == CM_COLLECT_HW ? cs.ours : cs.decoded;
		if (cs.cma_on)
			agent_info("message passing (CMA): %llu transfers, %llu "
				   "bytes between our threads; dropped: %llu "
				   "lost, %llu unpaired, %llu no slot",
				   (unsigned long long)cs.cma_attrib.transfers,
				   (unsigned long long)cs.cma_attrib.bytes,
				   (unsigned long long)cs.cma.lost,
				   (unsigned long long)cs.cma.pair.unpaired,
				   (unsigned long long)cs.cma.pair.no_slot);
		if (cs.shm.refs)
			agent_info("shared segments: %llu references, %llu "
				   "into another process's (weight %.1f), "
				   "%llu own, %llu without owner; owners: "
				   "%llu by creator, %llu by name, %llu by "
				   "open file, %llu by samples",
				   (unsigned long long)cs.shm.refs,
				   (unsigned long long)cs.shm.evidence,
				   cs.shm.weight,
				   (unsigned long long)cs.shm.own,
				   (unsigned long long)cs.shm.undecided,
				   (unsigned long long)cs.shm.by_creator,
				   (unsigned long long)cs.shm.by_name,
				   (unsigned long long)cs.shm.by_fd,
				   (unsigned long long)cs.shm.by_samples);
		s->faults = cs.fault_hinting;
		s->sample_period_us = (unsigned)(cs.period / 1000u);
		for (int k = 0; k < cs.nperiods && k < 8; k++) {
			s->period_t[k] = cs.periods[k].t;
			s->period_us[k] = (unsigned)(cs.periods[k].period /
						     1000u);
		}
		s->nperiods = cs.backend != CM_COLLECT_SAMPLE ? 0 :
			      (cs.nperiods < 8 ? cs.nperiods : 8);
		cm_collect_result_stats(&cs, s);
		/* References continuing a run on one line (evidence.h) are
		 * repeats too; those on a line waited on, spins. */
		s->drop_repeat += cs.refs.run_refs;
		s->drop_spin += cs.refs.spin_refs;
	}
	s->mapping_ms = a->mapping_ms;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		s->agent_cpu_s = (double)(ru.ru_utime.tv_sec +
					  ru.ru_stime.tv_sec) +
				 (double)(ru.ru_utime.tv_usec +
					  ru.ru_stime.tv_usec) / 1e6;
}

/* Where the result goes when --output is not given: the service (with the
 * spool as fallback), else the spool, else standard output. */
static int deliver(struct agent *a, const char *doc)
{
	const struct cm_agent_opts *o = a->o;
	struct cm_deliver_opts d = { .service_url = o->service,
				     .spool_dir = o->spool };
	char id[CM_UPLOAD_ID_MAX];
	struct cm_error err;
	int rc;

	if (!o->service && !o->spool) {
		fputs(doc, stdout);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	cm_upload_id_make(doc, strlen(doc), id);
	rc = cm_result_deliver(&d, doc, strlen(doc), id, &err);
	if (rc == CM_DELIVER_UPLOADED) {
		agent_info("result uploaded to %s", o->service);
		return 0;
	}
	if (rc == CM_DELIVER_SPOOLED) {
		if (o->service)
			agent_warn("result spooled: %s", err.text);
		return 0;
	}
	agent_warn("result not delivered: %s", err.text);
	return 1;
}

/* How far this run's detected matrix is from the model it started from. */
static void fill_model_distance(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr);
	int *rank = malloc((size_t)(n ? n : 1) * sizeof(int));
	int *index = malloc((size_t)(n ? n : 1) * sizeof(int));

	if (a->res.model.state == CM_RESULT_MODEL_USED && rank && index &&
	    cm_matrix_total(a->total) > 0) {
		for (int i = 0; i < n; i++)
			cm_tracker_thread_ident(a->tr, i, &rank[i],
						&index[i]);
		a->res.model.distance = cm_model_distance(&a->model, a->total,
							  rank, index, n);
	}
	free(rank);
	free(index);
}

static void traffic_problem(void *arg, const char *line)
{
	agent_warn("%s", line);
	cm_agent_result_warn(arg, line);
}

/* --mpi-traffic DIR: the Open MPI monitoring files of this node's ranks
 * (the result's rank_traffic), read with the job's rights in at most 5 s
 * (the step-end grace is 10), then the step's directory removed. */
static void fill_mpi_traffic(struct agent *a)
{
	struct cm_user_cred cred = { .uid = a->o->uid, .gid = a->o->gid };
	int n = a->res.nthreads, *ranks;

	if (!a->o->mpi_traffic)
		return;
	if (cred.uid != (uid_t)-1 && cred.gid == (gid_t)-1) {
		struct passwd *pw = getpwuid(cred.uid);

		cred.gid = pw ? pw->pw_gid : (gid_t)cred.uid;
	}
	if (a->o->ngroups >= 0) {
		cred.groups = a->o->groups;
		cred.ngroups = a->o->ngroups;
	}
	ranks = malloc((size_t)(n ? n : 1) * sizeof(int));
	if (ranks) {
		for (int i = 0; i < n; i++)
			ranks[i] = a->res.threads[i].rank;
		a->res.traffic_on = 1;
		a->res.place_nodes = a->o->place_nodes;
		cm_ompi_mon_collect(a->o->mpi_traffic, ranks, n, &cred, 5000,
				    &a->res.traffic, traffic_problem, &a->res);
		free(ranks);
	}
	if (cm_ompi_mon_remove_dir(a->o->mpi_traffic) < 0 && errno != ENOENT)
		agent_warn("MPI traffic: cannot remove %s: %s",
			   a->o->mpi_traffic, strerror(errno));
}

/* With --output and --service, the result is also uploaded (commap run
 * with COMMAP_SERVICE: every run improves the model). */
static void upload_copy(struct agent *a, const char *doc)
{
	if (a->o->service && deliver(a, doc) != 0)
		agent_warn("the result is in %s only", a->o->output);
}

int ag_write_result(struct agent *a)
{
	struct cm_error err;
	char *doc;
	int rc;

	clock_gettime(CLOCK_REALTIME, &a->res.ended_at);
	if (!a->app_settled && (a->hashing || (cm_tracker_proc(a->tr, 0) &&
					       cm_tracker_proc(a->tr, 0)->alive)))
		ag_settle_app_identity(a, 1);
	cm_tracker_settle(a->tr);	/* every thread gets an identity */
	fill_identity(a);
	fill_threads(a);
	fill_topology(a);
	fill_stats(a);
	fill_model_distance(a);
	fill_mpi_traffic(a);
	doc = cm_agent_result_json(&a->res, a->total, &err);
	if (!doc) {
		agent_warn("%s", err.text);
		return 1;
	}
	if (a->o->output) {
		rc = cm_result_write_file(a->o->output, doc, &err) < 0;
		if (rc)
			agent_warn("%s", err.text);
		upload_copy(a, doc);
	} else {
		rc = deliver(a, doc);
	}
	free(doc);
	return rc;
}
