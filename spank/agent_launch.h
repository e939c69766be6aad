/* agent_launch.h: start the node agent detached from slurmstepd.
 *
 * slurmstepd waits for every child it knows about and ends a step only
 * when they are gone; a helper it forked directly would hold the step
 * open (platform.md).  So the agent is started the daemon way: fork,
 * setsid, fork again, reset signals, close every descriptor but a control
 * socket on its standard input, exec.  The caller keeps the other end of
 * the socket (non-blocking, close-on-exec) to hand the agent task pids and
 * to tell it the step is ending (by closing it).  Writes never raise
 * SIGPIPE, so a dead agent cannot harm slurmstepd.
 */
#ifndef COMMAP_AGENT_LAUNCH_H
#define COMMAP_AGENT_LAUNCH_H

#include <sys/types.h>

#include "commap/error.h"

struct cm_agent_handle {
	pid_t pid;	/* the agent (not our child) */
	int ctl_fd;	/* our end of its standard input, -1 when closed */
};

/* Start argv[0] (an absolute path) with argv, standard output and error
 * appended to logfile (or /dev/null when NULL).  Returns once the exec has
 * succeeded or failed.  0 on success; -1 with errno and err (ENOENT/EACCES
 * naming the binary, or the failing system call). */
int cm_agent_launch(char *const argv[], const char *logfile,
		    struct cm_agent_handle *out, struct cm_error *err);

/* Send one line (newline added) to the agent without blocking.
 * 0 on success, -1 with errno (EPIPE when the agent is gone, EAGAIN when
 * its buffer is full). */
int cm_agent_send(struct cm_agent_handle *h, const char *line);

/* Close our end: the agent sees end of file, which means "the step is
 * ending".  Safe to call twice. */
void cm_agent_close(struct cm_agent_handle *h);

#endif
