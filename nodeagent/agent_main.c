/* agent_main.c: commap-agent, the node agent (docs/agent.md).
 *
 * Started by the SPANK plugin (one per job step per node, detached, task
 * pids on standard input) or by `commap run` (--pid CHILD --ready-fd FD).
 * This file holds the command line, logging and signals; the work is in
 * agent_loop.c.  Exit status: 0 done, 1 the result could not be written
 * or spooled, 2 bad command line (the message names the option), 3 ended
 * by the watchdog.
 *
 * The watchdog: the agent is root on a node shared with users, so it must
 * never linger.  The first SIGTERM (SIGINT, SIGHUP) asks the loop to
 * finish and arms an alarm; if the result is not out AGENT_STOP_GRACE_S
 * later, the agent _exit()s wherever it is.  Under Slurm the end of the
 * step (the plugin closes our standard input) starts the same clock, a
 * longer one (AGENT_STEP_END_GRACE_S) since the result is then written and
 * uploaded.
 */
#define _GNU_SOURCE	/* POLLRDHUP, getgrouplist */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "upload.h"
#include "user_file.h"

/* Seconds between SIGTERM, or the end of the step, and the watchdog. */
#define AGENT_STOP_GRACE_S 5
#define AGENT_STEP_END_GRACE_S 10
/* A spooled result older than this was left by an earlier delivery (one
 * in flight wrote its file a few seconds ago). */
#define SPOOL_STALE_S 60
/* Seconds between two system-log lines about a node's spooled results. */
#define SPOOL_NOTE_EVERY_S 3600

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

static void __attribute__((noreturn)) on_watchdog(int sig)
{
	static const char msg[] = "commap-agent: watchdog: not finished in "
				  "time, exiting; no result for this run "
				  "unless it was already in the spool (the "
				  "next delivery on this node sends it)\n";
	ssize_t unused = write(STDERR_FILENO, msg, sizeof(msg) - 1);

	(void)unused;
	(void)sig;
	_exit(3);
}

static void on_stop(int sig)
{
	(void)sig;
	if (!agent_stop_requested)
		alarm(AGENT_STOP_GRACE_S);
	agent_stop_requested = 1;
}

/* Waits for the plugin's end of the control socket to close, without
 * reading it (the loop reads the task lines), then gives the agent its
 * grace to deliver. */
static void *step_end_watch(void *arg)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLRDHUP };

	(void)arg;
	for (;;) {
		p.revents = 0;
		if (poll(&p, 1, -1) > 0 && (p.revents & (POLLRDHUP | POLLHUP |
							 POLLERR | POLLNVAL)))
			break;
		/* Lines the loop has not read yet (or a file that is always
		 * readable): look again a little later, never spin. */
		usleep(100000);
	}
	sleep(AGENT_STEP_END_GRACE_S);
	on_watchdog(0);
}

static void start_step_end_watch(const struct cm_agent_opts *o)
{
	pthread_t t;
	sigset_t all, old;

	if (!o->tasks_from_stdin)
		return;
	/* Signals go to the main thread, whose loop looks at the flag. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, NULL, step_end_watch, NULL) == 0)
		pthread_detach(t);
	else
		agent_warn("no step-end watchdog: %s", strerror(errno));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
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
	sa.sa_handler = on_watchdog;
	sigaction(SIGALRM, &sa, NULL);
	/* A closed log or ready pipe must not kill us before the result. */
	signal(SIGPIPE, SIG_IGN);
}

/* The job's identity for reading the files it names: --uid, --gid (else
 * the user's primary group), --groups (else the user's groups from the
 * group database, as initgroups() would give them). */
