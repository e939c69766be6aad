/* map_groups.h (internal): placing threads, or a hierarchy of thread
 * groups, onto the sharing tree top-down.  Used by the greedy mapper
 * (LHMapping §3.3 GroupsToTopology), the recursive bisection candidate of
 * "auto", and free for any mapper that produces groups (e.g. SPCD). */
#ifndef COMMAP_MAP_GROUPS_H
#define COMMAP_MAP_GROUPS_H

#include <stdint.h>
#include <string.h>

#include "commap/mapping.h"
#include "commap/matrix.h"
#include "commap/topology.h"

/* Refine every split with Fiduccia-Mattheyses passes, then let threads that
 * communicate move together beyond the spread quota (within capacity). */
#define CM_PLACE_FM 0x1u
/* With CM_PLACE_FM: no multilevel bisection, flat FM only (another
 * candidate for "auto"; sometimes better on small meshes). */
#define CM_PLACE_FLAT 0x2u
/* With CM_PLACE_FM: less effort (one V-cycle per split, shorter FM
 * passes, multilevel only for larger splits); "auto" at large n. */
#define CM_PLACE_LEAN 0x4u

/* Spread weight of every tree node: the number of cores below it (a PU
 * that is not under a core node counts as a core), spread[nnodes]. */
void cm_map_spread_weight(const struct cm_topo *topo, int *spread);

/* How many of n threads each tree node receives when they are spread over
 * cores and caches before any are doubled up: quota[0] = n, and every
 * node's quota is split among its children in proportion to their spread
 * weight, capped by their capacity (node_cap, cm_map_node_capacity()).
 * n must not exceed node_cap[0]. */
void cm_map_spread_quota(const struct cm_topo *topo, const int *node_cap,
			 int n, int *quota);

/* Place the n threads of m onto the tree, top-down: at each node the
 * threads are split among the children (recursively in two halves of the
 * children, balanced by capacity) with sizes given by the spread quota.
 *  order: the threads in an order in which those of one group are
 *         consecutive (a hierarchy of groups flattened depth first); each
 *         split then cuts the order into consecutive pieces.  NULL lets
 *         greedy graph growing from a peripheral thread choose the split.
 *  flags: CM_PLACE_FM, CM_PLACE_FLAT or 0.
 *  cap:   per-PU capacity from cm_map_capacity(), sum >= n.
 * Writes pu_of_thread[n].  Deterministic.  0, or -1/ENOMEM. */
int cm_map_place(const struct cm_topo *topo, const struct cm_matrix *m,
		 const int *cap, const int *order, unsigned flags,
		 int *pu_of_thread);
/* The same with a seed that varies the coarsening and the growing seeds
 * (restarts); cm_map_place() uses seed 0. */
int cm_map_place_seeded(const struct cm_topo *topo,
			const struct cm_matrix *m, const int *cap,
			const int *order, unsigned flags, uint64_t seed,
			int *pu_of_thread);

/* A bottom-up mapper in two steps: order_fn writes a thread order in which
 * every group it formed is consecutive (greedy grouping, SPCD matching),
 * then cm_map_place() cuts that order along the tree.  Checks the
 * arguments and the capacity; name starts the error messages ("greedy
 * mapping").  Same contract as cm_map(). */
typedef int (*cm_map_order_fn)(const struct cm_topo *topo,
			       const struct cm_matrix *m, const int *cap,
			       int *order);
int cm_map_by_order(const struct cm_topo *topo, const struct cm_matrix *m,
		    const struct cm_map_options *opts, const char *name,
		    cm_map_order_fn order_fn, int *pu_of_thread,
		    struct cm_error *err);

/* LHMapping §3.3 bottom-up grouping (map_greedy.c): writes to order[n]
 * the threads flattened depth first from the hierarchy of groups built by
 * GenerateOneLevel/UpdateMatrix, for cm_map_place().  0 or -1/ENOMEM. */
int cm_map_greedy_order(const struct cm_topo *topo, const struct cm_matrix *m,
			const int *cap, int *order);

/* An indexed max-heap of ids 0..n-1 keyed by key[id] (ties: lower id
 * first), with O(log n) update when a key changes. */
struct cm_heap {
	int *item;
	int *pos;		/* position of an id, -1 if absent */
	const double *key;
	int len;
};

int cm_heap_init(struct cm_heap *h, int n, const double *key);
void cm_heap_free(struct cm_heap *h);
void cm_heap_push(struct cm_heap *h, int id);
int cm_heap_pop(struct cm_heap *h);
void cm_heap_remove(struct cm_heap *h, int id);
/* Restore the order after key[id] changed (id must be present). */
void cm_heap_update(struct cm_heap *h, int id);
/* The same when the change is known to be a rise (raise) or a fall
 * (lower): one direction of sifting is enough (FM moves change gains by
 * +-2w with w >= 0). */
void cm_heap_raise(struct cm_heap *h, int id);
void cm_heap_lower(struct cm_heap *h, int id);
void cm_heap_clear(struct cm_heap *h);
/* Many ids at once: cm_heap_append() each (absent) id whose "keep" is
 * true, unordered and without a branch, then cm_heap_build() orders them
 * all in O(len) (Floyd), instead of O(log len) and a mispredicted end of
 * sifting per push.  The heap pops the same ids in the same order either
 * way: the order is total. */
static inline void cm_heap_append(struct cm_heap *h, int id, int keep)
{
	keep = keep != 0;
	h->item[h->len] = id;	/* overwritten next unless kept */
	h->pos[id] = (h->len + 1) * keep - 1;	/* len or -1 */
	h->len += keep;
}
void cm_heap_build(struct cm_heap *h);

static inline int cm_heap_contains(const struct cm_heap *h, int id)
{
	return h->pos[id] >= 0;
}

/* w if plus, else -w, without a branch: in FM, whether a neighbour is on
 * the other side is a coin toss to the branch predictor, and a
 * mispredicted branch costs more than the multiplication.  Exact: -1 * w
 * is -w, and g + -w is g - w. */
static inline double cm_signed(double w, int plus)
{
	static const double sign[2] = { -1.0, 1.0 };

	return sign[plus != 0] * w;
}

/* w if keep, else 0, without a branch (for sums of the links that a
 * split cuts); exact, also for an infinite w, which 0 x w is not. */
static inline double cm_keep(double w, int keep)
{
	uint64_t bits;

	memcpy(&bits, &w, sizeof(bits));
	bits &= -(uint64_t)(keep != 0);
	memcpy(&w, &bits, sizeof(w));
	return w;
}

#endif
