/* test_ompi_monitoring.c: Open MPI's pml monitoring files read into the
 * node result's rank_traffic: the application's lines only, counts kept
 * exactly, bad lines refused with the line named, files of a directory
 * read for the node's ranks only, missing files skipped, the directory
 * removed without following links; the result document carries it and
 * the service's validator accepts it. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "agent_result.h"
#include "ompi_monitoring.h"
#include "result_validate.h"
#include "tap.h"
#include "user_file.h"

/* What Open MPI 4.1 writes for rank 0 of 3 (pml_monitoring_enable=2),
 * histograms shortened. */
static const char rank0[] =
	"# POINT TO POINT\n"
	"E\t0\t1\t438304768 bytes\t6688 msgs sent\t2,0,0,210,0,6688\n"
	"I\t0\t1\t840 bytes\t212 msgs sent\n"
	"I\t0\t2\t0 bytes\t2 msgs sent\t2,0,0,0\n"
	"# OSC\n"
	"# COLLECTIVES\n"
	"C\t0\t1\t840 bytes\t212 msgs sent\n"
	"D\tMPI_COMM_WORLD\tprocs: 0,1,2\n"
	"O2A\t0\t1680 bytes\t210 msgs sent\n";

static int problems;
static char last_problem[512];

static void problem(void *arg, const char *line)
{
	(void)arg;
	problems++;
	snprintf(last_problem, sizeof(last_problem), "%s", line);
}

static void test_parse(void)
{
	struct cm_rank_traffic t = { 0 };
	struct cm_error err;
	static const char two[] =
		"E\t3\t9\t10 bytes\t1 msgs sent\n"
		"E\t3\t4\t5 bytes\t2 msgs sent\t1,1\n"
		"E\t3\t9\t7 bytes\t3 msgs sent\n";

	ok(cm_ompi_mon_parse(rank0, strlen(rank0), 0, &t, &err) == 0 &&
	   t.nranks == 1 && t.ranks[0] == 0 && t.npairs == 1,
	   "rank 0: one application pair (internal, collective lines left "
	   "out)");
	ok(t.npairs == 1 && t.pairs[0].src == 0 && t.pairs[0].dst == 1 &&
	   t.pairs[0].bytes == 438304768u && t.pairs[0].messages == 6688,
	   "rank 0 -> 1: 438304768 bytes in 6688 messages");
	ok(cm_ompi_mon_parse(two, strlen(two), 3, &t, &err) == 0 &&
	   t.nranks == 2 && t.npairs == 3, "rank 3: two destinations");
	ok(t.pairs[1].dst == 4 && t.pairs[1].bytes == 5 &&
	   t.pairs[2].dst == 9 && t.pairs[2].bytes == 17 &&
	   t.pairs[2].messages == 4, "the same destination twice is summed");
	ok(cm_ompi_mon_parse("", 0, 5, &t, &err) == 0 && t.nranks == 3 &&
	   t.npairs == 3, "an empty file: the rank sent nothing");
	cm_rank_traffic_free(&t);
}

static void refused(const char *text, int rank, const char *want,
		    const char *name)
{
	struct cm_rank_traffic t = { 0 };
	struct cm_error err = { "" };
	int rc = cm_ompi_mon_parse(text, strlen(text), rank, &t, &err);

	ok(rc == -1 && strstr(err.text, want) && t.npairs == 0 &&
	   t.nranks == 0, "refused: %s (%s)", name, err.text);
	cm_rank_traffic_free(&t);
}

static void test_refused(void)
{
	refused("E\t1\t0\t5 bytes\t1 msgs sent\n", 0, "line 1", "another "
		"source rank");
	refused("# x\nE\t0\t1048576\t5 bytes\t1 msgs sent\n", 0, "line 2",
		"a destination of 2^20");
	refused("E\t0\t1\t-5 bytes\t1 msgs sent\n", 0, "line 1",
		"negative bytes");
	refused("E\t0\t1\t99999999999999999999 bytes\t1 msgs sent\n", 0,
		"line 1", "bytes of 20 digits");
	refused("E\t0\t1\t5 bytes\n", 0, "line 1", "no message count");
	refused("E\t0\t1\t5 bytes\t1 msgs sentX\n", 0, "line 1",
		"a word glued to the count");
	refused("E\t0\t1\t5 kbytes\t1 msgs sent\n", 0, "line 1",
		"another unit");
}

/* A node's pairs are bounded: the file that would pass the bound is
 * refused whole, what was read before is kept. */
