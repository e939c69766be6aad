/* test_record.c: recordings written by the recorder (nodeagent/record.c)
 * and read back by the replay's reader (nodeagent/record_read.c).
 *
 * A recording of accesses gives, read back, the matrix those accesses
 * give fed straight to a sharer table of the same configuration (private
 * and shared keys, the time window), with the threads' identities and the
 * trailer; a cut recording (no "end") is read but marked incomplete; the
 * size-limit line is read; bad lines are refused naming the line.
 * Evidence of segment ownership (version 5, "shm") comes back as the very
 * same doubles, added where it was written among the accesses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cma_trace.h"
#include "commap/matrix.h"
#include "commap/topology.h"
#include "detect_table.h"
#include "record.h"
#include "replay.h"
#include "shm_owner.h"
#include "tap.h"

#define MS 1000000ull

struct acc {
	int thread;
	uint64_t space, inode, addr;
	int shared;
	uint64_t t;
};

/* Two pairs on private pages, one pair across processes through a file
 * page, and one access too late for the window.  Thread 1's second
 * access is on another cache line of its block: on the same line it
 * would continue its run (evidence.h) and count once. */
static const struct acc accs[] = {
	{ 1, 0, 0, 0x1000, 0, 1 * MS }, { 2, 0, 0, 0x1008, 0, 2 * MS },
	{ 3, 0, 0, 0x5000, 0, 3 * MS }, { 4, 0, 0, 0x5100, 0, 4 * MS },
	{ 1, 0, 0, 0x1040, 0, 5 * MS }, { 5, 8, 99, 0x40, 1, 6 * MS },
	{ 6, 8, 99, 0x80, 1, 7 * MS }, { 2, 0, 0, 0x1000, 0, 900 * MS },
};
#define NACC ((int)(sizeof(accs) / sizeof(accs[0])))

static void key_of(const struct acc *a, struct cm_block_key *k)
{
	if (a->shared)
		cm_block_key_shared(k, a->space, a->inode, a->addr);
	else
		cm_block_key_private(k, a->space, a->addr);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 16);

	*len = f && buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

static void test_round_trip(const char *path)
{
	struct cm_detect_config cfg = { 4096, 1024, 100 * MS };
	struct cm_detect_table *t = cm_detect_table_new(&cfg, NULL);
	struct cm_matrix *direct = cm_matrix_new(0);
	struct cm_recorder *r = cm_record_open(path, NULL);
	struct cm_topo *topo = NULL;
	struct cm_replay rp;
	struct cm_error err = { "" };
	size_t len;
	char *text;

	ok(r != NULL, "the recorder creates the file");
	cm_record_detect(r, &cfg);
	for (int i = 0; i < 7; i++)
		cm_record_thread(r, i, 100 + (i > 4), 200 + i, i > 4, i);
	for (int i = 0; i < NACC; i++) {
		struct cm_block_key k;

		key_of(&accs[i], &k);
		/* read-only: the sharer table alone (evidence.h), so the
		 * replayed matrix is the table's */
		cm_record_access(r, accs[i].thread, &k, 0, CM_REF_READONLY,
				 accs[i].t);
		cm_detect_access(t, direct, accs[i].thread, &k, accs[i].t);
	}
	cm_topo_load_synthetic(&topo, "pack:2 core:2 pu:2", NULL);
	ok(cm_record_close(r, topo, 1, "dynamic", &err) == 0,
	   "the recorder closes cleanly (%s)", err.text);
	text = slurp(path, &len);
	ok(cm_replay_parse(text, len, &rp, &err) == 0, "read back (%s)",
	   err.text);
	is_int(rp.nthreads, 7, "7 threads");
	ok(rp.threads[5].pid == 101 && rp.threads[5].tid == 205 &&
	   rp.threads[5].rank == 1 && rp.threads[5].index == 5 &&
	   rp.threads[5].known, "a thread's identity");
	is_int((int)rp.accesses, NACC, "every access");
	ok(cm_matrix_cosine(rp.m, direct) > 0.999999 &&
	   cm_matrix_total(rp.m) == cm_matrix_total(direct),
	   "the matrix of the accesses fed straight to the table");
	ok(cm_matrix_get(rp.m, 1, 2) == 2 && cm_matrix_get(rp.m, 3, 4) == 1 &&
	   cm_matrix_get(rp.m, 5, 6) == 1 && cm_matrix_get(rp.m, 1, 3) == 0,
	   "the pairs, the shared page across processes, the window");
	ok(rp.synthetic && strstr(rp.synthetic, "PU:2") && rp.cpuset &&
	   strcmp(rp.cpuset, "0-7") == 0 && rp.dry_run && rp.complete &&
	   strcmp(rp.mode, "dynamic") == 0, "the trailer (%s, %s)",
	   rp.synthetic ? rp.synthetic : "-", rp.cpuset ? rp.cpuset : "-");
	cm_replay_free(&rp);

	/* Cut before the trailer: read, marked incomplete. */
	text[strstr(text, "topology") - text] = '\0';
	ok(cm_replay_parse(text, strlen(text), &rp, &err) == 0 && !rp.complete &&
	   !rp.synthetic && rp.accesses == NACC, "a cut recording is read, "
	   "incomplete");
	cm_replay_free(&rp);
	free(text);
	cm_topo_free(topo);
	cm_matrix_free(direct);
	cm_detect_table_free(t);
}

