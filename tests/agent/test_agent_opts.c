/* test_agent_opts.c: commap-agent's command line, good and bad. */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent_opts.h"
#include "tap.h"

#define MAXARGS 40

/* Parse a space-separated command line (words without spaces). */
static int parse(const char *line, struct cm_agent_opts *o,
		 struct cm_error *err)
{
	static char buf[512];
	char *argv[MAXARGS + 1];
	int argc = 0;

	snprintf(buf, sizeof(buf), "commap-agent %s", line);
	for (char *w = strtok(buf, " "); w && argc < MAXARGS;
	     w = strtok(NULL, " "))
		argv[argc++] = w;
	argv[argc] = NULL;
	cm_agent_opts_default(o);
	cm_error_clear(err);
	return cm_agent_opts_parse(o, argc, argv, err);
}

struct bad_case {
	const char *line;
	const char *want;	/* must appear in the message */
};

static const struct bad_case bad[] = {
	{ "--pid 12 --bogus", "unknown option '--bogus'" },
	{ "--pid", "--pid: missing value" },
	{ "--pid 0", "--pid: invalid value '0'" },
	{ "--pid -5", "--pid: invalid value '-5'" },
	{ "--pid 12:x", "--pid: invalid value '12:x'" },
	{ "--pid 12:", "--pid: invalid value '12:'" },
	{ "--pid 99999999999", "--pid: invalid value '99999999999'" },
	{ "--pid 1 --mode fast", "--mode: invalid value 'fast'" },
	{ "--pid 1 --mode static", "static needs a file" },
	{ "--pid 1 --mode static:", "--mode: invalid value 'static:'" },
	{ "--pid 1 --static f.json", "--static: only with --mode static" },
	{ "--pid 1 --backend pebs", "--backend: invalid value 'pebs'" },
	{ "--pid 1 --backend fault+fault", "--backend: invalid value" },
	{ "--pid 1 --period-us 5", "--period-us: invalid value '5'" },
	{ "--pid 1 --period-us 1000001", "--period-us: invalid value" },
	{ "--pid 1 --period-us 1e3", "--period-us: invalid value '1e3'" },
	{ "--pid 1 --period-us +100", "--period-us: invalid value '+100'" },
	{ "--pid 1 --job abc", "--job: invalid value 'abc'" },
	{ "--pid 1 --step -1", "--step: invalid value '-1'" },
	{ "--pid 1 --uid 4294967295", "--uid: invalid value" },
	{ "--pid 1 --stepd-pid 0", "--stepd-pid: invalid value '0'" },
	{ "--pid 1 --gid x", "--gid: invalid value 'x'" },
	{ "--pid 1 --gid 4294967295", "--gid: invalid value" },
	{ "--pid 1 --groups 1,x", "--groups: invalid gid 'x'" },
	{ "--pid 1 --groups 1,-2", "--groups: invalid gid '-2'" },
	{ "--pid 1 --cwd rel/dir", "--cwd: 'rel/dir' is not an absolute path" },
	{ "--pid 1 --mpi-traffic tmp/x", "--mpi-traffic: 'tmp/x' is not an absolute path" },
	{ "--pid 1 --place-nodes learned", "--place-nodes: 'learned' is not 'learned|block BYTES BYTES RUNS'" },
	{ "--pid 1 --cluster a/b", "--cluster: invalid name" },
	{ "--pid 1 --cluster a\"b", "--cluster: invalid name" },
	{ "--pid 1 --cluster 0123456789012345678901234567890123456789012345678901234567890123",
	  "--cluster: invalid name" },
	{ "--pid 1 --alpha 1.5", "--alpha: invalid value '1.5'" },
	{ "--pid 1 --alpha nan", "--alpha: invalid value 'nan'" },
	{ "--pid 1 --gain -0.1", "--gain: invalid value '-0.1'" },
	{ "--pid 1 --scan-ms 1", "--scan-ms: invalid value '1'" },
	{ "--pid 1 --ready-fd x", "--ready-fd: invalid value 'x'" },
	{ "--pid 1 --topology a --topology-xml b", "cannot be combined" },
	{ "--pid 1 --output=", "--output: empty value" },
	{ "--pid 1 --record=", "--record: empty value" },
	{ "--replay r.rec --pid 1", "--replay: reads a recording" },
	{ "--replay r.rec --tasks-from-stdin", "--replay: reads a recording" },
	{ "--replay r.rec --record x.rec", "--replay: reads a recording" },
	{ "--mode dynamic", "no process to follow" },
	{ "", "no process to follow" },
	{ "--pid 1 stray", "unexpected argument 'stray'" },
};

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cm_agent_opts o;
		struct cm_error err;
		int rc = parse(bad[i].line, &o, &err);

		ok(rc == -1 && errno == EINVAL &&
		   strstr(err.text, bad[i].want) != NULL,
		   "bad: '%s' -> '%s'", bad[i].line, bad[i].want);
		if (rc != -1 || !strstr(err.text, bad[i].want))
			diag("  rc %d, message '%s'", rc, err.text);
	}
}

