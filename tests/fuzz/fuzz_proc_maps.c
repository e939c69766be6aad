/* fuzz_proc_maps.c: the agent's reader of /proc/PID/maps
 * (cm_maps_parse in nodeagent/detect_table.c) on arbitrary text.
 *
 * Invariants: a refused text leaves the maps empty and names the line; an
 * accepted one has regions sorted by start, each with start <= end, valid
 * permission letters and a terminated path; when the regions do not
 * overlap (as the kernel's never do), an address inside a region finds
 * exactly that region and its end finds another or none.
 */
#include <stdint.h>
#include <string.h>

#include "detect_table.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_region(const struct cm_map_region *r)
{
	fuzz_require(r->start <= r->end, "start <= end");
	fuzz_require(strchr("r-", r->perms[0]) && strchr("w-", r->perms[1]) &&
		     strchr("x-", r->perms[2]) && strchr("sp", r->perms[3]) &&
		     r->perms[4] == '\0', "permission letters");
	fuzz_require(r->shared == (r->perms[3] == 's'), "shared flag");
	fuzz_require(r->path && !strchr(r->path, '\n'), "a one-line path");
}

static void check_maps(const struct cm_maps *m)
{
	int disjoint = 1;

	for (size_t i = 0; i < m->n; i++) {
		check_region(&m->r[i]);
		if (i + 1 < m->n) {
			fuzz_require(m->r[i].start <= m->r[i + 1].start,
				     "sorted by start");
			disjoint &= m->r[i].end <= m->r[i + 1].start;
		}
	}
	for (size_t i = 0; disjoint && i < m->n; i++) {
		const struct cm_map_region *r = &m->r[i];

		if (r->start == r->end)
			continue;
		fuzz_require(cm_maps_find(m, r->start) == r &&
			     cm_maps_find(m, r->end - 1) == r,
			     "an address inside a region finds it");
		fuzz_require(cm_maps_find(m, r->end) != r,
			     "the end of a region is outside it");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	struct cm_maps m = { 0 };
	struct cm_error err = { "" };

	if (cm_maps_parse(&m, text, &err) < 0) {
		fuzz_require(err.text[0] != '\0' && m.n == 0 && !m.r,
			     "a refused text leaves the maps empty, said why");
	} else {
		check_maps(&m);
	}
	cm_maps_free(&m);
	free(text);
	return 0;
}
