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
 * delivered to the service / spool (upload.h).
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
#include <time.h>
#include <unistd.h>

#include <hwloc.h>

#include "agent.h"
#include "agent_result.h"
#include "collect.h"
#include "commap/cost.h"
#include "commap/mapping.h"
#include "commap/topology.h"
#include "pin.h"
#include "proc_track.h"
#include "remap_policy.h"
#include "upload.h"

#define MAX_POLLFDS 256
#define IDENTITY_REFRESH_NS 1000000000ull	/* follow exec for 1 s */

struct agent {
	const struct cm_agent_opts *o;
	enum cm_agent_mode mode;	/* learned runs as dynamic for now */
	struct cm_tracker *tr;
	struct cm_collector *col;	/* NULL: no detection */
	struct cm_topo *topo;		/* restricted to the allowed PUs */
	hwloc_bitmap_t allowed;		/* NULL in a dry run */
	int dry_run;
	int pin_ok;			/* pinning not disabled by a failure */
	struct cm_matrix *fresh;	/* this interval's events */
	struct cm_matrix *live;		/* aged (LHMapping §3.4.1) */
	struct cm_matrix *total;	/* everything, for the result */
	int *cur_os;			/* per tracker thread: OS PU, -1 */
	double *cpu_s;			/* per tracker thread */
	int cap;
	int *partner;
	int npartner;
	int interval_ms;
	uint64_t t0_ns, next_scan_ns, next_interval_ns;
	int stdin_open;
	char line[256];
	size_t linelen;
	int roots_added;
	struct agent_static st;
	int *static_os;			/* static mode: OS PU of thread k */
	int nstatic;
	int static_applied;		/* threads handled by static mode */
	struct cm_agent_result res;
	double mapping_ms;
	char problem_logged[CM_ERROR_TEXT_MAX];
};

/* ---- time --------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double elapsed_s(const struct agent *a)
{
	return (double)(now_ns() - a->t0_ns) / 1e9;
}

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
static void add_allowed(struct agent *a, pid_t pid)
{
	hwloc_bitmap_t mask;
	struct cm_error err;
	int grew;

	if (a->dry_run)
		return;
	if (cm_pin_allowed_union(&pid, 1, &mask, &err) < 0)
		return;
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

static void add_root(struct agent *a, pid_t pid, int rank)
{
	struct cm_error err;

	if (cm_tracker_add_root(a->tr, pid, rank, &err) < 0) {
		agent_warn("%s: refused%s", err.text, errno == EPERM ?
			   " (not the step's user)" : "");
		return;
	}
	a->roots_added++;
	add_allowed(a, pid);
	if (rank >= 0)
		agent_info("following process %d (rank %d)", (int)pid, rank);
	else
		agent_info("following process %d", (int)pid);
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
		pid_t pid;
		int rank;

		if (buf[i] != '\n') {
			if (a->linelen < sizeof(a->line) - 1)
				a->line[a->linelen++] = buf[i];
			continue;
		}
		a->line[a->linelen] = '\0';
		a->linelen = 0;
		switch (cm_agent_parse_task_line(a->line, &pid, &rank, &err)) {
		case 1:
			add_root(a, pid, rank);
			break;
		case -1:
			agent_warn("%s", err.text);
			break;
		}
	}
}

/* ---- identity ------------------------------------------------------- */

static void read_cmdline(struct agent *a, pid_t pid)
{
	char path[64], buf[8192], *args[256];
	int fd, argc = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n && argc < 256; i += (ssize_t)strlen(buf + i)
	     + 1)
		args[argc++] = buf + i;
	cm_agent_result_set_argv(&a->res, argc, args);
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
	memcpy(a->res.executable, exe, (size_t)n + 1);
	read_cmdline(a, p->pid);
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

/* ---- pinning -------------------------------------------------------- */

/* Move tracker thread i to OS PU os, recording the migration.  The thread
 * is verified first (a reused tid is never touched). */
static void move_thread(struct agent *a, int i, int os)
{
	const struct cm_tracked_thread *th = cm_tracker_thread(a->tr, i);
	struct cm_error err;

	if (a->cur_os[i] == os || !th->alive)
		return;
	if (!a->dry_run) {
		if (!a->pin_ok || !cm_tracker_verify_thread(a->tr, i))
			return;
		if (cm_pin_thread(cm_topo_hwloc(a->topo), a->allowed, th->tid,
				  os, &err) < 0) {
			if (errno == ESRCH)
				return;
			agent_warn("%s; the job runs unpinned from now on",
				   err.text);
			cm_agent_result_warn(&a->res, err.text);
			a->pin_ok = 0;
			return;
		}
	}
	cm_agent_result_add_migration(&a->res, elapsed_s(a), i, a->cur_os[i],
				      os);
	agent_debug("thread %d (tid %d) -> PU %d", i, (int)th->tid, os);
	a->cur_os[i] = os;
	a->res.stats.pins++;
}

