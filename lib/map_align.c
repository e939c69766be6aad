/* map_align.c: relabel a new mapping so that as few threads as possible
 * move from where they run now, without changing its cost.
 *
 * A mapper computes a mapping from scratch; the same placement can come
 * out with the packages, caches or cores permuted.  Every such permutation
 * has the same cost (cm_cost depends only on the kind of two PUs' lowest
 * common tree node), but applying a permuted one migrates threads for
 * nothing: the node agent remaps every few hundred milliseconds.
 *
 * Walk the tree from the root.  At each node, children with the same
 * shape (same subtree structure over the allowed PUs) can trade their
 * contents: give each child's new contents to the child of the same shape
 * that holds most of those threads now (greedy on the overlap counts,
 * heaviest first), moving each thread to the PU at the same offset in the
 * other subtree.  Swapping isomorphic sibling subtrees is an automorphism
 * of the tree, so distances, and therefore the cost, are unchanged.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "commap/mapping.h"

struct align {
	const struct cm_topo *topo;
	int n;
	const int *cur;		/* current PU index per thread, -1 none */
	int *pu;		/* the mapping being relabelled */
	uint64_t *shape;	/* per tree node */
	int *child_of_pu;	/* scratch: PU index -> child slot, -1 */
	int *overlap;		/* scratch: k x k counts */
	int *give;		/* scratch: child slot -> child slot */
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

/* Shapes bottom-up: children always have larger indices than parents. */
static void compute_shapes(struct align *al)
{
	int nnodes = cm_topo_nnodes(al->topo);

	for (int i = nnodes - 1; i >= 0; i--) {
		const struct cm_topo_node *nd = cm_topo_node(al->topo, i);
		uint64_t h = mix((uint64_t)nd->kind + 1, (uint64_t)nd->npus);

		for (int c = 0; c < nd->nchildren; c++)
			h = mix(h, al->shape[nd->first_child + c]);
		al->shape[i] = h;
	}
}

/* Is PU index pu below node nd?  (-1, "not placed", never is.) */
static int below(const struct cm_topo_node *nd, int pu)
{
	return pu >= nd->first_pu && pu < nd->first_pu + nd->npus;
}

static void mark_children(struct align *al, const struct cm_topo_node *nd,
			  int value_is_slot)
{
	for (int c = 0; c < nd->nchildren; c++) {
		const struct cm_topo_node *ch =
			cm_topo_node(al->topo, nd->first_child + c);

		for (int p = 0; p < ch->npus; p++)
			al->child_of_pu[ch->first_pu + p] =
				value_is_slot ? c : -1;
	}
}

/* Overlap counts: overlap[a * k + b] = threads the new mapping puts under
 * child a that run under child b now (same shape only). */
static void count_overlap(struct align *al, const struct cm_topo_node *nd)
{
	int k = nd->nchildren;

	memset(al->overlap, 0, sizeof(int) * (size_t)k * (size_t)k);
	for (int t = 0; t < al->n; t++) {
		int a, b;

		if (!below(nd, al->pu[t]) || !below(nd, al->cur[t]))
			continue;
		a = al->child_of_pu[al->pu[t]];
		b = al->child_of_pu[al->cur[t]];
		if (al->shape[nd->first_child + a] ==
		    al->shape[nd->first_child + b])
			al->overlap[a * k + b]++;
	}
}

/* give[a] = the child that receives child a's new contents: greedy
 * maximum overlap among same-shape children, identity otherwise. */
