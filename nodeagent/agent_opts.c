/* agent_opts.c: commap-agent's command line (see agent_opts.h). */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_opts.h"

void cm_agent_opts_default(struct cm_agent_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = CM_AGENT_MODE_DYNAMIC;
	o->backend = CM_AGENT_BACKEND_AUTO;
	o->period_us = CM_AGENT_PERIOD_US_DEFAULT;
	o->job = -1;
	o->step = -1;
	o->uid = (uid_t)-1;
	o->gid = (gid_t)-1;
	o->ngroups = -1;
	o->ready_fd = -1;
	o->alpha = 0.75;
	o->gain = CM_AGENT_GAIN_DEFAULT;
	o->scan_ms = CM_AGENT_SCAN_MS_DEFAULT;
	o->overhead_pct = 1.0;
}

const char *cm_agent_mode_name(enum cm_agent_mode m)
{
	static const char *const names[] = { "off", "dynamic", "static",
					     "learned" };

	return (unsigned)m < 4 ? names[m] : "?";
}

const char *cm_agent_backend_name(enum cm_agent_backend b, int add_fault)
{
	switch (b) {
	case CM_AGENT_BACKEND_AUTO:
		return add_fault ? "auto+fault" : "auto";
	case CM_AGENT_BACKEND_SAMPLE:
		return add_fault ? "sample+fault" : "sample";
	case CM_AGENT_BACKEND_HW:
		return add_fault ? "hw+fault" : "hw";
	case CM_AGENT_BACKEND_FAULT:
		return "fault";
	}
	return "?";
}

/* A whole decimal number in [min, max]: digits only. */
static int parse_ull(const char *s, unsigned long long min,
		     unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (!s || !isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_num(const char *opt, const char *s, unsigned long long min,
		     unsigned long long max, unsigned long long *out,
		     struct cm_error *err)
{
	if (parse_ull(s, min, max, out) < 0)
		return cm_errorf(err, EINVAL, "%s: invalid value '%s' (want "
				 "an integer in %llu..%llu)", opt, s, min, max);
	return 0;
}

static int parse_fraction(const char *opt, const char *s, double min,
			  double max, double *out, struct cm_error *err)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !(v >= min && v <= max))
		return cm_errorf(err, EINVAL, "%s: invalid value '%s' (want a "
				 "number in %g..%g)", opt, s, min, max);
	*out = v;
	return 0;
}

int cm_agent_parse_pid(const char *s, struct cm_agent_root *out,
		       struct cm_error *err)
{
	char buf[64];
	char *colon;
	unsigned long long pid, rank = 0;

	if (!s || strlen(s) >= sizeof(buf))
		return cm_errorf(err, EINVAL, "--pid: invalid value '%s' "
				 "(want PID or PID:RANK)", s ? s : "");
	strcpy(buf, s);
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	if (parse_ull(buf, 1, INT_MAX, &pid) < 0 ||
	    (colon && parse_ull(colon + 1, 0, INT_MAX, &rank) < 0))
		return cm_errorf(err, EINVAL, "--pid: invalid value '%s' "
				 "(want PID or PID:RANK)", s);
	out->pid = (pid_t)pid;
	out->rank = colon ? (int)rank : -1;
	return 0;
}

/* A Linux CPU list: digits, ',' and '-' only, starting with a digit. */
static int cpulist_ok(const char *s)
{
	if (!isdigit((unsigned char)s[0]))
		return 0;
	return strspn(s, "0123456789,-") == strlen(s);
}

/* Split s (modified) at blanks into at most max words; returns how many
 * there are in all, which may be more than max. */
static int split_words(char *s, char **w, int max)
{
	static const char blanks[] = " \t\n\v\f\r";
	char *save = NULL, *t;
	int n = 0;

	for (t = strtok_r(s, blanks, &save); t; t = strtok_r(NULL, blanks,
							     &save)) {
		if (n < max)
			w[n] = t;
		n++;
	}
	return n;
}

int cm_agent_parse_task_line(const char *line, pid_t *pid, int *rank,
			     char *cpus, struct cm_error *err)
{
	char buf[CM_AGENT_CPULIST_MAX + 32], *w[4];
	unsigned long long p, r;
	size_t len = strlen(line);
	int n;

	*pid = 0;
	*rank = 0;
	cpus[0] = '\0';
	if (len >= sizeof(buf))
		return cm_errorf(err, EINVAL, "stdin: line of %zu bytes is too "
				 "long (want 'task PID RANK [CPULIST]')", len);
	/* Whole words, never a piece of a longer one (a fixed-width sscanf
	 * would split an overlong number into two fields). */
	memcpy(buf, line, len + 1);
	n = split_words(buf, w, 4);
	if (n == 0)
		return 0;
	if ((n != 3 && n != 4) || strcmp(w[0], "task") != 0 ||
	    parse_ull(w[1], 1, INT_MAX, &p) < 0 ||
	    parse_ull(w[2], 0, INT_MAX, &r) < 0 ||
	    (n == 4 && (!cpulist_ok(w[3]) ||
			strlen(w[3]) >= CM_AGENT_CPULIST_MAX)))
		return cm_errorf(err, EINVAL, "stdin: bad line '%.80s' (want "
				 "'task PID RANK [CPULIST]')", line);
	*pid = (pid_t)p;
	*rank = (int)r;
	if (n == 4)
		memcpy(cpus, w[3], strlen(w[3]) + 1);
	return 1;
}

