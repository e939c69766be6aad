/* cmd_run.c: 'commap run': a program under the node agent, without Slurm
 * (docs/agent.md, "commap run").
 *
 *   commap run [--mode dynamic|off|static FILE] [--backend NAME]
 *              [--period-us N] [--output FILE]
 *              [--topology SPEC | --topology-xml FILE] [--quiet]
 *              [--verbose] -- PROGRAM [ARGS...]
 *
 * The program is forked first and held on a pipe; the agent is started as
 * a separate process in its own process group with --pid CHILD and a ready
 * pipe, so that it samples the child from its first instruction and so
 * that killing the agent (even -9) never touches the program or us.  Once
 * the agent says "ready" (or after 2 s, with one line saying so) the child
 * is released: it lets the agent read its memory (PR_SET_PTRACER, needed
 * under Yama ptrace_scope 1 for non-root users) and execs the program.
 * We wait for the program, then for the agent's result, print a summary
 * on standard error and exit with the program's status (128 + signal when
 * it was killed).
 */
#define _GNU_SOURCE
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli_common.h"
#include "commap/placement_check.h"
#include "commands.h"
#include "remote.h"

#define READY_TIMEOUT_MS 2000
#define AGENT_FINISH_MS 10000
#define AGENT_TERM_MS 3000

void cmd_run_help(FILE *f)
{
	fputs("usage: commap run [--mode dynamic|off|static FILE] "
	      "[--backend auto|sample|fault|hw]\n"
	      "                  [--period-us N] [--output FILE] "
	      "[--topology SPEC | --topology-xml FILE]\n"
	      "                  [--quiet] [--verbose] -- PROGRAM [ARGS...]\n"
	      "\n"
	      "Run PROGRAM under the commap node agent: it detects which "
	      "threads share\n"
	      "memory, maps them onto this machine's PUs (within the CPUs "
	      "PROGRAM may use)\n"
	      "and pins them while PROGRAM runs.  At the end a summary goes "
	      "to standard\n"
	      "error and the exit status is PROGRAM's (128 + signal if it "
	      "was killed).\n"
	      "\n"
	      "  --mode M          dynamic (default), off (follow only), "
	      "static FILE\n"
	      "                    (a mapping or matrix file, docs/agent.md)\n"
	      "  --backend B       detection backend (default auto)\n"
	      "  --period-us N     fixed sampling period in us of CPU time "
	      "(default: adapted\n"
	      "                    to spend 1% of the program's CPU time, "
	      "docs/agent.md)\n"
	      "  --output FILE     write the agent's JSON result there\n"
	      "  --topology SPEC   dry run: map onto a synthetic machine, "
	      "never pin\n"
	      "  --topology-xml F  dry run onto an hwloc XML machine\n"
	      "  --record FILE     record what detection consumes, for "
	      "commap replay\n"
	      "  --quiet           no summary\n"
	      "  --verbose         the agent logs what it does\n"
	      "The agent binary: $COMMAP_AGENT, else the build tree's, else "
	      "the installed one.\n", f);
}

struct run_opts {
	const char *mode;
	const char *static_file;
	const char *backend;
	const char *period;
	const char *output;
	const char *topology;
	const char *topology_xml;
	const char *record;
	int quiet;
	int verbose;
	char **prog;		/* argv of the program */
};

enum { R_MODE = 256, R_STATIC, R_BACKEND, R_PERIOD, R_OUTPUT, R_TOPO,
       R_TOPO_XML, R_QUIET, R_VERBOSE, R_HELP, R_RECORD };

static const struct option run_long_opts[] = {
	{ "mode", required_argument, NULL, R_MODE },
	{ "static", required_argument, NULL, R_STATIC },
	{ "backend", required_argument, NULL, R_BACKEND },
	{ "period-us", required_argument, NULL, R_PERIOD },
	{ "output", required_argument, NULL, R_OUTPUT },
	{ "topology", required_argument, NULL, R_TOPO },
	{ "topology-xml", required_argument, NULL, R_TOPO_XML },
	{ "record", required_argument, NULL, R_RECORD },
	{ "quiet", no_argument, NULL, R_QUIET },
	{ "verbose", no_argument, NULL, R_VERBOSE },
	{ "help", no_argument, NULL, R_HELP },
	{ NULL, 0, NULL, 0 },
};

