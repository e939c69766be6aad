/* mpi_traffic.h: the traffic between MPI ranks, counted by Open MPI's pml
 * monitoring component, for a step that asks for it (--commap-mpi-traffic
 * or the site's mpi_traffic=yes).
 *
 * In slurmstepd (remote context) the plugin makes a per-step directory
 * owned by the job's user, mode 0700 (cm_mpi_traffic_mkdir), and sets in
 * the tasks' environment
 *   OMPI_MCA_pml_monitoring_enable=2         application messages apart
 *                                            from the library's own
 *   OMPI_MCA_pml_monitoring_enable_output=3  to a file at MPI_Finalize
 *   OMPI_MCA_pml_monitoring_filename=DIR/prof  DIR/prof.RANK.prof
 * Only Open MPI reads these; other programs and MPI libraries ignore them.
 * The node's agent (--mpi-traffic DIR) reads its ranks' files at step end
 * and removes the directory; when no agent runs, the plugin removes it.
 */
#ifndef COMMAP_SPANK_MPI_TRAFFIC_H
#define COMMAP_SPANK_MPI_TRAFFIC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "commap/error.h"

/* The variables and their values for dir (name[i], value[i]); value
 * buffers of CM_MPI_TRAFFIC_VALUE_MAX bytes. */
#define CM_MPI_TRAFFIC_NVARS 3
#define CM_MPI_TRAFFIC_VALUE_MAX 4200
void cm_mpi_traffic_vars(const char *dir,
			 const char *name[CM_MPI_TRAFFIC_NVARS],
			 char value[CM_MPI_TRAFFIC_NVARS]
				   [CM_MPI_TRAFFIC_VALUE_MAX]);

/* Make base/commap-mpi-JOB.STEP.XXXXXX (a fresh name, mode 0700), owned
 * by uid:gid when we are root (else by us), into dir (len bytes).  0 or
 * -1 with errno/err naming the directory. */
int cm_mpi_traffic_mkdir(const char *base, uint32_t job, uint32_t step,
			 uid_t uid, gid_t gid, char *dir, size_t len,
			 struct cm_error *err);

/* Remove dir's plain files and dir, never following a link.  0 or -1. */
int cm_mpi_traffic_rmdir(const char *dir);

#endif
