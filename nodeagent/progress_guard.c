/* progress_guard.c: the progress guard's measures (progress_guard.h). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "progress_guard.h"

int cm_guard_read_schedstat(const char *proc_root, pid_t pid, pid_t tid,
			    double *cpu_s, double *wait_s)
{
	char path[128], buf[128];
	unsigned long long run, wait;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/task/%d/schedstat",
		 proc_root ? proc_root : "/proc", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return errno = EINVAL, -1;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
		return errno = EINVAL, -1;
	*cpu_s = (double)run / 1e9;
	*wait_s = (double)wait / 1e9;
	return 0;
}

int cm_guard_progress(int n, const double *cpu0, const double *wait0,
		      const double *cpu1, const double *wait1, double dt_s,
		      struct cm_progress *out)
{
	double cpu = 0, wait = 0;

	if (n < 0 || !(dt_s > 0) || !out ||
	    (n > 0 && (!cpu0 || !wait0 || !cpu1 || !wait1)))
		return errno = EINVAL, -1;
	out->threads = out->busy = 0;
	for (int t = 0; t < n; t++) {
		double c, w;

		if (cpu0[t] < 0 || cpu1[t] < 0 || cpu1[t] < cpu0[t] ||
		    wait1[t] < wait0[t])
			continue;
		c = cpu1[t] - cpu0[t];
		w = wait1[t] - wait0[t];
		cpu += c;
		wait += w;
		out->threads++;
		out->busy += c + w >= CM_GUARD_BUSY * dt_s;
	}
	out->cpu_rate = cpu / dt_s;
	out->wait_share = cpu + wait > 0 ? wait / (cpu + wait) : 0;
	return 0;
}

void cm_guard_baseline(int busy, int npus, struct cm_progress *out)
{
	out->threads = out->busy = busy;
	out->cpu_rate = busy < npus ? busy : npus;
	out->wait_share = busy > npus && busy > 0 ?
			  1.0 - (double)npus / busy : 0;
}

int cm_guard_worse(const struct cm_progress *before,
		   const struct cm_progress *after, int baseline, char *why,
		   size_t len)
{
	double drop = baseline ? CM_GUARD_BASE_CPU_DROP : CM_GUARD_CPU_DROP;
	double rise = baseline ? CM_GUARD_BASE_WAIT_RISE : CM_GUARD_WAIT_RISE;
	int slower = after->cpu_rate < before->cpu_rate * (1.0 - drop);
	int waits = after->wait_share > before->wait_share + rise;

	snprintf(why, len, "CPU %.2f -> %.2f s/s, run-queue wait share "
		 "%.2f -> %.2f%s", before->cpu_rate, after->cpu_rate,
		 before->wait_share, after->wait_share,
		 baseline ? " (before: unpinned on the step's PUs)" : "");
	return slower && waits;
}

double cm_guard_backoff_ms(int undos)
{
	int k = undos < 1 ? 0 : undos > 9 ? 8 : undos - 1;

	return CM_GUARD_BACKOFF_MS * (double)(1 << k);
}
