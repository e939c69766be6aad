/* test_proc_track.c: following a step's processes and threads, on real
 * processes and on a fabricated proc tree (for pid reuse). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_track.h"
#include "tap.h"

static void *idle_thread(void *arg)
{
	int fd = *(int *)arg;
	char c;

	/* Wait until the parent test closes the pipe. */
	while (read(fd, &c, 1) > 0)
		;
	return NULL;
}

/* Child: 3 extra threads and a grandchild started with PMIX_RANK=5;
 * everything lives until the control pipe closes. */
static void __attribute__((noreturn)) run_child(int ctl, int ready)
{
	pthread_t th[3];
	pid_t gc;

	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, idle_thread, &ctl);
	gc = fork();
	if (gc == 0) {
		char fdarg[16];

		snprintf(fdarg, sizeof(fdarg), "%d", ctl);
		setenv("PMIX_RANK", "5", 1);
		/* exec so the environment is the process's real one */
		execl("/bin/sh", "sh", "-c", "read x <&$0", fdarg, NULL);
		_exit(127);
	}
	if (write(ready, "r", 1) < 0)
		_exit(1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	waitpid(gc, NULL, 0);
	_exit(0);
}

static void test_real_processes(void)
{
	int ctl[2], ready[2];
	pid_t child;
	char c;
	struct cm_tracker *t;
	struct cm_error err = { "" };
	int main_thread, gc_proc = -1, indices_ok = 1;

	if (pipe(ctl) < 0 || pipe(ready) < 0)
		return;
	child = fork();
	if (child == 0) {
		close(ctl[1]);
		close(ready[0]);
		run_child(ctl[0], ready[1]);
	}
	close(ctl[0]);
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		diag("child did not start");
	usleep(200000);	/* let the grandchild exec */

	t = cm_tracker_new(NULL, getuid());
	ok(cm_tracker_add_root(t, child, 2, &err) == 0, "add root %d (%s)",
	   (int)child, err.text);
	ok(cm_tracker_add_root(t, child, 2, &err) == 0 &&
	   cm_tracker_nprocs(t) == 1, "adding it twice is a no-op");
	ok(cm_tracker_scan(t) >= 5, "scan finds the threads");
	is_int(cm_tracker_nprocs(t), 2, "the grandchild is followed");
	is_int(cm_tracker_nthreads(t), 5, "4 threads + 1 in the grandchild");
	main_thread = cm_tracker_find_thread(t, child);
	ok(main_thread >= 0 && cm_tracker_thread(t, main_thread)->index == 0,
	   "the main thread has creation index 0");
	for (int i = 0; i < cm_tracker_nthreads(t); i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(t, i);

		if (th->proc == 0 && (th->index < 0 || th->index > 3))
			indices_ok = 0;
		if (th->proc == 1)
			gc_proc = 1;
	}
	ok(indices_ok, "creation indices 0..3 in the root process");
	ok(gc_proc == 1 && cm_tracker_proc(t, 1)->rank == 5,
	   "grandchild rank read from PMIX_RANK (%d)",
	   cm_tracker_proc(t, 1) ? cm_tracker_proc(t, 1)->rank : -1);
	is_int(cm_tracker_proc(t, 0)->rank, 2, "root keeps its given rank");
	ok(cm_tracker_verify_thread(t, main_thread), "verify a live thread");
	is_int(cm_tracker_scan(t), 0, "a second scan finds nothing new");

	close(ctl[1]);	/* everything exits */
	waitpid(child, NULL, 0);
	cm_tracker_scan(t);
	is_int(cm_tracker_nalive(t), 0, "all processes seen as exited");
	ok(!cm_tracker_verify_thread(t, main_thread),
	   "an exited thread does not verify");
	is_int(cm_tracker_find_thread(t, child), -1,
	       "an exited thread is not found by tid");
	cm_tracker_free(t);
	close(ready[0]);
}

/* A child found between fork and exec has its launcher's environment (no
 * rank) and takes its parent's rank; once it has exec'd with PMIX_RANK,
 * a later scan gives it its own (mpirun forks ranks this way). */
