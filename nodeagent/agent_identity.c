/* agent_identity.c: who the step's application is (docs/agent.md).
 *
 * The first root's executable and command line, followed while it may
 * still exec; and the application identity learned mappings are keyed
 * by (app_identity.h): its executable's hash and argv shape, taken once
 * the task has exec'ed past any wrapper shell and, under SPANK, every
 * task of the node is known.
 */
#include <config.h>

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_internal.h"
#include "app_identity.h"
#include "proc_track.h"

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
void ag_refresh_identity(struct agent *a)
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

/* Is pid a shell?  A task is often a wrapper (`sh -c '...; exec app'`,
 * a script ending in exec) that replaces itself by the application a
 * moment later: its identity is worth waiting for (up to
 * IDENTITY_REFRESH_NS), or a busy node would learn a model for the
 * shell on one run and look for the application's on the next. */
static int runs_shell(pid_t pid)
{
	static const char *const shells[] = { "sh", "dash", "bash", "zsh",
					      "ksh", "mksh", "csh", "tcsh" };
	char path[64], exe[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
		if (strcmp(base, shells[i]) == 0)
			return 1;
	return 0;
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
int ag_app_identity_ready(struct agent *a)
{
	const struct cm_tracked_proc *p = cm_tracker_proc(a->tr, 0);
	uint64_t now = now_ns();
	int execd;

	if (!p || !p->alive)
		return 0;
	execd = !runs_parent_exe(p->pid) && !runs_shell(p->pid);
	if (a->o->tasks_from_stdin && a->stdin_open &&
	    now - a->last_task_line_ns < TASK_LINES_QUIET_NS &&
	    !(execd && all_tasks_in(a, p->pid)))
		return 0;
	return now - a->t0_ns >= IDENTITY_REFRESH_NS || execd;
}

/* exe_hash and argv_shape of the first root (app_identity.h), once.  A
 * large executable is hashed by a thread while the loop goes on: the
 * identity settles at a later scan (or now, with wait: end of run). */
void ag_settle_app_identity(struct agent *a, int wait)
{
	const struct cm_tracked_proc *p = cm_tracker_proc(a->tr, 0);
	char path[64];
	struct cm_error err;
	int argc = 0, rc;

	if (!a->hashing) {
		ag_refresh_identity(a);
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