struct bad_case {
	const char *text, *want;
};

#define V3 "commap-recording 3\nstart 1 2\ndetect 4096 1024 0\n"
#define V4 "commap-recording 4\nstart 1 2\ndetect 4096 1024 0\n"
#define V5 "commap-recording 5\nstart 1 2\ndetect 4096 1024 0\n"
#define OPT "options 1 0.75 0.05 dynamic\n"

static const struct bad_case bad[] = {
	{ "", "ends inside its header" },
	{ "commap-recording 6\n", "line 1: unsupported version 6" },
	{ "commap-matrix 1\n", "line 1: not a commap recording" },
	{ "commap-recording 1\nstart x 1\n", "line 2: want 'start" },
	{ "commap-recording 1\nstart 1 2\ndetect 100 1024 0\n",
	  "line 3: detect: the table's configuration" },
	{ "commap-recording 1\nstart 1 2\ndetect 4096 4194304 0\n",
	  "line 3: want 'detect" },
	{ "commap-recording 1\nstart 1 2\ndetect 4096 1024 0\na 1 4096 0 0 0 0\n",
	  "line 4: want 'a TIME" },
	{ "commap-recording 1\nstart 1 2\ndetect 4096 1024 0\na 1 0 0 0 0 2\n",
	  "line 4: want 'a TIME" },
	{ "commap-recording 1\nstart 1 2\ndetect 4096 1024 0\nthread 0 1 1 0\n",
	  "line 4: want 'thread" },
	{ "commap-recording 1\nstart 1 2\ndetect 4096 1024 0\n"
	  "thread 0 1 1 0 0\nthread 0 1 1 0 0\n", "line 5: a second 'thread'" },
	{ "commap-recording 1\nstart 1 2\ndetect 4096 1024 0\nfoo\n",
	  "line 4: unknown line" },
	{ "commap-recording 1\nstart 1 2\ndetect 4096 1024 0\nend\na 1 0 0 0 0 0\n",
	  "line 5: text after 'end'" },
	{ "commap-recording 1\nstart 1 2\ndetect 4096 1024 0\n\n",
	  "line 4: empty line" },
	{ "commap-recording 1\nstart 1 2\ndetect 4096 1024 0\ncpuset 1\n"
	  "cpuset 2\n", "line 5: given twice" },
	/* version 3: the decisions' inputs */
	{ "commap-recording 2\nstart 1 2\ndetect 4096 1024 0\nexit 1\n",
	  "line 4: want 'exit I'" },
	{ "commap-recording 2\nstart 1 2\ndetect 4096 1024 0\n"
	  "options 1 0.75 0.05 dynamic\n", "line 4: 'options' needs version 3" },
	{ V3 "interval 5 200\n", "line 4: a clock line before 'options'" },
	{ V3 OPT "options 1 0.75 0.05 dynamic\n", "line 5: 'options' given" },
	{ V3 "options 1 1.5 0.05 dynamic\n", "line 4: options: ALPHA" },
	{ V3 "options 1 0.75 nan dynamic\n", "line 4: options: GAIN" },
	{ V3 OPT "interval 5 0\n", "line 5: want 'interval TIME MS [APP]'" },
	{ V3 OPT "interval 9 200 10\n", "line 5: the progress clock is "
	  "outside" },
	{ V3 OPT "checkpoint 9 0\n", "line 5: the progress clock is outside" },
	{ V3 OPT "interval 9 200 8\ncheckpoint 10 7\n",
	  "line 6: the progress clock goes back" },
	{ V3 OPT "interval 9 200 8\ninterval 9 200 x\n",
	  "line 6: want 'interval TIME MS [APP]'" },
	{ V3 OPT "interval 9 200 8 8\n", "line 5: want 'interval TIME MS" },
	{ V3 OPT "interval 9 200\ncheckpoint 8\n", "line 6: time goes back" },
	{ V3 OPT "checkpoint\n", "line 5: want 'checkpoint TIME [APP]'" },
	{ V3 OPT "exit 4096\n", "line 5: want 'exit I'" },
	{ V3 "options 1 0.75 0.05 dynamic 0\n", "line 4: options: NEAR_SEEN" },
	{ V3 "options 1 0.75 0.05 dynamic 1 x\n", "line 4: want 'options" },
	{ V3 "snap x 5 1\n", "line 4: want 'snap m|a|p" },
	{ V3 "snap m 5 4097\n", "line 4: want 'snap m|a|p" },
	{ V3 "snap m 5 2\ns 1 1\na 1 0 0 0 0 0 0 0\n",
	  "line 6: a snapshot cut short" },
	{ V3 "snap m 5 1\ns -2 1\n", "line 5: want 's CPU WAIT'" },
	{ V3 OPT "interval 9 200\nsnap p 8 0\n", "line 6: time goes back" },
	/* version 4: pins that failed */
	{ V3 "nopin 5 1 0 1\n", "line 4: want 'nopin TIME I OS ERRNO'" },
	{ V4 "nopin 5 1 0 0\n", "line 4: want 'nopin TIME I OS ERRNO'" },
	{ V4 "nopin 5 4096 0 1\n", "line 4: want 'nopin" },
	{ V4 "nopin 5 1 -2 1\n", "line 4: want 'nopin" },
	{ V4 "nopin 5 1 0 1 0\n", "line 4: want 'nopin" },
	/* version 4: single-copy transfers */
	{ V3 "cma_unit 65536\n", "line 4: want 'cma_unit BYTES'" },
	{ V4 "cma_unit 0.5\n", "line 4: cma_unit: BYTES must be" },
	{ V4 "cma_unit 65536\ncma_unit 65536\n", "line 5: 'cma_unit' given" },
	{ V4 "cma 5 1 1 2 4096\n", "line 4: a 'cma' line before 'cma_unit'" },
	{ V4 "cma_unit 4096\ncma 5 1 1 2\n", "line 5: want 'cma TIME" },
	{ V4 "cma_unit 4096\ncma 5 1 1 2147483648 1\n", "line 5: want 'cma" },
	{ V4 "cma_unit 4096\ncma 5 1 1 2 1099511627777\n",
	  "line 5: want 'cma" },
	/* version 5: evidence of segment ownership */
	{ V4 "shm 5 0 1 1\n", "line 4: want 'shm TIME I J WEIGHT'" },
	{ V5 "shm 5 0 1\n", "line 4: want 'shm TIME I J WEIGHT'" },
	{ V5 "shm 5 0 1 1 1\n", "line 4: want 'shm" },
	{ V5 "shm 5 0 4096 1\n", "line 4: want 'shm" },
	{ V5 "shm -5 0 1 1\n", "line 4: want 'shm" },
	{ V5 "shm 5 0 1 0\n", "line 4: shm: WEIGHT must be" },
	{ V5 "shm 5 0 1 1.5\n", "line 4: shm: WEIGHT must be" },
	{ V5 "shm 5 0 1 nan\n", "line 4: shm: WEIGHT must be" },
	{ V5 "shm 5 0 1 0.5x\n", "line 4: shm: WEIGHT must be" },
	{ V5 "shm 5 2 2 1\n", "line 4: shm: a thread with itself" },
};

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cm_replay rp;
		struct cm_error err = { "" };
		int rc = cm_replay_parse(bad[i].text, strlen(bad[i].text), &rp,
					 &err);

		ok(rc < 0 && errno == EINVAL && strstr(err.text, bad[i].want) &&
		   !rp.m, "refused: %s (%s)", bad[i].want, err.text);
	}
}

