/* cma_pair.c: the enter and exit records of CMA calls, sorted and paired
 * per thread into finished calls (see cma_trace.h, "pairing").
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cma_trace.h"

/* Slots looked at for one thread (linear probing, no chains). */
#define PAIR_PROBE 8u

static int cmp_time(const void *a, const void *b)
{
	const struct cm_cma_event *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	/* Same nanosecond: the enter first. */
	return (x->kind >= CM_CMA_EXIT_READ) - (y->kind >= CM_CMA_EXIT_READ);
}

void cm_cma_sort(struct cm_cma_event *ev, size_t n)
{
	if (ev && n > 1)
		qsort(ev, n, sizeof(*ev), cmp_time);
}

/* ---- pairing ----------------------------------------------------------- */

struct pair_slot {
	uint32_t tid;		/* 0: empty */
	uint32_t pid;
	uint8_t is_exit;	/* 1: an exit waiting for its enter */
	uint8_t write;
	int64_t value;		/* enter: peer pid; exit: return value */
	uint64_t time;
};

struct cm_cma_pairer {
	struct pair_slot slot[CM_CMA_PAIR_SLOTS];
	struct cm_cma_pair_stats st;
};

struct cm_cma_pairer *cm_cma_pairer_new(void)
{
	struct cm_cma_pairer *p = calloc(1, sizeof(*p));

	if (!p)
		errno = ENOMEM;
	return p;
}

void cm_cma_pairer_free(struct cm_cma_pairer *p)
{
	free(p);
}

static uint32_t tid_hash(uint32_t tid)
{
	return (tid * 2654435761u) >> 7;
}

/* The slot of tid, or a free one (tid 0) for it, or one whose call is
 * older than CM_CMA_ORPHAN_NS (given up: counted); NULL when the window
 * is full of live calls. */
static struct pair_slot *pair_find(struct cm_cma_pairer *p, uint32_t tid,
				   uint64_t now)
{
	struct pair_slot *free_s = NULL, *stale = NULL;

	for (uint32_t k = 0; k < PAIR_PROBE; k++) {
		struct pair_slot *s =
			&p->slot[(tid_hash(tid) + k) & (CM_CMA_PAIR_SLOTS - 1)];

		if (s->tid == tid)
			return s;
		if (!s->tid && !free_s)
			free_s = s;
		else if (s->tid && !stale && now > s->time &&
			 now - s->time > CM_CMA_ORPHAN_NS)
			stale = s;
	}
	if (free_s)
		return free_s;
	if (stale) {
		p->st.unpaired++;
		stale->tid = 0;
	}
	return stale;
}

static void pair_store(struct pair_slot *s, const struct cm_cma_event *ev,
		       bool is_exit, bool write)
{
	s->tid = ev->tid;
	s->pid = ev->pid;
	s->is_exit = is_exit;
	s->write = write;
	s->value = ev->value;
	s->time = ev->time;
}

/* A finished call from its enter (peer) and its exit (ret). */
static int pair_done(struct cm_cma_pairer *p, struct pair_slot *s,
		     const struct cm_cma_event *ev, int64_t peer, int64_t ret,
		     uint64_t exit_time, struct cm_cma_transfer *out)
{
	out->pid = ev->pid;
	out->tid = ev->tid;
	out->peer = (uint32_t)peer;
	out->write = s->write;
	out->bytes = ret > 0 ? (uint64_t)ret : 0;
	out->time = exit_time;
	s->tid = 0;
	p->st.calls++;
	if (ret <= 0 || peer <= 0 || peer > INT32_MAX) {
		p->st.failed++;
		out->bytes = 0;
	}
	p->st.bytes += out->bytes;
	return 1;
}

int cm_cma_pairer_feed(struct cm_cma_pairer *p, const struct cm_cma_event *ev,
		       struct cm_cma_transfer *out)
{
	bool is_exit, write;
	struct pair_slot *s;

	if (!p || !ev || !out || ev->kind >= CM_CMA_NKINDS || !ev->tid)
		return 0;
	is_exit = ev->kind >= CM_CMA_EXIT_READ;
	write = ev->kind == CM_CMA_ENTER_WRITE ||
		ev->kind == CM_CMA_EXIT_WRITE;
	s = pair_find(p, ev->tid, ev->time);
	if (!s) {
		p->st.no_slot++;
		return 0;
	}
	if (s->tid == ev->tid && s->is_exit != is_exit && s->write == write) {
		/* The other half: an exit after its enter, or an enter read
		 * after its exit (another CPU's ring, a later read). */
		if (is_exit && s->time <= ev->time)
			return pair_done(p, s, ev, s->value, ev->value,
					 ev->time, out);
		if (!is_exit && ev->time <= s->time)
			return pair_done(p, s, ev, ev->value, s->value,
					 s->time, out);
	}
	if (s->tid == ev->tid)
		p->st.unpaired++;	/* replaced: its other half is lost */
	pair_store(s, ev, is_exit, write);
	return 0;
}

void cm_cma_pairer_stats(const struct cm_cma_pairer *p,
			 struct cm_cma_pair_stats *st)
{
	if (p)
		*st = p->st;
	else
		memset(st, 0, sizeof(*st));
}
