/* perf_open.h: opening perf events, shared by the sampler (perf_sample.c)
 * and the hardware probe (perf_open.c); internal to the agent. */
#ifndef COMMAP_NODEAGENT_PERF_OPEN_H
#define COMMAP_NODEAGENT_PERF_OPEN_H

#include <sys/types.h>

#include <linux/perf_event.h>

#include "perf_sample.h"

/* The perf_event_attr of a sampler configuration (also used by the probe
 * with default periods). */
void cm_perf_attr_build(const struct cm_perf_config *cfg,
			struct perf_event_attr *a);

/* perf_event_open(a, pid, cpu, no group, close-on-exec): an fd or -1. */
int cm_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu);

/* Sets err to a message for perf_event_open's errno e on thread tid that
 * says what to do about it (what names the event); returns -1. */
int cm_perf_open_error(struct cm_error *err, int e, const char *what,
		       pid_t tid);

#endif