static void test_dropped(void)
{
	const char *text = "commap-recording 1\nstart 1 2\ndetect 4096 1024 0\n"
			   "dry_run 0\ndropped 12\nend\n";
	struct cm_replay rp;
	struct cm_error err = { "" };

	ok(cm_replay_parse(text, strlen(text), &rp, &err) == 0 &&
	   rp.dropped == 12 && rp.complete && rp.nthreads == 0,
	   "the size limit's count is read (%s)", err.text);
	cm_replay_free(&rp);
}

/* What the decisions' replay is given at each clock line. */
struct clocks {
	int n, ms[4];
	uint64_t app[4];	/* the progress clock given */
	double fresh;		/* the events' weight given, in all */
	char snaps[4];		/* the snapshots' kinds, in order */
	int nsnap;
	double cpu1, wait1;	/* thread 1's readings in the last one */
};

static int on_clock(void *ctx, const struct cm_replay *rp,
		    const struct cm_replay_clock *ev, struct cm_error *err)
{
	struct clocks *c = ctx;

	(void)rp;
	(void)err;
	if (ev->snap) {
		if (c->nsnap < 4)
			c->snaps[c->nsnap] = ev->snap;
		c->nsnap++;
		c->cpu1 = ev->n > 1 ? ev->cpu[1] : -2;
		c->wait1 = ev->n > 1 ? ev->wait[1] : -2;
		return 0;
	}
	if (c->n < 4) {
		c->ms[c->n] = ev->interval_ms;
		c->app[c->n] = ev->app_ns;
	}
	c->n++;
	c->fresh += cm_matrix_total(ev->fresh);
	return 0;
}

