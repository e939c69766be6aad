/* topology_restrict.c: a topology restricted to the PUs of a cpu list
 * ("0-3,8,10-11", OS indices): the list parsed with a message naming what
 * is wrong, and the tree rebuilt on the allowed PUs it names.
 */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "commap/topology.h"
#include "topology_internal.h"

/* ---------------------------------------------------------------------- */
/* Restriction */

struct cpu_range {
	long lo, hi;
};

static int parse_index(const char **p, long *v)
{
	const char *s = *p;
	long x = 0;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		x = x * 10 + (*s - '0');
		if (x > INT_MAX)
			return -1;
	}
	*p = s;
	*v = x;
	return 0;
}

/* One element "N" or "N-M" ending at ',' or the end of the string. */
static int parse_element(const char **p, struct cpu_range *r)
{
	const char *s = *p;

	if (parse_index(&s, &r->lo) < 0)
		return -1;
	r->hi = r->lo;
	if (*s == '-') {
		s++;
		if (parse_index(&s, &r->hi) < 0 || r->hi < r->lo)
			return -1;
	}
	if (*s != ',' && *s != '\0')
		return -1;
	*p = s;
	return 0;
}

/* Parse a Linux cpu list into ranges (malloc'd, *n of them). */
static int parse_cpulist(const char *list, struct cpu_range **out, int *n,
			 struct cm_error *err)
{
	struct cpu_range *r = NULL;
	const char *s = list;
	int cap = 0;

	*n = 0;
	if (!*s)
		return cm_errorf(err, EINVAL, "empty cpu list");
	for (;;) {
		const char *start = s;
		struct cpu_range *q = cm_topo_grow(r, &cap, *n + 1,
						    sizeof(*r));

		if (!q) {
			free(r);
			return cm_errorf(err, ENOMEM, "out of memory");
		}
		r = q;
		if (parse_element(&s, &r[*n]) < 0) {
			int len = (int)strcspn(start, ",");

			free(r);
			return cm_errorf(err, EINVAL,
					 "bad cpu list element \"%.*s\" in "
					 "\"%s\"", len, start, list);
		}
		(*n)++;
		if (!*s)
			break;
		s++;		/* ',' */
	}
	*out = r;
	return 0;
}

/* Append "lo" or "lo-hi" to a comma list in buf. */
static void append_range(char *buf, size_t size, long lo, long hi)
{
	size_t len = strlen(buf);

	if (len + 1 >= size)
		return;
	if (lo == hi)
		snprintf(buf + len, size - len, "%s%ld", len ? "," : "", lo);
	else
		snprintf(buf + len, size - len, "%s%ld-%ld", len ? "," : "",
			 lo, hi);
}

/* The requested OS indices (only those in the machine's index range go in
 * want); indices not in the machine are listed in missing. */
static int requested_set(hwloc_topology_t hw, const struct cpu_range *r,
			 int n, hwloc_bitmap_t want, char *missing,
			 size_t size)
{
	hwloc_const_cpuset_t machine = hwloc_topology_get_topology_cpuset(hw);
	long last = hwloc_bitmap_last(machine);
	hwloc_bitmap_t absent = hwloc_bitmap_alloc();
	char *text = NULL;
	int i;

	if (!absent)
		return -1;
	missing[0] = '\0';
	for (i = 0; i < n; i++) {
		long hi = r[i].hi < last ? r[i].hi : last;

		if (r[i].lo <= hi)
			hwloc_bitmap_set_range(want, (unsigned)r[i].lo,
					       (int)hi);
	}
	hwloc_bitmap_andnot(absent, want, machine);
	hwloc_bitmap_and(want, want, machine);
	if (!hwloc_bitmap_iszero(absent) &&
	    hwloc_bitmap_list_asprintf(&text, absent) >= 0) {
		snprintf(missing, size, "%s", text);
		free(text);
	}
	hwloc_bitmap_free(absent);
	for (i = 0; i < n; i++)
		if (r[i].hi > last)
			append_range(missing, size,
				     r[i].lo > last ? r[i].lo : last + 1,
				     r[i].hi);
	return 0;
}

int cm_topo_restrict(struct cm_topo *topo, const char *cpulist,
		     struct cm_error *err)
{
	struct cpu_range *r = NULL;
	hwloc_bitmap_t want;
	struct cm_tree tr;
	char missing[128];
	int n;

	if (!topo || !cpulist)
		return cm_errorf(err, EINVAL, "no topology or cpu list");
	if (parse_cpulist(cpulist, &r, &n, err) < 0)
		return -1;
	want = hwloc_bitmap_alloc();
	if (!want || requested_set(topo->hw, r, n, want, missing,
				   sizeof(missing)) < 0) {
		free(r);
		hwloc_bitmap_free(want);
		return cm_errorf(err, ENOMEM, "out of memory");
	}
	free(r);
	if (missing[0]) {
		hwloc_bitmap_free(want);
		return cm_errorf(err, EINVAL, "cpu list \"%s\": OS indices "
				 "%s are not in the machine", cpulist, missing);
	}
	hwloc_bitmap_and(want, want, topo->tree.allowed);
	if (hwloc_bitmap_iszero(want)) {
		hwloc_bitmap_free(want);
		return cm_errorf(err, EINVAL,
				 "cpu list \"%s\" has no allowed PU", cpulist);
	}
	if (cm_tree_build(&tr, topo->hw, want, err) < 0)
		return -1;
	cm_tree_free(&topo->tree);
	topo->tree = tr;
	return 0;
}