static void record_mapping(struct agent *a, double cost, const char *why)
{
	int n = cm_tracker_nthreads(a->tr);

	cm_agent_result_add_mapping(&a->res, elapsed_s(a), a->cur_os, n, cost,
				    why);
}

/* ---- static mode ---------------------------------------------------- */

/* A matrix file is mapped once onto the allowed PUs. */
static int static_prepare(struct agent *a, struct cm_error *err)
{
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	int n, *pu;

	if (a->st.os_pu) {
		a->static_os = a->st.os_pu;
		a->nstatic = a->st.n;
		return 0;
	}
	n = cm_matrix_nthreads(a->st.matrix);
	if (!a->topo)
		return cm_errorf(err, EINVAL, "no topology to map onto");
	mo.oversubscribe = n > cm_topo_npus(a->topo);
	pu = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	if (!pu)
		return cm_errorf(err, ENOMEM, "out of memory");
	if (cm_map(a->topo, a->st.matrix, &mo, pu, err) < 0) {
		free(pu);
		return -1;
	}
	for (int k = 0; k < n; k++)
		pu[k] = cm_topo_pu_os_index(a->topo, pu[k]);
	a->static_os = pu;
	a->nstatic = n;
	return 0;
}

/* Threads seen since the last call get their static PU. */
static void static_apply_new(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr), moved = 0;

	for (int i = a->static_applied; i < n; i++) {
		if (i >= a->nstatic)
			break;
		if (cm_topo_pu_by_os_index(a->topo, a->static_os[i]) < 0) {
			agent_warn("static mapping: PU %d of thread %d is not "
				   "in the step's CPUs; not pinned",
				   a->static_os[i], i);
			continue;
		}
		move_thread(a, i, a->static_os[i]);
		moved++;
	}
	a->static_applied = n;
	if (moved)
		record_mapping(a, -1, "static");
}

/* ---- dynamic mapping ------------------------------------------------ */

struct live_set {
	int *idx;	/* compact -> tracker index */
	int *pos;	/* tracker index -> compact, -1 */
	int n;
};

static void live_set_free(struct live_set *s)
{
	free(s->idx);
	free(s->pos);
}

/* Live threads that communicate: only they are mapped; the others are
 * left where the scheduler puts them. */
static int live_set_build(struct agent *a, struct live_set *s)
{
	int n = cm_tracker_nthreads(a->tr);
	int nm = cm_matrix_nthreads(a->live);

	s->n = 0;
	s->idx = malloc((size_t)(n ? n : 1) * sizeof(int));
	s->pos = malloc((size_t)(n ? n : 1) * sizeof(int));
	if (!s->idx || !s->pos)
		return -1;
	for (int i = 0; i < n; i++) {
		s->pos[i] = -1;
		if (!cm_tracker_thread(a->tr, i)->alive || i >= nm ||
		    !(cm_matrix_row_sum(a->live, i) > 0))
			continue;
		s->pos[i] = s->n;
		s->idx[s->n++] = i;
	}
	return 0;
}

static struct cm_matrix *sub_matrix(const struct cm_matrix *m,
				    const struct live_set *s)
{
	struct cm_matrix *sub = cm_matrix_new(s->n);

	for (int k = 0; sub && k < s->n; k++) {
		const struct cm_matrix_entry *row;
		int cnt = cm_matrix_row(m, s->idx[k], &row);

		for (int e = 0; e < cnt; e++) {
			int j = s->pos[row[e].col];

			if (j > k)
				cm_matrix_add(sub, k, j, row[e].w);
		}
	}
	return sub;
}

/* Current PU indices of the set; 0 if every thread is placed. */
static int current_pus(struct agent *a, const struct live_set *s, int *pu)
{
	int unplaced = 0;

	for (int k = 0; k < s->n; k++) {
		pu[k] = cm_topo_pu_by_os_index(a->topo, a->cur_os[s->idx[k]]);
		if (pu[k] < 0)
			unplaced++;
	}
	return unplaced;
}

static double ms_since(uint64_t t)
{
	return (double)(now_ns() - t) / 1e6;
}