/* Version 3: options, interval ends, checkpoints and exits written by the
 * recorder come back, and the events between clock lines add up to the
 * run's matrix. */
static void test_clock(const char *path)
{
	struct cm_detect_config cfg = { 4096, 1024, 100 * MS };
	struct cm_recorder *r = cm_record_open(path, NULL);
	struct clocks c = { 0 };
	struct cm_replay rp;
	struct cm_error err = { "" };
	size_t len;
	char *text;

	cm_record_detect(r, &cfg);
	cm_record_options(r, 7, 0.75, 0.05, 0.4, "dynamic");
	cm_record_options(r, 8, 0.5, 0.05, 1, "dynamic");	/* ignored */
	for (int i = 0; i < 7; i++)
		cm_record_thread(r, i, 100, 200 + i, 0, i);
	for (int i = 0; i < NACC; i++) {
		struct cm_block_key k;

		key_of(&accs[i], &k);
		cm_record_access(r, accs[i].thread, &k, 0, CM_REF_READONLY,
				 accs[i].t);
		if (i == NACC / 2)
			cm_record_clock(r, 1000, 200, 400);
	}
	cm_record_exit(r, 3);
	cm_record_exit(r, 3);
	cm_record_clock(r, 2000, 0, 1500);
	{
		double cpu[3] = { -1, 0.125, 3.5 }, wait[3] = { -1, 1e-9, 0 };

		cm_record_snapshot(r, 'a', 2000, 3, cpu, wait);
		cm_record_snapshot(r, 'p', 2300, 3, cpu, wait);
	}
	cm_record_exit(r, 9);		/* never written: no identity */
	cm_record_nopin(r, 2000, 4, 1, ESRCH);
	cm_record_nopin(r, 2300, 2, -1, EPERM);
	ok(cm_record_close(r, NULL, 1, "dynamic", &err) == 0, "closed (%s)",
	   err.text);
	text = slurp(path, &len);
	ok(cm_replay_parse_clocked(text, len, &rp, on_clock, &c, &err) == 0,
	   "version 4 read back (%s)", err.text);
	ok(rp.has_options && rp.t0_ns == 7 && rp.alpha == 0.75 &&
	   rp.gain == 0.05 && rp.near_seen == 0.4 &&
	   strcmp(rp.opt_mode, "dynamic") == 0,
	   "the options, once, the very same doubles");
	ok(c.n == 2 && c.ms[0] == 200 && c.ms[1] == 0 && rp.nintervals == 1,
	   "an interval end, then a checkpoint (%d calls)", c.n);
	ok(c.app[0] == 400 && c.app[1] == 1500, "each with the progress "
	   "clock written (%llu, %llu)", (unsigned long long)c.app[0],
	   (unsigned long long)c.app[1]);
	ok(c.fresh > 0 && c.fresh <= cm_matrix_total(rp.m) &&
	   rp.last_clock_ns >= 2000, "the events between clock lines are "
	   "the matrix's (%g of %g)", c.fresh, cm_matrix_total(rp.m));
	ok(rp.threads[3].exited && !rp.threads[2].exited && rp.nthreads == 7,
	   "an exit, once, only of a thread written");
	ok(c.nsnap == 2 && c.snaps[0] == 'a' && c.snaps[1] == 'p' &&
	   c.cpu1 == 0.125 && c.wait1 == 1e-9 && rp.last_clock_ns == 2300,
	   "the guard's snapshots, the very same readings");
	ok(rp.nnopin == 2 && rp.nopin[0].t_ns == 2000 && rp.nopin[0].i == 4 &&
	   rp.nopin[0].os == 1 && rp.nopin[0].err == ESRCH &&
	   rp.nopin[1].os == -1 && rp.nopin[1].err == EPERM,
	   "the pins that failed, with their time, thread, PU and errno");
	cm_replay_free(&rp);
	free(text);
}