static int parse_mode(struct cm_agent_opts *o, const char *s,
		      struct cm_error *err)
{
	if (strcmp(s, "off") == 0)
		o->mode = CM_AGENT_MODE_OFF;
	else if (strcmp(s, "dynamic") == 0)
		o->mode = CM_AGENT_MODE_DYNAMIC;
	else if (strcmp(s, "learned") == 0)
		o->mode = CM_AGENT_MODE_LEARNED;
	else if (strcmp(s, "static") == 0)
		o->mode = CM_AGENT_MODE_STATIC;
	else if (strncmp(s, "static:", 7) == 0 && s[7]) {
		o->mode = CM_AGENT_MODE_STATIC;
		o->static_file = s + 7;
	} else
		return cm_errorf(err, EINVAL, "--mode: invalid value '%s' "
				 "(want off, dynamic, learned, static or "
				 "static:FILE)", s);
	return 0;
}

static int parse_backend(struct cm_agent_opts *o, const char *s,
			 struct cm_error *err)
{
	static const struct {
		const char *name;
		enum cm_agent_backend b;
		int fault;
	} tab[] = {
		{ "auto", CM_AGENT_BACKEND_AUTO, 0 },
		{ "sample", CM_AGENT_BACKEND_SAMPLE, 0 },
		{ "hw", CM_AGENT_BACKEND_HW, 0 },
		{ "fault", CM_AGENT_BACKEND_FAULT, 0 },
		{ "auto+fault", CM_AGENT_BACKEND_AUTO, 1 },
		{ "sample+fault", CM_AGENT_BACKEND_SAMPLE, 1 },
		{ "hw+fault", CM_AGENT_BACKEND_HW, 1 },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (strcmp(s, tab[i].name) == 0) {
			o->backend = tab[i].b;
			o->add_fault = tab[i].fault;
			return 0;
		}
	}
	return cm_errorf(err, EINVAL, "--backend: invalid value '%s' (want "
			 "auto, sample, hw, fault, or sample/hw/auto+fault)",
			 s);
}

static int parse_path(const char *opt, const char *s, const char **out,
		      struct cm_error *err)
{
	if (!*s)
		return cm_errorf(err, EINVAL, "%s: empty value", opt);
	*out = s;
	return 0;
}

enum {
	OPT_MODE = 256, OPT_STATIC, OPT_BACKEND, OPT_PERIOD, OPT_JOB,
	OPT_STEP, OPT_UID, OPT_STEPD, OPT_SPOOL, OPT_SERVICE, OPT_OUTPUT,
	OPT_STDIN, OPT_PID, OPT_TOPO, OPT_TOPO_XML, OPT_READY, OPT_ALPHA,
	OPT_GAIN, OPT_SCAN, OPT_VERBOSE, OPT_NUMA, OPT_OVERHEAD, OPT_GID,
	OPT_GROUPS, OPT_CWD, OPT_CLUSTER, OPT_RECORD, OPT_REPLAY,
	OPT_MPI_TRAFFIC, OPT_PLACE_NODES,
};

static const struct option long_opts[] = {
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "static", required_argument, NULL, OPT_STATIC },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "period-us", required_argument, NULL, OPT_PERIOD },
	{ "job", required_argument, NULL, OPT_JOB },
	{ "step", required_argument, NULL, OPT_STEP },
	{ "uid", required_argument, NULL, OPT_UID },
	{ "gid", required_argument, NULL, OPT_GID },
	{ "groups", required_argument, NULL, OPT_GROUPS },
	{ "cwd", required_argument, NULL, OPT_CWD },
	{ "cluster", required_argument, NULL, OPT_CLUSTER },
	{ "stepd-pid", required_argument, NULL, OPT_STEPD },
	{ "spool", required_argument, NULL, OPT_SPOOL },
	{ "service", required_argument, NULL, OPT_SERVICE },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "tasks-from-stdin", no_argument, NULL, OPT_STDIN },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "topology", required_argument, NULL, OPT_TOPO },
	{ "topology-xml", required_argument, NULL, OPT_TOPO_XML },
	{ "ready-fd", required_argument, NULL, OPT_READY },
	{ "alpha", required_argument, NULL, OPT_ALPHA },
	{ "gain", required_argument, NULL, OPT_GAIN },
	{ "scan-ms", required_argument, NULL, OPT_SCAN },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "numa-balancing", required_argument, NULL, OPT_NUMA },
	{ "overhead", required_argument, NULL, OPT_OVERHEAD },
	{ "record", required_argument, NULL, OPT_RECORD },
	{ "replay", required_argument, NULL, OPT_REPLAY },
	{ "mpi-traffic", required_argument, NULL, OPT_MPI_TRAFFIC },
	{ "place-nodes", required_argument, NULL, OPT_PLACE_NODES },
	{ NULL, 0, NULL, 0 },
};

