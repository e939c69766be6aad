/* map_groups_split.c: one bisection of the threads of a tree node for
 * cm_map_place(): greedy graph growing or the given order, Fiduccia-
 * Mattheyses passes at fixed sizes and single moves into free capacity,
 * multilevel bisection for large splits, straight splits on meshes, and
 * the effort adapted to the first split's cut (CM_PLACE_LEAN). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "map_bisect.h"
#include "map_coords.h"
#include "map_groups.h"
#include "map_groups_internal.h"

/* The extra effort of large n (LEAN_LARGE_N): for the first split, whose
 * cut says what the graph is, and below it for meshes. */
static int large_effort(const struct place *p)
{
	return p->large && (!p->effort_set || p->mesh);
}

/* The share of the weight under which a first cut means loosely linked
 * pieces (LEAN_LOOSE_CUT, LEAN_LOOSE_REF_N). */
static double loose_cut(const struct place *p)
{
	return p->n > LEAN_LOOSE_REF_N
	       ? LEAN_LOOSE_CUT * sqrt((double)LEAN_LOOSE_REF_N / p->n)
	       : LEAN_LOOSE_CUT;
}

/* A first cut of this share of the weight: neither loosely linked pieces
 * nor an expander (adapt_effort()). */
static int meshlike(const struct place *p, double share)
{
	return share >= loose_cut(p) && share <= LEAN_EXPANDER_CUT;
}

/* The first split found a loosely linked graph (LEAN_LOOSE_CUT). */
static int loose(const struct place *p)
{
	return p->effort_set && p->ml_min > p->n;
}

/* Look the rows of m up once, and set eps from the largest weight (as
 * cm_matrix_max() finds it); 0 or -1. */
int cm_place_find_rows(struct place *p)
{
	double wmax = 0;

	p->ref = malloc(sizeof(*p->ref) * ((size_t)p->n + 1));
	if (!p->ref)
		return -1;
	for (int x = 0; x < p->n; x++) {
		const struct cm_matrix_entry *row;
		int deg = cm_matrix_row(p->m, x, &row);

		p->ref[x].e = row;
		p->ref[x].len = deg;
		for (int k = 0; k < deg; k++)
			if (row[k].w > wmax)
				wmax = row[k].w;
	}
	p->eps = 1e-12 * wmax;
	return 0;
}

#define PUSH_SIDE_B 2

/* Move x to the other side and update its neighbours' gains (and their
 * heap positions, wherever they are).  The arrays are in locals: the heap
 * calls could change anything behind p as far as the compiler knows. */
static void move_thread(struct place *p, int x)
{
	const struct cm_matrix_entry *row;
	int deg = cm_place_row(p, x, &row);
	signed char *side = p->side;
	double *gain = p->gain;
	const char *locked = p->locked;
	int push = p->push_neighbours;
	int to = !side[x];

	side[x] = (signed char)to;
	gain[x] = -gain[x];
	for (int k = 0; k < deg; k++) {
		int y = row[k].col, sy = side[y];
		struct cm_heap *h = &p->heap[sy & 1];

		/* a thread outside the split (side -1) is never in a heap,
		 * and the gain it gets here is not read: the split of its
		 * own group sets its gain anew.  One branch less, and one
		 * that is a coin toss where splits are small. */
		gain[y] += cm_signed(2 * row[k].w, sy != to);
		if (cm_heap_contains(h, y)) {
			if (sy == to)	/* y's link now stays inside */
				cm_heap_lower(h, y);
			else
				cm_heap_raise(h, y);
			continue;
		}
		if ((sy >= 0) & (push != 0) & !locked[y] &
		    ((push != PUSH_SIDE_B) | (sy == 1)))
			cm_heap_push(h, y);
	}
}

/* Move x back when the heaps are empty (the end of an FM pass): the gains
 * change as in move_thread(), with no heap to look at. */
static void undo_thread(struct place *p, int x)
{
	const struct cm_matrix_entry *row;
	int deg = cm_place_row(p, x, &row);
	int to = !p->side[x];

	p->side[x] = (signed char)to;
	p->gain[x] = -p->gain[x];
	for (int k = 0; k < deg; k++) {
		int y = row[k].col;

		/* outside the split: not read (move_thread()) */
		p->gain[y] += cm_signed(2 * row[k].w, p->side[y] != to);
	}
}

/* Queue the threads of T on the border (links to the other side): only
 * they can have a useful gain; others join when a neighbour moves.  The
 * weight to the other side is (gain + tot) / 2, so no row is scanned;
 * what rounding leaves of a cancelled sum is not a link. */