/* Lines written before the progress clock was recorded age by their
 * time, so older recordings replay as they always did. */
static void test_clock_without_app(void)
{
	const char *text = V3 OPT "interval 9 200\ncheckpoint 12\n"
			   "interval 15 250 14\n";
	struct clocks c = { 0 };
	struct cm_replay rp;
	struct cm_error err = { "" };

	ok(cm_replay_parse_clocked(text, strlen(text), &rp, on_clock, &c,
				   &err) == 0 && c.n == 3, "read (%s)",
	   err.text);
	ok(c.app[0] == 9 && c.app[1] == 12 && c.app[2] == 14,
	   "without APP the progress clock is the line's time (%llu %llu "
	   "%llu)", (unsigned long long)c.app[0],
	   (unsigned long long)c.app[1], (unsigned long long)c.app[2]);
	cm_replay_free(&rp);
}

/* Transfers are recorded before their attribution and attributed again
 * by the agent's code to the recorded threads: the caller's thread, the
 * peer's most calling thread (else its main thread), none for a caller
 * not recorded. */
static void test_cma(const char *path)
{
	struct cm_detect_config cfg = { 4096, 1024, 100 * MS };
	struct cm_recorder *r = cm_record_open(path, NULL);
	struct cm_cma_transfer x[] = {
		{ .pid = 100, .tid = 101, .peer = 200, .bytes = 131072,
		  .time = 5 },
		{ .pid = 200, .tid = 200, .peer = 100, .bytes = 65536,
		  .time = 6 },
		{ .pid = 300, .tid = 300, .peer = 100, .bytes = 65536,
		  .time = 7 },
	};
	struct cm_replay rp;
	struct cm_error err = { "" };
	size_t len;
	char *text;

	cm_record_detect(r, &cfg);
	cm_record_thread(r, 0, 100, 100, 0, 0);
	cm_record_thread(r, 1, 100, 101, 0, 1);
	cm_record_thread(r, 2, 200, 200, 1, 0);
	for (size_t k = 0; k < sizeof(x) / sizeof(x[0]); k++)
		cm_record_cma(r, &x[k], 0);
	ok(cm_record_close(r, NULL, 1, "dynamic", &err) == 0, "closed (%s)",
	   err.text);
	text = slurp(path, &len);
	ok(cm_replay_parse(text, len, &rp, &err) == 0, "transfers read back "
	   "(%s)", err.text);
	ok(rp.cma_unit == 65536 && rp.cma_lines == 3 && rp.cma_added == 2 &&
	   rp.cma_bytes == 196608, "three transfers, the default unit, the "
	   "caller not recorded left out");
	ok(cm_matrix_get(rp.m, 1, 2) == 3 && cm_matrix_get(rp.m, 0, 2) == 0 &&
	   cm_matrix_total(rp.m) == 3, "attributed as the agent does: the "
	   "peer's main thread, then its thread that called (%g)",
	   cm_matrix_get(rp.m, 1, 2));
	cm_replay_free(&rp);
	free(text);
}

