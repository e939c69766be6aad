/* test_mpi_traffic.c: the plugin's side of the traffic between MPI ranks
 * (spank/mpi_traffic.c): the Open MPI variables name the step's
 * directory; the directory is fresh, 0700 and, made by root, the job
 * user's; its removal takes files and links but never follows a link,
 * and refuses a link put in the directory's place. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi_traffic.h"
#include "tap.h"

static void test_vars(void)
{
	const char *name[CM_MPI_TRAFFIC_NVARS];
	static char value[CM_MPI_TRAFFIC_NVARS][CM_MPI_TRAFFIC_VALUE_MAX];

	cm_mpi_traffic_vars("/tmp/d", name, value);
	ok(!strcmp(name[0], "OMPI_MCA_pml_monitoring_enable") &&
	   !strcmp(value[0], "2"), "monitoring on, application messages apart");
	ok(!strcmp(name[1], "OMPI_MCA_pml_monitoring_enable_output") &&
	   !strcmp(value[1], "3"), "written to a file at MPI_Finalize");
	ok(!strcmp(name[2], "OMPI_MCA_pml_monitoring_filename") &&
	   !strcmp(value[2], "/tmp/d/prof"), "the file in the step's directory");
}

static void write_file(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f)
		fclose(f);
}

static void test_dir(void)
{
	char base[] = "/tmp/test-mpi-traffic.XXXXXX", dir[256], dir2[256];
	char path[320], target[300];
	struct cm_error err = { "" };
	uid_t uid = geteuid() == 0 ? 65534 : geteuid();
	struct stat st;

	if (!mkdtemp(base)) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	ok(cm_mpi_traffic_mkdir(base, 42, 7, uid, (gid_t)uid, dir, sizeof(dir),
				&err) == 0, "the step's directory is made (%s)",
	   err.text);
	ok(lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	   (st.st_mode & 07777) == 0700 && st.st_uid == uid,
	   "a directory, mode 0700, owned by uid %u", (unsigned)uid);
	snprintf(path, sizeof(path), "%s/commap-mpi-42.7.", base);
	ok(strncmp(dir, path, strlen(path)) == 0 &&
	   strlen(dir) == strlen(path) + 6, "named commap-mpi-JOB.STEP.XXXXXX");
	ok(cm_mpi_traffic_mkdir(base, 42, 7, uid, (gid_t)uid, dir2,
				sizeof(dir2), &err) == 0 && strcmp(dir, dir2),
	   "a second step gets a fresh name");
	ok(cm_mpi_traffic_mkdir("/nonexistent", 1, 0, uid, (gid_t)uid, dir2,
				sizeof(dir2), &err) == -1 &&
	   strstr(err.text, "/nonexistent/commap-mpi-1.0."),
	   "a base that is not there: the error names it (%s)", err.text);

	/* removal: a file and a link inside; the link's target stays */
	snprintf(path, sizeof(path), "%s/prof.0.prof", dir);
	write_file(path);
	snprintf(target, sizeof(target), "%s/keep", base);
	write_file(target);
	snprintf(path, sizeof(path), "%s/prof.1.prof", dir);
	ok(symlink(target, path) == 0, "a link planted in the directory");
	ok(cm_mpi_traffic_rmdir(dir) == 0 && lstat(dir, &st) < 0 &&
	   stat(target, &st) == 0, "removed with its file and link, the "
	   "link's target kept");

	/* a link in the directory's place is not followed */
	snprintf(path, sizeof(path), "%s/elsewhere", base);
	mkdir(path, 0700);
	snprintf(target, sizeof(target), "%s/elsewhere/file", base);
	write_file(target);
	snprintf(dir2, sizeof(dir2), "%s/commap-mpi-42.8.link", base);
	ok(symlink(path, dir2) == 0 && cm_mpi_traffic_rmdir(dir2) == -1 &&
	   stat(target, &st) == 0, "a link in its place: refused, nothing "
	   "behind it removed");
	snprintf(path, sizeof(path), "rm -rf '%s'", base);
	if (system(path) != 0)
		diag("cleanup of %s failed", base);
}

int main(void)
{
	test_vars();
	test_dir();
	return done_testing();
}
