/* test_app_identity.c: the application identity of learned mappings
 * (nodeagent/app_identity.h): argv shapes, executable hashes checked
 * against coreutils' sha256sum, the (dev, inode, size, mtime) cache and
 * the meta fallback, hashing in the background, and the thread identity
 * index of several processes of one rank (proc_track.h). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_identity.h"
#include "proc_track.h"
#include "tap.h"

static char dir[] = "/tmp/test_app_identity.XXXXXX";

static void shape_table(void)
{
	static const struct {
		int argc;
		const char *argv[6];
		const char *exe, *want;
	} t[] = {
		{ 3, { "./bin/app", "-n", "16" }, NULL, "app -n #" },
		{ 3, { "app", "--size", "1024x768" }, NULL, "app --size #x#" },
		{ 1, { "/usr/bin/a2ps" }, NULL, "a2ps" },	/* argv[0] */
		{ 2, { "x", "run-007-b12" }, NULL, "x run-#-b#" },
		{ 2, { "x", "" }, NULL, "x " },		/* empty arg */
		{ 3, { "x", "a b", "9" }, NULL, "x a b #" },
		{ 2, { "x", "0000000000000000000000" }, NULL, "x #" },
		{ 2, { "dir/", "1" }, NULL, " #" },	/* ends in / */
		{ 0, { NULL }, "/opt/apps/stencil", "stencil" },
		{ 0, { NULL }, NULL, "" },
		{ 2, { "x", "-ε=0.5" }, NULL, "x -ε=#.#" },	/* UTF-8 */
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char out[CM_ARGV_SHAPE_MAX];

		cm_app_argv_shape(t[i].argc, (char *const *)t[i].argv,
				  t[i].exe, out, sizeof(out));
		ok(strcmp(out, t[i].want) == 0, "argv shape %zu: '%s' (want "
		   "'%s')", i, out, t[i].want);
	}
	{
		char small[8];
		char *const argv[] = { "program", "123", NULL };

		cm_app_argv_shape(2, argv, NULL, small, sizeof(small));
		is_str(small, "program", "a shape longer than the buffer is "
		       "cut (NUL-terminated)");
	}
}

static void sha256sum_of(const char *path, char *out, size_t len)
{
	char cmd[512], line[256];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	out[0] = '\0';
	p = popen(cmd, "r");
	if (p && fgets(line, sizeof(line), p) && strlen(line) > 64)
		snprintf(out, len, "sha256:%.64s", line);
	if (p)
		pclose(p);
}

static void write_file(const char *path, size_t size, unsigned seed)
{
	FILE *f = fopen(path, "w");

	for (size_t i = 0; f && i < size; i++)
		fputc((int)((i * 131 + seed) & 0xff), f);
	if (f)
		fclose(f);
}

static void hash_table(void)
{
	static const size_t sizes[] = { 0, 1, 55, 64, 4096, (256u << 10) - 1,
					256u << 10, (3u << 20) + 17 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char path[128], got[CM_EXE_HASH_MAX], want[80];
		struct cm_error err;
		int kind;

		snprintf(path, sizeof(path), "%s/f%zu", dir, i);
		write_file(path, sizes[i], (unsigned)i);
		sha256sum_of(path, want, sizeof(want));
		kind = cm_app_exe_hash(path, NULL, NULL, got, &err);
		if (!cm_app_have_sha256()) {
			is_int(kind, CM_EXE_HASH_META, "no libcrypto: meta");
			continue;
		}
		ok(kind == CM_EXE_HASH_SHA256 && strcmp(got, want) == 0,
		   "%zu bytes: the same hash as sha256sum", sizes[i]);
	}
}

/* Our own executable through /proc/self/exe, as the agent reads it. */
static void hash_proc_exe(void)
{
	char got[CM_EXE_HASH_MAX], want[80], exe[4096];
	struct cm_error err;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0 || !cm_app_have_sha256()) {
		ok(1, "# SKIP no /proc/self/exe or no libcrypto");
		return;
	}
	exe[n] = '\0';
	sha256sum_of(exe, want, sizeof(want));
	cm_app_exe_hash("/proc/self/exe", exe, NULL, got, &err);
	is_str(got, want, "/proc/self/exe hashes to the file's sha256sum");
}

static void set_mtime(const char *path, time_t sec)
{
	struct timespec ts[2] = { { sec, 0 }, { sec, 0 } };

	utimensat(AT_FDCWD, path, ts, 0);
}

