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
	for (int i = a->cap; i < ncap; i++) {
		a->cur_os[i] = -1;
		a->cpu_s[i] = -1;
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

/* ---- identity ------------------------------------------------------- */

/* 0, or -1 when the command line cannot be read (yet: in the middle of
 * an exec it is empty). */
static int read_cmdline(struct agent *a, pid_t pid)
{
	char path[64], buf[8192], *args[256];
	int fd, argc = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n && argc < 256; i += (ssize_t)strlen(buf + i)
	     + 1)
		args[argc++] = buf + i;
	return cm_agent_result_set_argv(&a->res, argc, args);
}

/* The first root's executable and arguments; called again while it may
 * still exec (commap run holds the child before exec). */
static void refresh_identity(struct agent *a)
{
	const struct cm_tracked_proc *p = cm_tracker_proc(a->tr, 0);
	char path[64], exe[sizeof(a->res.executable)];
	ssize_t n;

	if (!p || !p->alive)
		return;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)p->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	if (strcmp(exe, a->res.executable) == 0)
		return;
	/* The executable is taken only with its command line, so that the
	 * two always belong together (exe changes before argv in exec). */
	if (read_cmdline(a, p->pid) == 0)
		memcpy(a->res.executable, exe, (size_t)n + 1);
}

/* ---- application identity (learned mappings) ------------------------ */

/* Is pid still running its parent's executable (forked, not exec'ed yet:
 * `commap run` holds its child before exec, slurmstepd its tasks)?  The
 * same file is the same (dev, inode) behind /proc/PID/exe. */
static int runs_parent_exe(pid_t pid)
{
	char path[64], ppath[64];
	struct stat st, pst;
	uint64_t start;
	pid_t ppid;

	if (cm_proc_read_stat("/proc", pid, pid, &start, &ppid) < 0 ||
	    ppid <= 1)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	snprintf(ppath, sizeof(ppath), "/proc/%d/exe", (int)ppid);
	if (stat(path, &st) < 0 || stat(ppath, &pst) < 0)
		return 0;
	return st.st_dev == pst.st_dev && st.st_ino == pst.st_ino;
}

/* Under SPANK: have all the node's tasks been announced?  The first
 * task's environment (once it has exec'ed) says how many the node has
 * (SLURM_STEP_TASKS_PER_NODE, SLURM_NODEID); 0 when it does not say. */
static int all_tasks_in(struct agent *a, pid_t first)
{
	char tpn[512], node[32];
	int n;

	if (cm_proc_read_env("/proc", first, "SLURM_STEP_TASKS_PER_NODE", tpn,
			     sizeof(tpn)) < 0 ||
	    cm_proc_read_env("/proc", first, "SLURM_NODEID", node,
			     sizeof(node)) < 0)
		return 0;
	n = cm_app_tasks_on_node(tpn, atoi(node));
	return n > 0 && a->roots_added >= n;
}

/* The first root has exec'ed its program (or 1 s has passed), and under
 * SPANK every task of the node is known: as many task lines as its
 * environment announces, else no line for a moment (the model's key
 * counts the node's ranks). */
static int app_identity_ready(struct agent *a)
{
	const struct cm_tracked_proc *p = cm_tracker_proc(a->tr, 0);
	uint64_t now = now_ns();
	int execd;

	if (!p || !p->alive)
		return 0;
	execd = !runs_parent_exe(p->pid);
	if (a->o->tasks_from_stdin && a->stdin_open &&
	    now - a->last_task_line_ns < TASK_LINES_QUIET_NS &&
	    !(execd && all_tasks_in(a, p->pid)))
		return 0;
	return now - a->t0_ns >= IDENTITY_REFRESH_NS || execd;
}

/* exe_hash and argv_shape of the first root (app_identity.h), once.  A
 * large executable is hashed by a thread while the loop goes on: the
 * identity settles at a later scan (or now, with wait: end of run). */
