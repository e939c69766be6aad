/* test_collect_maps.c: the collection pipeline (nodeagent/collect.c) and
 * the memory it is given, with real perf events, real /proc and the real
 * tracker:
 * - keys: two processes sharing a memfd at different addresses
 *   communicate, two processes writing private copies at the same virtual
 *   address do not;
 * - maps that cannot be read: samples counted as failures, the problem
 *   named once;
 * - an unprivileged collector gets EACCES/EPERM with a message.
 * Options, pairs, attaching and identity: test_collect.c.
 * Thresholds, not exact counts: the machine may be shared with other jobs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "tap.h"
#include "collect_test_util.h"

/* ---- shared mappings ------------------------------------------------------ */

static volatile uint64_t *priv_buf;	/* same address in every child */
static int shm_fd;

static void child_shm_writer(void)
{
	volatile uint64_t *s = mmap(NULL, BUF_WORDS * 8,
				    PROT_READ | PROT_WRITE, MAP_SHARED,
				    shm_fd, 0);

	for (uint64_t v = 0;; v++) {
		produce(s, v);
		produce(priv_buf, v);
	}
}

static void child_shm_reader(void)
{
	/* Shift the address where the segment lands. */
	void *pad = mmap(NULL, 3 * BUF_WORDS * 8, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	volatile uint64_t *s = mmap(NULL, BUF_WORDS * 8, PROT_READ,
				    MAP_SHARED, shm_fd, 0);
	volatile uint64_t sink = 0;

	(void)pad;
	atomic_store(&ctl->tids[1], (int)(uintptr_t)s != 0);
	for (;;)
		sink += consume(s);
}

static void child_private_writer(void)
{
	for (uint64_t v = 0;; v++)
		produce(priv_buf, v);
}

static void test_shared_mapping(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_collect_stats st;
	struct cm_error e = { "" };
	struct cm_collector *c;
	pid_t p[3];
	int i[3];
	double w_shared, w_priv;

	shm_fd = memfd_create("commap-test", 0);
	priv_buf = mmap(NULL, BUF_WORDS * 8, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shm_fd < 0 || ftruncate(shm_fd, BUF_WORDS * 8) ||
	    priv_buf == MAP_FAILED) {
		ok(0, "memfd and buffers");
		return;
	}
	p[0] = spawn(child_shm_writer);
	p[1] = spawn(child_shm_reader);
	p[2] = spawn(child_private_writer);
	for (int k = 0; k < 3; k++)
		cm_tracker_add_root(t, p[k], k, &e);
	cm_tracker_scan(t);
	c = new_collector(t, CM_PERF_DEFAULT_PERIOD_NS);
	is_int(cm_collect_sync(c, &e), 3, "three processes attached");
	run_for_cpu(c, t, m, p, 2, 0.6, 30);
	for (int k = 0; k < 3; k++) {
		i[k] = cm_tracker_find_thread(t, p[k]);
		reap(p[k]);
	}
	cm_collect_drain(c, m, &e);
	cm_collect_stats(c, &st);
	w_shared = cm_matrix_get(m, i[0], i[1]);
	w_priv = cm_matrix_get(m, i[0], i[2]);
	diag("memfd writer-reader %.0f, private same-address %.0f, "
	     "reader-private %.0f; shared refs %llu of %llu",
	     w_shared, w_priv, cm_matrix_get(m, i[1], i[2]),
	     (unsigned long long)st.shared_refs,
	     (unsigned long long)st.accesses);
	ok(w_shared >= 10, "processes sharing a memfd at different "
	   "addresses communicate (%.0f)", w_shared);
	ok(w_priv * 10 <= w_shared, "private copies at the same address do "
	   "not (%.0f)", w_priv);
	ok(st.shared_refs > 0, "shared references keyed by the mapping");
	check_stats_add_up(&st, "shm");
	close(shm_fd);
	munmap((void *)priv_buf, BUF_WORDS * 8);
	cm_collect_free(c);
	cm_matrix_free(m);
	cm_tracker_free(t);
}

/* Maps unreadable (here: a proc root without the process): samples are
 * counted and dropped, the problem is described once. */
static void test_unreadable_maps(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
	struct cm_matrix *m = cm_matrix_new(0);
	struct cm_collect_opts o;
	struct cm_collect_stats st;
	struct cm_error e = { "" };
	struct cm_collector *c;
	pid_t pid = spawn(child_commands);

	for (int i = 0; i < 5000 && atomic_load(&ctl->nworkers) < 1; i++)
		sleep_ms(1);
	cm_tracker_add_root(t, pid, 0, &e);
	cm_tracker_scan(t);
	cm_collect_opts_default(&o);
	o.proc_root = "/nonexistent-proc";
	c = cm_collect_new(&o, t, &e);
	is_int(cm_collect_sync(c, &e), 2, "attached (perf needs no proc)");
	run_for(c, t, m, 0.3, 0);
	reap(pid);
	cm_collect_drain(c, m, &e);
	cm_collect_stats(c, &st);
	ok(st.ours > 0 && st.code_read_fail == st.ours && st.decoded == 0,
	   "every sample counted as a code read failure (%llu)",
	   (unsigned long long)st.code_read_fail);
	ok(strstr(cm_collect_last_problem(c), "/nonexistent-proc") != NULL,
	   "problem names the file: %s", cm_collect_last_problem(c));
	ok(st.maps_loads <= 10, "maps retried at most once per drain (%llu)",
	   (unsigned long long)st.maps_loads);
	is_int(cm_matrix_total(m), 0, "no events");
	cm_collect_free(c);
	cm_matrix_free(m);
	cm_tracker_free(t);
}

static void test_permission(void)
{
	int fds[2], status;
	char msg[CM_ERROR_TEXT_MAX + 16] = "";
	pid_t pid;

	if (geteuid() != 0 || pipe(fds)) {
		ok(1, "# SKIP not root: permission test needs setuid");
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct cm_tracker *t = cm_tracker_new(NULL, (uid_t)-1);
		struct cm_error e = { "" };
		struct cm_collector *c;
		int r, code = 3;

		close(fds[0]);
		cm_tracker_add_root(t, getppid(), 0, &e);
		cm_tracker_scan(t);
		if (setgid(65534) || setuid(65534))
			_exit(2);
		c = new_collector(t, CM_PERF_DEFAULT_PERIOD_NS);
		r = c ? cm_collect_sync(c, &e) : -1;
		if (r == -1 && (errno == EACCES || errno == EPERM))
			code = 0;
		if (write(fds[1], e.text, strlen(e.text)) < 0)
			code = 4;
		_exit(code);
	}
	close(fds[1]);
	if (read(fds[0], msg, sizeof(msg) - 1) < 0)
		msg[0] = '\0';
	close(fds[0]);
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "unprivileged sync on a root process: EACCES/EPERM");
	ok(strstr(msg, "perf_event_paranoid") != NULL,
	   "message names perf_event_paranoid: %s", msg);
}

int main(void)
{
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_error e = { "" };

	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED)
		return 1;
	cm_perf_config_default(&cfg);
	s = cm_perf_sampler_new(&cfg, &e);
	if (!s || cm_perf_sampler_attach(s, getpid(), &e)) {
		ok(1, "# SKIP perf sampling unavailable: %s", e.text);
		cm_perf_sampler_free(s);
		return done_testing();
	}
	cm_perf_sampler_free(s);
	test_shared_mapping();
	test_unreadable_maps();
	test_permission();
	return done_testing();
}