/* Ownership evidence written among the accesses comes back as the very
 * same doubles (2/3 and 1/3 have no short decimal form), in the matrix
 * the accesses and the evidence give added in the same order, and in
 * the interval it was written in. */
static void test_shm(const char *path)
{
	static const double wt[] = { 1.0, 2.0 / 3, 1.0 / 3, 0.4 };
	struct cm_detect_config cfg = { 4096, 1024, 100 * MS };
	struct cm_detect_table *t = cm_detect_table_new(&cfg, NULL);
	struct cm_matrix *direct = cm_matrix_new(0);
	struct cm_recorder *r = cm_record_open(path, NULL);
	struct clocks c = { 0 };
	struct cm_replay rp;
	struct cm_error err = { "" };
	double before = 0, all = 0;
	int same = 1;
	size_t len;
	char *text;

	cm_record_detect(r, &cfg);
	cm_record_options(r, 1, 0.75, 0.05, 1, "dynamic");
	for (int i = 0; i < 7; i++)
		cm_record_thread(r, i, 100 + i / 2, 200 + i, i / 2, i % 2);
	for (int i = 0; i < NACC; i++) {
		struct cm_block_key k;
		int a = accs[i].thread, b = (a + 2) % 7;

		key_of(&accs[i], &k);
		cm_record_access(r, a, &k, 0, CM_REF_READONLY, accs[i].t);
		cm_detect_access(t, direct, a, &k, accs[i].t);
		cm_record_shm(r, accs[i].t, a, b, wt[i % 4]);
		cm_shm_evidence_add(direct, a, b, wt[i % 4]);
		all += wt[i % 4];
		if (i <= NACC / 2)
			before += wt[i % 4];
		if (i == NACC / 2)
			cm_record_clock(r, 1000, 200, 400);
	}
	ok(cm_record_close(r, NULL, 1, "dynamic", &err) == 0, "closed (%s)",
	   err.text);
	text = slurp(path, &len);
	ok(text && strncmp(text, "commap-recording 5\n", 19) == 0 &&
	   strstr(text, "\nshm 2000000 2 4 0.66666666666666663\n"),
	   "version 5, an 'shm' line with all its digits");
	ok(cm_replay_parse_clocked(text, len, &rp, on_clock, &c, &err) == 0,
	   "ownership evidence read back (%s)", err.text);
	ok(rp.shm_lines == NACC && rp.shm_weight == all,
	   "every line, the very same weights (%g of %g)", rp.shm_weight, all);
	for (int i = 0; i < 7; i++)
		for (int j = 0; j < 7; j++)
			if (i != j && cm_matrix_get(rp.m, i, j) !=
			    cm_matrix_get(direct, i, j))
				same = 0;
	ok(same, "the matrix of the accesses and the evidence added straight, "
	   "edge for edge");
	ok(c.n == 1 && c.fresh >= before && c.fresh < cm_matrix_total(rp.m),
	   "the evidence before the clock line is its interval's (%g)",
	   c.fresh);
	cm_replay_free(&rp);
	free(text);
	cm_matrix_free(direct);
	cm_detect_table_free(t);
	ok(cm_shm_evidence_add(NULL, 0, 1, 1) < 0 && errno == EINVAL,
	   "no matrix: EINVAL");
}

int main(void)
{
	char path[] = "/tmp/commap-test-record.XXXXXX";
	int fd = mkstemp(path);

	ok(fd >= 0, "a scratch file");
	close(fd);
	test_round_trip(path);
	test_bad();
	test_dropped();
	test_clock_without_app();
	test_clock(path);
	test_cma(path);
	test_shm(path);
	unlink(path);
	return done_testing();
}