static void settle_app_identity(struct agent *a, int wait)
{
	const struct cm_tracked_proc *p = cm_tracker_proc(a->tr, 0);
	char path[64];
	struct cm_error err;
	int argc = 0, rc;

	if (!a->hashing) {
		refresh_identity(a);
		if (read_cmdline(a, p->pid) < 0)
			return;		/* mid-exec: at the next scan */
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)p->pid);
		rc = cm_app_exe_hash_start(&a->hash_job, path,
					   a->res.executable[0] ?
					   a->res.executable : NULL,
					   &a->hash_cache, a->res.exe_hash,
					   &err);
		if (rc < 0)
			agent_info("no executable hash: %s", err.text);
		while (a->res.argv && a->res.argv[argc])
			argc++;
		cm_app_argv_shape(argc, a->res.argv, a->res.executable,
				  a->res.argv_shape,
				  sizeof(a->res.argv_shape));
		a->hashing = rc == 0;
		if (a->hashing)
			agent_info("hashing the executable in the background "
				   "(t=%.3f s)", elapsed_s(a));
	}
	if (a->hashing && !cm_app_exe_hash_finish(&a->hash_job, wait,
						  &a->hash_cache,
						  a->res.exe_hash))
		return;
	a->hashing = 0;
	a->app_settled = 1;
	agent_info("application %s, %s (t=%.3f s)", a->res.exe_hash[0] ?
		   a->res.exe_hash : "(no hash)", a->res.argv_shape,
		   elapsed_s(a));
}

static void read_thread_cpu(struct agent *a)
{
	long tck = sysconf(_SC_CLK_TCK);

	for (int i = 0; i < cm_tracker_nthreads(a->tr); i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(a->tr,
								       i);
		const struct cm_tracked_proc *p = cm_tracker_proc(a->tr,
								  th->proc);
		char path[96], buf[1024], *q;
		unsigned long ut, st;
		int fd;
		ssize_t n;

		if (!th->alive)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat",
			 (int)p->pid, (int)th->tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		q = strrchr(buf, ')');
		/* after "pid (comm)": state, then fields 4..13, utime 14 */
		if (q && sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u "
				"%*u %*u %lu %lu", &ut, &st) == 2)
			a->cpu_s[i] = (double)(ut + st) / (double)tck;
	}
}

/* ---- learned mappings (docs/agent.md "Learned mappings") ------------- */

/* The model is not (or no longer) used: one line, and the result says
 * why.  Learned runs on as dynamic; threads already pinned stay. */
static void model_drop(struct agent *a, const char *why)
{
	char line[CM_ERROR_TEXT_MAX + 64];

	snprintf(line, sizeof(line), "%s: %s", a->model.n ? "learned model "
		 "abandoned" : "no learned model", why);
	agent_warn("%s; running dynamic", line);
	cm_agent_result_warn(&a->res, line);
	a->res.model.state = CM_RESULT_MODEL_UNUSED;
	snprintf(a->res.model.reason, sizeof(a->res.model.reason), "%s", why);
	a->model_active = 0;
	a->model_pending = 0;
	if (a->mode == CM_AGENT_MODE_LEARNED) {
		a->mode = CM_AGENT_MODE_DYNAMIC;
		a->res.mode = "dynamic";
	}
}

static int distinct_ranks(const struct agent *a)
{
	int n = 0;

	for (int i = 0; i < cm_tracker_nprocs(a->tr); i++) {
		int r = cm_tracker_proc(a->tr, i)->rank, seen = 0;

		for (int j = 0; j < i && !seen; j++)
			seen = cm_tracker_proc(a->tr, j)->rank == r;
		n += !seen;
	}
	return n;
}

static long long step_uid(const struct agent *a)
{
	const struct cm_tracked_proc *p = cm_tracker_proc(a->tr, 0);
	uid_t uid = a->o->uid;

	if (uid == (uid_t)-1 && (!p || cm_proc_read_uid("/proc", p->pid,
							&uid) < 0))
		return -1;
	return (long long)uid;
}

/* The model's communicating identities mapped onto this step's PUs (the
 * allocation may differ from the model's run): model_os[k] is identity
 * k's OS PU, -1 for identities without communication (left to the
 * scheduler, as in dynamic mode).  When the topology is the one of the
 * model's last run, equivalent placements are aligned to its last
 * mapping, so a rerun lands where the last one ended. */