static void cache(void)
{
	struct cm_exe_hash_cache c = { 0 };
	char path[128], h1[CM_EXE_HASH_MAX], h2[CM_EXE_HASH_MAX];
	char h3[CM_EXE_HASH_MAX], want[80];
	struct cm_error err;

	snprintf(path, sizeof(path), "%s/cached", dir);
	write_file(path, 1000, 1);
	set_mtime(path, 1700000000);
	cm_app_exe_hash(path, NULL, &c, h1, &err);
	ok(c.valid, "the cache holds the first hash");
	/* Same size, same mtime, same inode: the cache answers (the file
	 * is not read again). */
	write_file(path, 1000, 2);
	set_mtime(path, 1700000000);
	cm_app_exe_hash(path, NULL, &c, h2, &err);
	is_str(h2, h1, "same (dev, inode, size, mtime): cached hash");
	set_mtime(path, 1700000001);
	cm_app_exe_hash(path, NULL, &c, h3, &err);
	sha256sum_of(path, want, sizeof(want));
	if (cm_app_have_sha256()) {
		ok(strcmp(h3, h1) != 0, "another mtime: hashed again");
		is_str(h3, want, "  and the new content's hash");
	}
}

/* A sparse file of size bytes ending in one byte (fast to make). */
static void sparse_file(const char *path, off_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return;
	if (ftruncate(fd, size - 1) != 0 || pwrite(fd, "x", 1, size - 1) != 1)
		diag("cannot make %s", path);
	close(fd);
}

/* The agent's loop must not stop for a large executable: over
 * CM_EXE_HASH_INLINE_BYTES a thread hashes it; small files, cache hits
 * and files over the cap answer at once. */
static void background(void)
{
	struct cm_exe_hash_cache c = { 0 };
	struct cm_exe_hash_job j;
	char path[128], got[CM_EXE_HASH_MAX], want[80];
	struct cm_error err;
	int rc, polls = 0;

	snprintf(path, sizeof(path), "%s/small", dir);
	write_file(path, 5000, 3);
	sha256sum_of(path, want, sizeof(want));
	rc = cm_app_exe_hash_start(&j, path, NULL, NULL, got, &err);
	is_int(rc, 1, "a small file: hashed at once");
	if (cm_app_have_sha256())
		is_str(got, want, "  its sha256");
	is_int(cm_app_exe_hash_finish(&j, 0, NULL, got), 1,
	       "  finish on a job that never ran a thread: done");

	snprintf(path, sizeof(path), "%s/large", dir);
	sparse_file(path, (off_t)CM_EXE_HASH_INLINE_BYTES + 4096);
	sha256sum_of(path, want, sizeof(want));
	memset(got, 0, sizeof(got));
	rc = cm_app_exe_hash_start(&j, path, NULL, &c, got, &err);
	if (!cm_app_have_sha256()) {
		is_int(rc, 1, "no libcrypto: a large file gets the meta form "
		       "at once");
		return;
	}
	is_int(rc, 0, "a file over the inline size: hashed by a thread");
	is_str(got, "", "  nothing written to out before it finishes");
	while (cm_app_exe_hash_finish(&j, 0, &c, got) == 0 && polls < 100000) {
		polls++;
		usleep(1000);
	}
	diag("polled %d times while the thread hashed", polls);
	is_str(got, want, "  polled to the end: its sha256");
	ok(c.valid && strcmp(c.hash, want) == 0, "  and the cache holds it");
	memset(got, 0, sizeof(got));
	rc = cm_app_exe_hash_start(&j, path, NULL, &c, got, &err);
	ok(rc == 1 && strcmp(got, want) == 0,
	   "the same file again: the cache answers at once");

	rc = cm_app_exe_hash_start(&j, path, NULL, NULL, got, &err);
	is_int(rc, 0, "without a cache: a thread again");
	is_int(cm_app_exe_hash_finish(&j, 1, NULL, got), 1,
	       "  finish with wait blocks until it is done");
	is_str(got, want, "  the same hash");

	snprintf(path, sizeof(path), "%s/huge", dir);
	sparse_file(path, (off_t)CM_EXE_HASH_MAX_BYTES + 1);
	rc = cm_app_exe_hash_start(&j, path, "/opt/huge", NULL, got, &err);
	ok(rc == 1 && strncmp(got, "meta:1073741825:", 16) == 0 &&
	   strstr(got, "/opt/huge"),
	   "over the 1 GiB cap: the meta form at once (%s)", got);
	unlink(path);
	snprintf(path, sizeof(path), "%s/missing", dir);
	ok(cm_app_exe_hash_start(&j, path, NULL, NULL, got, &err) == -1 &&
	   errno == ENOENT, "a missing file: -1/ENOENT (%s)", err.text);
}