static void test_defaults(void)
{
	struct cm_agent_opts o;
	struct cm_error err;

	ok(parse("--pid 42", &o, &err) == 0, "--pid 42 parses");
	is_int(o.mode, CM_AGENT_MODE_DYNAMIC, "default mode dynamic");
	is_int(o.backend, CM_AGENT_BACKEND_AUTO, "default backend auto");
	is_int(o.period_us, 1000, "default period 1 ms");
	is_int(o.job, -1, "no job");
	is_int(o.uid, (uid_t)-1, "no uid");
	is_int(o.ready_fd, -1, "no ready fd");
	is_double(o.alpha, 0.75, 0, "alpha 0.75 (LHMapping 3.4.1)");
	is_int(o.nroots, 1, "one root");
	is_int(o.roots[0].pid, 42, "root pid");
	is_int(o.roots[0].rank, -1, "rank from the environment");
}

/* The exact command line the SPANK plugin builds (spank/commap_spank.c). */
static void test_spank_line(void)
{
	struct cm_agent_opts o;
	struct cm_error err;

	ok(parse("--mode static --static /x/m.json --cwd /home/u --job 42 "
		 "--step 4294967291 --uid 1000 --gid 100 --groups 100,27,1001 "
		 "--cluster big-1 --stepd-pid 777 --spool /var/spool/commap "
		 "--service http://h:1 --mpi-traffic /tmp/m.1 "
		 "--tasks-from-stdin", &o, &err) == 0,
	   "the plugin's command line parses (%s)", err.text);
	is_int(o.mode, CM_AGENT_MODE_STATIC, "mode static");
	is_str(o.static_file, "/x/m.json", "static file");
	is_int(o.job, 42, "job");
	is_int(o.step, 4294967291LL, "batch step id fits");
	is_int(o.uid, 1000, "uid");
	is_int(o.gid, 100, "gid");
	ok(o.ngroups == 3 && o.groups[0] == 100 && o.groups[2] == 1001,
	   "supplementary groups");
	is_str(o.cwd, "/home/u", "the job's directory");
	is_str(o.mpi_traffic, "/tmp/m.1", "the step's MPI traffic directory");
	is_str(o.cluster, "big-1", "cluster");
	is_int(o.stepd_pid, 777, "stepd pid");
	is_str(o.spool, "/var/spool/commap", "spool");
	is_str(o.service, "http://h:1", "service");
	ok(o.tasks_from_stdin && o.nroots == 0, "tasks from stdin only");
}

