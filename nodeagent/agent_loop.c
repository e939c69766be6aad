/* agent_loop.c: the node agent's work (docs/agent.md).
 *
 * One thread, one poll() loop:
 *   - standard input (SPANK): "task PID RANK" lines add root processes;
 *     end of file means the step is ending;
 *   - every scan_ms: rescan the processes and threads (proc_track.h), bring
 *     sampling up to date (collect.h), pin new threads in static mode, stop
 *     when every process is gone or slurmstepd disappeared;
 *   - whenever a ring is a quarter full, and every loop: drain samples into
 *     this interval's matrix;
 *   - at the end of each interval (LHMapping §3.4.2, remap_policy.h):
 *     merge, decide, map (commap/mapping.h), pin (pin.h), age.
 * At the end: the result document (agent_result.h) to --output, or
 * delivered to the service / spool (upload.h).  Placements are applied
 * in agent_place.c (the state both share: agent_internal.h).
 *
 * Safety: only the tracker's threads are ever touched, each verified (pid,
 * tgid, start times, owner) just before it is pinned; never a PU outside
 * the union of the roots' affinity masks; every failure is one log line
 * and the job goes on unpinned.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hwloc.h>

#include "agent_internal.h"
#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/placement_check.h"
#include "commap/topology.h"
#include "model_fetch.h"
#include "pin.h"
#include "placement.h"
#include "progress_guard.h"
#include "proc_track.h"
#include "record.h"
#include "remap_policy.h"
#include "replay.h"
#include "upload.h"

/* ---- per-thread arrays -------------------------------------------- */

static int ensure_threads(struct agent *a, int n)
{
	int ncap;
	int *os;
	double *cpu;

	if (n <= a->cap)
		return 0;
	ncap = a->cap ? a->cap : 64;
	while (ncap < n)
		ncap *= 2;
	os = realloc(a->cur_os, (size_t)ncap * sizeof(*os));
	if (!os)
		return -1;
	a->cur_os = os;
	cpu = realloc(a->cpu_s, (size_t)ncap * sizeof(*cpu));
	if (!cpu)
		return -1;
	a->cpu_s = cpu;
	cpu = realloc(a->app_cpu, (size_t)ncap * sizeof(*cpu));
	if (!cpu)
		return -1;
	a->app_cpu = cpu;
	for (int i = a->cap; i < ncap; i++) {
		a->cur_os[i] = -1;
		a->cpu_s[i] = -1;
		a->app_cpu[i] = -1;
	}
	a->cap = ncap;
	return 0;
}

/* ---- topology and allowed CPUs ------------------------------------ */

/* A dry run maps onto a described machine and never pins. */
static int load_dry_topology(struct agent *a, struct cm_error *err)
{
	const struct cm_agent_opts *o = a->o;

	a->dry_run = 1;
	if (o->topology)
		return cm_topo_load_synthetic(&a->topo, o->topology, err);
	return cm_topo_load_xml(&a->topo, o->topology_xml, err);
}

/* This machine restricted to the allowed set. */
static int reload_topology(struct agent *a, struct cm_error *err)
{
	struct cm_topo *t;
	char *list = NULL;

	if (hwloc_bitmap_list_asprintf(&list, a->allowed) < 0)
		return cm_errorf(err, ENOMEM, "out of memory");
	if (cm_topo_load_this(&t, err) < 0) {
		free(list);
		return -1;
	}
	if (cm_topo_restrict(t, list, err) < 0) {
		free(list);
		cm_topo_free(t);
		return -1;
	}
	free(list);
	cm_topo_free(a->topo);
	a->topo = t;
	return 0;
}

/* A new root: its affinity mask (final by now: Slurm binds tasks before
 * task_post_fork) joins the allowed union.  The union only grows while
 * roots arrive; PUs outside it are never used. */
/* Grow the allowed set by a task's CPUs: the list the plugin read when
 * Slurm's binding was final, or else the task's affinity now (commap run,
 * or an older plugin).  Reading it later is wrong for MPI ranks: during
 * MPI_Init a rank's main thread is briefly bound elsewhere. */