static int model_prepare(struct agent *a, struct cm_error *err)
{
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	const struct cm_model *m = &a->model;
	int *idx = malloc((size_t)(m->n ? m->n : 1) * sizeof(int));
	int *pu = malloc((size_t)(m->n ? m->n : 1) * sizeof(int));
	int *cur = malloc((size_t)(m->n ? m->n : 1) * sizeof(int));
	struct cm_matrix *sub = NULL;
	int nc = 0, rc = -1;
	char *cpus = a->topo ? cm_topo_cpulist(a->topo) : NULL;

	a->model_os = malloc((size_t)(m->n ? m->n : 1) * sizeof(int));
	if (!idx || !pu || !cur || !a->model_os) {
		cm_errorf(err, ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < m->n; k++) {
		a->model_os[k] = -1;
		if (cm_matrix_row_sum(m->m, k) > 0)
			idx[nc++] = k;
	}
	sub = cm_matrix_new(nc);
	for (int x = 0; sub && x < nc; x++)
		for (int y = x + 1; y < nc; y++)
			cm_matrix_add(sub, x, y, cm_matrix_get(m->m, idx[x],
							       idx[y]));
	if (!sub) {
		cm_errorf(err, ENOMEM, "out of memory");
		goto out;
	}
	mo.oversubscribe = nc > cm_topo_npus(a->topo);
	if (nc && cm_map(a->topo, sub, &mo, pu, err) < 0)
		goto out;
	if (m->last_os && m->cpuset && cpus && !strcmp(m->cpuset, cpus)) {
		for (int x = 0; x < nc; x++)
			cur[x] = m->last_os[idx[x]] < 0 ? -1 :
				 cm_topo_pu_by_os_index(a->topo,
							m->last_os[idx[x]]);
		cm_map_align(a->topo, nc, cur, pu);
	}
	for (int x = 0; x < nc; x++)
		a->model_os[idx[x]] = cm_topo_pu_os_index(a->topo, pu[x]);
	a->model_cost = nc ? cm_cost(a->topo, sub, pu) : 0;
	a->model_pending = nc;
	rc = 0;
out:
	free(cpus);
	cm_matrix_free(sub);
	free(idx);
	free(pu);
	free(cur);
	return rc;
}

/* Before the program runs: libcurl initialised and a credential made,
 * so that neither delays the fetch (each costs tens of ms on a loaded
 * node, measured). */
static void prepare_model_fetch(struct agent *a)
{
	struct cm_deliver_opts d = { .service_url = a->o->service };
	struct cm_error err;

	cm_service_prepare();
	a->cred = cm_service_credential(&d, &err);
	a->cred_ns = now_ns();
	if (!a->cred)
		agent_debug("no credential yet: %s", err.text);
}

/* A credential made at start is used once, if still fresh (munge's
 * default lifetime is 300 s). */
static char *take_credential(struct agent *a)
{
	char *c = a->cred;

	a->cred = NULL;
	if (c && now_ns() - a->cred_ns > CRED_FRESH_NS) {
		free(c);
		c = NULL;
	}
	return c;
}

/* At step start, once the application is known: ask the service. */
static void model_fetch_now(struct agent *a)
{
	struct cm_deliver_opts d = { .service_url = a->o->service,
				     .timeout_ms = CM_MODEL_FETCH_TIMEOUT_MS };
	struct cm_model_key k = { .exe_hash = a->res.exe_hash,
				  .ranks = distinct_ranks(a),
				  .argv_shape = a->res.argv_shape,
				  .uid = step_uid(a) };
	struct cm_error err;
	uint64_t t = now_ns();
	char *cred;
	int rc;

	a->model_wanted = 0;
	if (!a->res.exe_hash[0]) {
		model_drop(a, "the executable could not be identified");
		return;
	}
	if (!a->topo) {
		model_drop(a, "no topology to map onto");
		return;
	}
	cred = take_credential(a);
	rc = cm_model_fetch(&d, &k, cred, &a->model, &err);
	free(cred);
	if (rc <= 0) {
		/* 0: no model for this identity; -1: service down, slow, ... */
		model_drop(a, err.text);
		return;
	}
	if (model_prepare(a, &err) < 0) {
		model_drop(a, err.text);
		return;
	}
	a->model_active = 1;
	a->res.model.state = CM_RESULT_MODEL_USED;
	a->res.model.id = a->model.id;
	a->res.model.runs = a->model.runs;
	a->res.model.distance = -1;
	agent_info("learned model %lld (%d runs, %d threads, %d placed) in "
		   "%.1f ms (t=%.3f s): pinning threads as they appear",
		   a->model.id, a->model.runs, a->model.n, a->model_pending,
		   ms_since(t), elapsed_s(a));
}

static int model_done_grow(struct agent *a, int n)
{
	char *d;

	if (n <= a->model_done_cap)
		return 0;
	d = realloc(a->model_done, (size_t)n * 2);
	if (!d)
		return -1;
	memset(d + a->model_done_cap, 0, (size_t)(n * 2 - a->model_done_cap));
	a->model_done = d;
	a->model_done_cap = n * 2;
	return 0;
}

/* Threads whose identity is final go to their learned PU; one whose
 * process's rank is still provisional waits for it (proc_track.h).  A
 * thread the model does not know in a rank's first process (index below
 * CM_IDENT_PROC_STRIDE) means another shape: the model is dropped; in a
 * further process of the rank (a helper, a tool's fork) it is left to
 * the scheduler. */
static void model_apply_new(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr), moved = 0, wait = -1;
	int *want = malloc((size_t)(n ? n : 1) * sizeof(int));

	if (!want || model_done_grow(a, n) < 0) {
		free(want);
		return;
	}
	for (int i = 0; i < n; i++)
		want[i] = -1;
	for (int i = a->model_applied; a->model_active && i < n; i++) {
		const struct cm_tracked_thread *th =
			cm_tracker_thread(a->tr, i);
		int rank, index, k;
		char why[160];

		if (a->model_done[i])
			continue;
		if (cm_tracker_thread_ident(a->tr, i, &rank, &index) != 1) {
			wait = wait < 0 ? i : wait;
			continue;
		}
		a->model_done[i] = 1;
		k = cm_model_find(&a->model, rank, index);
		if (k < 0 && index < CM_IDENT_PROC_STRIDE) {
			snprintf(why, sizeof(why), "thread (rank %d, index "
				 "%d) is not in the model (%d threads per "
				 "rank): another shape", rank, index,
				 a->model.threads_per_rank);
			model_drop(a, why);
			break;
		}
		if (k < 0 || a->model_os[k] < 0)
			continue;
		a->model_pending--;
		if (!th->alive || a->cur_os[i] >= 0)
			continue;
		want[i] = cm_topo_pu_by_os_index(a->topo, a->model_os[k]);
		moved += want[i] >= 0;
	}
	a->model_applied = wait >= 0 ? wait : n;
	/* The learned PUs, within the placement invariant (threads the
	 * model does not know may hold some of them). */
	if (moved)
		moved = ag_apply_within_invariant(a, want) > 0;
	free(want);
	if (moved) {
		ag_record_mapping(a, a->model_cost, "learned");
		a->model_pin_ns = now_ns();
	}
}

