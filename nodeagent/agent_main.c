/* agent_main.c: commap-agent, the node agent (docs/agent.md).
 *
 * Started by the SPANK plugin (one per job step per node, detached, task
 * pids on standard input) or by `commap run` (--pid CHILD --ready-fd FD).
 * This file holds the command line, logging and signals; the work is in
 * agent_loop.c.  Exit status: 0 done, 1 the result could not be written
 * or spooled, 2 bad command line (the message names the option).
 */
#include <config.h>

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

volatile sig_atomic_t agent_stop_requested;
static int verbosity;

void agent_log_set_verbosity(int v)
{
	verbosity = v;
}

static void vlog(const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	/* One write per line, so lines of concurrent agents sharing a log
	 * never interleave. */
	dprintf(STDERR_FILENO, "commap-agent: %s\n", line);
}

void agent_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void agent_info(const char *fmt, ...)
{
	va_list ap;

	if (verbosity < 1)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void agent_debug(const char *fmt, ...)
{
	va_list ap;

	if (verbosity < 2)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

static void on_stop(int sig)
{
	(void)sig;
	agent_stop_requested = 1;
}

static void setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* A closed log or ready pipe must not kill us before the result. */
	signal(SIGPIPE, SIG_IGN);
}

static void usage(FILE *f)
{
	fputs("usage: commap-agent --mode off|dynamic|learned|static[:FILE] "
	      "[--static FILE]\n"
	      "         (--pid PID[:RANK] ... | --tasks-from-stdin)\n"
	      "         [--job N --step N --uid N --stepd-pid PID] "
	      "[--spool DIR] [--service URL]\n"
	      "         [--output FILE] [--backend auto|sample|hw|fault"
	      "[+fault]] [--period-us N]\n"
	      "         [--topology SPEC | --topology-xml FILE] "
	      "[--ready-fd FD]\n"
	      "         [--alpha X] [--gain X] [--scan-ms N] [--verbose]\n"
	      "       commap-agent --check     what this node allows\n"
	      "See docs/agent.md.\n", f);
}

int main(int argc, char *argv[])
{
	struct cm_agent_opts o;
	struct cm_error err;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--check") == 0)
		return agent_check(stdout);
	cm_agent_opts_default(&o);
	if (cm_agent_opts_parse(&o, argc, argv, &err) < 0) {
		agent_warn("%s (see commap-agent --help)", err.text);
		return 2;
	}
	/* As the commap CLI: the service from the environment when not
	 * given (commap run passes its environment on). */
	if (!o.service && getenv("COMMAP_SERVICE") && *getenv("COMMAP_SERVICE"))
		o.service = getenv("COMMAP_SERVICE");
	agent_log_set_verbosity(o.verbose);
	setup_signals();
	return agent_run(&o, argc, argv);
}