static void add_allowed(struct agent *a, pid_t pid, const char *cpus)
{
	hwloc_bitmap_t mask;
	struct cm_error err;
	int grew;

	if (a->dry_run)
		return;
	if (cpus && *cpus) {
		mask = hwloc_bitmap_alloc();
		if (!mask || hwloc_bitmap_list_sscanf(mask, cpus) < 0 ||
		    hwloc_bitmap_iszero(mask)) {
			agent_warn("task %d: bad CPU list '%s'; using its "
				   "affinity", (int)pid, cpus);
			hwloc_bitmap_free(mask);
			add_allowed(a, pid, NULL);
			return;
		}
	} else if (cm_pin_allowed_union(&pid, 1, &mask, &err) < 0) {
		return;
	}
	if (!a->allowed) {
		a->allowed = mask;
		grew = 1;
	} else {
		grew = !hwloc_bitmap_isincluded(mask, a->allowed);
		hwloc_bitmap_or(a->allowed, a->allowed, mask);
		hwloc_bitmap_free(mask);
	}
	if (grew && reload_topology(a, &err) < 0) {
		agent_warn("cannot load this machine's topology: %s; the job "
			   "runs unpinned", err.text);
		a->pin_ok = 0;
	}
}

/* ---- roots ---------------------------------------------------------- */

/* Milliseconds since pid was created (its start time is in clock ticks
 * since boot), -1 unknown. */
static double root_age_ms(pid_t pid)
{
	long tck = sysconf(_SC_CLK_TCK);
	struct timespec ts;
	uint64_t start;

	if (tck <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0 ||
	    cm_proc_read_stat("/proc", pid, 0, &start, NULL) < 0)
		return -1;
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6 -
	       (double)start * 1e3 / (double)tck;
}

static void add_root(struct agent *a, pid_t pid, int rank, const char *cpus)
{
	struct cm_error err;

	if (cm_tracker_add_root(a->tr, pid, rank, &err) < 0) {
		agent_warn("%s: refused%s", err.text, errno == EPERM ?
			   " (not the step's user)" : "");
		return;
	}
	a->roots_added++;
	add_allowed(a, pid, cpus);
	/* its age: how late the agent learns of a task (pin latency) */
	agent_info("following process %d (rank %d, created %.0f ms ago, "
		   "t=%.3f s)", (int)pid, rank, root_age_ms(pid), elapsed_s(a));
}

/* Lines of the stdin protocol; a partial line waits for its end. */
static void read_stdin(struct agent *a)
{
	char buf[512];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		agent_info("end of standard input: the step is ending");
		a->stdin_open = 0;
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		struct cm_error err;
		char cpus[CM_AGENT_CPULIST_MAX];
		pid_t pid;
		int rank;

		if (buf[i] != '\n') {
			/* Too long a line stays too long (and is refused),
			 * never truncated into another valid one. */
			if (a->linelen < sizeof(a->line) - 1)
				a->line[a->linelen++] = buf[i];
			continue;
		}
		a->line[a->linelen] = '\0';
		a->linelen = 0;
		switch (cm_agent_parse_task_line(a->line, &pid, &rank, cpus,
						 &err)) {
		case 1:
			a->last_task_line_ns = now_ns();
			add_root(a, pid, rank, cpus);
			break;
		case -1:
			agent_warn("%s", err.text);
			break;
		}
	}
}

/* ---- detection ------------------------------------------------------ */

static void log_collect_problem(struct agent *a)
{
	const char *p = cm_collect_last_problem(a->col);

	if (!p || !*p || strcmp(p, a->problem_logged) == 0 ||
	    a->problem_logged[0])
		return;
	snprintf(a->problem_logged, sizeof(a->problem_logged), "%s", p);
	agent_warn("detection degraded: %s", p);
	cm_agent_result_warn(&a->res, p);
}

static void detection_off(struct agent *a, const char *why)
{
	char line[CM_ERROR_TEXT_MAX + 64];

	snprintf(line, sizeof(line), "no communication detection: %s", why);
	agent_warn("%s; the job runs unpinned", line);
	cm_agent_result_warn(&a->res, line);
	cm_collect_free(a->col);
	a->col = NULL;
}

/* The sampling period and the cost of a sample behind it: at start with
 * the default cost, again once this machine's cost is measured. */
void ag_log_sampling(struct agent *a, const struct cm_collect_stats *st)
{
	if (!st->sample_cost_ns || a->cost_logged)
		return;
	agent_info("sampling every %.0f us of CPU: %.1f us per sample (%s) "
		   "for %.3g%% of the application", (double)st->period / 1e3,
		   (double)st->sample_cost_ns / 1e3,
		   st->sample_cost_cached ? "measured on this node within the "
		   "hour" : st->sample_cost_measured ? "measured" :
		   st->sample_cost_pending ? "default, measuring" : "default",
		   a->o->overhead_pct);
	a->cost_logged = !st->sample_cost_pending;
}