static void push_border(struct place *p, const int *T, int t)
{
	for (int i = 0; i < t; i++) {
		int x = T[i];

		cm_heap_append(&p->heap[p->side[x]], x,
			       p->gain[x] + p->tot[x] > 1e-9 * p->tot[x]);
	}
	cm_heap_build(&p->heap[0]);
	cm_heap_build(&p->heap[1]);
}

static void compute_gains(struct place *p, const int *T, int t)
{
	for (int i = 0; i < t; i++) {
		const struct cm_matrix_entry *row;
		int x = T[i];
		int deg = cm_place_row(p, x, &row);
		double g = 0, tot = 0;

		for (int k = 0; k < deg; k++) {
			int y = row[k].col;

			if (p->side[y] >= 0) {
				g += p->side[y] != p->side[x] ? row[k].w
							      : -row[k].w;
				tot += row[k].w;
			}
		}
		p->gain[x] = g;
		p->tot[x] = tot;
	}
}

/* The last thread reached by a breadth-first search inside T: a
 * peripheral thread, a good seed for growing (George & Liu).  Called
 * before the first move, when every thread of T is on side B (side 1,
 * the rest -1): a reached thread is marked by side 2, so a link costs one
 * test (this search scans all of T's rows at every flat split, 10% of a
 * 1024-thread mapping of clusters16 with two tests). */
static int peripheral_thread(struct place *p, const int *T, int t)
{
	int *queue = p->moves;
	int head = 0, tail = 0, start = T[p->seed % (uint64_t)t];

	queue[tail++] = start;
	p->side[start] = 2;
	while (head < tail) {
		const struct cm_matrix_entry *row;
		int x = queue[head++];
		int deg = cm_place_row(p, x, &row);

		for (int k = 0; k < deg; k++) {	/* no branch */
			int y = row[k].col, fresh = p->side[y] == 1;

			p->side[y] = (signed char)(fresh ? 2 : p->side[y]);
			queue[tail] = y;	/* kept if fresh; queue has
						 * room for one past T */
			tail += fresh;
		}
	}
	for (int i = 0; i < tail; i++)
		p->side[queue[i]] = 1;
	return queue[tail - 1];
}

/* Greedy graph growing: side A grows from a peripheral seed by the best
 * FM gain among the threads adjacent to it; when no thread is adjacent,
 * the first remaining thread of T seeds a new region. */
static void grow_side_a(struct place *p, const int *T, int t, int ta,
			int *order)
{
	struct cm_heap *front = &p->heap[1];
	int next = 0;

	/* All of T on side B: a gain is minus the weight to the rest of T,
	 * which the split that made T left in tot (cm_place_bisect()). */
	if (p->tot_inherited)
		for (int i = 0; i < t; i++)
			p->gain[T[i]] = -p->tot[T[i]];
	else
		compute_gains(p, T, t);
	for (int placed = 0; placed < ta; placed++) {
		int x;

		if (front->len > 0) {
			x = cm_heap_pop(front);
		} else if (placed == 0) {
			x = peripheral_thread(p, T, t);
		} else {
			while (p->side[T[next]] != 1)
				next++;
			x = T[next];
		}
		/* the front gains x's neighbours on side B as x moves (the
		 * heap's order is total, so when they join does not matter) */
		p->push_neighbours = PUSH_SIDE_B;
		move_thread(p, x);
		p->push_neighbours = 0;
		if (order)
			order[placed] = x;
	}
	cm_heap_clear(front);
}

/* Loose graphs (LEAN_LOOSE_CUT), the first flat split of a group of
 * threads: grow side A over all of T instead of ta threads and keep the
 * order of growing in T; side A is its first ta threads, as growing ta
 * would have made it.  cm_place_bisect() keeps the relative order of each side,
 * so the splits below cut the order of their threads (marked in
 * p->ordered) instead of growing again: prefixes of a growing order are
 * compact (whole groups, runs of a ring or of pairs), and FM then mends
 * the borders.  Greedy growing was a fifth of a mapping of 1024 threads
 * in groups of 16. */
static void grow_order(struct place *p, int *T, int t, int ta)
{
	grow_side_a(p, T, t, t, p->buf);
	for (int i = 0; i < t; i++) {
		T[i] = p->buf[i];
		p->side[T[i]] = i >= ta;
		p->ordered[T[i]] = 1;
	}
	compute_gains(p, T, t);
}

/* A gain counts only above rounding noise, so that moves cannot cycle. */
static int improved(const struct place *p, double now, double best)
{
	return now > best + p->eps;
}

/* FM tuning (tests/bench/map): a pass stops after this many moves without
 * a better balanced cut; at most this many passes per bisection. */
