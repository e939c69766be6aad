/* place_nodes.c: learned placement of ranks across nodes in srun (see
 * place_nodes.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "place_nodes.h"
#include "place_nodes_line.h"

#define CMDLINE_MAX (256 << 10)
#define ARGS_MAX 4096
/* The helper's whole run (hash, one request, the mapping): srun waits
 * for it, so a dead or slow service must cost little. */
#define HELPER_TIMEOUT_MS 5000
#define NODES_TEXT_MAX (64 << 10)

static int asked;
static char hostfile[PATH_MAX];

static int option_cb(int val, const char *optarg, int remote)
{
	(void)val;
	(void)optarg;
	(void)remote;
	asked = 1;
	return 0;
}

static struct spank_option place_option = {
	"commap-place-nodes", NULL,
	"[commap] place MPI ranks across the allocation's nodes from the "
	"application's learned traffic (counts it too)", 0, 0, option_cb
};

int cm_place_nodes_register(spank_t sp)
{
	spank_err_t rc = spank_option_register(sp, &place_option);

	if (rc != ESPANK_SUCCESS) {
		slurm_error("commap: cannot register --commap-place-nodes: %s",
			    spank_strerror(rc));
		return -1;
	}
	return 0;
}

int cm_place_nodes_asked(void)
{
	return asked;
}

/* srun's own argv from /proc/self/cmdline (its main's argv is not
 * reachable from a plugin); the number of words, -1 on failure. */
static int own_cmdline(char *buf, size_t len, char **argv)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC), n = 0;
	ssize_t got, total = 0;

	if (fd < 0)
		return -1;
	while ((size_t)total < len - 1 &&
	       (got = read(fd, buf + total, len - 1 - (size_t)total)) > 0)
		total += got;
	close(fd);
	buf[total] = '\0';
	for (ssize_t i = 0; i < total && n < ARGS_MAX - 1;
	     i += (ssize_t)strlen(buf + i) + 1)
		argv[n++] = buf + i;
	argv[n] = NULL;
	return n;
}

/* "node1,node2,...": the allocation's nodes in Slurm's order. */
static int expand_nodes(const char *list, char *out, size_t len, int *n)
{
	hostlist_t hl = slurm_hostlist_create(list);
	char *h;
	size_t used = 0;

	*n = 0;
	out[0] = '\0';
	if (!hl)
		return -1;
	while ((h = slurm_hostlist_shift(hl))) {
		int w = snprintf(out + used, len - used, "%s%s",
				 used ? "," : "", h);

		free(h);
		if (w < 0 || (size_t)w >= len - used) {
			slurm_hostlist_destroy(hl);
			return -1;
		}
		used += (size_t)w;
		(*n)++;
	}
	slurm_hostlist_destroy(hl);
	return 0;
}

/* Run the helper; its one line into line.  0, or -1 with why. */
static int run_helper(char *const *hargv, char *line, size_t len,
		      char *why, size_t wlen)
{
	int fds[2], status, got = 0;
	struct timespec t0, t;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(why, wlen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(fds[1], 1);
		dup2(null, 2);
		execv(hargv[0], hargv);
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		snprintf(why, wlen, "fork: %s", strerror(errno));
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { fds[0], POLLIN, 0 };
		long left;
		ssize_t r;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = HELPER_TIMEOUT_MS - ((t.tv_sec - t0.tv_sec) * 1000 +
					    (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, (int)left) == 0) {
			kill(pid, SIGKILL);
			got = -1;
			break;
		}
		r = read(fds[0], line + got, len - 1 - (size_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (size_t)(got += (int)r) >= len - 1)
			break;
	}
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (got < 0) {
		snprintf(why, wlen, "no answer within %d s",
			 HELPER_TIMEOUT_MS / 1000);
		return -1;
	}
	line[got] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !line[0]) {
		snprintf(why, wlen, "%s failed", hargv[0]);
		return -1;
	}
	return 0;
}

/* Why the step keeps srun's distribution, or NULL when it can be placed:
 * fills nodes, n and per_node. */
static const char *refuse(const struct cm_srun_line *l, char *nodes,
			  size_t len, int *n, long *per_node, char *why,
			  size_t wlen)
{
	const char *list = getenv("SLURM_JOB_NODELIST");
	long ntasks = l->ntasks, slots;

	if (l->own)
		return snprintf(why, wlen, "the step chooses its own %s",
				l->own), why;
	if (getenv("SLURM_HOSTFILE") || getenv("SLURM_DISTRIBUTION"))
		return "SLURM_HOSTFILE or SLURM_DISTRIBUTION is already set";
	if (!getenv("SLURM_JOB_ID") || !list)
		return "not inside an allocation (salloc or sbatch)";
	if (expand_nodes(list, nodes, len, n) < 0 || *n < 1)
		return "cannot read the allocation's nodes";
	if (*n < 2)
		return "the allocation has one node";
	if (l->nnodes && l->nnodes != *n)
		return snprintf(why, wlen, "the step asks for %ld of the "
				"allocation's %d nodes", l->nnodes, *n), why;
	slots = cm_srun_even_slots(getenv("SLURM_TASKS_PER_NODE"), *n);
	if (!slots)
		return "the allocation's nodes hold different numbers of tasks";
	if (!ntasks)
		ntasks = getenv("SLURM_NTASKS") ? atol(getenv("SLURM_NTASKS")) :
			 slots * *n;
	if (ntasks < 1 || ntasks % *n || ntasks / *n > slots)
		return snprintf(why, wlen, "%ld tasks do not spread evenly "
				"over %d nodes of %ld tasks", ntasks, *n,
				slots), why;
	if (!l->prog)
		return "cannot tell the program on srun's command line";
	*per_node = ntasks / *n;
	return NULL;
}

