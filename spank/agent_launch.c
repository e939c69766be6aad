/* agent_launch.c: start the node agent detached (see agent_launch.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_launch.h"

/* What the intermediate child reports through the status pipe: the
 * agent's pid, then (only if exec failed) its errno. */
struct launch_report {
	int32_t pid;
	int32_t exec_errno;
};

/* In the grandchild: a clean process state before exec. */
static void reset_process_state(void)
{
	sigset_t all;

	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
}

/* The log is in the spool, checked by the caller; O_NOFOLLOW all the
 * same, so a link planted there is never followed by root. */
static void redirect_stdio(int ctl, const char *logfile)
{
	int out = open(logfile ? logfile : "/dev/null",
		       O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
		       (logfile ? O_NOFOLLOW : 0), 0640);

	dup2(ctl, STDIN_FILENO);
	if (out >= 0) {
		dup2(out, STDOUT_FILENO);
		dup2(out, STDERR_FILENO);
	}
}

/* Grandchild: becomes the agent.  Every descriptor above 2 is marked
 * close-on-exec (the status pipe too), so exec leaves only stdio. */
static void __attribute__((noreturn))
exec_agent(char *const argv[], int ctl, const char *logfile, int status_fd)
{
	struct launch_report r = { .pid = (int32_t)getpid() };
	ssize_t unused;

	reset_process_state();
	redirect_stdio(ctl, logfile);
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	execv(argv[0], argv);
	r.exec_errno = errno;
	unused = write(status_fd, &r, sizeof(r));
	(void)unused;
	_exit(127);
}

/* Intermediate child: new session, fork the agent, report its pid, exit
 * so that the agent is reparented away from slurmstepd. */
static void __attribute__((noreturn))
detach_and_fork(char *const argv[], int ctl, const char *logfile,
		int status_fd)
{
	struct launch_report r = { .pid = -1 };
	pid_t pid;
	ssize_t unused;

	setsid();
	pid = fork();
	if (pid == 0)
		exec_agent(argv, ctl, logfile, status_fd);
	r.pid = (int32_t)pid;
	r.exec_errno = pid < 0 ? errno : 0;
	unused = write(status_fd, &r, sizeof(r));
	(void)unused;
	_exit(pid < 0 ? 1 : 0);
}

/* Read the agent's pid, then an exec error if there is one (end of file
 * means exec succeeded and closed the pipe). */
static int read_report(int fd, const char *path, pid_t *pid,
		       struct cm_error *err)
{
	struct launch_report r;
	ssize_t n;

	do {
		n = read(fd, &r, sizeof(r));
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(r) || r.pid < 0)
		return cm_errorf(err, n == (ssize_t)sizeof(r) ? r.exec_errno :
				 EIO, "cannot fork the agent %s", path);
	*pid = r.pid;
	do {
		n = read(fd, &r, sizeof(r));
	} while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(r) && r.exec_errno)
		return cm_errorf(err, r.exec_errno, "cannot execute the agent "
				 "%s: %s", path, strerror(r.exec_errno));
	return 0;
}

int cm_agent_launch(char *const argv[], const char *logfile,
		    struct cm_agent_handle *out, struct cm_error *err)
{
	int sv[2], status[2], rv = -1;
	pid_t child;

	out->pid = -1;
	out->ctl_fd = -1;
	if (!argv || !argv[0] || argv[0][0] != '/')
		return cm_errorf(err, EINVAL, "agent path must be absolute");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return cm_errorf(err, errno, "socketpair: %s", strerror(errno));
	if (pipe2(status, O_CLOEXEC) < 0) {
		cm_errorf(err, errno, "pipe: %s", strerror(errno));
		goto out_sv;
	}
	child = fork();
	if (child < 0) {
		cm_errorf(err, errno, "fork: %s", strerror(errno));
		goto out_status;
	}
	if (child == 0) {
		close(sv[0]);
		close(status[0]);
		detach_and_fork(argv, sv[1], logfile, status[1]);
	}
	close(status[1]);
	status[1] = -1;
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	if (read_report(status[0], argv[0], &out->pid, err) < 0)
		goto out_status;
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
	out->ctl_fd = sv[0];
	sv[0] = -1;
	rv = 0;
out_status:
	close(status[0]);
	if (status[1] >= 0)
		close(status[1]);
out_sv:
	if (sv[0] >= 0)
		close(sv[0]);
	close(sv[1]);
	return rv;
}

int cm_agent_send(struct cm_agent_handle *h, const char *line)
{
	char buf[512];
	int len = snprintf(buf, sizeof(buf), "%s\n", line);
	ssize_t n;

	if (h->ctl_fd < 0) {
		errno = EPIPE;
		return -1;
	}
	if (len < 0 || (size_t)len >= sizeof(buf)) {
		errno = EMSGSIZE;
		return -1;
	}
	do {
		n = send(h->ctl_fd, buf, (size_t)len, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n == len)
		return 0;
	if (n >= 0)
		errno = EAGAIN;	/* a partial line: treat as full */
	return -1;
}

void cm_agent_close(struct cm_agent_handle *h)
{
	if (h->ctl_fd >= 0)
		close(h->ctl_fd);
	h->ctl_fd = -1;
}