#ifndef FM_PATIENCE
#define FM_PATIENCE 50
#endif
#ifndef FM_PASSES
#define FM_PASSES 4
#endif

/* Which side to move a thread from during an FM pass at fixed sizes: the
 * larger one when unbalanced, else the one with the better top gain (one
 * thread over a side's capacity is allowed in between: only balanced
 * states are ever kept); -1 if none. */
static int fm_pick_side(struct place *p, const struct sizes *z)
{
	int can_a = p->heap[0].len > 0;
	int can_b = p->heap[1].len > 0;

	if (z->na > z->ta)
		return can_a ? 0 : -1;
	if (z->na < z->ta)
		return can_b ? 1 : -1;
	if (can_a && can_b)
		return p->gain[p->heap[1].item[0]] >
		       p->gain[p->heap[0].item[0]];
	return can_a ? 0 : can_b ? 1 : -1;
}

/* One Fiduccia-Mattheyses pass: move every thread at most once, always
 * the best one, keep the best prefix that ends balanced.  Returns the cut
 * reduction. */
static double fm_pass(struct place *p, const int *T, struct sizes *z)
{
	int nmoves = 0, keep = 0, since = 0;
	int patience = !(p->flags & CM_PLACE_LEAN) ? FM_PATIENCE
		       : large_effort(p) ? LEAN_LARGE_FM_PATIENCE
		       : loose(p) ? LEAN_LOOSE_FM_PATIENCE
		       : LEAN_FM_PATIENCE;
	double sum = 0, best = 0;

	push_border(p, T, z->t);
	p->push_neighbours = 1;
	while (since <= patience) {
		int s = fm_pick_side(p, z);
		int x;

		if (s < 0)
			break;
		x = cm_heap_pop(&p->heap[s]);
		sum += p->gain[x];
		p->locked[x] = 1;
		move_thread(p, x);
		z->na += s == 1 ? 1 : -1;
		p->moves[nmoves++] = x;
		since++;
		if (z->na == z->ta && improved(p, sum, best)) {
			best = sum;
			keep = nmoves;
			since = 0;
		}
	}
	p->push_neighbours = 0;
	cm_heap_clear(&p->heap[0]);
	cm_heap_clear(&p->heap[1]);
	for (int k = 0; k < nmoves; k++)
		p->locked[p->moves[k]] = 0;
	while (nmoves > keep) {
		int x = p->moves[--nmoves];

		z->na += p->side[x] == 1 ? 1 : -1;
		undo_thread(p, x);
	}
	return best;
}

/* Moves with a strictly positive gain into free capacity: threads that
 * communicate leave the spread quota to sit together. */
static void stack_moves(struct place *p, const int *T, struct sizes *z)
{
	push_border(p, T, z->t);
	p->push_neighbours = 1;
	for (;;) {
		int can_a = p->heap[0].len > 0 && z->t - z->na + 1 <= z->cap_b;
		int can_b = p->heap[1].len > 0 && z->na + 1 <= z->cap_a;
		double ga = can_a ? p->gain[p->heap[0].item[0]] : 0;
		double gb = can_b ? p->gain[p->heap[1].item[0]] : 0;
		int s = gb > ga ? 1 : 0;
		int x;

		if (!improved(p, s ? gb : ga, 0))
			break;
		x = cm_heap_pop(&p->heap[s]);
		move_thread(p, x);
		cm_heap_push(&p->heap[!s], x);
		z->na += s == 1 ? 1 : -1;
	}
	p->push_neighbours = 0;
	cm_heap_clear(&p->heap[0]);
	cm_heap_clear(&p->heap[1]);
}

#define REBALANCE_SCAN_MAX 2

/* The thread of T on side s that a heap of side s would pop first: the
 * highest gain, the lowest id among equal gains. */
static int best_on_side(const struct place *p, const int *T, int t, int s)
{
	int best = -1;

	for (int i = 0; i < t; i++) {
		int x = T[i];

		if (p->side[x] != s)
			continue;
		if (best < 0 || p->gain[x] > p->gain[best] ||
		    (p->gain[x] == p->gain[best] && x < best))
			best = x;
	}
	return best;
}

/* Bring side A to exactly ta threads by moving the best-gain threads off
 * the larger side. */