/* "G,G,...": numeric gids; "" for none. */
static int parse_groups(struct cm_agent_opts *o, const char *s,
			struct cm_error *err)
{
	char buf[CM_AGENT_MAX_GROUPS * 11 + 1], *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return cm_errorf(err, EINVAL, "--groups: list too long");
	strcpy(buf, s);
	o->ngroups = 0;
	for (char *w = strtok_r(buf, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		unsigned long long g;

		if (o->ngroups >= CM_AGENT_MAX_GROUPS)
			return cm_errorf(err, EINVAL, "--groups: more than %d "
					 "groups", CM_AGENT_MAX_GROUPS);
		if (parse_ull(w, 0, UINT32_MAX - 1, &g) < 0)
			return cm_errorf(err, EINVAL, "--groups: invalid gid "
					 "'%s' (want G,G,...)", w);
		o->groups[o->ngroups++] = (gid_t)g;
	}
	return 0;
}

/* A cluster name goes into the result as is: letters, digits, '-', '_'
 * and '.' only, so it is valid JSON text and a safe key. */
static int parse_cluster(struct cm_agent_opts *o, const char *s,
			 struct cm_error *err)
{
	size_t n = strlen(s);

	if (!n || n > CM_AGENT_CLUSTER_MAX ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		   "0123456789-_.") != n)
		return cm_errorf(err, EINVAL, "--cluster: invalid name (want "
				 "1 to %d letters, digits, '-', '_', '.')",
				 CM_AGENT_CLUSTER_MAX);
	o->cluster = s;
	return 0;
}

static int add_root(struct cm_agent_opts *o, const char *s,
		    struct cm_error *err)
{
	if (o->nroots >= CM_AGENT_MAX_PIDS)
		return cm_errorf(err, EINVAL, "--pid: more than %d pids",
				 CM_AGENT_MAX_PIDS);
	return cm_agent_parse_pid(s, &o->roots[o->nroots++], err);
}

/* One option with its value; the option's own name for messages. */
static int apply_option(struct cm_agent_opts *o, int c, const char *v,
			struct cm_error *err)
{
	unsigned long long n;

