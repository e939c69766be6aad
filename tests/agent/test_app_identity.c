/* test_app_identity.c: the application identity of learned mappings
 * (nodeagent/app_identity.h): argv shapes, executable hashes checked
 * against coreutils' sha256sum, the (dev, inode, size, mtime) cache and
 * the meta fallback. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_identity.h"
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
	{
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			diag("cannot remove %s", dir);
	}
	return done_testing();
}