static int choose_permutation(struct align *al, const struct cm_topo_node *nd)
{
	int k = nd->nchildren, moved = 0;
	char *used_a = calloc((size_t)k, 1), *used_b = calloc((size_t)k, 1);

	if (!used_a || !used_b) {
		free(used_a);
		free(used_b);
		return -1;
	}
	for (int a = 0; a < k; a++)
		al->give[a] = -1;
	for (;;) {
		int best = 0, ba = -1, bb = -1;

		for (int a = 0; a < k; a++)
			for (int b = 0; b < k && !used_a[a]; b++)
				if (!used_b[b] && al->overlap[a * k + b] > best) {
					best = al->overlap[a * k + b];
					ba = a;
					bb = b;
				}
		if (ba < 0)
			break;
		al->give[ba] = bb;
		used_a[ba] = used_b[bb] = 1;
	}
	/* Children left over: keep their own place when it is free, else
	 * the first free child of the same shape (one always exists: the
	 * greedy pairs same-shape children only). */
	for (int a = 0; a < k; a++) {
		uint64_t sa = al->shape[nd->first_child + a];

		if (al->give[a] >= 0)
			continue;
		if (!used_b[a]) {
			al->give[a] = a;
			used_b[a] = 1;
			continue;
		}
		for (int b = 0; b < k; b++)
			if (!used_b[b] &&
			    al->shape[nd->first_child + b] == sa) {
				al->give[a] = b;
				used_b[b] = 1;
				break;
			}
	}
	for (int a = 0; a < k; a++)
		moved += al->give[a] != a;
	free(used_a);
	free(used_b);
	return moved;
}

static void apply_permutation(struct align *al, const struct cm_topo_node *nd)
{
	for (int t = 0; t < al->n; t++) {
		const struct cm_topo_node *from, *to;
		int a;

		if (!below(nd, al->pu[t]))
			continue;
		a = al->child_of_pu[al->pu[t]];
		if (al->give[a] == a)
			continue;
		from = cm_topo_node(al->topo, nd->first_child + a);
		to = cm_topo_node(al->topo, nd->first_child + al->give[a]);
		al->pu[t] = to->first_pu + (al->pu[t] - from->first_pu);
	}
}

/* Parents come before children in the node array, so one pass in index
 * order settles every level before the levels below it. */
static int align_tree(struct align *al)
{
	int nnodes = cm_topo_nnodes(al->topo);

	for (int i = 0; i < nnodes; i++) {
		const struct cm_topo_node *nd = cm_topo_node(al->topo, i);
		int moved;

		if (nd->nchildren < 2)
			continue;
		mark_children(al, nd, 1);
		count_overlap(al, nd);
		moved = choose_permutation(al, nd);
		if (moved < 0)
			return -1;
		if (moved)
			apply_permutation(al, nd);
		mark_children(al, nd, 0);
	}
	return 0;
}

/* The largest number of children of a node (sizes the scratch). */
static int max_children(const struct cm_topo *topo)
{
	int k = 1;

	for (int i = 0; i < cm_topo_nnodes(topo); i++)
		if (cm_topo_node(topo, i)->nchildren > k)
			k = cm_topo_node(topo, i)->nchildren;
	return k;
}

int cm_map_align(const struct cm_topo *topo, int n, const int *cur,
		 int *pu_of_thread)
{
	int npus, nnodes, k, rv = -1;
	struct align al = { .topo = topo, .n = n, .cur = cur,
			    .pu = pu_of_thread };

	if (!topo || n < 0 || (n > 0 && (!cur || !pu_of_thread))) {
		errno = EINVAL;
		return -1;
	}
	npus = cm_topo_npus(topo);
	nnodes = cm_topo_nnodes(topo);
	k = max_children(topo);
	for (int t = 0; t < n; t++)
		if (pu_of_thread[t] < 0 || pu_of_thread[t] >= npus) {
			errno = EINVAL;
			return -1;
		}
	al.shape = malloc(sizeof(*al.shape) * (size_t)nnodes);
	al.child_of_pu = malloc(sizeof(int) * (size_t)npus);
	al.overlap = malloc(sizeof(int) * (size_t)k * (size_t)k);
	al.give = malloc(sizeof(int) * (size_t)k);
	if (!al.shape || !al.child_of_pu || !al.overlap || !al.give) {
		errno = ENOMEM;
		goto out;
	}
	for (int p = 0; p < npus; p++)
		al.child_of_pu[p] = -1;
	compute_shapes(&al);
	rv = align_tree(&al);
	if (rv < 0)
		errno = ENOMEM;
out:
	free(al.shape);
	free(al.child_of_pu);
	free(al.overlap);
	free(al.give);
	return rv;
}
