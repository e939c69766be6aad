/* test_numa_balancing.c: kernel.numa_balancing shared by several agents,
 * restored by the last one, even after holders die by SIGKILL.  Uses a
 * temporary file in place of the sysctl. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "numa_balancing.h"
#include "tap.h"

static char dir[] = "/tmp/commap-numab-XXXXXX";
static char sysctl[256], state[256];

static int sysctl_value(void)
{
	FILE *f = fopen(sysctl, "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void sysctl_set(int v)
{
	FILE *f = fopen(sysctl, "w");

	if (f) {
		fprintf(f, "%d\n", v);
		fclose(f);
	}
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	struct cm_numa_balancing_paths p;
	struct cm_error err = { "" };
	pid_t self = getpid(), a, b;

	if (!mkdtemp(dir))
		return 1;
	snprintf(sysctl, sizeof(sysctl), "%s/numa_balancing", dir);
	snprintf(state, sizeof(state), "%s/run/state", dir);
	p.sysctl = sysctl;
	p.state = state;
	sysctl_set(0);

	ok(cm_numa_balancing_acquire(&p, self, &err) == 0, "first acquire "
	   "(%s)", err.text);
	is_int(sysctl_value(), 1, "turned on by the first holder");
	a = sleeper();
	ok(cm_numa_balancing_acquire(&p, a, &err) == 0, "second holder");
	ok(cm_numa_balancing_release(&p, self, &err) == 0, "first releases");
	is_int(sysctl_value(), 1, "still on while another agent holds it");
	ok(cm_numa_balancing_release(&p, a, &err) == 0, "last releases");
	is_int(sysctl_value(), 0, "restored by the last holder");
	/* A child left running would keep the TAP driver's pipe open. */
	reap(a);

	/* A holder killed with -9 never releases: the next agent to come
	 * prunes it, and the value is restored when that one leaves. */
	b = sleeper();
	cm_numa_balancing_acquire(&p, b, NULL);
	reap(b);
	is_int(sysctl_value(), 1, "on while a (now dead) holder had it");
	ok(cm_numa_balancing_release(&p, self, &err) == 0,
	   "release by a non-holder prunes the dead one");
	is_int(sysctl_value(), 0, "restored after the holder died");

	b = sleeper();
	cm_numa_balancing_acquire(&p, b, NULL);
	reap(b);
	ok(cm_numa_balancing_acquire(&p, self, &err) == 0,
	   "acquire after a crashed holder");
	ok(cm_numa_balancing_release(&p, self, &err) == 0, "and release");
	is_int(sysctl_value(), 0, "the original value survives a crash");

	/* A value that was already 1 stays 1. */
	sysctl_set(1);
	cm_numa_balancing_acquire(&p, self, NULL);
	cm_numa_balancing_release(&p, self, NULL);
	is_int(sysctl_value(), 1, "an administrator's 1 is kept");

	p.sysctl = "/nonexistent/numa_balancing";
	ok(cm_numa_balancing_acquire(&p, self, &err) == -1 && errno == ENOENT
	   && strstr(err.text, "/nonexistent/numa_balancing"),
	   "missing sysctl: ENOENT naming it: %s", err.text);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			diag("cleanup failed");
	}
	return done_testing();
}
