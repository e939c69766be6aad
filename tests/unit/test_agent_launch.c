/* test_agent_launch.c: the agent is started detached (own session, not our
 * child, only stdio open), receives lines on stdin, sees end of file when
 * we close, and a dead agent never raises SIGPIPE in the caller. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_launch.h"
#include "tap.h"

/* Field n (1-based) of /proc/PID/stat as a number; the comm field may hold
 * spaces, so count from the closing parenthesis. */
static long stat_field(pid_t pid, int n, char *state)
{
	char path[64], buf[1024], *p;
	FILE *f;
	long v = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')'))) {
		p += 2;	/* field 3: state */
		if (state)
			*state = *p;
		for (int i = 3; i < n && p; i++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (p)
			v = strtol(p, NULL, 10);
	}
	fclose(f);
	return v;
}

static int count_fds(pid_t pid, int *max_fd)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	int n = 0;

	*max_fd = -1;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int fd;

		if (e->d_name[0] == '.')
			continue;
		fd = atoi(e->d_name);
		n++;
		if (fd > *max_fd)
			*max_fd = fd;
	}
	closedir(d);
	return n;
}

static int gone_within(pid_t pid, double seconds)
{
	for (int i = 0; i < (int)(seconds * 100); i++) {
		char state = 0;

		if (stat_field(pid, 3, &state) < 0 && state == 0)
			return 1;
		if (state == 'Z' || state == 'X')
			return 1;
		usleep(10000);
	}
	return 0;
}

static void test_detached(void)
{
	char log[] = "/tmp/commap-launch-XXXXXX";
	int fd = mkstemp(log);
	char *argv[] = { "/bin/cat", NULL };
	struct cm_agent_handle h;
	struct cm_error err = { "" };
	char buf[256] = "";
	FILE *f;
	int nfds, max_fd;

	close(fd);
	ok(cm_agent_launch(argv, log, &h, &err) == 0, "launch /bin/cat (%s)",
	   err.text);
	ok(h.pid > 0 && h.ctl_fd >= 0, "pid %d and control fd %d", (int)h.pid,
	   h.ctl_fd);
	ok(stat_field(h.pid, 4, NULL) != getpid(), "agent is not our child");
	ok(stat_field(h.pid, 6, NULL) != getsid(0),
	   "agent is in another session");
	usleep(100000);	/* let exec finish before looking at its fds */
	nfds = count_fds(h.pid, &max_fd);
	ok(nfds == 3 && max_fd == 2, "agent has only stdio open (%d fds, "
	   "highest %d)", nfds, max_fd);
	ok(cm_agent_send(&h, "task 1234 0") == 0 &&
	   cm_agent_send(&h, "task 1235 1") == 0, "two lines sent");
	cm_agent_close(&h);
	is_int(h.ctl_fd, -1, "closed handle");
	cm_agent_close(&h);	/* twice is harmless */
	ok(gone_within(h.pid, 5), "agent ends after end of file");
	f = fopen(log, "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);

		buf[n] = '\0';
		fclose(f);
	}
	is_str(buf, "task 1234 0\ntask 1235 1\n",
	       "agent received the lines on stdin");
	unlink(log);
}

static void test_dead_agent(void)
{
	char *argv[] = { "/bin/true", NULL };
	struct cm_agent_handle h;
	int rc = 0;

	signal(SIGPIPE, SIG_DFL);	/* a SIGPIPE would kill this test */
	ok(cm_agent_launch(argv, NULL, &h, NULL) == 0, "launch /bin/true");
	gone_within(h.pid, 5);
	for (int i = 0; i < 10 && rc == 0; i++)
		rc = cm_agent_send(&h, "task 1 0");
	ok(rc == -1 && errno == EPIPE, "send to a dead agent: EPIPE, no "
	   "signal");
	cm_agent_close(&h);
	ok(cm_agent_send(&h, "x") == -1 && errno == EPIPE,
	   "send after close: EPIPE");
}

static void test_errors(void)
{
	char *missing[] = { "/nonexistent/commap-agent", NULL };
	char *relative[] = { "commap-agent", NULL };
	struct cm_agent_handle h;
	struct cm_error err = { "" };
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ok(cm_agent_launch(missing, NULL, &h, &err) == -1 && errno == ENOENT,
	   "missing binary: ENOENT");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ok(strstr(err.text, "/nonexistent/commap-agent") != NULL,
	   "error names the binary: %s", err.text);
	ok(h.ctl_fd == -1, "no control fd left open");
	ok(t1.tv_sec - t0.tv_sec < 2, "failure reported at once");
	ok(cm_agent_launch(relative, NULL, &h, &err) == -1 && errno == EINVAL,
	   "relative path rejected: %s", err.text);
}

int main(void)
{
	test_detached();
	test_dead_agent();
	test_errors();
	return done_testing();
}