/* Is tid bound to exactly PU os?  1 yes, 0 no, -1 unknown (gone). */
static int bound_to(struct agent *a, pid_t tid, int os)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	int rc = -1;

	if (set && hwloc_get_proc_cpubind(cm_topo_hwloc(a->topo), tid, set,
					  HWLOC_CPUBIND_THREAD) == 0)
		rc = hwloc_bitmap_weight(set) == 1 &&
		     hwloc_bitmap_isset(set, (unsigned)os);
	hwloc_bitmap_free(set);
	return rc;
}

/* A learned pin made early can be undone by the program itself: hwloc's
 * x86 discovery (Open MPI's MPI_Init calls it) binds the calling thread
 * to each PU in turn, then restores the binding it found first: Slurm's,
 * when our pin came in between.  For LEARNED_HOLD_NS after the last
 * learned pin, every scan reads the placed threads' bindings back and
 * sets again one that changed (not a migration: its place is the same).
 * Later a program binding its own threads is left alone. */
static void model_hold_pins(struct agent *a)
{
	struct cm_error err;

	if (a->dry_run || !a->pin_ok || !a->model_pin_ns ||
	    now_ns() - a->model_pin_ns > LEARNED_HOLD_NS)
		return;
	for (int i = 0; i < cm_tracker_nthreads(a->tr) && i < a->cap; i++) {
		const struct cm_tracked_thread *th =
			cm_tracker_thread(a->tr, i);

		if (!th->alive || a->cur_os[i] < 0 ||
		    bound_to(a, th->tid, a->cur_os[i]) != 0 ||
		    !cm_tracker_verify_thread(a->tr, i))
			continue;
		if (cm_pin_thread(cm_topo_hwloc(a->topo), a->allowed, th->tid,
				  a->cur_os[i], &err) == 0)
			agent_info("thread %d (tid %d) was rebound by the "
				   "program: pinned again to PU %d", i,
				   (int)th->tid, a->cur_os[i]);
	}
}