/* Identity index of (process ordinal, creation index): the rank's first
 * process keeps plain creation indices, further ones get their own
 * thousand, anything past the scheme overflows (-1: the tracker then
 * numbers it from CM_IDENT_OVERFLOW_BASE). */
static void ident_table(void)
{
	static const struct { int ord, cidx, want; } t[] = {
		{ 0, 0, 0 }, { 0, 1, 1 }, { 0, 999, 999 }, { 0, 1000, -1 },
		{ 1, 0, 1000 }, { 1, 8, 1008 }, { 2, 0, 2000 }, { 2, 5, 2005 },
		{ 64, 999, 64999 }, { 65, 0, -1 }, { -1, 0, -1 },
		{ 0, -1, -1 }, { 3, 100000, -1 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ok(cm_ident_index(t[i].ord, t[i].cidx) == t[i].want,
		   "identity index of process %d, thread %d: %d", t[i].ord,
		   t[i].cidx, t[i].want);
	ok(cm_ident_index(CM_IDENT_MAX_ORDINAL, CM_IDENT_PROC_STRIDE - 1) <
	   CM_IDENT_OVERFLOW_BASE && CM_IDENT_OVERFLOW_BASE <
	   CM_IDENT_INDEX_MAX, "regular indices stay below the overflow "
	   "range, which stays within the result's limit");
}

/* SLURM_STEP_TASKS_PER_NODE: how many task lines the agent waits for. */
static void tasks_per_node_table(void)
{
	static const struct { const char *s; int node, want; } t[] = {
		{ "2", 0, 2 }, { "2", 1, -1 }, { "1,3", 1, 3 },
		{ "4(x3),2", 0, 4 }, { "4(x3),2", 2, 4 }, { "4(x3),2", 3, 2 },
		{ "4(x3),2", 4, -1 }, { "16(x2)", 1, 16 }, { "0", 0, 0 },
		{ "", 0, -1 }, { "x", 0, -1 }, { "2,", 0, -1 },
		{ "2(x0)", 0, -1 }, { "2(y3)", 0, -1 }, { "2(x3", 0, -1 },
		{ "2,garbage", 0, -1 }, { "-1", 0, -1 }, { "2", -1, -1 },
		{ "99999999999", 0, -1 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ok(cm_app_tasks_on_node(t[i].s, t[i].node) == t[i].want,
		   "tasks per node '%s', node %d: %d", t[i].s, t[i].node,
		   t[i].want);
	ok(cm_app_tasks_on_node(NULL, 0) == -1, "tasks per node: NULL");
}

static void fallback(void)
{
	char got[CM_EXE_HASH_MAX], want[CM_EXE_HASH_MAX], path[300];
	char longp[400];
	struct cm_error err;
	struct stat st;
	int kind;

	/* A directory opens but is not a regular file: meta form. */
	stat(dir, &st);
	kind = cm_app_exe_hash(dir, NULL, NULL, got, &err);
	is_int(kind, CM_EXE_HASH_META, "not a regular file: meta form");
	snprintf(want, sizeof(want), "meta:%lld:%lld:%s",
		 (long long)st.st_size, (long long)st.st_mtim.tv_sec, dir);
	is_str(got, want, "meta:<size>:<mtime>:<path>");
	kind = cm_app_exe_hash(dir, "/shown/path", NULL, got, &err);
	ok(kind == CM_EXE_HASH_META && strstr(got, ":/shown/path"),
	   "meta form uses the display path");
	snprintf(path, sizeof(path), "%s/missing", dir);
	errno = 0;
	ok(cm_app_exe_hash(path, NULL, NULL, got, &err) == -1 &&
	   errno == ENOENT && strstr(err.text, "missing"),
	   "missing file: -1/ENOENT naming it");
	/* A long path: 128 bytes, the end of the path kept. */
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	memcpy(longp + sizeof(longp) - 9, "/app.bin", 8);
	cm_app_exe_meta(123, 456, longp, got);
	is_int(strlen(got), 128, "long meta form cut to 128 bytes");
	ok(strncmp(got, "meta:123:456:", 13) == 0 &&
	   strcmp(got + 120, "/app.bin") == 0,
	   "  keeping the head and the end of the path");
	cm_app_exe_meta(0, -1, "", got);
	is_str(got, "meta:0:-1:", "empty path, negative mtime");
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	diag("libcrypto: %s", cm_app_have_sha256() ? "yes" : "no");
	shape_table();
	hash_table();
	hash_proc_exe();
	cache();
	fallback();
	background();
	ident_table();
	tasks_per_node_table();
	{
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			diag("cannot remove %s", dir);
	}
	return done_testing();
}