static void rebalance(struct place *p, const int *T, struct sizes *z)
{
	int from = z->na > z->ta ? 0 : 1;

	if (z->na == z->ta)
		return;
	/* a multilevel split is one thread off at most: a scan for the one
	 * thread is cheaper than queueing a whole side */
	if (llabs((long long)z->na - z->ta) <= REBALANCE_SCAN_MAX) {
		while (z->na != z->ta) {
			move_thread(p, best_on_side(p, T, z->t, from));
			z->na += from == 1 ? 1 : -1;
		}
		return;
	}
	for (int i = 0; i < z->t; i++)
		if (p->side[T[i]] == from)
			cm_heap_push(&p->heap[from], T[i]);
	while (z->na != z->ta) {
		move_thread(p, cm_heap_pop(&p->heap[from]));
		z->na += from == 1 ? 1 : -1;
	}
	cm_heap_clear(&p->heap[from]);
}

/* Large splits: multilevel; side A may come out one thread off. */
static int multilevel_split(struct place *p, const int *T, struct sizes *z)
{
	static const struct cm_bisect_effort lean_effort = {
		LEAN_ML_PASSES, LEAN_ML_PATIENCE, 0, LEAN_ML_STARTS
	};
	int lean = (p->flags & CM_PLACE_LEAN) != 0;
	/* the splits near the root cut the most expensive links: more
	 * V-cycles there, unless lean */
	int tries = !lean && z->t * TOP_SHARE >= p->n && z->t >= 256 ?
		    TOP_TRIES : 1;
	struct cm_bisect_effort e = lean_effort;

	if (large_effort(p)) {
		e.fm_patience = LEAN_LARGE_ML_PATIENCE;
		if (2 * z->t >= p->n)
			tries = LEAN_LARGE_TOP_TRIES;
		if (p->mesh && (long long)LEAN_LARGE_MESH_SHARE * z->t >= p->n)
			tries = LEAN_LARGE_MESH_TRIES;
	}
	if (cm_bisect_multilevel_rows(p->m, p->ref, T, z->t, z->ta, tries,
				      p->seed, p->eps, lean ? &e : NULL,
				      p->loc, p->ml_side, p->gain, p->tot))
		return -1;
	z->na = 0;
	for (int i = 0; i < z->t; i++) {
		p->side[T[i]] = p->ml_side[i];
		z->na += p->ml_side[i] == 0;
	}
	rebalance(p, T, z);	/* the gains came with the split */
	return 0;
}

static int wants_multilevel(const struct place *p, const struct sizes *z)
{
	return !p->use_order && (p->flags & CM_PLACE_FM) &&
	       !(p->flags & CM_PLACE_FLAT) && z->t >= p->ml_min &&
	       z->ta > 0 && z->ta < z->t;
}

/* CM_PLACE_LEAN, after the first split of all n threads: the share of
 * the communication it cut sets ml_min for the splits below (see
 * LEAN_LOOSE_CUT).  Both sums count every link twice. */
static void adapt_effort(struct place *p, const int *T, int t)
{
	double cut = 0, total = 0, share;

	for (int i = 0; i < t; i++) {
		const struct cm_matrix_entry *row;
		int x = T[i];
		int deg = cm_place_row(p, x, &row);

		for (int k = 0; k < deg; k++) {
			total += row[k].w;
			cut += cm_keep(row[k].w,
				       p->side[row[k].col] != p->side[x]);
		}
	}
	p->effort_set = 1;
	if (!(total > 0))
		return;
	share = cut / total;
	if (share < loose_cut(p)) {
		p->ml_min = p->n + 1;
	} else if (meshlike(p, share)) {
		p->mesh = 1;
		if (p->large && p->ml_min > LEAN_LARGE_ML_MIN)
			p->ml_min = LEAN_LARGE_ML_MIN;
	} else if (p->ml_min < LEAN_EXPANDER_ML_MIN) {	/* an expander */
		p->ml_min = LEAN_EXPANDER_ML_MIN;
	}
}

/* The starting split: multilevel, the given order cut after ta threads,
 * or greedy growing (also the fallback when multilevel runs out of
 * memory).  All of T starts on side B. */
static void initial_split(struct place *p, int *T, struct sizes *z)
{
	for (int i = 0; i < z->t; i++)
		p->side[T[i]] = 1;
	z->na = z->ta;
	if (wants_multilevel(p, z) && multilevel_split(p, T, z) == 0)
		return;
	if (p->use_order || p->ordered[T[0]]) {
		for (int i = 0; i < z->ta; i++)
			p->side[T[i]] = 0;
		compute_gains(p, T, z->t);
	} else if ((p->flags & CM_PLACE_LEAN) && loose(p) && z->ta > 0 &&
		   z->ta < z->t) {
		grow_order(p, T, z->t, z->ta);
	} else {
		grow_side_a(p, T, z->t, z->ta, NULL);
	}
}

