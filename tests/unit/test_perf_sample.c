/* test_perf_sample.c: the hardware probe and real software address
 * sampling (nodeagent/perf_open.c, perf_sample.c; records and rings:
 * test_perf_record.c).
 *
 * The probe runs on the real sysfs and on fake trees (PEBS, IBS, SPE,
 * nothing).  The real test samples a writer thread of this process
 * (covered by inheritance) and a forked process (attached by pid) with
 * cpu-clock, and decodes the sampled instructions read from /proc/PID/mem.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <asm/perf_regs.h>
#include <linux/perf_event.h>

#include "decode.h"
#include "perf_sample.h"
#include "tap.h"

/* ---- hardware probe ----------------------------------------------------- */

static char fake_root[64];

static void put_file(const char *rel, const char *text)
{
	char path[512], dir[512], *s;

	snprintf(path, sizeof(path), "%s/%s", fake_root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (s = dir + strlen(fake_root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(dir, 0755);
		*s = '/';
	}
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int new_fake_root(void)
{
	snprintf(fake_root, sizeof(fake_root), "/tmp/cm_hwprobe_XXXXXX");
	if (!mkdtemp(fake_root))
		return -1;
	put_file("bus/event_source/devices/software/type", "1\n");
	return 0;
}

static void rm_fake_root(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_root);
	if (system(cmd) != 0)
		diag("could not remove %s", fake_root);
}

static void test_hw_probe(void)
{
	struct cm_perf_hw hw;
	int r;

	r = cm_perf_hw_probe(NULL, &hw);
	ok(r == 0 || r == 1, "probe of this machine answers (%d)", r);
	diag("hw probe here: %s", hw.reason);
	if (r == 0)
		ok(hw.reason[0] && hw.kind == CM_PERF_HW_NONE,
		   "unavailable with a reason");
	if (access("/sys/bus/event_source/devices/cpu", F_OK) != 0 &&
	    access("/sys/bus/event_source/devices/ibs_op", F_OK) != 0)
		ok(r == 0 && strstr(hw.reason, "no hardware memory-sampling"),
		   "no CPU PMU here (VM): refused, reason names the search");
	ok(cm_perf_hw_find(NULL, NULL) == -1 && errno == EINVAL, "NULL hw");

	if (new_fake_root()) {
		ok(0, "mkdtemp");
		return;
	}
	r = cm_perf_hw_find(fake_root, &hw);
	ok(r == 0 && strstr(hw.reason, "present: software"),
	   "fake tree with only software: %s", hw.reason);

	put_file("bus/event_source/devices/arm_spe_0/type", "9\n");
	r = cm_perf_hw_find(fake_root, &hw);
	ok(r == 0 && strstr(hw.reason, "AUX"), "Arm SPE: refused (%s)",
	   hw.reason);

	put_file("bus/event_source/devices/ibs_op/type", "4242\n");
	r = cm_perf_hw_find(fake_root, &hw);
	ok(r == 1 && hw.kind == CM_PERF_HW_IBS && hw.type == 4242 &&
	   strcmp(hw.pmu, "ibs_op") == 0, "AMD IBS op found, type 4242");
	r = cm_perf_hw_probe(fake_root, &hw);
	ok(r == 0 && hw.kind == CM_PERF_HW_NONE &&
	   strstr(hw.reason, "perf_event_open"),
	   "IBS type the kernel does not know: refused (%s)", hw.reason);

	put_file("bus/event_source/devices/cpu/type", "4\n");
	put_file("bus/event_source/devices/cpu/events/mem-loads",
		 "event=0xcd,umask=0x1,ldlat=3\n");
	put_file("bus/event_source/devices/cpu/format/event", "config:0-7\n");
	put_file("bus/event_source/devices/cpu/format/umask", "config:8-15\n");
	r = cm_perf_hw_find(fake_root, &hw);
	ok(r == 0 && strstr(hw.reason, "cannot encode"),
	   "mem-loads with a term lacking its format: %s", hw.reason);
	put_file("bus/event_source/devices/cpu/format/ldlat",
		 "config1:0-15\n");
	r = cm_perf_hw_find(fake_root, &hw);
	ok(r == 1 && hw.kind == CM_PERF_HW_PEBS && hw.type == 4 &&
	   hw.config == 0x1cd && hw.config1 == 3 && hw.precise_ip == 2,
	   "Intel PEBS mem-loads encoded: config 0x%llx config1 %llu",
	   (unsigned long long)hw.config, (unsigned long long)hw.config1);

	/* a sampler on the fake IBS refuses cleanly at attach */
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_error e = { "" };

	cm_perf_config_default(&cfg);
	cfg.backend = CM_PERF_BACKEND_HW;
	ok(cm_perf_sampler_new(&cfg, &e) == NULL && errno == ENOENT,
	   "hw backend without a PMU: ENOENT (%s)", e.text);
	rm_fake_root();
	if (new_fake_root())
		return;
	put_file("bus/event_source/devices/ibs_op/type", "4242\n");
	cm_perf_hw_find(fake_root, &cfg.hw);
	s = cm_perf_sampler_new(&cfg, &e);
	ok(s != NULL, "hw sampler over fake IBS created");
	errno = 0;
	ok(s && cm_perf_sampler_attach(s, getpid(), &e) == -1 &&
	   (errno == ENOENT || errno == EOPNOTSUPP || errno == EINVAL) &&
	   cm_perf_sampler_nevents(s) == 0 && cm_perf_sampler_ntasks(s) == 0,
	   "attach refused, nothing left open: %s", e.text);
	cm_perf_sampler_free(s);
	rm_fake_root();
	r = cm_perf_hw_find("/nonexistent-root", &hw);
	ok(r == 0 && strstr(hw.reason, "cannot open"), "missing sysfs: %s",
	   hw.reason);
}

/* ---- sampler errors ----------------------------------------------------- */

static void test_config_errors(void)
{
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_error e = { "" };

	cm_perf_config_default(&cfg);
	cfg.period_ns = 1000;
	ok(!cm_perf_sampler_new(&cfg, &e) && errno == EINVAL &&
	   strstr(e.text, "period"), "period 1 us refused: %s", e.text);
	cm_perf_config_default(&cfg);
	cfg.ring_pages = 3;
	ok(!cm_perf_sampler_new(&cfg, &e) && errno == EINVAL,
	   "3 ring pages refused: %s", e.text);
	cm_perf_config_default(&cfg);
	cfg.regs_mask = 1ull << 30;
	ok(!cm_perf_sampler_new(&cfg, &e) && errno == EINVAL,
	   "register mask outside x86-64: %s", e.text);
	cm_perf_config_default(&cfg);
	s = cm_perf_sampler_new(&cfg, &e);
	ok(s != NULL, "default sampler");
	ok(cm_perf_sampler_attach(s, 0, &e) == -1 && errno == EINVAL,
	   "tid 0: EINVAL");
	/* a pid that cannot exist (above pid_max) */
	ok(cm_perf_sampler_attach(s, 0x3fffffff, &e) == -1 &&
	   errno == ESRCH && cm_perf_sampler_nevents(s) == 0,
	   "no such thread: ESRCH (%s)", e.text);
	ok(cm_perf_sampler_set_period(s, 100, &e) == -1 && errno == EINVAL,
	   "set period below the minimum: EINVAL");
	ok(cm_perf_sampler_read(s, NULL, NULL) == 0, "read with no ring: 0");
	cm_perf_sampler_free(s);
}

/* As an unprivileged user, sampling pid 1 (root's) is refused with a
 * message that names perf_event_paranoid. */
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
		struct cm_perf_config cfg;
		struct cm_perf_sampler *s;
		struct cm_error e = { "" };
		int r, code = 3;

		close(fds[0]);
		if (setgid(65534) || setuid(65534))
			_exit(2);
		cm_perf_config_default(&cfg);
		s = cm_perf_sampler_new(&cfg, &e);
		r = s ? cm_perf_sampler_attach(s, 1, &e) : -1;
		if (r == -1 && (errno == EACCES || errno == EPERM))
			code = 0;
		if (write(fds[1], e.text, strlen(e.text)) < 0)
			code = 4;
		cm_perf_sampler_free(s);
		_exit(code);
	}
	close(fds[1]);
	if (read(fds[0], msg, sizeof(msg) - 1) < 0)
		msg[0] = '\0';
	close(fds[0]);
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "unprivileged attach to pid 1: EACCES/EPERM");
	ok(strstr(msg, "perf_event_paranoid") != NULL,
	   "message names perf_event_paranoid: %s", msg);
}