static void test_rank_after_exec(void)
{
	int go[2], ctl[2];
	pid_t child;
	struct cm_tracker *t;
	char c = 'g';

	if (pipe(go) < 0 || pipe(ctl) < 0)
		return;
	child = fork();
	if (child == 0) {
		char fdarg[16];

		close(go[1]);
		close(ctl[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		snprintf(fdarg, sizeof(fdarg), "%d", ctl[0]);
		setenv("PMIX_RANK", "7", 1);
		setenv("SLURM_PROCID", "0", 1);
		execl("/bin/sh", "sh", "-c", "read x <&$0", fdarg, NULL);
		_exit(127);
	}
	close(go[0]);
	close(ctl[0]);
	/* The test process is the "launcher" root, rank 3. */
	t = cm_tracker_new(NULL, getuid());
	cm_tracker_add_root(t, getpid(), 3, NULL);
	cm_tracker_scan(t);
	ok(cm_tracker_nprocs(t) == 2 && cm_tracker_proc(t, 1)->rank == 3,
	   "before exec the child takes its parent's rank (%d)",
	   cm_tracker_nprocs(t) == 2 ? cm_tracker_proc(t, 1)->rank : -1);
	if (write(go[1], &c, 1) != 1)
		diag("could not release the child");
	for (int i = 0; i < 100 && cm_tracker_proc(t, 1) &&
	     cm_tracker_proc(t, 1)->rank != 7; i++) {
		usleep(20000);
		cm_tracker_scan(t);
	}
	ok(cm_tracker_proc(t, 1) && cm_tracker_proc(t, 1)->rank == 7,
	   "after exec a rescan reads its own PMIX_RANK");
	close(ctl[1]);
	close(go[1]);
	waitpid(child, NULL, 0);
	cm_tracker_free(t);
}

static void test_refusals(void)
{
	struct cm_tracker *t = cm_tracker_new(NULL, 65534);
	struct cm_error err = { "" };

	ok(cm_tracker_add_root(t, 1, 0, &err) == -1 && errno == EPERM &&
	   strstr(err.text, "not owned"), "a foreign process is refused: %s",
	   err.text);
	ok(cm_tracker_add_root(t, 0x3ffffff0, 0, &err) == -1 &&
	   errno == ESRCH, "a missing process: %s", err.text);
	ok(cm_tracker_add_root(t, -4, 0, &err) == -1, "a negative pid");
	is_int(cm_tracker_nprocs(t), 0, "nothing tracked after refusals");
	cm_tracker_free(t);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void fake_stat(const char *dir, int pid, unsigned long long start)
{
	char path[PATH_MAX], text[512];

	snprintf(path, sizeof(path), "%s/stat", dir);
	snprintf(text, sizeof(text), "%d (a (b) c) S 1 %d %d 0 -1 4194560 "
		 "100 0 0 0 5 6 0 0 20 0 1 0 %llu 1000 100\n", pid, pid, pid,
		 start);
	write_file(path, text);
}

/* A reused pid (same number, another start time) is not ours. */
static void test_pid_reuse(void)
{
	char root[] = "/tmp/commap-proc-XXXXXX", d[512];
	struct cm_tracker *t;
	uint64_t start = 0;
	pid_t ppid = 0;

	if (!mkdtemp(root))
		return;
	snprintf(d, sizeof(d), "%s/4242", root);
	mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/4242/task", root);
	mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/4242/task/4242", root);
	mkdir(d, 0755);
	fake_stat(d, 4242, 777);
	snprintf(d, sizeof(d), "%s/4242", root);
	fake_stat(d, 4242, 777);

	is_int(cm_proc_read_stat(root, 4242, 0, &start, &ppid), 0,
	       "stat with ')' in comm parsed");
	is_int(start, 777, "start time read after the last ')'");
	is_int(ppid, 1, "parent pid read");
	t = cm_tracker_new(root, (uid_t)-1);
	ok(cm_tracker_add_root(t, 4242, 0, NULL) == 0, "fake process added");
	cm_tracker_scan(t);
	is_int(cm_tracker_nthreads(t), 1, "its thread found");
	ok(cm_tracker_verify_thread(t, 0), "verifies before reuse");
	fake_stat(d, 4242, 999);	/* the pid now names another process */
	ok(!cm_tracker_verify_thread(t, 0), "a reused pid does not verify");
	cm_tracker_scan(t);
	is_int(cm_tracker_nalive(t), 0, "the old process counts as exited");
	cm_tracker_free(t);
	snprintf(d, sizeof(d), "rm -rf %s", root);
	if (system(d) != 0)
		diag("cleanup failed");
}

static void fake_dir(const char *root, const char *rel)
{
	char d[512];

	snprintf(d, sizeof(d), "%s/%s", root, rel);
	mkdir(d, 0755);
}

/* A fake process PID with the threads TIDS (0-terminated), each with a
 * stat and an empty children file. */
static void fake_process(const char *root, int pid, const int *tids)
{
	char d[512];

	snprintf(d, sizeof(d), "%d", pid);
	fake_dir(root, d);
	snprintf(d, sizeof(d), "%d/task", pid);
	fake_dir(root, d);
	snprintf(d, sizeof(d), "%s/%d", root, pid);
	fake_stat(d, pid, 500);
	for (int i = 0; tids[i]; i++) {
		char path[600];

		snprintf(d, sizeof(d), "%s/%d/task/%d", root, pid, tids[i]);
		mkdir(d, 0755);
		fake_stat(d, tids[i], 500 + (unsigned)i);
		snprintf(path, sizeof(path), "%s/children", d);
		write_file(path, "");
	}
}

static void fake_last_pid(const char *root, int v)
{
	char path[512], text[32];

	snprintf(path, sizeof(path), "%s/sys/kernel/ns_last_pid", root);
	snprintf(text, sizeof(text), "%d\n", v);
	write_file(path, text);
}

/* Scans are skipped while no pid was allocated and no thread or process
 * exited (proc_track.c, "quiet scans"), and only then. */
static void test_quiet_scans(void)
{
	char root[] = "/tmp/commap-proc-XXXXXX", path[600];
	static const int main_tids[] = { 4242, 4243, 0 };
	static const int child_tids[] = { 4300, 0 };
	struct cm_tracker *t;
	uint64_t full, quiet;

	if (!mkdtemp(root))
		return;
	fake_dir(root, "sys");
	fake_dir(root, "sys/kernel");
	fake_last_pid(root, 4243);
	fake_process(root, 4242, main_tids);
	t = cm_tracker_new(root, (uid_t)-1);
	ok(cm_tracker_add_root(t, 4242, 0, NULL) == 0, "quiet: root added");
	cm_tracker_scan(t);
	is_int(cm_tracker_nthreads(t), 2, "quiet: the first scan finds both "
	       "threads");
	cm_tracker_scan(t);
	cm_tracker_scan_counts(t, &full, &quiet);
	ok(full == 1 && quiet == 1, "nothing changed: the second scan is "
	   "quiet (full %llu, quiet %llu)", (unsigned long long)full,
	   (unsigned long long)quiet);

	/* A child appears but the last pid did not move: a scan that
	 * looked would find it, so finding nothing proves the skip. */
	fake_process(root, 4300, child_tids);
	snprintf(path, sizeof(path), "%s/4300/environ", root);
	write_file(path, "PMIX_RANK=1");
	snprintf(path, sizeof(path), "%s/4242/task/4242/children", root);
	write_file(path, "4300 ");
	cm_tracker_scan(t);
	is_int(cm_tracker_nprocs(t), 1, "an unchanged last pid skips the "
	       "scan");
	fake_last_pid(root, 4300);
	is_int(cm_tracker_scan(t), 1, "a moved last pid: the child's thread "
	       "is found");
	is_int(cm_tracker_nprocs(t), 2, "... and the child process");
	cm_tracker_scan(t);	/* the child's link count is recorded */
	cm_tracker_scan(t);
	cm_tracker_scan_counts(t, &full, &quiet);
	ok(full == 3 && quiet == 3, "then quiet again (full %llu, quiet "
	   "%llu)", (unsigned long long)full, (unsigned long long)quiet);

	/* Exits allocate no pid: the link count and the directory show
	 * them. */
	snprintf(path, sizeof(path), "rm -rf %s/4242/task/4243", root);
	if (system(path) != 0)
		diag("rm failed");
	cm_tracker_scan(t);
	is_int(cm_tracker_find_thread(t, 4243), -1, "a thread that exited "
	       "is seen with the last pid unchanged");
	ok(cm_tracker_find_thread(t, 4242) >= 0, "its sibling stays");
	snprintf(path, sizeof(path), "rm -rf %s/4300", root);
	if (system(path) != 0)
		diag("rm failed");
	cm_tracker_scan(t);
	is_int(cm_tracker_nalive(t), 1, "a reaped process is seen with the "
	       "last pid unchanged");
	cm_tracker_free(t);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	if (system(path) != 0)
		diag("cleanup failed");
}

/* PID's /proc/PID/exe: a link to the program file TARGET. */
static void fake_exe(const char *root, int pid, const char *target)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%d/exe", root, pid);
	unlink(path);
	if (symlink(target, path) < 0)
		diag("symlink %s failed", path);
}

/* Scan, then the identity of thread TID: 1 final, 0 provisional. */
static int scan_ident(struct cm_tracker *t, pid_t tid, int *rank)
{
	int index;

	cm_tracker_scan(t);
	return cm_tracker_thread_ident(t, cm_tracker_find_thread(t, tid),
				       rank, &index);
}

/* Between the switch of /proc/PID/exe and the new program's environment
 * a scan reads an empty environment: the child forked by a launcher
 * (mpirun, rank 0) must stay provisional then, not take rank 0 for good,
 * and take its own rank once the environment shows (t0540 failed once
 * in CI under load this way). */
static void test_exec_empty_environ(void)
{
	char root[] = "/tmp/commap-proc-XXXXXX", env[600], path[600];
	static const int main_tids[] = { 5000, 0 };
	static const int child_tids[] = { 5100, 0 };
	struct cm_tracker *t;
	int rank = -1, fin;

	if (!mkdtemp(root))
		return;
	fake_process(root, 5000, main_tids);
	fake_exe(root, 5000, "/bin/sh");
	t = cm_tracker_new(root, (uid_t)-1);
	ok(cm_tracker_add_root(t, 5000, 0, NULL) == 0, "exec: root added");
	cm_tracker_scan(t);
	/* forked, not exec'ed: the launcher's program and environment */
	fake_process(root, 5100, child_tids);
	fake_exe(root, 5100, "/bin/sh");
	snprintf(env, sizeof(env), "%s/5100/environ", root);
	write_file(env, "SLURM_PROCID=0");
	snprintf(path, sizeof(path), "%s/5000/task/5000/children", root);
	write_file(path, "5100 ");
	fin = scan_ident(t, 5100, &rank);
	ok(fin == 0 && rank == 0, "before exec: provisional, the launcher's "
	   "rank (final %d, rank %d)", fin, rank);
	/* exec'ed, its environment not yet in place */
	fake_exe(root, 5100, "/bin/true");
	write_file(env, "");
	fin = scan_ident(t, 5100, &rank);
	ok(fin == 0, "exec'ed with an empty environment: still provisional "
	   "(final %d, rank %d)", fin, rank);
	write_file(env, "PMIX_RANK=1");
	fin = scan_ident(t, 5100, &rank);
	ok(fin == 1 && rank == 1, "then its own rank, final (final %d, rank "
	   "%d)", fin, rank);
	cm_tracker_free(t);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	if (system(path) != 0)
		diag("cleanup failed");
}

int main(void)
{
	test_real_processes();
	test_rank_after_exec();
	test_exec_empty_environ();
	test_refusals();
	test_pid_reuse();
	test_quiet_scans();
	return done_testing();
}
