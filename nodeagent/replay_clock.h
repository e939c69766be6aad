/* replay_clock.h: the agent's remap decisions replayed from a version 3
 * recording (replay_clock.c; replay.h reads the recording). */
#ifndef COMMAP_NODEAGENT_REPLAY_CLOCK_H
#define COMMAP_NODEAGENT_REPLAY_CLOCK_H

#include <stddef.h>

#include "agent_result.h"
#include "commap/error.h"
#include "commap/topology.h"
#include "replay.h"

/* Read text (a recording that first parsed into first, with options and
 * interval lines) again, making the agent's decisions at each interval
 * on topo: every mapping goes into res's timeline (and its migrations,
 * pins, intervals and "not pinned"), a divergence from the recorded
 * intervals or what a replay cannot redo into its warnings; *total the
 * run's matrix as the agent's total (corrected under real pinning; the
 * caller frees it).  For a recording of a dynamic run (first->opt_mode).
 * 0, or -1
 * with err (ENOMEM, or the parse's error). */
int cm_replay_clock_run(const char *text, size_t len,
			const struct cm_replay *first,
			const struct cm_topo *topo,
			struct cm_agent_result *res, struct cm_matrix **total,
			struct cm_error *err);

#endif