/* Learned mode moves threads again only when detection clearly
 * disagrees: the run's detected matrix's own best mapping of the placed
 * communicating threads beats the current placement by more than 20%
 * in two consecutive intervals.  Then the run goes on as dynamic. */
static int learned_disagrees(struct agent *a, const struct cm_place_set *s,
			     const struct cm_matrix *sub)
{
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	int *cur = malloc((size_t)(s->n ? s->n : 1) * sizeof(int));
	int *pu = malloc((size_t)(s->n ? s->n : 1) * sizeof(int));
	double cost_cur = -1, cost_new = -1;
	struct cm_error err;
	int worse = 0;

	if (cur && pu && s->n >= 2 && !ag_current_pus(a, s, cur)) {
		mo.oversubscribe = s->n > cm_topo_npus(a->topo);
		if (cm_map(a->topo, sub, &mo, pu, &err) == 0) {
			cost_cur = cm_cost(a->topo, sub, cur);
			cost_new = cm_cost(a->topo, sub, pu);
			worse = cm_remap_worth(cost_cur, cost_new,
					       LEARNED_DISAGREE_GAIN);
		}
	}
	free(cur);
	free(pu);
	a->disagree = worse ? a->disagree + 1 : 0;
	if (worse)
		agent_debug("learned: detection's mapping costs %.4g vs %.4g "
			    "(%d intervals)", cost_new, cost_cur, a->disagree);
	if (a->disagree < LEARNED_DISAGREE_INTERVALS)
		return 0;
	agent_warn("learned: detection disagrees with the model (cost %.4g "
		   "vs %.4g for %d intervals): remapping dynamically",
		   cost_new, cost_cur, a->disagree);
	a->mode = CM_AGENT_MODE_DYNAMIC;
	a->model_active = 0;
	return 1;
}

/* The live threads the learned mapping placed that communicate in the
 * whole run's matrix so far (learned mode judges on everything seen, not
 * on the aged recent matrix: a few noisy intervals must not overturn a
 * model learned over whole runs). */
static int placed_set_build(struct agent *a, struct cm_place_set *s)
{
	int n = cm_tracker_nthreads(a->tr);
	int nm = cm_matrix_nthreads(a->total);

	s->n = 0;
	s->idx = malloc((size_t)(n ? n : 1) * sizeof(int));
	s->pos = malloc((size_t)(n ? n : 1) * sizeof(int));
	if (!s->idx || !s->pos)
		return -1;
	for (int i = 0; i < n; i++) {
		s->pos[i] = -1;
		if (!cm_tracker_thread(a->tr, i)->alive || i >= nm ||
		    a->cur_os[i] < 0 || !(cm_matrix_row_sum(a->total, i) > 0))
			continue;
		s->pos[i] = s->n;
		s->idx[s->n++] = i;
	}
	return 0;
}

/* The events since the last fold, corrected for co-location, into the
 * live (aged) and total matrices. */
static void fold_fresh(struct agent *a)
{
	ag_correct_colocation(a);
	cm_matrix_merge(a->live, a->fresh, 1.0);
	cm_matrix_merge(a->total, a->fresh, 1.0);
	cm_matrix_free(a->fresh);
	a->fresh = cm_matrix_new(0);
}

/* Age the live matrix for the wall time since it was last aged
 * (cm_remap_aging: alpha per 200 ms). */
static void age_live(struct agent *a)
{
	uint64_t now = now_ns();
	int ms = (int)((now - a->last_aged_ns) / 1000000u);

	cm_matrix_age(a->live, cm_remap_aging(a->o->alpha, ms));
	a->last_aged_ns = now;
}

