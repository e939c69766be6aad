/* map_groups_heap.c: an indexed max-heap of ids keyed by a shared array
 * of keys (the FM gains of cm_map_place()), with O(log n) updates. */
#include <errno.h>
#include <stdlib.h>

#include "map_groups.h"

/* ---- indexed max-heap ------------------------------------------------ */

/* Without branches: on meshes many gains are equal, and which of two
 * keys is larger is a coin toss to the branch predictor (the test was an
 * eighth of the mispredicted branches of a mapping of 1024 threads,
 * cachegrind --branch-sim). */
static int heap_before(const struct cm_heap *h, int a, int b)
{
	double ka = h->key[a], kb = h->key[b];

	return (ka > kb) | ((ka == kb) & (a < b));
}

/* 1 if child c's sibling c + 1 exists and goes first, else 0: added to
 * c, not branched on (which child is better is a coin toss). */
static int better_sibling(const struct cm_heap *h, const int *item, int c,
			  int len)
{
	int s = c + 1 < len ? c + 1 : c;	/* before(x, x) is 0 */

	return heap_before(h, item[s], item[c]);
}

static void heap_set(struct cm_heap *h, int i, int id)
{
	h->item[i] = id;
	h->pos[id] = i;
}

static void heap_sift_up(struct cm_heap *h, int i)
{
	int id = h->item[i];

	while (i > 0) {
		int parent = (i - 1) / 2;

		if (!heap_before(h, id, h->item[parent]))
			break;
		heap_set(h, i, h->item[parent]);
		i = parent;
	}
	heap_set(h, i, id);
}

static void heap_sift_down(struct cm_heap *h, int i)
{
	int id = h->item[i];

	for (;;) {
		int c = 2 * i + 1;

		if (c >= h->len)
			break;
		c += better_sibling(h, h->item, c, h->len);
		if (!heap_before(h, h->item[c], id))
			break;
		heap_set(h, i, h->item[c]);
		i = c;
	}
	heap_set(h, i, id);
}

int cm_heap_init(struct cm_heap *h, int n, const double *key)
{
	size_t sz = (size_t)(n > 0 ? n : 1) * sizeof(int);

	h->item = malloc(sz);
	h->pos = malloc(sz);
	h->key = key;
	h->len = 0;
	if (!h->item || !h->pos) {
		cm_heap_free(h);
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < n; i++)
		h->pos[i] = -1;
	return 0;
}

void cm_heap_free(struct cm_heap *h)
{
	free(h->item);
	free(h->pos);
	h->item = NULL;
	h->pos = NULL;
	h->len = 0;
}

void cm_heap_push(struct cm_heap *h, int id)
{
	heap_set(h, h->len, id);
	h->len++;
	heap_sift_up(h, h->len - 1);
}

/* Remove the top (Floyd's bottom-up deletion): the hole at the root
 * sinks along the path of better children to a leaf, one comparison per
 * level, and the last item rises into it from there.  The order is total
 * (ties by id), so the path and the place of the last item are those that
 * sifting the last item down from the root finds: the same heap, with
 * about half the comparisons (the last item is usually near the bottom). */
static void heap_remove_top(struct cm_heap *h)
{
	int *item = h->item;
	int len = h->len, i = 0;

	for (;;) {
		int c = 2 * i + 1;

		if (c >= len)
			break;
		c += better_sibling(h, item, c, len);
		heap_set(h, i, item[c]);
		i = c;
	}
	heap_set(h, i, item[len]);	/* the last item, just cut off */
	heap_sift_up(h, i);
}

void cm_heap_remove(struct cm_heap *h, int id)
{
	int i = h->pos[id];
	int last = h->item[--h->len];

	h->pos[id] = -1;
	if (i == h->len)
		return;
	if (i == 0) {
		heap_remove_top(h);
		return;
	}
	heap_set(h, i, last);
	heap_sift_up(h, i);
	heap_sift_down(h, h->pos[last]);
}

int cm_heap_pop(struct cm_heap *h)
{
	int id = h->item[0];

	cm_heap_remove(h, id);
	return id;
}

void cm_heap_update(struct cm_heap *h, int id)
{
	int i = h->pos[id];

	heap_sift_up(h, i);
	if (h->pos[id] == i)	/* did not rise: it may have to sink */
		heap_sift_down(h, i);
}

void cm_heap_raise(struct cm_heap *h, int id)
{
	heap_sift_up(h, h->pos[id]);
}

void cm_heap_lower(struct cm_heap *h, int id)
{
	heap_sift_down(h, h->pos[id]);
}

void cm_heap_build(struct cm_heap *h)
{
	for (int i = h->len / 2 - 1; i >= 0; i--)
		heap_sift_down(h, i);
}

void cm_heap_clear(struct cm_heap *h)
{
	for (int i = 0; i < h->len; i++)
		h->pos[h->item[i]] = -1;
	h->len = 0;
}