static void test_good(void)
{
	struct cm_agent_opts o;
	struct cm_error err;

	ok(parse("--pid 7:3 --pid 8 --mode static:/m --backend sample+fault "
		 "--period-us 250 --topology pack:2 -v -v --alpha 0 --gain 1 "
		 "--output /o --ready-fd 5 --scan-ms 20", &o, &err) == 0,
	   "many options parse (%s)", err.text);
	is_int(o.nroots, 2, "two roots");
	is_int(o.roots[0].rank, 3, "PID:RANK rank");
	is_int(o.roots[1].rank, -1, "PID alone");
	is_str(o.static_file, "/m", "static:FILE");
	ok(o.backend == CM_AGENT_BACKEND_SAMPLE && o.add_fault,
	   "sample+fault");
	is_str(cm_agent_backend_name(o.backend, o.add_fault), "sample+fault",
	       "backend name round trip");
	is_int(o.period_us, 250, "period");
	is_int(o.verbose, 2, "-v twice");
	is_int(o.ready_fd, 5, "ready fd");
	ok(parse("--pid=9 --mode=learned --period-us=10", &o, &err) == 0 &&
	   o.mode == CM_AGENT_MODE_LEARNED && o.period_us == 10,
	   "--opt=value forms, smallest period");
	ok(parse("--tasks-from-stdin --mode off", &o, &err) == 0 &&
	   o.mode == CM_AGENT_MODE_OFF, "off with stdin");
	ok(parse("--pid 4 --record /r.rec", &o, &err) == 0 && o.record &&
	   strcmp(o.record, "/r.rec") == 0 && !o.replay, "--record FILE");
	ok(parse("--replay /r.rec --output /o", &o, &err) == 0 && o.replay &&
	   strcmp(o.replay, "/r.rec") == 0 && o.nroots == 0,
	   "--replay FILE needs no process (%s)", err.text);
	is_str(cm_agent_mode_name(CM_AGENT_MODE_LEARNED), "learned",
	       "mode name");
}

struct line_case {
	const char *line;
	int rc, pid, rank;
	const char *cpus;
};

static const struct line_case lines[] = {
	{ "task 123 0", 1, 123, 0, NULL },
	{ "  task 5 17  ", 1, 5, 17, NULL },
	{ "task\t5\t2", 1, 5, 2, NULL },
	{ "", 0, 0, 0, NULL },
	{ "   ", 0, 0, 0, NULL },
	{ "task 0 1", -1, 0, 0, NULL },
	{ "task 5", -1, 0, 0, NULL },
	{ "task 5 1 0-3,8", 1, 5, 1, "0-3,8" },
	{ "task 5 1 3", 1, 5, 1, "3" },
	{ "task 5 1 extra", -1, 0, 0, NULL },
	{ "task 5 1 0-3 more", -1, 0, 0, NULL },
	{ "task 5 1 -3", -1, 0, 0, NULL },
	{ "task -5 1", -1, 0, 0, NULL },
	{ "task 5 -1", -1, 0, 0, NULL },
	{ "tusk 5 1", -1, 0, 0, NULL },
	{ "task 5x 1", -1, 0, 0, NULL },
	{ "task 99999999999 1", -1, 0, 0, NULL },
	/* a long word is read whole, not split into two fields (rank 0
	 * and CPU list "05" before) */
	{ "task 1 000000000000000000000000000000005", 1, 1, 5, NULL },
	{ "task 1 2 00000000000000000000000000000000000000000000000001", 1, 1,
	  2, "00000000000000000000000000000000000000000000000001" },
	{ "\ttask\t7 0\t", 1, 7, 0, NULL },
};

static void test_task_lines(void)
{
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct cm_error err;
		pid_t pid;
		int rank;
		char cpus[CM_AGENT_CPULIST_MAX];
		int rc = cm_agent_parse_task_line(lines[i].line, &pid, &rank,
						  cpus, &err);
		const char *want = lines[i].cpus ? lines[i].cpus : "";

		ok(rc == lines[i].rc && (rc != 1 || (pid == lines[i].pid &&
						     rank == lines[i].rank &&
						     !strcmp(cpus, want))),
		   "task line '%s' -> %d", lines[i].line, lines[i].rc);
		if (rc == -1)
			ok(strstr(err.text, "want 'task PID RANK [CPULIST]'") !=
			   NULL, "  message says what is expected");
	}
}

int main(void)
{
	test_bad();
	test_defaults();
	test_spank_line();
	test_good();
	test_task_lines();
	return done_testing();
}