static void start_collector(struct agent *a)
{
	const struct cm_agent_opts *o = a->o;
	struct cm_collect_opts co;
	struct cm_error err;

	if (o->mode == CM_AGENT_MODE_OFF)
		return;
	cm_collect_opts_default(&co);
	co.backend = o->backend == CM_AGENT_BACKEND_HW ? CM_COLLECT_HW :
		     o->backend == CM_AGENT_BACKEND_SAMPLE ? CM_COLLECT_SAMPLE :
		     o->backend == CM_AGENT_BACKEND_FAULT ? CM_COLLECT_FAULT :
		     CM_COLLECT_AUTO;
	co.add_fault = o->add_fault;
	co.record = a->rec;
	co.numa_manage = !o->numa_leave;
	co.overhead_target = o->overhead_pct / 100.0;
	co.period_ns = (uint64_t)o->period_us * 1000u;
	co.period_auto = !o->period_given;	/* from the measured cost */
	/* One measurement per node and hour serves every step's agent; only
	 * root's agents (under Slurm) share it, in root's /run. */
	if (geteuid() == 0 && (mkdir(COST_CACHE_DIR, 0755) == 0 ||
			       errno == EEXIST))
		co.cost_cache = COST_CACHE_DIR "/sample-cost";
	a->col = cm_collect_new(&co, a->tr, &err);
	if (!a->col) {
		detection_off(a, err.text);
		return;
	}
	{
		struct cm_collect_stats st;

		cm_collect_stats(a->col, &st);
		a->time_sampled = st.backend == CM_COLLECT_SAMPLE;
		a->res.backend = cm_agent_backend_name(
			st.backend == CM_COLLECT_HW ? CM_AGENT_BACKEND_HW :
			st.backend == CM_COLLECT_FAULT ? CM_AGENT_BACKEND_FAULT :
			CM_AGENT_BACKEND_SAMPLE, st.fault_on);
		ag_log_sampling(a, &st);
	}
}

static void sync_collector(struct agent *a)
{
	struct cm_error err;

	if (!a->col)
		return;
	if (cm_collect_sync(a->col, &err) < 0)
		detection_off(a, err.text);
}

static void drain(struct agent *a)
{
	struct cm_error err;

	if (!a->col || !a->fresh)
		return;
	if (cm_collect_drain(a->col, a->fresh, &err) < 0 && errno == ENOMEM)
		agent_warn("%s", err.text);
}

/* ---- the loop ------------------------------------------------------- */

static int stepd_gone(const struct agent *a)
{
	return a->o->stepd_pid > 0 && kill(a->o->stepd_pid, 0) < 0 &&
	       errno == ESRCH;
}

static void scan(struct agent *a)
{
	int added = cm_tracker_scan(a->tr);

	if (ensure_threads(a, cm_tracker_nthreads(a->tr)) < 0)
		agent_warn("out of memory");
	sync_collector(a);
	if (added > 0)
		agent_debug("%d new threads (%d in all, t=%.3f s)", added,
			    cm_tracker_nthreads(a->tr), elapsed_s(a));
	if (a->static_os && a->topo)
		ag_static_apply_new(a);
	if (added > 0)
		a->last_new_thread_ns = now_ns();
	if (!a->app_settled && (a->hashing || ag_app_identity_ready(a)))
		ag_settle_app_identity(a, 0);
	if (a->app_settled && a->model_wanted) {
		ag_model_fetch_now(a);
		/* threads created while the model was on its way */
		if (a->model_active && cm_tracker_scan(a->tr) > 0 &&
		    ensure_threads(a, cm_tracker_nthreads(a->tr)) == 0)
			sync_collector(a);
	}
	if (a->model_active) {
		ag_model_apply_new(a);
		ag_model_hold_pins(a);
	}
	if (now_ns() - a->t0_ns < IDENTITY_REFRESH_NS || added > 0)
		ag_refresh_identity(a);
}

/* Scan fast while the model's threads are still expected (or the model
 * not fetched yet), so each is pinned soon after it is created; back to
 * --scan-ms once they are all there or none appeared for a while. */
static uint64_t scan_period_ns(const struct agent *a)
{
	uint64_t now = now_ns(), last = a->last_new_thread_ns > a->t0_ns ?
					a->last_new_thread_ns : a->t0_ns;
	int fast = (a->model_wanted && !a->app_settled) ||
		   (a->model_active && a->model_pending > 0);

	if (fast && now - last < FAST_SCAN_QUIET_NS &&
	    FAST_SCAN_MS < a->o->scan_ms)
		return FAST_SCAN_MS * 1000000ull;
	return a->o->scan_ms * 1000000ull;
}