/* One line for the user who asked (srun's stderr), the debug log
 * otherwise (a site default must not talk on every srun). */
static void say(int loud, const char *msg)
{
	if (loud)
		slurm_info("commap: %s", msg);
	else
		slurm_debug("commap: %s", msg);
}

/* "--commap-place-nodes: WHY; default distribution" */
static void fallback(int loud, const char *why)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "--commap-place-nodes: %.300s; default "
		 "distribution", why);
	say(loud, msg);
}

/* The helper's answer into srun's environment. */
static void apply(const char *line, int loud)
{
	char file[PATH_MAX], note[128], msg[256];
	double before, after;
	int runs;

	if (sscanf(line, "placed %4095s %lf %lf %d", file, &before, &after,
		   &runs) == 4) {
		snprintf(hostfile, sizeof(hostfile), "%s", file);
		setenv("SLURM_HOSTFILE", hostfile, 1);
		setenv("SLURM_DISTRIBUTION", "arbitrary", 1);
		snprintf(note, sizeof(note), "learned %.0f %.0f %d", before,
			 after, runs);
		setenv("COMMAP_PLACE_NODES", note, 1);
		snprintf(msg, sizeof(msg), "ranks placed across nodes from the "
			 "learned traffic (%d run%s): bytes between nodes "
			 "predicted %.0f under block distribution, %.0f so",
			 runs, runs == 1 ? "" : "s", before, after);
		say(1, msg);
	} else if (sscanf(line, "block %lf %d", &before, &runs) == 2) {
		snprintf(note, sizeof(note), "block %.0f %.0f %d", before,
			 before, runs);
		setenv("COMMAP_PLACE_NODES", note, 1);
		fallback(loud, "the learned traffic gains nothing over block "
			 "distribution");
	} else {
		fallback(loud, strncmp(line, "none ", 5) == 0 ? line + 5 :
			 line);
	}
}

void cm_place_nodes_srun(const char *agent, const char *service,
			 int site_default)
{
	static char buf[CMDLINE_MAX], nodes[NODES_TEXT_MAX];
	static char *argv[ARGS_MAX];
	char helper[PATH_MAX], per[24], why[256], line[PATH_MAX + 128];
	char *hargv[ARGS_MAX + 12];
	const char *no, *slash = strrchr(agent, '/');
	struct cm_srun_line l;
	int argc = own_cmdline(buf, sizeof(buf), argv), n = 0, k = 0;
	long per_node = 0;

	if (argc < 2)
		return;
	cm_srun_line_scan(argc, argv, &l);
	if (!l.asked && !site_default)
		return;
	if (!service[0]) {
		fallback(l.asked, "no service configured");
		return;
	}
	no = refuse(&l, nodes, sizeof(nodes), &n, &per_node, why,
		    sizeof(why));
	if (no) {
		fallback(l.asked, no);
		return;
	}
	snprintf(helper, sizeof(helper), "%.*s/commap-place-nodes",
		 slash ? (int)(slash - agent) : 1, slash ? agent : ".");
	snprintf(per, sizeof(per), "%ld", per_node);
	hargv[k++] = helper;
	hargv[k++] = "--service";
	hargv[k++] = (char *)service;
	hargv[k++] = "--nodes";
	hargv[k++] = nodes;
	hargv[k++] = "--per-node";
	hargv[k++] = per;
	hargv[k++] = "--";
	for (int i = l.prog; i < argc && k < ARGS_MAX + 11; i++)
		hargv[k++] = argv[i];
	hargv[k] = NULL;
	if (run_helper(hargv, line, sizeof(line), why, sizeof(why)) < 0) {
		fallback(l.asked, why);
		return;
	}
	apply(line, l.asked);
}

void cm_place_nodes_srun_exit(void)
{
	if (hostfile[0])
		unlink(hostfile);
	hostfile[0] = '\0';
}

/* In each task (remote context): the hostfile was srun's alone; an srun
 * or mpirun inside the task must not inherit it. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char v[128];

	(void)ac;
	(void)av;
	if (spank_getenv(sp, "COMMAP_PLACE_NODES", v, sizeof(v)) ==
	    ESPANK_SUCCESS && strncmp(v, "learned", 7) == 0) {
		spank_unsetenv(sp, "SLURM_HOSTFILE");
		spank_unsetenv(sp, "SLURM_DISTRIBUTION");
	}
	return 0;
}