static void test_bound(void)
{
	size_t cap = (size_t)(CM_OMPI_MON_PAIRS_MAX + 1) * 40, used = 0;
	char *text = malloc(cap);
	struct cm_rank_traffic t = { 0 };
	struct cm_error err = { "" };

	if (!text) {
		ok(0, "out of memory");
		return;
	}
	for (int d = 0; d <= CM_OMPI_MON_PAIRS_MAX; d++)
		used += (size_t)snprintf(text + used, cap - used,
					 "E\t1\t%d\t1 bytes\t1 msgs sent\n", d);
	ok(cm_ompi_mon_parse("E\t0\t1\t5 bytes\t1 msgs sent\n", 27, 0, &t,
			     &err) == 0 &&
	   cm_ompi_mon_parse(text, used, 1, &t, &err) == -1 &&
	   errno == E2BIG && strstr(err.text, "more than 262144 pairs") &&
	   t.npairs == 1 && t.nranks == 1, "past %d pairs a file is refused "
	   "(%s), the earlier file kept", CM_OMPI_MON_PAIRS_MAX, err.text);
	free(text);
	cm_rank_traffic_free(&t);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_collect(void)
{
	char dir[] = "/tmp/test-ompi-mon.XXXXXX", path[256], link[256];
	struct cm_user_cred self = { .uid = (uid_t)-1 };
	struct cm_rank_traffic t = { 0 };
	int ranks[] = { 0, 2, 0, -1, 7 }, files;
	struct stat st;

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/prof.0.prof", dir);
	write_file(path, rank0);
	snprintf(path, sizeof(path), "%s/prof.2.prof", dir);
	write_file(path, "E\t2\t0\tlots bytes\t1 msgs sent\n");
	snprintf(path, sizeof(path), "%s/prof.1.prof", dir);
	write_file(path, "E\t1\t0\t5 bytes\t1 msgs sent\n");
	/* a link the user left: removed, its target kept */
	snprintf(path, sizeof(path), "%s/target", dir);
	write_file(path, "keep");
	snprintf(link, sizeof(link), "%s.keep", dir);
	write_file(link, "keep");
	snprintf(path, sizeof(path), "%s/prof.9.prof", dir);
	ok(symlink(link, path) == 0, "a link in the directory");

	files = cm_ompi_mon_collect(dir, ranks, 5, &self, 5000, &t, problem,
				    NULL);
	ok(files == 1 && t.nranks == 1 && t.ranks[0] == 0 &&
	   t.npairs == 1, "rank 0 read once, rank 1 (not ours) left, rank 7 "
	   "absent: no problem");
	ok(problems == 1 && strstr(last_problem, "rank 2") &&
	   strstr(last_problem, "line 1"), "rank 2's malformed file is one "
	   "problem naming it (%s)", last_problem);
	if (geteuid() == 0) {
		/* as root, a file only root may read, for a job of uid
		 * 65534: read with the job's rights, so refused */
		struct cm_user_cred nobody = { .uid = 65534, .gid = 65534 };
		int rk[] = { 4 };

		snprintf(path, sizeof(path), "%s/prof.4.prof", dir);
		write_file(path, "E\t4\t0\t5 bytes\t1 msgs sent\n");
		chmod(path, 0600);
		chmod(dir, 0755);
		problems = 0;
		files = cm_ompi_mon_collect(dir, rk, 1, &nobody, 5000, &t,
					    problem, NULL);
		ok(files == 0 && problems == 1 && t.nranks == 1 &&
		   strstr(last_problem, "rank 4"), "a file the job's user "
		   "cannot read is a problem, not read (%s)", last_problem);
	} else {
		ok(1, "# SKIP not root: the job's rights are ours");
	}
	ok(cm_ompi_mon_remove_dir(dir) == 0 && lstat(dir, &st) < 0 &&
	   errno == ENOENT, "the directory is removed");
	ok(stat(link, &st) == 0, "a link's target is not followed");
	unlink(link);
	cm_rank_traffic_free(&t);
}

/* The agent's document with rank_traffic passes the service's checks. */
static void test_result(void)
{
	struct cm_agent_result r;
	struct cm_result_thread th[2] = {
		{ 0, 0, 100, 100, 0.5 }, { 1, 0, 200, 200, 0.5 },
	};
	struct cm_error err, verr = { "" };
	char *doc;
	json_t *j, *rt;

	cm_agent_result_init(&r);
	r.job = 7;
	r.step = 0;
	snprintf(r.node, sizeof(r.node), "n1");
	snprintf(r.user, sizeof(r.user), "alice");
	snprintf(r.executable, sizeof(r.executable), "/bin/app");
	r.ranks = 2;
	r.mode = "dynamic";
	r.cpuset = strdup("0-1");
	r.pus = 2;
	cm_agent_result_set_threads(&r, th, 2);
	r.traffic_on = 1;
	cm_ompi_mon_parse(rank0, strlen(rank0), 0, &r.traffic, &err);
	cm_ompi_mon_parse("E\t1\t2\t9 bytes\t1 msgs sent\n", 27, 1,
			  &r.traffic, &err);
	doc = cm_agent_result_json(&r, NULL, &err);
	j = doc ? json_loads(doc, 0, NULL) : NULL;
	rt = json_object_get(j, "rank_traffic");
	ok(rt && strcmp(json_string_value(json_object_get(rt, "source")),
			"ompi-monitoring") == 0 &&
	   json_array_size(json_object_get(rt, "ranks")) == 2 &&
	   json_array_size(json_object_get(rt, "pairs")) == 2 &&
	   json_integer_value(json_array_get(json_array_get(
		json_object_get(rt, "pairs"), 0), 2)) == 438304768,
	   "the result carries rank_traffic: source, ranks, pairs");
	ok(j && svc_result_validate(j, NULL, &verr) == 0, "the service "
	   "accepts it %s", verr.text);
	json_decref(j);
	free(doc);
	cm_agent_result_free(&r);
}

int main(void)
{
	test_parse();
	test_refused();
	test_bound();
	test_collect();
	test_result();
	return done_testing();
}
