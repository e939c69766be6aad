/* grow.h: the agent's growable tables (processes, threads, rings, result
 * lists): make room for need elements of size elem in *arr, doubling the
 * capacity *cap; new slots are zeroed.  0, or -1 (ENOMEM) with *arr and
 * *cap unchanged. */
#ifndef COMMAP_NODEAGENT_GROW_H
#define COMMAP_NODEAGENT_GROW_H

#include <stdlib.h>
#include <string.h>

static inline int cm_grow(void **arr, int *cap, int need, size_t elem)
{
	void *p;
	int ncap;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, (size_t)ncap * elem);
	if (!p)
		return -1;
	memset((char *)p + (size_t)*cap * elem, 0,
	       (size_t)(ncap - *cap) * elem);
	*arr = p;
	*cap = ncap;
	return 0;
}

#endif