/* --mode static FILE: the file is the next word unless it is an option
 * or the "--" before the program. */
static int parse_mode(struct run_opts *o, int argc, char *argv[])
{
	o->mode = optarg;
	if (strcmp(optarg, "off") == 0 || strcmp(optarg, "dynamic") == 0 ||
	    strcmp(optarg, "learned") == 0)
		return 0;
	if (strncmp(optarg, "static:", 7) == 0 && optarg[7]) {
		o->mode = "static";
		o->static_file = optarg + 7;
		return 0;
	}
	if (strcmp(optarg, "static") == 0) {
		if (optind < argc && argv[optind][0] != '-')
			o->static_file = argv[optind++];
		return 0;
	}
	return cli_usage_error("run", "--mode: invalid value '%s' (want "
			       "dynamic, off or static FILE)", optarg);
}

static int check_value(const char *opt, const char *v, const char *const *ok)
{
	for (; *ok; ok++)
		if (strcmp(v, *ok) == 0)
			return 0;
	return cli_usage_error("run", "%s: invalid value '%s'", opt, v);
}

static int parse_run_opts(struct run_opts *o, int argc, char *argv[])
{
	static const char *const backends[] = { "auto", "sample", "fault",
		"hw", "sample+fault", "hw+fault", "auto+fault", NULL };
	uint64_t period;
	int c;

	memset(o, 0, sizeof(*o));
	o->mode = "dynamic";
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hqv", run_long_opts,
				NULL)) != -1) {
		int rc = 0;

		switch (c) {
		case R_MODE: rc = parse_mode(o, argc, argv); break;
		case R_STATIC: o->static_file = optarg; break;
		case R_BACKEND:
			rc = check_value("--backend", optarg, backends);
			o->backend = optarg;
			break;
		case R_PERIOD:
			if (cli_parse_u64("--period-us", optarg, 10, 1000000,
					  &period) < 0)
				return CLI_EXIT_USAGE;
			o->period = optarg;
			break;
		case R_OUTPUT: o->output = optarg; break;
		case R_TOPO: o->topology = optarg; break;
		case R_TOPO_XML: o->topology_xml = optarg; break;
		case R_RECORD: o->record = optarg; break;
		case 'q': case R_QUIET: o->quiet = 1; break;
		case 'v': case R_VERBOSE: o->verbose++; break;
		case 'h': case R_HELP:
			cmd_run_help(stdout);
			return -1;
		default:
			return cli_getopt_error("run", c, argv);
		}
		if (rc)
			return rc;
	}
	if (o->topology && o->topology_xml)
		return cli_usage_error("run", "give either --topology or "
				       "--topology-xml, not both");
	if (strcmp(o->mode, "static") == 0 && !o->static_file)
		return cli_usage_error("run", "--mode static needs a FILE");
	if (o->static_file && strcmp(o->mode, "static") != 0)
		return cli_usage_error("run", "--static: only with --mode "
				       "static");
	if (optind >= argc)
		return cli_usage_error("run", "no program to run (commap run "
				       "[OPTIONS] -- PROGRAM [ARGS...])");
	o->prog = argv + optind;
	return 0;
}

#ifdef COMMAP_HAVE_AGENT
/* ---- finding the agent ---------------------------------------------- */

static int executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

/* $COMMAP_AGENT; else, when this commap runs from a build tree, that
 * tree's agent (so tests never pick up an older installed one); else the
 * installed agent; else one next to this binary.  Also used by 'commap
 * check' (commands.h). */
int cli_find_agent(char *out, size_t len)
{
	const char *env = getenv("COMMAP_AGENT");
	char self[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return executable(out) ? 0 : -1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if (snprintf(out, len, "%s/../nodeagent/commap-agent",
				     self) < (int)len && executable(out))
				return 0;
		}
	}
#ifdef COMMAP_AGENT_PATH
	snprintf(out, len, "%s", COMMAP_AGENT_PATH);
	if (executable(out))
		return 0;
