/* place_nodes.h: learned placement of ranks across nodes, in srun
 * (docs/slurm.md "Learned placement across nodes").
 *
 * srun reads SLURM_HOSTFILE and SLURM_DISTRIBUTION from its environment
 * before it processes its options and before the plugin's
 * init_post_opt: set there, they are ignored (measured on Slurm 22.05).
 * The plugin's init runs earlier, in srun's main before srun reads its
 * environment, so the placement is decided there: --commap-place-nodes
 * is looked for on srun's own command line (/proc/self/cmdline), the
 * program and its arguments too, and commap-place-nodes (next to the
 * agent) asks the service for the application's rank matrix and writes
 * a hostfile; the plugin then sets SLURM_HOSTFILE and
 * SLURM_DISTRIBUTION=arbitrary, which srun reads as if the user had.
 * Anything unexpected (no allocation, another layout asked for, tasks
 * not spread evenly, no matrix, service down) leaves srun as it was, with
 * one line saying why: the job never fails because of it.
 */
#ifndef COMMAP_SPANK_PLACE_NODES_H
#define COMMAP_SPANK_PLACE_NODES_H

#include <stdint.h>
#include <slurm/spank.h>

/* srun's init (local context): decide and set the environment.
 * site_default: place_nodes=yes in plugstack.conf. */
void cm_place_nodes_srun(const char *agent, const char *service,
			 int site_default);

/* srun's exit: remove the hostfile. */
void cm_place_nodes_srun_exit(void);

/* Register --commap-place-nodes.  0, or -1 (said in the log). */
int cm_place_nodes_register(spank_t sp);

/* 1 when --commap-place-nodes was given (any context). */
int cm_place_nodes_asked(void);

#endif
