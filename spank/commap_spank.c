/* commap_spank.c: commap's SPANK plugin.
 *
 *   srun|sbatch|salloc --commap=off|dynamic|learned|static:FILE
 *                      [--commap-mpi-traffic]
 *
 * For each job step on each node (remote context, slurmstepd) it starts one
 * node agent, detached, at the first task's fork, hands it every task's pid
 * and global rank, and closes the agent's control socket at step end (the
 * agent then finishes and uploads by itself).  Nothing here can fail a job:
 * a bad site configuration disables the plugin with one slurmd log line, a
 * missing agent leaves the job running unpinned with one line.
 *
 * Where lines go: in slurmstepd, slurm_error() reaches the user's srun
 * stderr (and a batch job's output file) as well as slurmd's log, while
 * slurm_info() and below go to slurmd's log only.  Site problems (agent
 * missing, spool refused, agent died) are slurm_info(); only a bad
 * --commap value, the user's own mistake, is slurm_error().
 *
 * plugstack.conf (ship it as "optional", see docs/slurm.md):
 *   optional /usr/local/lib/commap/commap_spank.so default=off allow=...
 *
 * Call sequence (slurm/spank.h): init -> option callbacks -> init_post_opt
 * -> user_init -> task_init_privileged -> task_init -> task_post_fork ->
 * task_exit -> exit.
 */
#define _GNU_SOURCE		/* sched_getaffinity, cpu_set_t */
#include <stdint.h>	/* spank.h uses uint32_t without including it */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "agent_launch.h"
#include "mpi_traffic.h"
#include "place_nodes.h"
#include "place_nodes_line.h"
#include "spank_config.h"

SPANK_PLUGIN(commap, 1);

#ifndef COMMAP_AGENT_DEFAULT
#define COMMAP_AGENT_DEFAULT "/usr/local/libexec/commap/commap-agent"
#endif
#ifndef COMMAP_SPOOL_DEFAULT
#define COMMAP_SPOOL_DEFAULT "/var/spool/commap"
#endif

/* All per-step state. */
static struct {
	struct cm_spank_config cfg;
	int disabled;			/* bad site configuration */
	int user_set;			/* --commap given */
	struct cm_spank_mode_value mode;
	int launch_tried;
	struct cm_agent_handle agent;
	uint32_t job_id, step_id;
	int agent_pidfd;		/* -1: none (no pidfd on this kernel) */
	int traffic_set;		/* --commap-mpi-traffic given */
	char traffic_dir[PATH_MAX];	/* "" or the step's monitoring files */
} ctx = { .agent = { .pid = -1, .ctl_fd = -1 }, .agent_pidfd = -1 };

static int option_cb(int val, const char *optarg, int remote);
static int traffic_option_cb(int val, const char *optarg, int remote);

static struct spank_option commap_options[] = {
	{ "commap", "MODE",
	  "[commap] communication-aware thread placement: off, dynamic, "
	  "learned or static:FILE", 1, 0, option_cb },
	{ "commap-mpi-traffic", NULL,
	  "[commap] count the bytes MPI ranks send each other (Open MPI) "
	  "and show them in the job's report", 0, 0, traffic_option_cb },
	SPANK_OPTIONS_TABLE_END
};

/* Called for --commap in srun/sbatch/salloc and (twice) in slurmstepd:
 * only records the value, so calling it again is harmless. */
static int option_cb(int val, const char *optarg, int remote)
{
	struct cm_spank_mode_value mode;
	struct cm_error err;

	if (cm_spank_mode_parse(optarg, &mode, &err) < 0) {
		slurm_error("commap: --commap: %s", err.text);
		return -1;
	}
	if (!ctx.disabled && !cm_spank_mode_allowed(&ctx.cfg, mode.mode)) {
		slurm_error("commap: --commap=%s is not allowed on this "
			    "cluster", cm_spank_mode_name(mode.mode));
		return -1;
	}
	ctx.mode = mode;
	ctx.user_set = 1;
	return 0;
}

static int traffic_option_cb(int val, const char *optarg, int remote)
{
	(void)val;
	(void)optarg;
	(void)remote;
	ctx.traffic_set = 1;
	return 0;
}

