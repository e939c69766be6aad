/* test_user_file.c: reading a user-named file with the user's rights
 * (nodeagent/user_file.h): regular files only, FIFOs never block, the size
 * cap, relative paths, one message for missing and unreadable files, and
 * (as root) the identity dropped to an unprivileged uid. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "user_file.h"

static char dir[] = "/tmp/commap-user-file-XXXXXX";
static const struct cm_user_cred self = { .uid = (uid_t)-1 };

static void put(const char *name, const char *text, mode_t mode)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static int rd(const char *path, const char *in, const struct cm_user_cred *c,
	      size_t max, char **buf, struct cm_error *err)
{
	size_t len;

	return cm_user_file_read(path, in, c, max, 3000, buf, &len, err);
}

static void test_regular(void)
{
	struct cm_error err = { "" };
	char *buf = NULL, path[256];

	put("m.csv", "0,1\n1,0\n", 0644);
	snprintf(path, sizeof(path), "%s/m.csv", dir);
	ok(rd(path, NULL, &self, CM_USER_FILE_MAX, &buf, &err) == 0 &&
	   strcmp(buf, "0,1\n1,0\n") == 0, "a regular file is read whole");
	free(buf);
	buf = NULL;
	ok(rd("m.csv", dir, &self, CM_USER_FILE_MAX, &buf, &err) == 0 &&
	   strcmp(buf, "0,1\n1,0\n") == 0,
	   "a relative path is taken from the given directory");
	free(buf);
	buf = NULL;
	ok(rd(path, NULL, &self, 4, &buf, &err) == -1 && errno == EFBIG &&
	   strstr(err.text, "larger than 4 bytes") && !buf,
	   "a file over the cap: EFBIG (%s)", err.text);
}

static void test_not_regular(void)
{
	struct cm_error err = { "" };
	char *buf = NULL, path[256];

	snprintf(path, sizeof(path), "%s/fifo", dir);
	mkfifo(path, 0666);
	/* Nobody ever writes to it: a blocking open would hang here. */
	ok(rd(path, NULL, &self, CM_USER_FILE_MAX, &buf, &err) == -1 &&
	   errno == EINVAL && strstr(err.text, "fifo: not a regular file"),
	   "a FIFO is refused without blocking (%s)", err.text);
	ok(rd(dir, NULL, &self, CM_USER_FILE_MAX, &buf, &err) == -1 &&
	   errno == EINVAL, "a directory is refused");
	ok(rd("/dev/zero", NULL, &self, CM_USER_FILE_MAX, &buf, &err) == -1 &&
	   errno == EINVAL, "a device is refused");
}

static void test_missing_and_unreadable(void)
{
	struct cm_error e1 = { "" }, e2 = { "" };
	struct cm_user_cred nobody = { .uid = 65534, .gid = 65534 };
	char *buf = NULL, p1[256], p2[256];

	if (geteuid() != 0) {
		for (int k = 0; k < 4; k++)
			ok(1, "# SKIP needs root to take another identity");
		return;
	}
	put("secret", "SECRET-CONTENT\n", 0600);
	chmod(dir, 0755);
	snprintf(p1, sizeof(p1), "%s/secret", dir);
	snprintf(p2, sizeof(p2), "%s/absent", dir);
	ok(rd(p1, NULL, &nobody, CM_USER_FILE_MAX, &buf, &e1) == -1 &&
	   errno == EACCES && !strstr(e1.text, "SECRET"),
	   "a root-only file is not read as uid 65534 (%s)", e1.text);
	ok(rd(p2, NULL, &nobody, CM_USER_FILE_MAX, &buf, &e2) == -1 &&
	   errno == EACCES, "a missing file: EACCES too");
	ok(strcmp(strstr(e1.text, ":"), strstr(e2.text, ":")) == 0,
	   "missing and unreadable read the same after the path");
	ok(rd("/etc/shadow", NULL, &nobody, CM_USER_FILE_MAX, &buf,
	      &e1) == -1 && !strstr(e1.text, "root"),
	   "/etc/shadow as uid 65534: refused, nothing quoted (%s)", e1.text);
}

static void test_names(void)
{
	char out[16];

	cm_user_file_name("/a/\xff\x01" "b", out, sizeof(out));
	is_str(out, "/a/??b", "bytes outside printable ASCII become '?'");
	cm_user_file_name("/0123456789abcdefghij", out, sizeof(out));
	ok(strlen(out) == sizeof(out) - 1, "long names are truncated");
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	test_regular();
	test_not_regular();
	test_missing_and_unreadable();
	test_names();
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			diag("could not remove %s", dir);
	}
	return done_testing();
}