static void set_static_reader(const struct cm_agent_opts *o)
{
	static gid_t groups[CM_AGENT_MAX_GROUPS];
	struct cm_user_cred cred = { .uid = (uid_t)-1 };
	struct passwd *pw;
	int n = CM_AGENT_MAX_GROUPS;

	if (o->mode != CM_AGENT_MODE_STATIC)
		return;
	if (o->uid != (uid_t)-1 && (geteuid() == 0 || o->uid != getuid())) {
		pw = getpwuid(o->uid);
		cred.uid = o->uid;
		cred.gid = o->gid != (gid_t)-1 ? o->gid :
			   pw ? pw->pw_gid : (gid_t)o->uid;
		if (o->ngroups >= 0) {
			memcpy(groups, o->groups,
			       sizeof(gid_t) * (size_t)o->ngroups);
			n = o->ngroups;
		} else if (!pw || getgrouplist(pw->pw_name, cred.gid, groups,
					       &n) < 0) {
			groups[0] = cred.gid;
			n = 1;
		}
		cred.groups = groups;
		cred.ngroups = n;
	}
	agent_static_set_reader(&cred, o->cwd);
}

/* Neither the service nor the spool took the result: our own log may be
 * in that spool, or /dev/null, so the system log hears it too. */
static void log_lost_result(const struct cm_agent_opts *o)
{
	openlog("commap-agent", LOG_PID, LOG_DAEMON);
	syslog(LOG_ERR, "job %lld step %lld: the result was not delivered "
	       "(service %s, spool %s); it is lost", o->job, o->step,
	       o->service ? o->service : "none",
	       o->spool ? o->spool : "none");
	closelog();
}

/* Is a system-log line about the spool due?  Once an hour per node: the
 * time of the last one is the mtime of spool/.backlog-noted (O_NOFOLLOW:
 * never a link planted there). */
static int backlog_note_due(const char *spool)
{
	char path[4096];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/.backlog-noted", spool);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	if (errno != EEXIST || lstat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    time(NULL) - st.st_mtime < SPOOL_NOTE_EVERY_S)
		return 0;
	utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW);
	return 1;
}

/* Results that earlier agents left in the spool (killed during their
 * upload, or the service unreachable) are sent by the next upload that
 * succeeds; until then our log says so, and the system log once an hour,
 * so that the node's admin hears of them even if no agent ever succeeds
 * again. */
static void note_spool_backlog(const struct cm_agent_opts *o)
{
	struct cm_deliver_opts d = { .spool_dir = o->spool };
	time_t oldest = 0;
	char when[32] = "?";
	struct tm tm;
	int n;

	/* Without a service the spool is where results stay: nothing to
	 * say. */
	if (!o->spool || !o->service ||
	    (n = cm_spool_stale(&d, SPOOL_STALE_S, &oldest)) <= 0)
		return;
	if (gmtime_r(&oldest, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	agent_warn("%d earlier result(s) wait in %s, the oldest since %s; "
		   "the next upload sends them", n, o->spool, when);
	if (!backlog_note_due(o->spool))
		return;
	openlog("commap-agent", LOG_PID, LOG_DAEMON);
	syslog(LOG_WARNING, "%d result(s) wait in %s, the oldest since %s "
	       "(an agent killed during its upload, or the service %s "
	       "unreachable); the next upload from this node sends them", n,
	       o->spool, when, o->service);
	closelog();
}

static void usage(FILE *f)
{
	fputs("usage: commap-agent --mode off|dynamic|learned|static[:FILE] "
	      "[--static FILE]\n"
	      "         (--pid PID[:RANK] ... | --tasks-from-stdin)\n"
	      "         [--job N --step N --uid N --stepd-pid PID] "
	      "[--spool DIR] [--service URL]\n"
	      "         [--gid N] [--groups G,G,...] [--cwd DIR] "
	      "[--cluster NAME]\n"
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
	int rc;

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
	set_static_reader(&o);
	note_spool_backlog(&o);
	start_step_end_watch(&o);
	rc = agent_run(&o, argc, argv);
	if (rc == 1)
		log_lost_result(&o);
	return rc;
}