	switch (c) {
	case OPT_MODE:
		return parse_mode(o, v, err);
	case OPT_STATIC:
		return parse_path("--static", v, &o->static_file, err);
	case OPT_BACKEND:
		return parse_backend(o, v, err);
	case OPT_PERIOD:
		if (parse_num("--period-us", v, CM_AGENT_PERIOD_US_MIN,
			      CM_AGENT_PERIOD_US_MAX, &n, err) < 0)
			return -1;
		o->period_us = (unsigned)n;
		o->period_given = 1;
		return 0;
	case OPT_JOB:
	case OPT_STEP:
		if (parse_num(c == OPT_JOB ? "--job" : "--step", v, 0,
			      UINT32_MAX, &n, err) < 0)
			return -1;
		*(c == OPT_JOB ? &o->job : &o->step) = (long long)n;
		return 0;
	case OPT_UID:
		if (parse_num("--uid", v, 0, UINT32_MAX - 1, &n, err) < 0)
			return -1;
		o->uid = (uid_t)n;
		return 0;
	case OPT_GID:
		if (parse_num("--gid", v, 0, UINT32_MAX - 1, &n, err) < 0)
			return -1;
		o->gid = (gid_t)n;
		return 0;
	case OPT_GROUPS:
		return parse_groups(o, v, err);
	case OPT_CWD:
		if (v[0] != '/')
			return cm_errorf(err, EINVAL, "--cwd: '%s' is not an "
					 "absolute path", v);
		o->cwd = v;
		return 0;
	case OPT_CLUSTER:
		return parse_cluster(o, v, err);
	case OPT_STEPD:
		if (parse_num("--stepd-pid", v, 1, INT_MAX, &n, err) < 0)
			return -1;
		o->stepd_pid = (pid_t)n;
		return 0;
	case OPT_SPOOL:
		return parse_path("--spool", v, &o->spool, err);
	case OPT_SERVICE:
		return parse_path("--service", v, &o->service, err);
	case OPT_OUTPUT:
		return parse_path("--output", v, &o->output, err);
	case OPT_RECORD:
		return parse_path("--record", v, &o->record, err);
	case OPT_REPLAY:
		return parse_path("--replay", v, &o->replay, err);
	case OPT_MPI_TRAFFIC:
		if (v[0] != '/')
			return cm_errorf(err, EINVAL, "--mpi-traffic: '%s' is "
					 "not an absolute path", v);
		o->mpi_traffic = v;
		return 0;
	case OPT_PLACE_NODES: {
		double b, l;
		int runs;
		char kind[8];

		if (sscanf(v, "%7s %lf %lf %d", kind, &b, &l, &runs) != 4 ||
		    (strcmp(kind, "learned") && strcmp(kind, "block")) ||
		    b < 0 || l < 0 || runs < 0)
			return cm_errorf(err, EINVAL, "--place-nodes: '%.64s' "
					 "is not 'learned|block BYTES BYTES "
					 "RUNS'", v);
		o->place_nodes = v;
		return 0;
	}
	case OPT_STDIN:
		o->tasks_from_stdin = 1;
		return 0;
	case OPT_PID:
		return add_root(o, v, err);
	case OPT_TOPO:
		return parse_path("--topology", v, &o->topology, err);
	case OPT_TOPO_XML:
		return parse_path("--topology-xml", v, &o->topology_xml, err);
	case OPT_READY:
		if (parse_num("--ready-fd", v, 0, INT_MAX, &n, err) < 0)
			return -1;
		o->ready_fd = (int)n;
		return 0;
	case OPT_ALPHA:
		/* LHMapping §3.4.1 uses 0.5 < alpha < 1; 0 and 1 are
		 * allowed here (forget everything / never forget). */
		return parse_fraction("--alpha", v, 0.0, 1.0, &o->alpha, err);
	case OPT_GAIN:
		return parse_fraction("--gain", v, 0.0, 1.0, &o->gain, err);
	case OPT_SCAN:
		if (parse_num("--scan-ms", v, 5, 1000, &n, err) < 0)
			return -1;
		o->scan_ms = (unsigned)n;
		return 0;
	case OPT_VERBOSE:
		o->verbose++;
		return 0;
	case OPT_NUMA:
		if (strcmp(v, "manage") && strcmp(v, "leave"))
			return cm_errorf(err, EINVAL, "--numa-balancing: "
					 "invalid value '%s' (want manage or "
					 "leave)", v);
		o->numa_leave = strcmp(v, "leave") == 0;
		return 0;
	case OPT_OVERHEAD:
		o->overhead_given = 1;
		return parse_fraction("--overhead", v, 0.0, 50.0,
				      &o->overhead_pct, err);
	}
	return cm_errorf(err, EINVAL, "internal: option %d", c);
}

static int getopt_failure(int c, char *argv[], struct cm_error *err)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		return cm_errorf(err, EINVAL, "%s: missing value", arg);
	return cm_errorf(err, EINVAL, "unknown option '%s'", arg);
}

static int check_consistency(const struct cm_agent_opts *o,
			     struct cm_error *err)
{
	if (o->topology && o->topology_xml)
		return cm_errorf(err, EINVAL, "--topology: cannot be combined "
				 "with --topology-xml");
	if (o->mode == CM_AGENT_MODE_STATIC && !o->static_file)
		return cm_errorf(err, EINVAL, "--mode: static needs a file "
				 "(--mode static:FILE or --static FILE)");
	if (o->static_file && o->mode != CM_AGENT_MODE_STATIC)
		return cm_errorf(err, EINVAL, "--static: only with --mode "
				 "static (mode is %s)",
				 cm_agent_mode_name(o->mode));
	if (o->replay && (o->nroots || o->tasks_from_stdin || o->record))
		return cm_errorf(err, EINVAL, "--replay: reads a recording, "
				 "follows no process (no --pid, "
				 "--tasks-from-stdin or --record)");
	if (!o->nroots && !o->tasks_from_stdin && !o->replay)
		return cm_errorf(err, EINVAL, "no process to follow: give "
				 "--pid PID[:RANK] or --tasks-from-stdin");
	return 0;
}

int cm_agent_opts_parse(struct cm_agent_opts *o, int argc, char *argv[],
			struct cm_error *err)
{
	int c;

	optind = 0;	/* glibc: full reinitialisation */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":v", long_opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return getopt_failure(c, argv, err);
		if (c == 'v')
			c = OPT_VERBOSE;
		if (apply_option(o, c, optarg, err) < 0)
			return -1;
	}
	if (optind < argc)
		return cm_errorf(err, EINVAL, "unexpected argument '%s'",
				 argv[optind]);
	/* A period asked for is kept unless an overhead target is too. */
	if (o->period_given && !o->overhead_given)
		o->overhead_pct = 0;
	return check_consistency(o, err);
}