#endif
	if (n > 0) {
		if (snprintf(out, len, "%s/commap-agent", self) < (int)len &&
		    executable(out))
			return 0;
	}
	return -1;
}

/* ---- processes ------------------------------------------------------ */

/* The program's side of the fork: wait for the release message (the
 * agent's pid, or nothing), let the agent read our memory, exec. */
static void child_exec(int release_fd, char **prog)
{
	pid_t agent = 0;

	if (read(release_fd, &agent, sizeof(agent)) != sizeof(agent))
		agent = 0;
	close(release_fd);
#ifdef PR_SET_PTRACER
	if (agent > 0)
		prctl(PR_SET_PTRACER, (unsigned long)agent, 0, 0, 0);
#endif
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	execvp(prog[0], prog);
	fprintf(stderr, "commap: run: cannot execute '%s': %s\n", prog[0],
		strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

static void agent_exec(const char *path, const struct run_opts *o,
		       pid_t child, int ready_fd, const char *output)
{
	char pidbuf[32], fdbuf[32];
	char *argv[32];
	int ac = 0, devnull;

	/* Our own process group: a terminal's ^C reaches the program and
	 * us, and the agent learns of the end from the program's exit. */
	setpgid(0, 0);
	devnull = open("/dev/null", O_RDONLY);
	if (devnull >= 0) {
		dup2(devnull, STDIN_FILENO);
		if (devnull != STDIN_FILENO)
			close(devnull);
	}
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)child);
	snprintf(fdbuf, sizeof(fdbuf), "%d", ready_fd);
	argv[ac++] = (char *)path;
	argv[ac++] = "--mode";
	argv[ac++] = (char *)o->mode;
	if (o->static_file) {
		argv[ac++] = "--static";
		argv[ac++] = (char *)o->static_file;
	}
	argv[ac++] = "--pid";
	argv[ac++] = pidbuf;
	argv[ac++] = "--ready-fd";
	argv[ac++] = fdbuf;
	argv[ac++] = "--output";
	argv[ac++] = (char *)output;
	if (o->backend) {
		argv[ac++] = "--backend";
		argv[ac++] = (char *)o->backend;
	}
	if (o->period) {
		argv[ac++] = "--period-us";
		argv[ac++] = (char *)o->period;
	}
	if (o->topology) {
		argv[ac++] = "--topology";
		argv[ac++] = (char *)o->topology;
	}
	if (o->topology_xml) {
		argv[ac++] = "--topology-xml";
		argv[ac++] = (char *)o->topology_xml;
	}
	if (o->record) {
		argv[ac++] = "--record";
		argv[ac++] = (char *)o->record;
	}
	for (int i = 0; i < o->verbose && i < 2; i++)
		argv[ac++] = "--verbose";
	argv[ac] = NULL;
	execv(path, argv);
	fprintf(stderr, "commap: run: cannot execute the agent %s: %s\n",
		path, strerror(errno));
	_exit(127);
}

