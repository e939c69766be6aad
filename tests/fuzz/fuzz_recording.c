/* fuzz_recording.c: the reader of the agent's recordings (cm_replay_parse
 * in nodeagent/record_read.c, docs/formats.md "Recordings") on arbitrary
 * text.
 *
 * Invariants: a refused text leaves the replay empty and says why, naming
 * the line where there is one; an accepted one has at most
 * CM_REPLAY_MAX_THREADS threads, a matrix no larger, whose total weight is
 * the number of events the table reported and the transfers' units, and
 * parsing it again gives the same matrix (the replay is deterministic);
 * read with a clock hook (version 3), it is called once per clock line and
 * guard snapshot, with times that never go back, and the events it is given weigh no more than
 * the matrix; its pins that failed (version 4) are at most
 * CM_REPLAY_MAX_NOPIN, of recorded thread indices, with an errno; its
 * ownership evidence (version 5) weighs at most one unit a line and is
 * in the matrix.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct clocks {
	int n;
	uint64_t last;
	double fresh;
};

static int on_clock(void *ctx, const struct cm_replay *rp,
		    const struct cm_replay_clock *ev, struct cm_error *err)
{
	struct clocks *c = ctx;

	(void)rp;
	(void)err;
	fuzz_require(ev->t_ns >= c->last, "clock lines in order");
	c->last = ev->t_ns;
	if (ev->snap) {
		fuzz_require(ev->n >= 0 && ev->n <= CM_REPLAY_MAX_THREADS &&
			     !ev->fresh, "a snapshot of at most 4096 threads");
		for (int i = 0; i < ev->n; i++)
			fuzz_require(ev->cpu[i] >= -1 && ev->wait[i] >= -1,
				     "readings of -1 (unread) or more");
		return 0;
	}
	fuzz_require(ev->fresh != NULL, "a clock line has its events");
	c->n++;
	c->fresh += cm_matrix_total(ev->fresh);
	return 0;
}

static void check_clocked(const char *text, size_t size,
			  const struct cm_replay *rp)
{
	struct clocks c = { 0, 0, 0 };
	struct cm_replay again;
	struct cm_error err = { "" };

	fuzz_require(cm_replay_parse_clocked(text, size, &again, on_clock, &c,
					     &err) == 0,
		     "accepted with a clock hook too");
	fuzz_require(c.n >= again.nintervals && again.nintervals ==
		     rp->nintervals, "one call per clock line");
	fuzz_require(c.fresh <= cm_matrix_total(again.m) * (1 + 1e-9) + 1e-9,
		     "the events given weigh no more than the matrix");
	cm_replay_free(&again);
}

static void check_accepted(const char *text, size_t size,
			   const struct cm_replay *rp)
{
	struct cm_replay again;
	struct cm_error err = { "" };
	double cma = rp->cma_unit > 0 ? (double)rp->cma_bytes / rp->cma_unit :
		     0;

	fuzz_require(rp->nthreads >= 0 &&
		     rp->nthreads <= CM_REPLAY_MAX_THREADS, "thread count");
	fuzz_require(rp->m && cm_matrix_nthreads(rp->m) <= rp->nthreads,
		     "the matrix holds only recorded threads");
	fuzz_require(rp->cma_added <= rp->cma_lines &&
		     (rp->cma_lines == 0 || rp->cma_unit >= 1),
		     "transfers attributed at most once, with a unit");
	fuzz_require(rp->shm_weight > 0 ? rp->shm_weight <=
		     (double)rp->shm_lines : rp->shm_lines == 0,
		     "ownership evidence: at most a unit a line");
	fuzz_require(fabs(cm_matrix_total(rp->m) - (double)rp->events -
			  rp->overlap.weight - cma - rp->shm_weight) <
		     0.5 + 1e-9 * (rp->overlap.weight + cma + rp->shm_weight),
		     "the matrix weighs the events, the overlap, the "
		     "transfers and the ownership evidence");
	fuzz_require(rp->events == 0 || rp->accesses > 0, "events need "
		     "accesses");
	fuzz_require(rp->nnopin >= 0 && rp->nnopin <= CM_REPLAY_MAX_NOPIN &&
		     (rp->nnopin == 0) == (rp->nopin == NULL),
		     "the pins that failed, bounded");
	for (int k = 0; k < rp->nnopin; k++)
		fuzz_require(rp->nopin[k].i >= 0 &&
			     rp->nopin[k].i < CM_REPLAY_MAX_THREADS &&
			     rp->nopin[k].os >= -1 && rp->nopin[k].err > 0,
			     "a failed pin names a thread, a PU and an errno");
	fuzz_require(cm_replay_parse(text, size, &again, &err) == 0,
		     "an accepted recording is accepted again");
	fuzz_require(again.events == rp->events &&
		     cm_matrix_nedges(again.m) == cm_matrix_nedges(rp->m) &&
		     cm_matrix_total(again.m) == cm_matrix_total(rp->m),
		     "the same recording gives the same matrix");
	cm_replay_free(&again);
	check_clocked(text, size, rp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_bytes(data, size);
	struct cm_replay rp;
	struct cm_error err = { "" };

	if (cm_replay_parse(text, size, &rp, &err) < 0) {
		fuzz_require(err.text[0] != '\0' && !rp.m && !rp.threads &&
			     !rp.synthetic && !rp.cpuset && !rp.nopin,
			     "a refused text leaves the replay empty, said why");
		fuzz_require(strncmp(err.text, "recording: ", 11) == 0,
			     "the message says it is the recording");
	} else {
		check_accepted(text, size, &rp);
		cm_replay_free(&rp);
	}
	free(text);
	return 0;
}