/* Compute a candidate and apply it if it is worth it. */
static void remap(struct agent *a, const struct live_set *s,
		  const struct cm_matrix *sub, int unplaced, const char *why)
{
	struct cm_map_options mo = { .algorithm = CM_MAP_AUTO, .seed = 1 };
	int *cur = malloc((size_t)s->n * sizeof(int));
	int *pu = malloc((size_t)s->n * sizeof(int));
	struct cm_error err;
	double cost_cur = -1, cost_new;
	uint64_t t = now_ns();

	if (!cur || !pu)
		goto out;
	mo.oversubscribe = s->n > cm_topo_npus(a->topo);
	if (cm_map(a->topo, sub, &mo, pu, &err) < 0) {
		agent_warn("mapping failed: %s", err.text);
		goto out;
	}
	a->mapping_ms += ms_since(t);
	cost_new = cm_cost(a->topo, sub, pu);
	if (!current_pus(a, s, cur))
		cost_cur = cm_cost(a->topo, sub, cur);
	/* The mapper starts from scratch: of the equivalent placements,
	 * take the one that leaves most threads where they are. */
	if (cm_map_align(a->topo, s->n, cur, pu) < 0)
		agent_debug("aligning the new mapping failed: %s",
			    strerror(errno));
	if (!unplaced && !cm_remap_worth(cost_cur, cost_new, a->o->gain)) {
		agent_debug("candidate cost %.4g vs %.4g: not worth a remap",
			    cost_new, cost_cur);
		goto out;
	}
	for (int k = 0; k < s->n; k++)
		move_thread(a, s->idx[k], cm_topo_pu_os_index(a->topo, pu[k]));
	record_mapping(a, cost_new, why);
	agent_info("mapping applied (%s): %d threads, cost %.4g (was %.4g)",
		   why, s->n, cost_new, cost_cur);
out:
	free(cur);
	free(pu);
}

/* The partner filter (SPCD §IV-A) over the live matrix. */
static int partners_update(struct agent *a)
{
	int n = cm_tracker_nthreads(a->tr);
	int *now = malloc((size_t)(n ? n : 1) * sizeof(int));
	int changed;

	if (!now)
		return 0;
	cm_remap_partners(a->live, n, now);
	changed = cm_remap_partners_changed(a->partner, a->npartner, now, n);
	free(a->partner);
	a->partner = now;
	a->npartner = n;
	return changed;
}

