/* map_validate.c: checking a mapping, and the algorithm names. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commap/mapping.h"

static const char *const algorithm_names[CM_MAP_ALGORITHM_COUNT] = {
	[CM_MAP_AUTO] = "auto",
	[CM_MAP_GREEDY] = "greedy",
	[CM_MAP_MATCHING] = "matching",
	[CM_MAP_EXACT] = "exact",
	[CM_MAP_COMPACT] = "compact",
	[CM_MAP_SCATTER] = "scatter",
	[CM_MAP_ROUNDROBIN] = "roundrobin",
	[CM_MAP_RANDOM] = "random",
};

#define VALID_NAMES "auto, greedy, matching, exact, compact, scatter, " \
	"roundrobin, random"

const char *cm_map_algorithm_name(enum cm_map_algorithm alg)
{
	if ((int)alg < 0 || alg >= CM_MAP_ALGORITHM_COUNT)
		return NULL;
	return algorithm_names[alg];
}

int cm_map_algorithm_parse(const char *name, enum cm_map_algorithm *out,
			   struct cm_error *err)
{
	if (!name)
		return cm_errorf(err, EINVAL, "no mapping algorithm given "
				 "(valid: " VALID_NAMES ")");
	for (int i = 0; i < CM_MAP_ALGORITHM_COUNT; i++)
		if (strcmp(name, algorithm_names[i]) == 0) {
			if (out)
				*out = (enum cm_map_algorithm)i;
			return 0;
		}
	return cm_errorf(err, EINVAL, "unknown mapping algorithm '%.64s' "
			 "(valid: " VALID_NAMES ")", name);
}

/* n <= npus: at most one thread per PU.  n > npus: every PU holds
 * floor(n / npus) or ceil(n / npus) threads (commap/mapping.h). */
static int check_loads(const struct cm_topo *topo, int n,
		       const int *pu_of_thread, int *load,
		       struct cm_error *err)
{
	int npus = cm_topo_npus(topo);
	int lo = n > npus ? n / npus : 0;
	int hi = n > npus ? (n + npus - 1) / npus : 1;

	for (int t = 0; t < n; t++) {
		int p = pu_of_thread[t];

		if (++load[p] > hi)
			return cm_errorf(err, EINVAL, "thread %d: PU %d (OS "
					 "%d) would hold %d threads, at most "
					 "%d allowed for %d threads on %d PUs",
					 t, p, cm_topo_pu_os_index(topo, p),
					 load[p], hi, n, npus);
	}
	for (int p = 0; p < npus; p++)
		if (load[p] < lo)
			return cm_errorf(err, EINVAL, "PU %d (OS %d) holds %d "
					 "threads, at least %d needed for a "
					 "balanced mapping of %d threads on "
					 "%d PUs", p,
					 cm_topo_pu_os_index(topo, p),
					 load[p], lo, n, npus);
	return 0;
}

static int check_range(const struct cm_topo *topo, int n,
		       const int *pu_of_thread, struct cm_error *err)
{
	int npus = cm_topo_npus(topo);

	for (int t = 0; t < n; t++)
		if (pu_of_thread[t] < 0 || pu_of_thread[t] >= npus)
			return cm_errorf(err, EINVAL, "thread %d: PU index %d "
					 "is outside 0..%d", t,
					 pu_of_thread[t], npus - 1);
	return 0;
}

int cm_map_validate(const struct cm_topo *topo, int n,
		    const int *pu_of_thread, int oversubscribe,
		    struct cm_error *err)
{
	int npus, *load, rv;

	if (!topo || n < 0 || (n > 0 && !pu_of_thread))
		return cm_errorf(err, EINVAL, "no topology, negative thread "
				 "count (%d) or no mapping", n);
	npus = cm_topo_npus(topo);
	if (n > npus && !oversubscribe)
		return cm_errorf(err, EINVAL, "%d threads but only %d PUs; "
				 "oversubscription is disabled", n, npus);
	if (check_range(topo, n, pu_of_thread, err) < 0)
		return -1;
	load = calloc(npus > 0 ? npus : 1, sizeof(*load));
	if (!load)
		return cm_errorf(err, ENOMEM, "out of memory checking %d "
				 "threads", n);
	rv = check_loads(topo, n, pu_of_thread, load, err);
	free(load);
	return rv;
}