/* Inside an interval longer than CHECKPOINT_MIN_INTERVAL_MS (LHMapping
 * §3.4.2 grows it to 1 s while the pattern is stable), every
 * CM_REMAP_INTERVAL_MS_START: age the live matrix, fold the events so far
 * into it, and end the interval now when the heaviest partners of
 * CM_REMAP_PARTNER_THRESHOLD threads have changed (SPCD §IV-A's filter,
 * as at an interval's end) or a change is waiting for its recheck.  The matrix is then as current as with
 * 200 ms intervals, so a change after a long stable phase is decided on
 * at the next checkpoint that sees it rather than at the end of a 1 s
 * interval.  Nothing is decided here: interval_end() does it. */
static void checkpoint(struct agent *a)
{
	int changed;

	if (a->mode != CM_AGENT_MODE_DYNAMIC || !a->topo ||
	    (!a->pin_ok && !a->dry_run) || !a->fresh ||
	    a->interval_ms <= CHECKPOINT_MIN_INTERVAL_MS)
		return;
	age_live(a);
	fold_fresh(a);
	changed = ag_partners_compare(a, 0);
	/* A change seen but not yet worth a remap (recheck) is looked at
	 * again at each checkpoint, not a long interval later. */
	if (changed >= CM_REMAP_PARTNER_THRESHOLD || a->recheck > 0) {
		agent_debug("checkpoint: %d partners changed%s, interval ended "
			    "early", changed, a->recheck > 0 ? " (recheck)" :
			    "");
		a->next_interval_ns = now_ns();
	}
}

/* Learned mode at the end of an interval: 1 when it hands over to the
 * dynamic decision below (detection disagreed), else 0. */
static int learned_interval(struct agent *a)
{
	struct cm_place_set s = { 0 };
	struct cm_matrix *sub = NULL;
	int rc = 0;

	if (placed_set_build(a, &s) == 0) {
		sub = cm_place_sub_matrix(a->total, &s);
		if (sub)
			rc = learned_disagrees(a, &s, sub);
	}
	cm_matrix_free(sub);
	cm_place_set_free(&s);
	if (!rc)
		age_live(a);
	return rc;
}

/* End of an interval: merge, decide, map, age. */
static void log_sampling(struct agent *a,
			 const struct cm_collect_stats *st);