static int register_options(spank_t sp)
{
	for (struct spank_option *o = commap_options; o->name; o++) {
		spank_err_t rc = spank_option_register(sp, o);

		if (rc != ESPANK_SUCCESS) {
			slurm_error("commap: cannot register --%s: %s",
				    o->name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

/* Runs in every context.  A configuration error disables the plugin; it
 * is logged as an error only in slurmstepd (the slurmd log), at debug
 * level in srun/sbatch so users are not shown a site problem on every
 * command. */
int slurm_spank_init(spank_t sp, int ac, char **av)
{
	struct cm_error err;
	spank_context_t context = spank_context();

	cm_spank_config_defaults(&ctx.cfg, COMMAP_AGENT_DEFAULT,
				 COMMAP_SPOOL_DEFAULT);
	if (cm_spank_config_parse_args(&ctx.cfg, ac, av, &err) < 0) {
		ctx.disabled = 1;
		if (context == S_CTX_REMOTE)
			slurm_info("commap: plugstack.conf: %s; commap is "
				   "disabled", err.text);
		else
			slurm_debug("commap: plugstack.conf: %s; commap is "
				    "disabled", err.text);
	}
	if (context == S_CTX_SLURMD || context == S_CTX_JOB_SCRIPT)
		return 0;
	/* srun reads SLURM_HOSTFILE next: the placement is decided now */
	if (context == S_CTX_LOCAL && !ctx.disabled)
		cm_place_nodes_srun(ctx.cfg.agent, ctx.cfg.service,
				    ctx.cfg.place_nodes);
	if (register_options(sp) < 0)
		return -1;
	return cm_place_nodes_register(sp);
}

static int step_is_tracked(spank_t sp)
{
	if (spank_get_item(sp, S_JOB_ID, &ctx.job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &ctx.step_id) != ESPANK_SUCCESS)
		return 0;
	/* The extern step holds no user tasks; batch and normal steps do. */
	return ctx.step_id != SLURM_EXTERN_CONT &&
	       ctx.step_id != SLURM_INTERACTIVE_STEP;
}

static const struct cm_spank_mode_value *effective_mode(void)
{
	return ctx.user_set ? &ctx.mode : &ctx.cfg.default_mode;
}

/* A spool that others can write to would let them plant a link that the
 * agent's log (opened as root) follows: a real directory, root's, not
 * writable by group or others.  0, or -1 with the reason in why. */
static int spool_ok(const char *dir, char *why, size_t len)
{
	struct stat st;

	/* a first step on a fresh node: made as the agent would make it */
	if (lstat(dir, &st) < 0 && errno == ENOENT)
		mkdir(dir, 0700);
	if (lstat(dir, &st) < 0)
		snprintf(why, len, "%s", strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		snprintf(why, len, "not a directory");
	else if (st.st_uid != geteuid())
		snprintf(why, len, "owned by uid %u, not root",
			 (unsigned)st.st_uid);
	else if (st.st_mode & 022)
		snprintf(why, len, "writable by group or others (mode %04o; "
			 "want 0700)", (unsigned)(st.st_mode & 07777));
	else
		return 0;
	return -1;
}

/* The job's value of an environment variable (remote context), or "". */
static void job_env(spank_t sp, const char *name, char *buf, int len)
{
	if (spank_getenv(sp, name, buf, len) != ESPANK_SUCCESS)
		buf[0] = '\0';
}

/* The cluster's name: the job's SLURM_CLUSTER_NAME, else ClusterName in
 * slurm.conf (SLURM_CONF, else the default path). */
static void cluster_name(spank_t sp, char *buf, size_t len)
{
	const char *conf = getenv("SLURM_CONF");

	job_env(sp, "SLURM_CLUSTER_NAME", buf, (int)len);
	if (!buf[0])
		cm_spank_cluster_from_file(conf && *conf ? conf :
					   "/etc/slurm/slurm.conf", buf, len);
}

/* "G,G,...": the job's supplementary groups, "" when unknown (the agent
 * then looks the user's groups up). */
static int job_groups(spank_t sp, char *buf, size_t len)
{
	gid_t *gids = NULL;
	int n = 0;
	size_t used = 0;

	buf[0] = '\0';
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &n) !=
	    ESPANK_SUCCESS || !gids || n <= 0)
		return -1;
	for (int k = 0; k < n; k++) {
		int w = snprintf(buf + used, len - used, "%s%u", k ? "," : "",
				 (unsigned)gids[k]);

		if (w < 0 || (size_t)w >= len - used)
			return buf[0] = '\0', -1;
		used += (size_t)w;
	}
	return 0;
}

/* The job's working directory, for a relative static: path: PWD in the
 * job's environment (what srun and sbatch ran in), else the submit
 * directory. */
static void job_cwd(spank_t sp, char *buf, int len)
{
	job_env(sp, "PWD", buf, len);
	if (buf[0] != '/')
		job_env(sp, "SLURM_SUBMIT_DIR", buf, len);
	if (buf[0] != '/')
		buf[0] = '\0';
}

static void watch_agent(void)
{
#ifdef SYS_pidfd_open
	ctx.agent_pidfd = (int)syscall(SYS_pidfd_open, ctx.agent.pid, 0);
#endif
}

/* This node's name for file names, as the agent names the node in its
 * result (the host name): nodes that share one spool keep their logs
 * apart.  Anything but [A-Za-z0-9._-] becomes '_'. */
static void node_name(char *buf, size_t len)
{
	if (gethostname(buf, len - 1) < 0 || !buf[0])
		snprintf(buf, len, "node");
	buf[len - 1] = '\0';
	for (char *c = buf; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._-", *c))
			*c = '_';
}

/* Start the agent once per step; on failure say why once (slurmd's log)
 * and go on. */
static void launch_agent(spank_t sp)
{
	const struct cm_spank_mode_value *mode = effective_mode();
	static char groups[CM_SPANK_GROUPS_MAX], cwd[PATH_MAX], cluster[64];
	char job[16], step[16], uid_s[16], gid_s[16], stepd[16];
	char log[PATH_MAX + 128], why[128], node[65], place[96];
	char *argv[40];
	int ac = 0, spool_good;
	uid_t uid = 0;
	gid_t gid = 0;
	struct cm_error err;

	ctx.launch_tried = 1;
	spank_get_item(sp, S_JOB_UID, &uid);
	spank_get_item(sp, S_JOB_GID, &gid);
	snprintf(job, sizeof(job), "%u", ctx.job_id);
	snprintf(step, sizeof(step), "%u", ctx.step_id);
	snprintf(uid_s, sizeof(uid_s), "%u", (unsigned)uid);
	snprintf(gid_s, sizeof(gid_s), "%u", (unsigned)gid);
	snprintf(stepd, sizeof(stepd), "%d", (int)getpid());
	argv[ac++] = ctx.cfg.agent;
	argv[ac++] = "--mode";
	argv[ac++] = (char *)cm_spank_mode_name(mode->mode);
	if (mode->mode == CM_MODE_STATIC) {
		argv[ac++] = "--static";
		argv[ac++] = (char *)mode->static_file;
		job_cwd(sp, cwd, sizeof(cwd));
		if (cwd[0]) {
			argv[ac++] = "--cwd";
			argv[ac++] = cwd;
		}
	}
	argv[ac++] = "--job"; argv[ac++] = job;
	argv[ac++] = "--step"; argv[ac++] = step;
	argv[ac++] = "--uid"; argv[ac++] = uid_s;
	argv[ac++] = "--gid"; argv[ac++] = gid_s;
	if (job_groups(sp, groups, sizeof(groups)) == 0) {
		argv[ac++] = "--groups";
		argv[ac++] = groups;
	}
	cluster_name(sp, cluster, sizeof(cluster));
	if (cluster[0]) {
		argv[ac++] = "--cluster";
		argv[ac++] = cluster;
	}
	argv[ac++] = "--stepd-pid"; argv[ac++] = stepd;
	spool_good = spool_ok(ctx.cfg.spool, why, sizeof(why)) == 0;
	if (spool_good) {
		argv[ac++] = "--spool";
		argv[ac++] = ctx.cfg.spool;
	} else {
		slurm_info("commap: spool %s refused: %s; step %s.%s keeps "
			   "no log and no spooled result", ctx.cfg.spool, why,
			   job, step);
	}
	if (ctx.cfg.service[0]) {
		argv[ac++] = "--service";
		argv[ac++] = ctx.cfg.service;
	}
	if (ctx.traffic_dir[0]) {
		argv[ac++] = "--mpi-traffic";
		argv[ac++] = ctx.traffic_dir;
		/* srun placed the ranks (place_nodes.h): the result says so */
		job_env(sp, "COMMAP_PLACE_NODES", place, sizeof(place));
		if (cm_place_nodes_note_valid(place)) {
			argv[ac++] = "--place-nodes";
			argv[ac++] = place;
		}
	}
	argv[ac++] = "--tasks-from-stdin";
	argv[ac] = NULL;
	node_name(node, sizeof(node));
	snprintf(log, sizeof(log), "%s/agent-%s.%s.%s.log", ctx.cfg.spool,
		 job, step, node);
	if (cm_agent_launch(argv, spool_good ? log : NULL, &ctx.agent,
			    &err) < 0) {
		slurm_info("commap: %s; step %s.%s runs without commap",
			   err.text, job, step);
		return;
	}
	watch_agent();
	slurm_debug("commap: agent pid %d for step %s.%s", (int)ctx.agent.pid,
		    job, step);
}

/* The CPUs a task is bound to, as a Linux list ("0-3,8") in buf; "" when
 * unknown or too long for one protocol line (the agent then reads the
 * task's affinity itself). */
static void task_cpulist(pid_t pid, char *buf, size_t len)
{
	cpu_set_t set;
	size_t used = 0;
	int first = -1;

	buf[0] = '\0';
	if (sched_getaffinity(pid, sizeof(set), &set) < 0)
		return;
	for (int c = 0; c <= CPU_SETSIZE; c++) {
		int in = c < CPU_SETSIZE && CPU_ISSET(c, &set);
		int n;

		if (in && first < 0)
			first = c;
		if (in || first < 0)
			continue;
		n = first == c - 1 ?
			snprintf(buf + used, len - used, "%s%d",
				 used ? "," : "", first) :
			snprintf(buf + used, len - used, "%s%d-%d",
				 used ? "," : "", first, c - 1);
		if (n < 0 || (size_t)n >= len - used) {
			buf[0] = '\0';
			return;
		}
		used += (size_t)n;
		first = -1;
	}
}

/* slurmstepd, as root, after each task's fork: its CPU binding is final
 * here (platform.md), so this is where the agent learns about it.  The
 * agent is told the binding too: read later, an MPI rank's mask can be
 * one it takes briefly inside MPI_Init. */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	pid_t pid = 0;
	uint32_t rank = 0;
	char cpus[900], line[sizeof(cpus) + 64];

	if (ctx.disabled || effective_mode()->mode == CM_MODE_OFF)
		return 0;
	if (!ctx.launch_tried) {
		if (!step_is_tracked(sp)) {
			ctx.launch_tried = 1;
			return 0;
		}
		launch_agent(sp);
	}
	if (ctx.agent.ctl_fd < 0)
		return 0;
	if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS)
		return 0;
	task_cpulist(pid, cpus, sizeof(cpus));
	snprintf(line, sizeof(line), "task %d %u%s%s", (int)pid, rank,
		 cpus[0] ? " " : "", cpus);
	if (cm_agent_send(&ctx.agent, line) < 0) {
		slurm_info("commap: agent (pid %d) is not listening: %s; "
			   "step %u.%u runs without commap",
			   (int)ctx.agent.pid, strerror(errno), ctx.job_id,
			   ctx.step_id);
		cm_agent_close(&ctx.agent);
	}
	return 0;
}

/* The agent lives until we close its socket: gone before that, it was
 * killed (SIGKILL, the OOM killer) or crashed, and its result with it.
 * It is not our child, so its pidfd tells (readable once it has exited). */
static void note_agent_death(void)
{
	struct pollfd p = { .fd = ctx.agent_pidfd, .events = POLLIN };

	if (ctx.agent_pidfd < 0)
		return;
	if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
		slurm_info("commap: agent (pid %d) of step %u.%u ended before "
			   "the step did (killed?); no result for this step",
			   (int)ctx.agent.pid, ctx.job_id, ctx.step_id);
	close(ctx.agent_pidfd);
	ctx.agent_pidfd = -1;
}

/* The traffic between MPI ranks (mpi_traffic.h): asked for with
 * --commap-mpi-traffic or the site's mpi_traffic=yes, collected by the
 * step's agent, so only when commap is on for the step.  Runs in
 * slurmstepd before the tasks start (privileges dropped to the user's);
 * a directory that cannot be made only means no traffic for the step. */
static void traffic_setup(spank_t sp)
{
	const char *name[CM_MPI_TRAFFIC_NVARS];
	static char value[CM_MPI_TRAFFIC_NVARS][CM_MPI_TRAFFIC_VALUE_MAX];
	uid_t uid = 0;
	gid_t gid = 0;
	struct cm_error err;

	if (ctx.disabled || effective_mode()->mode == CM_MODE_OFF ||
	    !(ctx.traffic_set || ctx.cfg.mpi_traffic || ctx.cfg.place_nodes ||
	      cm_place_nodes_asked()) || !step_is_tracked(sp))
		return;
	spank_get_item(sp, S_JOB_UID, &uid);
	spank_get_item(sp, S_JOB_GID, &gid);
	if (cm_mpi_traffic_mkdir("/tmp", ctx.job_id, ctx.step_id, uid, gid,
				 ctx.traffic_dir, sizeof(ctx.traffic_dir),
				 &err) < 0) {
		slurm_info("commap: %s; step %u.%u runs without MPI traffic "
			   "counts", err.text, ctx.job_id, ctx.step_id);
		ctx.traffic_dir[0] = '\0';
		return;
	}
	cm_mpi_traffic_vars(ctx.traffic_dir, name, value);
	for (int i = 0; i < CM_MPI_TRAFFIC_NVARS; i++)
		spank_setenv(sp, name[i], value[i], 1);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_REMOTE)
		traffic_setup(sp);
	return 0;
}

/* slurmstepd at step end: closing the socket tells the agent to finish.
 * We never wait for it: the step's end must not be held up.  The agent
 * removes the step's traffic directory after reading it; without an
 * agent, nobody reads it. */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() == S_CTX_LOCAL)
		cm_place_nodes_srun_exit();
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	note_agent_death();
	if (ctx.traffic_dir[0] && ctx.agent.ctl_fd < 0)
		cm_mpi_traffic_rmdir(ctx.traffic_dir);
	cm_agent_close(&ctx.agent);
	return 0;
}
