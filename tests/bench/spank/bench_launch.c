/* bench_launch.c: how long slurmstepd is held by the plugin's agent start.
 *
 *   tests/bench/spank/launch [--reps N] AGENT
 *
 * The SPANK plugin starts the node agent inside slurm_spank_task_post_fork
 * (spank/commap_spank.c): cm_agent_launch (fork, setsid, fork, exec; it
 * returns once the exec has succeeded) and one "task PID RANK" line.  That
 * is the only time the plugin keeps slurmstepd from launching the task.
 * This program times exactly those two calls, with the plugin's command
 * line, for AGENT (the real commap-agent, or a stand-in), N times
 * (default 200), and prints the median, p90 and maximum in milliseconds.
 * The task it names is a sleeping child of its own, so the real agent has
 * a process to follow; after each repetition the socket is closed and the
 * agent is awaited (it is not our child: polled with kill 0) so agents do
 * not pile up.  Run by hand (docs/PERFORMANCE.md, "SPANK plugin").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_launch.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The process exists and is not a zombie (a detached agent is reaped by
 * init, which may take a while). */
static int running(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	int alive = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		alive = p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	fclose(f);
	return alive;
}

/* Up to 5 s for a process that is not our child to exit. */
static void await_exit(pid_t pid)
{
	for (int i = 0; i < 500 && running(pid); i++)
		usleep(10000);
}

/* The results the real agent spooled, then the directory. */
static void remove_spool(const char *dir)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "launch: cannot remove %s\n", dir);
}

static int time_one(char *argv[], pid_t task, double *ms)
{
	struct cm_agent_handle h;
	struct cm_error err;
	char line[64];
	double t0 = now_ms();

	if (cm_agent_launch(argv, NULL, &h, &err) < 0) {
		fprintf(stderr, "launch: %s\n", err.text);
		return -1;
	}
	snprintf(line, sizeof(line), "task %d 0", (int)task);
	cm_agent_send(&h, line);
	*ms = now_ms() - t0;
	cm_agent_close(&h);
	await_exit(h.pid);
	return 0;
}

int main(int argc, char *argv[])
{
	int reps = 200, a = 1;
	char spool[] = "/tmp/commap-bench-launch.XXXXXX", stepd[16];
	double *ms;
	pid_t task;

	if (argc > 2 && !strcmp(argv[1], "--reps")) {
		reps = atoi(argv[2]);
		a = 3;
	}
	if (a != argc - 1 || reps < 1 || argv[a][0] != '/') {
		fprintf(stderr, "usage: launch [--reps N] /ABSOLUTE/AGENT\n");
		return 2;
	}
	if (!mkdtemp(spool) || !(ms = calloc((size_t)reps, sizeof(*ms)))) {
		perror("launch");
		return 1;
	}
	task = fork();
	if (task == 0) {
		pause();
		_exit(0);
	}
	snprintf(stepd, sizeof(stepd), "%d", (int)getpid());
	/* The plugin's command line (launch_agent in commap_spank.c). */
	char *av[] = { argv[a], "--mode", "dynamic", "--job", "1", "--step",
		       "0", "--uid", "0", "--stepd-pid", stepd, "--spool",
		       spool, "--tasks-from-stdin", NULL };
	int rv = 0;

	for (int i = 0; i < reps && rv == 0; i++)
		rv = time_one(av, task, &ms[i]);
	kill(task, SIGKILL);
	waitpid(task, NULL, 0);
	if (rv == 0) {
		qsort(ms, (size_t)reps, sizeof(*ms), cmp_double);
		printf("agent %s: %d launches, held slurmstepd median %.2f ms, "
		       "p90 %.2f ms, max %.2f ms\n", argv[a], reps,
		       ms[reps / 2], ms[(int)(0.9 * (reps - 1) + 0.5)],
		       ms[reps - 1]);
	}
	free(ms);
	remove_spool(spool);
	return rv ? 1 : 0;
}