/* Should the loop end?  Returns a reason or NULL. */
static const char *finished(struct agent *a)
{
	if (agent_stop_requested)
		return "signal";
	if (a->o->tasks_from_stdin && !a->stdin_open)
		return "end of standard input";
	if (stepd_gone(a))
		return "slurmstepd is gone";
	if (a->roots_added > 0 && cm_tracker_nalive(a->tr) == 0)
		return "all processes have exited";
	if (a->roots_added == 0 && !a->o->tasks_from_stdin)
		return "no process to follow";
	return NULL;
}

static int build_pollfds(struct agent *a, struct pollfd *pfd)
{
	int n = 0;

	if (a->stdin_open) {
		pfd[n].fd = STDIN_FILENO;
		pfd[n].events = POLLIN;
		n++;
	}
	if (a->col)
		n += cm_collect_pollfds(a->col, pfd + n, MAX_POLLFDS - n);
	return n;
}

static int poll_timeout_ms(const struct agent *a)
{
	uint64_t now = now_ns(), next = a->next_scan_ns;

	if (a->next_interval_ns < next)
		next = a->next_interval_ns;
	if (a->next_checkpoint_ns < next)
		next = a->next_checkpoint_ns;
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

static void loop(struct agent *a)
{
	const char *why;

	while (!(why = finished(a))) {
		struct pollfd pfd[MAX_POLLFDS];
		int n = build_pollfds(a, pfd);
		uint64_t now;

		if (poll(pfd, (nfds_t)n, poll_timeout_ms(a)) > 0 &&
		    a->stdin_open && (pfd[0].revents & (POLLIN | POLLHUP)))
			read_stdin(a);
		drain(a);
		ag_guard_poll(a);
		now = now_ns();
		if (now >= a->next_scan_ns) {
			scan(a);
			a->next_scan_ns = now + scan_period_ns(a);
		}
		if (now >= a->next_checkpoint_ns) {
			ag_checkpoint(a);
			a->next_checkpoint_ns = now + CHECKPOINT_NS;
		}
		if (now >= a->next_interval_ns && ag_interval_due(a, now)) {
			ag_interval_end(a);
			if (a->col)
				log_collect_problem(a);
			now = now_ns();
			a->interval_start_ns = now;
			a->next_interval_ns = now +
				(uint64_t)a->dec.interval_ms * 1000000ull;
			a->next_checkpoint_ns = now + CHECKPOINT_NS;
		}
	}
	agent_info("finishing: %s", why);
	if (a->tr) {
		uint64_t full, quiet;

		cm_tracker_scan_counts(a->tr, &full, &quiet);
		agent_debug("process scans: %llu full, %llu skipped as quiet",
			    (unsigned long long)full,
			    (unsigned long long)quiet);
	}
}

/* ---- setup and teardown --------------------------------------------- */

static void signal_ready(struct agent *a)
{
	int fd = a->o->ready_fd;

	if (fd < 0)
		return;
	if (write(fd, "ready\n", 6) != 6)
		agent_debug("ready fd %d: %s", fd, strerror(errno));
	close(fd);
}

static int setup(struct agent *a, const struct cm_agent_opts *o)
{
	uid_t uid = o->uid != (uid_t)-1 ? o->uid : getuid();
	struct cm_error err;

	a->o = o;
	a->mode = o->mode;
	a->pin_ok = 1;
	a->t0_ns = now_ns();
	cm_decide_init(&a->dec, NULL, o->alpha, o->gain, a->t0_ns);
	a->next_scan_ns = a->t0_ns;
	a->next_interval_ns = a->t0_ns +
			      (uint64_t)a->dec.interval_ms * 1000000u;
	a->next_checkpoint_ns = a->t0_ns + CHECKPOINT_NS;
	a->app_ns = a->app_read_ns = a->interval_app_ns = a->t0_ns;
	a->interval_start_ns = a->t0_ns;
	cm_agent_result_init(&a->res);
	a->res.mode = cm_agent_mode_name(o->mode);
	a->fresh = cm_matrix_new(0);
	a->live = cm_matrix_new(0);
	a->total = cm_matrix_new(0);
	/* Root (under Slurm, or a root user's commap run) may follow only
	 * the given user's processes; others only their own. */
	a->tr = cm_tracker_new(NULL, uid);
	if (!a->fresh || !a->live || !a->total || !a->tr) {
		agent_warn("out of memory");
		return -1;
	}
	if ((o->topology || o->topology_xml) &&
	    load_dry_topology(a, &err) < 0) {
		agent_warn("%s", err.text);
		return -1;
	}
	/* Learned, and dynamic as a starting point, fetch a model once
	 * the application is known (scan()). */
	a->model_wanted = (o->mode == CM_AGENT_MODE_LEARNED ||
			   o->mode == CM_AGENT_MODE_DYNAMIC) && o->service;
	if (a->model_wanted)
		ag_prepare_model_fetch(a);
	if (o->mode == CM_AGENT_MODE_LEARNED && !o->service)
		ag_model_drop(a, "no service configured (--service or "
			   "COMMAP_SERVICE)");
	if (o->mode == CM_AGENT_MODE_STATIC &&
	    agent_static_load(o->static_file, &a->st, &err) < 0) {
		agent_warn("static mapping: %s; the job runs unpinned",
			   err.text);
		cm_agent_result_warn(&a->res, err.text);
		a->pin_ok = 0;
	}
	return 0;
}

static void add_initial_roots(struct agent *a)
{
	const struct cm_agent_opts *o = a->o;

	for (int i = 0; i < o->nroots; i++)
		add_root(a, o->roots[i].pid, o->roots[i].rank, NULL);
	if (o->tasks_from_stdin) {
		a->stdin_open = 1;
		fcntl(STDIN_FILENO, F_SETFL,
		      fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
	}
}

static void prepare_static(struct agent *a)
{
	struct cm_error err;

	if (a->o->mode != CM_AGENT_MODE_STATIC || !a->pin_ok || !a->topo)
		return;
	if (ag_static_prepare(a, &err) < 0) {
		agent_warn("static mapping: %s; the job runs unpinned",
			   err.text);
		cm_agent_result_warn(&a->res, err.text);
	}
}

static void teardown(struct agent *a)
{
	cm_collect_free(a->col);
	cm_tracker_free(a->tr);
	cm_topo_free(a->topo);
	if (a->allowed)
		hwloc_bitmap_free(a->allowed);
	cm_matrix_free(a->fresh);
	cm_matrix_free(a->live);
	cm_matrix_free(a->total);
	free(a->cur_os);
	free(a->cpu_s);
	free(a->app_cpu);
	cm_decide_guard_free(&a->g);
	cm_decide_free(&a->dec);
	if (a->static_os != a->st.os_pu)
		free(a->static_os);
	agent_static_free(&a->st);
	cm_model_free(&a->model);
	free(a->model_os);
	free(a->model_done);
	if (a->hashing)		/* the thread reads into a->hash_job */
		cm_app_exe_hash_finish(&a->hash_job, 1, &a->hash_cache,
				       a->res.exe_hash);
	free(a->cred);
	cm_agent_result_free(&a->res);
}

/* --record (record.h): a failure to record is a warning, never the
 * job's failure. */
static void record_start(struct agent *a)
{
	struct cm_error err;

	if (a->o->record && a->mode != CM_AGENT_MODE_OFF &&
	    !(a->rec = cm_record_open(a->o->record, &err)))
		cm_agent_result_warn(&a->res, err.text);
}

static void record_end(struct agent *a)
{
	struct cm_error err;

	if (a->rec && cm_record_close(a->rec, a->topo, a->dry_run,
				      a->res.mode, &err) < 0)
		cm_agent_result_warn(&a->res, err.text);
	a->rec = NULL;
}

int agent_run(const struct cm_agent_opts *o, int argc, char *argv[])
{
	struct agent a;
	int rc;

	if (o->replay)
		return cm_replay_run(o->replay, o->output);
	memset(&a, 0, sizeof(a));
	if (setup(&a, o) < 0) {
		teardown(&a);
		return 1;
	}
	agent_info("started (mode %s%s)", a.res.mode,
		   a.dry_run ? ", dry run" : "");
	add_initial_roots(&a);
	record_start(&a);
	start_collector(&a);
	scan(&a);
	a.next_scan_ns = now_ns() + o->scan_ms * 1000000ull;
	prepare_static(&a);
	if (a.static_os)
		ag_static_apply_new(&a);
	signal_ready(&a);
	loop(&a);
	drain(&a);
	ag_read_thread_cpu(&a);
	cm_matrix_merge(a.total, a.fresh, 1.0);
	record_end(&a);
	rc = ag_write_result(&a);
	teardown(&a);
	return rc;
}
