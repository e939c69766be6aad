/* cma_attrib.h: single-copy transfers (cma_trace.h) into the communication
 * matrix, between the tracker's threads.
 *
 * A transfer names its caller (pid, tid) and the peer process.  The
 * caller's side is the calling thread.  The peer's side is the thread of
 * the peer process that made the most CMA calls itself lately (calls
 * counted per thread, halved every CM_CMA_DECAY_NS of record time): in an
 * MPI rank that is the thread inside MPI, the one whose buffers the peer
 * reads or writes.  A peer that made no call (it only sends: its peer
 * reads) is represented by its main thread (tid = pid).  The remote
 * buffer's addresses are not read (the iovecs live in the caller's memory
 * only during the call), so the sharer table cannot name the thread that
 * touched them; with one MPI thread per rank (MPI_THREAD_FUNNELED or
 * SERIALIZED) that is the same thread.
 *
 * Scale: one matrix unit per bytes_per_unit bytes copied (default
 * CM_CMA_BYTES_PER_UNIT, 64 KiB).  A sampled sharing event stands for CPU
 * time spent touching shared blocks, not for a volume: an MPI progress
 * engine polling a shared FIFO while it waits gives as many events as a
 * thread copying data.  Counted bytes are the better measure of message
 * traffic, so the unit is small enough that a transfer rate of a few MB/s
 * outweighs that polling (docs/detection.md, "Message passing", has the
 * measurements); within a rank, sampled sharing between its own threads
 * keeps its usual weight.
 *
 * Memory: per tracker thread and process, grown with the tracker (which
 * bounds them); nothing per transfer.  Not thread-safe.
 */
#ifndef COMMAP_NODEAGENT_CMA_ATTRIB_H
#define COMMAP_NODEAGENT_CMA_ATTRIB_H

#include <stdint.h>

#include "cma_trace.h"
#include "commap/matrix.h"
#include "proc_track.h"

#define CM_CMA_BYTES_PER_UNIT 65536.0
#define CM_CMA_DECAY_NS 1000000000ull

struct cm_cma_attrib_stats {
	uint64_t transfers;	/* transfers of our threads (caller ours) */
	uint64_t bytes;		/* ... and their bytes, all added */
	uint64_t foreign;	/* caller not ours (or tid reused) */
	uint64_t unknown_tid;	/* caller's process ours, thread not yet
				 * scanned: dropped */
	uint64_t peer_unknown;	/* peer not one of our processes */
	uint64_t self;		/* peer thread = caller: no edge */
	uint64_t by_caller;	/* peer side: its own most calling thread */
	uint64_t by_main;	/* peer side: its main thread */
};

struct cm_cma_attrib;

/* For tracker t (must outlive it); bytes_per_unit <= 0: the default.
 * NULL/ENOMEM. */
struct cm_cma_attrib *cm_cma_attrib_new(const struct cm_tracker *t,
					double bytes_per_unit);
void cm_cma_attrib_free(struct cm_cma_attrib *a);

/* Enter one transfer: weight bytes / bytes_per_unit between the caller
 * and the peer's thread (m grows when an index is beyond its size).
 * 1 added, 0 dropped (counted: foreign, unknown, self), -1/ENOMEM. */
int cm_cma_attrib_add(struct cm_cma_attrib *a,
		      const struct cm_cma_transfer *x, struct cm_matrix *m);

/* CMA calls of tracker thread i lately (decayed), 0 if unknown. */
uint32_t cm_cma_attrib_calls(const struct cm_cma_attrib *a, int i);

void cm_cma_attrib_stats(const struct cm_cma_attrib *a,
			 struct cm_cma_attrib_stats *st);

#endif
