/* fuzz_map_weights.c: libFuzzer target for the mappers fed extreme weights.
 *
 * Matrix files bound their weights (CM_MATRIX_WEIGHT_MAX), but a matrix
 * built in memory (sampled, merged, a learned model) holds any finite
 * weight; the mappers must end and either map every thread validly or say
 * why.  The input picks a synthetic machine, a thread count, an algorithm
 * and edges whose weights come from a table of extremes (0, subnormal,
 * 1e280, 1e300, DBL_MAX, ...) or from eight raw bytes made finite and
 * non-negative.  A hang shows as libFuzzer's timeout (or the test's in
 * make check).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "commap/mapping.h"
#include "commap/matrix.h"
#include "commap/topology.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const machines[] = {
	"pack:1 core:4 pu:2",
	"pack:2 core:2 pu:2",
	"pack:2 numa:2 l3:2 core:2 pu:2",
	"pack:1 core:3 pu:1",
	"pack:4 core:4 pu:1",
	"pack:1 core:2 pu:1",
};

static const double extremes[] = {
	0, 5e-324, 1e-300, 1, 1e280, 1e300, 1e307, 1.7e308, DBL_MAX,
	DBL_MAX / 2, 3, 1e10,
};

/* A cursor over the input: bytes past its end read as 0. */
struct cursor {
	const uint8_t *p;
	size_t left;
};

static unsigned take(struct cursor *c)
{
	if (!c->left)
		return 0;
	c->left--;
	return *c->p++;
}

static double take_weight(struct cursor *c)
{
	unsigned sel = take(c);
	double w;
	uint8_t raw[8];

	if (sel < 200)
		return extremes[sel % (sizeof(extremes) / sizeof(extremes[0]))];
	for (int k = 0; k < 8; k++)
		raw[k] = (uint8_t)take(c);
	memcpy(&w, raw, sizeof(w));
	w = fabs(w);
	return isfinite(w) ? w : DBL_MAX;
}

static struct cm_matrix *build_matrix(struct cursor *c, int n)
{
	struct cm_matrix *m = cm_matrix_new(n);

	fuzz_require(m != NULL, "out of memory");
	while (c->left >= 3 && n > 1) {
		int i = (int)(take(c) % (unsigned)n);
		int j = (int)(take(c) % (unsigned)n);
		double w = take_weight(c);

		if (i != j)
			fuzz_require(cm_matrix_set(m, i, j, w) == 0,
				     "a finite non-negative weight refused");
	}
	return m;
}

static void map_once(const struct cm_topo *topo, const struct cm_matrix *m,
		     enum cm_map_algorithm alg, int oversubscribe)
{
	struct cm_map_options o = { .algorithm = alg, .seed = 1,
				    .oversubscribe = oversubscribe };
	int n = cm_matrix_nthreads(m);
	int *pu = malloc(sizeof(int) * (size_t)(n ? n : 1));
	struct cm_error err = { "" };

	fuzz_require(pu != NULL, "out of memory");
	if (cm_map(topo, m, &o, pu, &err) == 0)
		fuzz_require(cm_map_validate(topo, n, pu, oversubscribe,
					     &err) == 0,
			     "a mapper returned an invalid mapping");
	else
		fuzz_require(err.text[0] != '\0', "failure without a message");
	free(pu);
}

#define NMACHINES (sizeof(machines) / sizeof(machines[0]))

/* Loaded once: hwloc takes longer to build a machine than most mappings. */
static struct cm_topo *machine_topo(unsigned k)
{
	static struct cm_topo *topos[NMACHINES];

	if (!topos[k])
		fuzz_require(cm_topo_load_synthetic(&topos[k], machines[k],
						    NULL) == 0,
			     "a synthetic machine hwloc refuses");
	return topos[k];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cursor c = { data, size };
	unsigned machine = take(&c), nsel = take(&c), alg = take(&c);
	struct cm_topo *topo = machine_topo(machine % NMACHINES);
	struct cm_matrix *m;
	int n, npus;

	npus = cm_topo_npus(topo);
	/* up to twice the PUs: the oversubscribed paths too */
	n = (int)(nsel % (unsigned)(2 * npus)) + 1;
	m = build_matrix(&c, n);
	map_once(topo, m, (enum cm_map_algorithm)(alg % CM_MAP_ALGORITHM_COUNT),
		 n > npus);
	/* auto, whatever was asked: it runs the exact search first */
	map_once(topo, m, CM_MAP_AUTO, n > npus);
	cm_matrix_free(m);
	return 0;
}