/* FM passes at fixed sizes on the split of T. */
static void fm_passes(struct place *p, const int *T, struct sizes *z)
{
	if ((p->flags & CM_PLACE_FM) && z->t > 1) {
		/* large n: the full passes (random 4096 -0.04%, and no
		 * more instructions there) */
		int passes = p->flags & CM_PLACE_LEAN && !p->large
			     ? LEAN_FM_PASSES : FM_PASSES;

		for (int pass = 0; pass < passes; pass++)
			if (!improved(p, fm_pass(p, T, z), 0))
				break;
	}
}

/* A straight split (map_coords.c; prune: cm_coords_split()) improved by
 * FM passes, unless before them it cuts more than limit: -1 then (the
 * sides set, the gains not). */
static int coord_split(struct place *p, int *T, struct sizes *z, int prune,
		       double limit)
{
	if (cm_coords_split(&p->coords, p->ref, T, z->t, z->ta, prune,
			    p->side, p->moves) > limit)
		return -1;
	compute_gains(p, T, z->t);
	z->na = z->ta;
	fm_passes(p, T, z);
	return 0;
}

/* Weight cut by the split of T: a thread's weight to the other side is
 * (gain + tot) / 2, and the sum counts each link twice. */
static double split_cut(const struct place *p, const int *T, int t)
{
	double cut = 0;

	for (int i = 0; i < t; i++)
		cut += p->gain[T[i]] + p->tot[T[i]];
	return cut / 4;
}

/* Back to the split saved in p->ml_side. */
static void restore_split(struct place *p, const int *T, struct sizes *z)
{
	for (int i = 0; i < z->t; i++)
		p->side[T[i]] = p->ml_side[i];
	compute_gains(p, T, z->t);
	z->na = z->ta;
}

/* The first split of a large matrix of a mesh (the share of the weight
 * it cut is neither loose nor an expander's, as in adapt_effort()): is
 * the straight split as good as the multilevel one just made?  Then the
 * planes are the graph's best cuts, and every split below is straight
 * (p->geometric); else the multilevel split stays.  A straight split
 * that cuts more before FM is not refined. */
static void try_straight(struct place *p, int *T, struct sizes *z)
{
	double ml = split_cut(p, T, z->t), total = 0;

	for (int i = 0; i < z->t; i++)
		total += p->tot[T[i]];
	/* without them (out of memory) the splits stay multilevel */
	if (!meshlike(p, ml / (total / 2)) ||
	    cm_coords_init(&p->coords, p->ref, p->n, LEAN_COORD_PIVOTS,
			   p->seed) < 0)
		return;
	for (int i = 0; i < z->t; i++)
		p->ml_side[i] = p->side[T[i]];
	if (coord_split(p, T, z, 1, ml + p->eps) == 0 &&
	    split_cut(p, T, z->t) <= ml + p->eps)
		p->geometric = 1;
	else
		restore_split(p, T, z);
}

/* Split T into side A (first ta in the result) and B; returns |A|. */
int cm_place_bisect(struct place *p, int *T, struct sizes *z)
{
	int na = 0, next[2];
	int straight = p->try_coords && z->ta > 0 && z->ta < z->t &&
		       (p->geometric || (!p->effort_set && z->t == p->n));

	if (straight && p->geometric) {
		coord_split(p, T, z, 0, INFINITY);
	} else {
		initial_split(p, T, z);
		fm_passes(p, T, z);
		if (straight)
			try_straight(p, T, z);
	}
	if ((p->flags & CM_PLACE_FM) && z->t > 1 &&
	    z->t < z->cap_a + z->cap_b)
		stack_moves(p, T, z);
	if ((p->flags & CM_PLACE_LEAN) && !p->effort_set && z->t == p->n &&
	    z->ta > 0 && z->ta < z->t)
		adapt_effort(p, T, z->t);
	/* The gains are current: a thread's weight to its own side, which
	 * the next split of that side starts from, is (tot - gain) / 2; no
	 * row need be scanned again there. */
	for (int i = 0; i < z->t; i++) {
		p->tot[T[i]] = (p->tot[T[i]] - p->gain[T[i]]) / 2;
		na += p->side[T[i]] == 0;
	}
	p->tot_inherited = 1;
	/* stable partition: A first, B after, each in the order of T */
	next[0] = 0;
	next[1] = na;	/* indexed by side, not a branch: a coin toss */
	for (int i = 0; i < z->t; i++)
		p->buf[next[p->side[T[i]] != 0]++] = T[i];
	for (int i = 0; i < z->t; i++) {
		p->side[p->buf[i]] = -1;
		T[i] = p->buf[i];
	}
	return na;
}