/* End of an interval: merge, decide, map, age. */
static void interval_end(struct agent *a)
{
	struct cm_remap_input in = { .interval_ms = a->interval_ms,
				     .partner_threshold =
					CM_REMAP_PARTNER_THRESHOLD };
	struct cm_remap_decision d;
	struct live_set s = { 0 };
	struct cm_matrix *sub = NULL;

	a->res.stats.intervals++;
	cm_matrix_merge(a->live, a->fresh, 1.0);
	cm_matrix_merge(a->total, a->fresh, 1.0);
	cm_matrix_free(a->fresh);
	a->fresh = cm_matrix_new(0);
	read_thread_cpu(a);
	refresh_identity(a);
	if (a->mode != CM_AGENT_MODE_DYNAMIC || !a->topo ||
	    (!a->pin_ok && !a->dry_run) || !a->fresh)
		return;
	in.partners_changed = partners_update(a);
	if (live_set_build(a, &s) < 0)
		goto out;
	sub = sub_matrix(a->live, &s);
	if (!sub)
		goto out;
	in.comm_total = cm_matrix_total(sub);
	in.have_mapping = a->res.ntimeline > 0;
	for (int k = 0; k < s.n; k++)
		in.unplaced += a->cur_os[s.idx[k]] < 0;
	cm_remap_decide(&in, &d);
	agent_debug("interval %d ms: %d partners changed, %d unplaced: %s",
		    a->interval_ms, in.partners_changed, in.unplaced,
		    d.reason);
	if (d.compute)
		remap(a, &s, sub, in.unplaced, d.reason);
	a->interval_ms = d.next_interval_ms;
	/* LHMapping §3.4.1: age after each grouping computation. */
	cm_matrix_age(a->live, a->o->alpha);
out:
	cm_matrix_free(sub);
	live_set_free(&s);
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

static void start_collector(struct agent *a)
{
	const struct cm_agent_opts *o = a->o;
	struct cm_collect_opts co;
	struct cm_error err;

	if (o->mode == CM_AGENT_MODE_OFF)
		return;
	if (o->backend == CM_AGENT_BACKEND_FAULT) {
		detection_off(a, "the fault backend alone is not available "
			      "in this agent yet (use sample or auto)");
		return;
	}
	if (o->add_fault)
		agent_info("+fault: not available yet, ignored");
	cm_collect_opts_default(&co);
	co.backend = o->backend == CM_AGENT_BACKEND_HW ? CM_COLLECT_HW :
		     o->backend == CM_AGENT_BACKEND_SAMPLE ? CM_COLLECT_SAMPLE :
		     CM_COLLECT_AUTO;
	co.period_ns = (uint64_t)o->period_us * 1000u;
	a->col = cm_collect_new(&co, a->tr, &err);
	if (!a->col) {
		detection_off(a, err.text);
		return;
	}
	{
		struct cm_collect_stats st;

		cm_collect_stats(a->col, &st);
		a->res.backend = st.backend == CM_COLLECT_HW ? "hw" : "sample";
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
		agent_debug("%d new threads (%d in all)", added,
			    cm_tracker_nthreads(a->tr));
	if (a->static_os && a->topo)
		static_apply_new(a);
	if (now_ns() - a->t0_ns < IDENTITY_REFRESH_NS || added > 0)
		refresh_identity(a);
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
		now = now_ns();
		if (now >= a->next_scan_ns) {
			scan(a);
			a->next_scan_ns = now + a->o->scan_ms * 1000000ull;
		}
		if (now >= a->next_interval_ns) {
			interval_end(a);
			if (a->col)
				log_collect_problem(a);
			a->next_interval_ns = now_ns() +
				(uint64_t)a->interval_ms * 1000000ull;
		}
	}
	agent_info("finishing: %s", why);
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
	if (uid == (uid_t)-1 && (!p || cm_proc_read_uid(NULL, p->pid,
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
	for (int i = 0; i < n; i++) {
		const struct cm_tracked_thread *t = cm_tracker_thread(a->tr, i);
		const struct cm_tracked_proc *p = cm_tracker_proc(a->tr,
								  t->proc);

		th[i].rank = p->rank;
		th[i].index = t->index;
		th[i].tid = t->tid;
		th[i].pid = p->pid;
		th[i].cpu_s = i < a->cap ? a->cpu_s[i] : -1;
		if (p->rank + 1 > ranks)
			ranks = p->rank + 1;
	}
	cm_agent_result_set_threads(&a->res, th, n);
	a->res.ranks = n ? ranks : 0;
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
		s->lost = cs.lost;
		s->decoded = cs.backend == CM_COLLECT_HW ? cs.ours : cs.decoded;
		s->sample_period_us = (unsigned)(cs.period / 1000u);
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

static int write_result(struct agent *a)
{
	struct cm_error err;
	char *doc;
	int rc;

	clock_gettime(CLOCK_REALTIME, &a->res.ended_at);
	fill_identity(a);
	fill_threads(a);
	fill_topology(a);
	fill_stats(a);
	doc = cm_agent_result_json(&a->res, a->total, &err);
	if (!doc) {
		agent_warn("%s", err.text);
		return 1;
	}
	if (a->o->output) {
		rc = cm_result_write_file(a->o->output, doc, &err) < 0;
		if (rc)
			agent_warn("%s", err.text);
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
	if (o->mode == CM_AGENT_MODE_LEARNED) {
		agent_warn("mode learned is not available yet: running "
			   "dynamic");
		cm_agent_result_warn(&a->res, "learned: not available yet, "
				     "ran dynamic");
		a->res.mode = "dynamic";
		a->mode = CM_AGENT_MODE_DYNAMIC;
	}
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
		add_root(a, o->roots[i].pid, o->roots[i].rank);
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
	if (static_prepare(a, &err) < 0) {
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
	free(a->partner);
	if (a->static_os != a->st.os_pu)
		free(a->static_os);
	agent_static_free(&a->st);
	cm_agent_result_free(&a->res);
}

int agent_run(const struct cm_agent_opts *o, int argc, char *argv[])
{
	struct agent a;
	int rc;

	memset(&a, 0, sizeof(a));
	if (setup(&a, o) < 0) {
		teardown(&a);
		return 1;
	}
	agent_info("started (mode %s%s)", a.res.mode,
		   a.dry_run ? ", dry run" : "");
	add_initial_roots(&a);
	start_collector(&a);
	scan(&a);
	a.next_scan_ns = now_ns() + o->scan_ms * 1000000ull;
	prepare_static(&a);
	if (a.static_os)
		static_apply_new(&a);
	signal_ready(&a);
	loop(&a);
	drain(&a);
	read_thread_cpu(&a);
	cm_matrix_merge(a.total, a.fresh, 1.0);
	rc = write_result(&a);
	teardown(&a);
	return rc;
}