/* ---- real sampling ------------------------------------------------------ */

#define BUF_WORDS (256 * 1024 / 8)
#define MAX_SAMPLES 20000

static atomic_int stop_writer;
static atomic_int writer_tid;
static uint64_t *shared_buf;	/* written by the thread and the child */

/* Not instrumented, so that under ASan the sampled stores are the
 * buffer's, not shadow memory checks. */
__attribute__((noinline, no_sanitize_address, no_sanitize_undefined))
static void write_buffer(uint64_t *b, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++)
		b[i] = v + i;
}

static void *writer(void *arg)
{
	uint64_t v = 0;

	(void)arg;
	atomic_store(&writer_tid, (int)gettid());
	while (!atomic_load(&stop_writer))
		write_buffer(shared_buf, BUF_WORDS, v++);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void child_writer(void)
{
	double end = now_s() + 20;
	uint64_t v = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (now_s() < end)
		write_buffer(shared_buf, BUF_WORDS, v++);
	_exit(0);
}

struct collected {
	struct cm_perf_sample *s;
	long n;
	long of_writer, of_child;
	pid_t child;
	uint64_t last_time;	/* of the previous sample in this drain */
	int64_t last_cpu;	/* last tid, -1: none yet in this drain */
	long inversions;	/* samples older than the one before */
	long cpu_changes;	/* consecutive samples from two CPUs */
};

/* Start of a drain: order is only promised within one. */
static void new_drain(struct collected *c)
{
	c->last_time = 0;
	c->last_cpu = -1;
}

static void collect(const struct cm_perf_sample *smp, void *arg)
{
	struct collected *c = arg;

	if ((int)smp->tid == atomic_load(&writer_tid))
		c->of_writer++;
	if ((pid_t)smp->pid == c->child)
		c->of_child++;
	c->inversions += smp->time < c->last_time;
	c->cpu_changes += c->last_cpu >= 0 && c->last_cpu != smp->tid;
	c->last_time = smp->time;
	c->last_cpu = smp->tid;
	if (c->n < MAX_SAMPLES)
		c->s[c->n++] = *smp;
}

/* Decode one sample with code bytes from /proc/PID/mem: 1 in the buffer,
 * 0 elsewhere or none. */
static int decode_one(struct cm_decoder *dec, const struct cm_perf_sample *s,
		      int *decoded)
{
	uint8_t code[160];
	uint64_t lo = s->ip - 128, addr;
	struct cm_access acc;
	char path[64];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/mem", s->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	got = pread(fd, code, sizeof(code), (off_t)lo);
	close(fd);
	if (got < 144)
		return 0;
	if (cm_decode_address(dec, s->pid, code, (size_t)got, lo, s->ip,
			      &s->regs, &acc, NULL) != 1)
		return 0;
	(*decoded)++;
	addr = acc.ref[0].addr;
	return addr >= (uint64_t)(uintptr_t)shared_buf &&
	       addr < (uint64_t)(uintptr_t)(shared_buf + BUF_WORDS);
}

static void count_child(const struct cm_perf_sample *smp, void *arg)
{
	long *n = arg;

	n[0] += (pid_t)smp->pid == (pid_t)n[1];
}

/* task-clock works as well (the child is still writing). */
static void test_task_clock(pid_t child)
{
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_error e = { "" };
	long n[2] = { 0, child };
	double t0 = now_s();

	cm_perf_config_default(&cfg);
	cfg.clock = CM_PERF_TASK_CLOCK;
	cfg.period_ns = 200000;
	s = cm_perf_sampler_new(&cfg, &e);
	ok(s && cm_perf_sampler_attach(s, child, &e) == 0,
	   "task-clock sampler on the child: %s", e.text);
	while (s && (now_s() - t0 < 0.1 || (n[0] < 5 && now_s() - t0 < 3))) {
		usleep(20000);
		cm_perf_sampler_read(s, count_child, n);
	}
	ok(n[0] >= 5, "task-clock samples of the child: %ld", n[0]);
	cm_perf_sampler_free(s);
}

/* A one-page ring not read for a while overflows: the kernel's LOST
 * records are counted. */
static void test_lost(pid_t child)
{
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_perf_stats st = { 0 };
	struct cm_error e = { "" };
	double t0 = now_s();

	cm_perf_config_default(&cfg);
	cfg.ring_pages = 1;
	cfg.period_ns = 100000;
	s = cm_perf_sampler_new(&cfg, &e);
	ok(s && cm_perf_sampler_attach(s, child, &e) == 0,
	   "one-page ring on the child: %s", e.text);
	do {
		usleep(200000);
		cm_perf_sampler_read(s, NULL, NULL);
		cm_perf_sampler_stats(s, &st);
	} while (s && st.lost == 0 && now_s() - t0 < 3);
	diag("one-page ring: %llu samples read, %llu lost",
	     (unsigned long long)st.samples, (unsigned long long)st.lost);
	ok(st.lost > 0 && st.samples > 0, "lost samples counted");
	cm_perf_sampler_free(s);
}

static void test_real_sampling(void)
{
	struct collected c = { 0 };
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	struct cm_perf_stats st;
	struct cm_decoder *dec;
	struct cm_error e = { "" };
	struct pollfd pfd[64];
	pthread_t th;
	double t0, t1;
	int in_thread = 0, in_child = 0, dec_thread = 0, dec_child = 0;
	int wtid;
	long pid_ok = 0;

	shared_buf = aligned_alloc(4096, BUF_WORDS * 8);
	c.s = calloc(MAX_SAMPLES, sizeof(*c.s));
	if (!shared_buf || !c.s) {
		ok(0, "allocation");
		return;
	}
	memset(shared_buf, 0, BUF_WORDS * 8);
	c.child = fork();
	if (c.child == 0)
		child_writer();
	cm_perf_config_default(&cfg);
	cfg.period_ns = 200000;
	s = cm_perf_sampler_new(&cfg, &e);
	ok(s != NULL, "sampler (cpu-clock, 200 us)");
	if (s && cm_perf_sampler_attach(s, gettid(), &e) == -1 &&
	    (errno == EACCES || errno == EPERM) && geteuid() != 0) {
		ok(1, "# SKIP perf events not allowed here: %s", e.text);
		kill(c.child, SIGKILL);
		waitpid(c.child, NULL, 0);
		cm_perf_sampler_free(s);
		free(c.s);
		free(shared_buf);
		return;
	}
	ok(s && cm_perf_sampler_ntasks(s) == 1,
	   "attach this thread, inherited by the writer: %s", e.text);
	ok(s && cm_perf_sampler_attach(s, c.child, &e) == 0,
	   "attach the forked process: %s", e.text);
	if (!s || cm_perf_sampler_ntasks(s) != 2) {
		kill(c.child, SIGKILL);
		waitpid(c.child, NULL, 0);
		cm_perf_sampler_free(s);
		free(c.s);
		free(shared_buf);
		return;
	}
	ok(cm_perf_sampler_attach(s, gettid(), NULL) == 0 &&
	   cm_perf_sampler_ntasks(s) == 2, "attaching again is a no-op");
	ok(cm_perf_sampler_pollfds(s, pfd, 64) >= 1, "one pollfd per ring");
	pthread_create(&th, NULL, writer, NULL);
	t0 = now_s();
	/* at least 0.3 s; longer only if the loaded VM gave us too little */
	do {
		poll(pfd, (nfds_t)cm_perf_sampler_pollfds(s, pfd, 64), 20);
		new_drain(&c);
		cm_perf_sampler_read(s, collect, &c);
		t1 = now_s();
	} while (t1 - t0 < 0.3 || ((c.of_writer < 20 || c.of_child < 20) &&
				   t1 - t0 < 5));
	atomic_store(&stop_writer, 1);
	pthread_join(th, NULL);
	new_drain(&c);
	cm_perf_sampler_read(s, collect, &c);
	wtid = atomic_load(&writer_tid);

	dec = cm_decoder_new(4, 0, NULL);
	for (long i = 0; dec && i < c.n; i++) {
		if ((int)c.s[i].tid == wtid) {
			pid_ok += c.s[i].pid == (uint32_t)getpid();
			in_thread += decode_one(dec, &c.s[i], &dec_thread);
		} else if ((pid_t)c.s[i].pid == c.child) {
			in_child += decode_one(dec, &c.s[i], &dec_child);
		}
	}
	test_task_clock(c.child);
	test_lost(c.child);
	kill(c.child, SIGKILL);
	waitpid(c.child, NULL, 0);
	cm_perf_sampler_stats(s, &st);
	diag("%.2f s: %ld samples (%.0f/s), writer %ld, child %ld, lost %llu, "
	     "throttle %llu", t1 - t0, c.n, (double)c.n / (t1 - t0),
	     c.of_writer, c.of_child, (unsigned long long)st.lost,
	     (unsigned long long)st.throttle);
	diag("decoded: writer %d/%ld (%d in buffer), child %d/%ld (%d in "
	     "buffer)", dec_thread, c.of_writer, in_thread, dec_child,
	     c.of_child, in_child);
	diag("within drains: %ld thread changes, %ld time inversions",
	     c.cpu_changes, c.inversions);
	is_int(c.inversions, 0, "samples of all CPUs come in time order");
	ok(c.of_writer >= 10, "writer thread (created after attach) sampled");
	ok(c.of_child >= 10, "forked process sampled");
	is_int(pid_ok, c.of_writer, "writer samples carry this process's pid");
	ok(in_thread >= 5, "writer's decoded addresses in its buffer");
	ok(in_child >= 5, "child's decoded addresses in the buffer");
	ok(dec_thread + dec_child >= (c.of_writer + c.of_child) / 2,
	   "most samples decode to an address");
	is_int(st.samples, c.n, "every sample counted");
	ok(st.malformed == 0, "no malformed records");
	long ok_regs = 0;

	for (long i = 0; i < c.n; i++)
		ok_regs += c.s[i].regs.valid == CM_PERF_REGS_MASK;
	ok(ok_regs == c.n - (long)st.no_regs, "user registers in samples");
	ok(cm_perf_sampler_set_period(s, 500000, &e) == 0,
	   "period changed at run time: %s", e.text);
	cm_decoder_free(dec);
	cm_perf_sampler_free(s);
	free(c.s);
	free(shared_buf);
}

int main(void)
{
	test_hw_probe();
	test_config_errors();
	test_permission();
	test_real_sampling();
	return done_testing();
}