/* Wait up to ms for "ready" on fd.  1 ready, 0 not. */
static int wait_ready(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[16];
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return 0;
	n = read(fd, buf, sizeof(buf));
	return n >= 5 && memcmp(buf, "ready", 5) == 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* waitpid with a time limit in ms: 1 reaped (status in *st), 0 not. */
static int wait_bounded(pid_t pid, int *st, int ms)
{
	for (int waited = 0; ; waited += 10) {
		pid_t r = waitpid(pid, st, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			return 1;
		if (waited >= ms)
			return 0;
		sleep_ms(10);
	}
}

/* Let the agent finish its result; never wait forever for it. */
static void finish_agent(pid_t agent)
{
	int st;

	if (wait_bounded(agent, &st, AGENT_FINISH_MS))
		return;
	cli_error("run: the agent did not finish in %d s; stopping it",
		  AGENT_FINISH_MS / 1000);
	kill(agent, SIGTERM);
	if (wait_bounded(agent, &st, AGENT_TERM_MS))
		return;
	kill(agent, SIGKILL);
	waitpid(agent, &st, 0);
}

static int wait_program(pid_t child)
{
	int st;

	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			return CLI_EXIT_RUNTIME;
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/* ---- summary -------------------------------------------------------- */

struct edge {
	long i, j;
	double w;
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	return x->w < y->w ? 1 : x->w > y->w ? -1 : 0;
}

static void print_pairs(const json_t *edges)
{
	size_t n = json_array_size(edges), k;
	struct edge *e = calloc(n ? n : 1, sizeof(*e));
	double total = 0;

	if (!e)
		return;
	for (k = 0; k < n; k++) {
		json_t *a = json_array_get(edges, k);

		e[k].i = (long)json_integer_value(json_array_get(a, 0));
		e[k].j = (long)json_integer_value(json_array_get(a, 1));
		e[k].w = json_number_value(json_array_get(a, 2));
		total += e[k].w;
	}
	qsort(e, n, sizeof(*e), cmp_edge);
	fprintf(stderr, "commap: top communicating pairs (thread-thread "
		"share):");
	for (k = 0; k < n && k < 8; k++)
		fprintf(stderr, " %ld-%ld %.0f%%", e[k].i, e[k].j,
			total > 0 ? 100.0 * e[k].w / total : 0.0);
	fprintf(stderr, "%s\n", n ? "" : " none detected");
	free(e);
}

static void print_mapping(const json_t *doc)
{
	const json_t *tl = json_object_get(doc, "timeline");
	const json_t *last = json_array_get(tl, json_array_size(tl) - 1);
	const json_t *pus = json_object_get(last, "pu_of_thread");
	size_t k;
	int any = 0;

	fprintf(stderr, "commap: final mapping (thread:PU):");
	for (k = 0; pus && k < json_array_size(pus); k++) {
		json_int_t pu = json_integer_value(json_array_get(pus, k));

		if (pu < 0)
			continue;
		fprintf(stderr, " %zu:%lld", k, (long long)pu);
		any = 1;
	}
	fprintf(stderr, "%s\n", any ? "" : " none (nothing pinned)");
	if (json_is_string(json_object_get(doc, "not_pinned")))
		fprintf(stderr, "commap: not pinned: %s\n", json_string_value(
				json_object_get(doc, "not_pinned")));
}

/* The progress guard's decisions and the placement invariant
 * (commap/placement_check.h), checked on every timeline entry. */
static void print_placement_checks(const json_t *doc)
{
	const json_t *tl = json_object_get(doc, "timeline");
	char *text = json_dumps(doc, JSON_COMPACT);
	struct cm_error err;

	for (size_t k = 0; k < json_array_size(tl); k++) {
		const json_t *e = json_array_get(tl, k);
		const char *why = json_string_value(json_object_get(e,
								    "reason"));
		const char *note = json_string_value(json_object_get(e,
								     "note"));

		if (why && strncmp(why, "guard", 5) == 0)
			fprintf(stderr, "commap: progress guard at %.2f s: %s "
				"(%s)\n", json_number_value(json_object_get(
					e, "t")), why, note ? note : "");
	}
	if (text && cm_placement_check_result(text, strlen(text), &err) < 0)
		fprintf(stderr, "commap: placement invariant broken: %s\n",
			err.text);
	free(text);
}

static void print_summary(const char *path, double wall_s)
{
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr);
	const json_t *st, *topo, *w, *mig;
	double cpu;
	size_t k;

	if (!doc) {
		cli_error("run: no agent result to summarise (%s)", jerr.text);
		return;
	}
	st = json_object_get(doc, "stats");
	topo = json_object_get(doc, "topology");
	cpu = json_number_value(json_object_get(st, "agent_cpu_s"));
	fprintf(stderr, "commap: %zu threads, %lld samples (%lld decoded, "
		"%lld lost), mode %s%s\n",
		json_array_size(json_object_get(doc, "threads")),
		(long long)json_integer_value(json_object_get(st, "samples")),
		(long long)json_integer_value(json_object_get(st, "decoded")),
		(long long)json_integer_value(json_object_get(st, "lost")),
		json_string_value(json_object_get(doc, "mode")),
		json_is_true(json_object_get(topo, "dry_run")) ?
		", dry run (not pinned)" : "");
	print_pairs(json_object_get(doc, "edges"));
	print_mapping(doc);
	print_placement_checks(doc);
	mig = json_object_get(doc, "migrations");
	fprintf(stderr, "commap: %zu pins (%zu first placements, %zu "
		"migrations), %zu mappings; agent CPU %.3f s (%.2f%% of %.2f s "
		"wall)\n", json_array_size(mig), remote_count_pins(mig, 0),
		remote_count_pins(mig, 1),
		json_array_size(json_object_get(doc, "timeline")), cpu,
		wall_s > 0 ? 100.0 * cpu / wall_s : 0.0, wall_s);
	w = json_object_get(doc, "warnings");
	for (k = 0; k < json_array_size(w); k++)
		fprintf(stderr, "commap: agent: %s\n",
			json_string_value(json_array_get(w, k)));
	json_decref(doc);
}

/* ---- the command ---------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A private result file when the user gave no --output. */
static int temp_output(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, len, "%s/commap-run.XXXXXX", dir && *dir ? dir :
		 "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Start the agent; -1 when it cannot be started (the program still
 * runs).  Its ready pipe tells us when it is sampling. */
static pid_t start_agent(const char *path, const struct run_opts *o,
			 pid_t child, const char *output)
{
	int rp[2];
	pid_t pid;

	if (pipe2(rp, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = fcntl(rp[1], F_DUPFD, 3);	/* without CLOEXEC */

		close(rp[0]);
		agent_exec(path, o, child, fd, output);
	}
	close(rp[1]);
	if (pid < 0) {
		close(rp[0]);
		return -1;
	}
	if (!wait_ready(rp[0], READY_TIMEOUT_MS))
		cli_error("run: the agent (%s) was not ready within %d s; "
			  "the program runs without it", path,
			  READY_TIMEOUT_MS / 1000);
	close(rp[0]);
	return pid;
}

static int run_program(const struct run_opts *o)
{
	char agent_path[PATH_MAX], tmp[PATH_MAX] = "";
	const char *output = o->output;
	int release[2], status;
	pid_t child, agent = -1;
	double t0;

	if (cli_find_agent(agent_path, sizeof(agent_path)) < 0) {
		cli_error("run: the agent binary was not found (%s); the "
			  "program runs without it", getenv("COMMAP_AGENT") ?
			  getenv("COMMAP_AGENT") : "no build-tree or "
			  "installed commap-agent; set COMMAP_AGENT");
		agent_path[0] = '\0';
	}
	if (!output) {
		if (temp_output(tmp, sizeof(tmp)) < 0) {
			cli_error("run: cannot create a temporary file: %s",
				  strerror(errno));
			return CLI_EXIT_RUNTIME;
		}
		output = tmp;
	}
	if (pipe2(release, O_CLOEXEC) < 0) {
		cli_error("run: pipe: %s", strerror(errno));
		return CLI_EXIT_RUNTIME;
	}
	fflush(NULL);
	child = fork();
	if (child < 0) {
		cli_error("run: fork: %s", strerror(errno));
		return CLI_EXIT_RUNTIME;
	}
	if (child == 0) {
		close(release[1]);
		child_exec(release[0], o->prog);
	}
	close(release[0]);
	/* Like system(): the terminal's ^C is for the program. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (agent_path[0])
		agent = start_agent(agent_path, o, child, output);
	if (write(release[1], &agent, sizeof(agent)) != sizeof(agent))
		cli_error("run: cannot release the program: %s",
			  strerror(errno));
	close(release[1]);
	t0 = now_s();
	status = wait_program(child);
	if (agent > 0) {
		finish_agent(agent);
		if (!o->quiet)
			print_summary(output, now_s() - t0);
	}
	if (tmp[0])
		unlink(tmp);
	return status;
}
#endif /* COMMAP_HAVE_AGENT */

int cmd_run(int argc, char *argv[])
{
	struct run_opts o;
	int rc = parse_run_opts(&o, argc, argv);

	if (rc < 0)
		return CLI_EXIT_OK;	/* --help */
	if (rc)
		return rc;
#ifdef COMMAP_HAVE_AGENT
	return run_program(&o);
#else
	cli_error("run: the node agent was not built: capstone was missing "
		  "at configure time (install libcapstone-dev and "
		  "reconfigure)");
	return CLI_EXIT_RUNTIME;
#endif
}
