/* map_test_util.h: helpers shared by the mapping unit tests
 * (test_map_*.c, test_mapping.c, test_cost.c).  Header-only; include
 * after tap.h. */
#ifndef COMMAP_MAP_TEST_UTIL_H
#define COMMAP_MAP_TEST_UTIL_H

#include <stddef.h>

#include "commap/matrix_gen.h"
#include "commap/topology.h"
#include "tap.h"

/* The hwloc synthetic topology spec, restricted to cpulist unless it is
 * NULL; NULL (with a diagnostic naming the problem) on failure. */
static inline struct cm_topo *map_test_topo(const char *spec,
					    const char *cpulist)
{
	struct cm_error err = { "" };
	struct cm_topo *t = NULL;

	if (cm_topo_load_synthetic(&t, spec, &err) < 0) {
		diag("loading '%s': %s", spec, err.text);
		return NULL;
	}
	if (cpulist && cm_topo_restrict(t, cpulist, &err) < 0) {
		diag("restricting '%s' to %s: %s", spec, cpulist, err.text);
		cm_topo_free(t);
		return NULL;
	}
	return t;
}

/* A generated pattern of n threads (seed 1), its threads shuffled with
 * shuffle (0: none); NULL with a diagnostic on failure. */
static inline struct cm_matrix *map_test_gen(const char *pattern, int n,
					     uint64_t shuffle)
{
	struct cm_matrix *m = NULL;
	struct cm_error err = { "" };

	if (cm_matrix_generate(pattern, n, 1, shuffle, &m, &err))
		diag("cannot generate %s: %s", pattern, err.text);
	return m;
}

#endif
