/* fuzz_ompi_monitoring.c: Open MPI's pml monitoring files as the agent
 * reads them (nodeagent/ompi_monitoring.c): the input parsed as the file
 * of rank 0, 1, 2 and 0 again, into one traffic record.
 *
 * Invariants: a refused file says why and leaves the record as it was;
 * an accepted one adds its rank and only pairs from that rank, to
 * destinations below 2^20, one per destination; never more pairs than
 * "E" lines.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "ompi_monitoring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t e_lines(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i + 1 < len; i++)
		if ((i == 0 || s[i - 1] == '\n') && s[i] == 'E' &&
		    s[i + 1] == '\t')
			n++;
	return n;
}

static void one(const char *text, size_t len, int rank,
		struct cm_rank_traffic *t)
{
	struct cm_error err = { "" };
	int npairs = t->npairs, nranks = t->nranks;

	if (cm_ompi_mon_parse(text, len, rank, t, &err) < 0) {
		fuzz_require(err.text[0] != '\0', "refused silently");
		fuzz_require(t->npairs == npairs && t->nranks == nranks,
			     "a refused file leaves the record as it was");
		return;
	}
	fuzz_require(t->nranks == nranks + 1 && t->ranks[nranks] == rank,
		     "the rank is added");
	fuzz_require((size_t)(t->npairs - npairs) <= e_lines(text, len),
		     "no more pairs than E lines");
	for (int i = npairs; i < t->npairs; i++) {
		fuzz_require(t->pairs[i].src == rank, "pairs from the rank");
		fuzz_require(t->pairs[i].dst >= 0 &&
			     t->pairs[i].dst < CM_OMPI_MON_RANK_MAX,
			     "destination in range");
		fuzz_require(i == npairs ||
			     t->pairs[i].dst > t->pairs[i - 1].dst,
			     "one entry per destination");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_bytes(data, size);
	struct cm_rank_traffic t = { 0 };
	for (int rank = 0; rank < 4; rank++)
		one(text, size, rank % 3, &t);
	cm_rank_traffic_free(&t);
	free(text);
	return 0;
}
