/* mpi_traffic.c: the per-step directory and the Open MPI monitoring
 * variables (see mpi_traffic.h).  Plain POSIX: unit-tested without Slurm. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi_traffic.h"

void cm_mpi_traffic_vars(const char *dir,
			 const char *name[CM_MPI_TRAFFIC_NVARS],
			 char value[CM_MPI_TRAFFIC_NVARS]
				   [CM_MPI_TRAFFIC_VALUE_MAX])
{
	/* 2, not 1: 1 adds the library's own messages (collectives built
	 * on point-to-point) to the application's; 2 keeps them apart
	 * ("E" lines are the application's). */
	name[0] = "OMPI_MCA_pml_monitoring_enable";
	snprintf(value[0], CM_MPI_TRAFFIC_VALUE_MAX, "2");
	name[1] = "OMPI_MCA_pml_monitoring_enable_output";
	snprintf(value[1], CM_MPI_TRAFFIC_VALUE_MAX, "3");
	name[2] = "OMPI_MCA_pml_monitoring_filename";
	snprintf(value[2], CM_MPI_TRAFFIC_VALUE_MAX, "%s/prof", dir);
}

int cm_mpi_traffic_mkdir(const char *base, uint32_t job, uint32_t step,
			 uid_t uid, gid_t gid, char *dir, size_t len,
			 struct cm_error *err)
{
	int fd, n = snprintf(dir, len, "%s/commap-mpi-%u.%u.XXXXXX", base,
			     (unsigned)job, (unsigned)step);

	if (n < 0 || (size_t)n >= len)
		return cm_errorf(err, ENAMETOOLONG, "%s: name too long", base);
	/* mkdtemp makes a fresh name (never one planted in a shared /tmp)
	 * with mode 0700. */
	if (!mkdtemp(dir))
		return cm_errorf(err, errno, "cannot make %s: %s", dir,
				 strerror(errno));
	if (geteuid() != 0 || geteuid() == uid)
		return 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, uid, gid) < 0) {
		int saved = errno;

		if (fd >= 0)
			close(fd);
		rmdir(dir);
		return cm_errorf(err, saved, "cannot give %s to uid %u: %s",
				 dir, (unsigned)uid, strerror(saved));
	}
	close(fd);
	return 0;
}

int cm_mpi_traffic_rmdir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *e;
	DIR *d;

	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	/* Relative to the directory opened: a link put in its place is
	 * never followed, links inside are removed, not followed. */
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISDIR(st.st_mode))
			unlinkat(fd, e->d_name, 0);
	}
	closedir(d);
	return rmdir(dir);
}