static void interval_end(struct agent *a)
{
	struct cm_remap_input in = { .interval_ms = a->interval_ms,
				     .partner_threshold =
					CM_REMAP_PARTNER_THRESHOLD };
	struct cm_remap_decision d;
	struct cm_place_set s = { 0 };
	struct cm_matrix *sub = NULL;

	a->res.stats.intervals++;
	fold_fresh(a);
	read_thread_cpu(a);
	/* The overhead knob (sample_rate.h): rarely changes the period. */
	if (cm_collect_adapt_period(a->col, a->cpu_s, a->cap, a->fresh,
				    NULL) > 0 && !a->cost_logged) {
		struct cm_collect_stats st;

		cm_collect_stats(a->col, &st);
		log_sampling(a, &st);
	}
	refresh_identity(a);
	if (a->mode == CM_AGENT_MODE_LEARNED && a->topo && a->fresh &&
	    (a->pin_ok || a->dry_run) && !learned_interval(a))
		return;
	if (a->mode != CM_AGENT_MODE_DYNAMIC || !a->topo ||
	    (!a->pin_ok && !a->dry_run) || !a->fresh)
		return;
	in.partners_changed = ag_partners_compare(a, 1);
	if (ag_live_set_build(a, &s) < 0)
		goto out;
	sub = cm_place_sub_matrix(a->live, &s);
	if (!sub)
		goto out;
	in.comm_total = cm_matrix_total(sub);
	in.have_mapping = a->res.ntimeline > 0;
	for (int k = 0; k < s.n; k++)
		in.unplaced += a->cur_os[s.idx[k]] < 0;
	in.recheck = a->recheck;
	cm_remap_decide(&in, &d);
	agent_debug("interval %d ms: %d partners changed, %d unplaced: %s",
		    a->interval_ms, in.partners_changed, in.unplaced,
		    d.reason);
	if (d.pattern_changed)
		a->recheck = CM_REMAP_RECHECK_INTERVALS;
	else if (a->recheck > 0)
		a->recheck--;
	if (d.compute && !ag_guard_holding(a) &&
	    ag_remap(a, &s, sub, d.reason) == CM_REMAP_FULL)
		a->recheck = 0;
	/* the progress guard's window before the next mapping starts now */
	ag_guard_mark(a);
	a->interval_ms = d.next_interval_ms;
	/* LHMapping §3.4.1: age after each grouping computation (for the
	 * time since the last aging: checkpoints age too). */
	age_live(a);
out:
	cm_matrix_free(sub);
	cm_place_set_free(&s);
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
static void log_sampling(struct agent *a, const struct cm_collect_stats *st)
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
		log_sampling(a, &st);
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
	if (!a->app_settled && (a->hashing || app_identity_ready(a)))
		settle_app_identity(a, 0);
	if (a->app_settled && a->model_wanted) {
		model_fetch_now(a);
		/* threads created while the model was on its way */
		if (a->model_active && cm_tracker_scan(a->tr) > 0 &&
		    ensure_threads(a, cm_tracker_nthreads(a->tr)) == 0)
			sync_collector(a);
	}
	if (a->model_active) {
		model_apply_new(a);
		model_hold_pins(a);
	}
	if (now_ns() - a->t0_ns < IDENTITY_REFRESH_NS || added > 0)
		refresh_identity(a);
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
			checkpoint(a);
			a->next_checkpoint_ns = now + CHECKPOINT_NS;
		}
		if (now >= a->next_interval_ns) {
			interval_end(a);
			if (a->col)
				log_collect_problem(a);
			now = now_ns();
			a->next_interval_ns = now +
				(uint64_t)a->interval_ms * 1000000ull;
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

/* ---- result --------------------------------------------------------- */

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
		s->faults = cs.fault_hinting;
		s->sample_period_us = (unsigned)(cs.period / 1000u);
		for (int k = 0; k < cs.nperiods && k < 8; k++) {
			s->period_t[k] = cs.periods[k].t;
			s->period_us[k] = (unsigned)(cs.periods[k].period /
						     1000u);
		}
		s->nperiods = cs.backend != CM_COLLECT_SAMPLE ? 0 :
			      (cs.nperiods < 8 ? cs.nperiods : 8);
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

/* With --output and --service, the result is also uploaded (commap run
 * with COMMAP_SERVICE: every run improves the model). */
static void upload_copy(struct agent *a, const char *doc)
{
	if (a->o->service && deliver(a, doc) != 0)
		agent_warn("the result is in %s only", a->o->output);
}

static int write_result(struct agent *a)
{
	struct cm_error err;
	char *doc;
	int rc;

	clock_gettime(CLOCK_REALTIME, &a->res.ended_at);
	if (!a->app_settled && (a->hashing || (cm_tracker_proc(a->tr, 0) &&
					       cm_tracker_proc(a->tr, 0)->alive)))
		settle_app_identity(a, 1);
	cm_tracker_settle(a->tr);	/* every thread gets an identity */
	fill_identity(a);
	fill_threads(a);
	fill_topology(a);
	fill_stats(a);
	fill_model_distance(a);
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
	a->interval_ms = CM_REMAP_INTERVAL_MS_START;
	a->t0_ns = now_ns();
	a->next_scan_ns = a->t0_ns;
	a->next_interval_ns = a->t0_ns + (uint64_t)a->interval_ms * 1000000u;
	a->next_checkpoint_ns = a->t0_ns + CHECKPOINT_NS;
	a->last_aged_ns = a->t0_ns;
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
		prepare_model_fetch(a);
	if (o->mode == CM_AGENT_MODE_LEARNED && !o->service)
		model_drop(a, "no service configured (--service or "
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
	free(a->g_cpu);
	free(a->g_wait);
	free(a->g_cpu_a);
	free(a->g_wait_a);
	free(a->g_prev_os);
	free(a->partner);
	free(a->undo_os);
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
	read_thread_cpu(&a);
	cm_matrix_merge(a.total, a.fresh, 1.0);
	record_end(&a);
	rc = write_result(&a);
	teardown(&a);
	return rc;
}
