# lib/: the pure core (no printing, no exit, no global state).
noinst_LTLIBRARIES += lib/libcommap.la
lib_libcommap_la_SOURCES = \
	lib/commap/error.h lib/error.c \
	lib/commap/rand.h lib/rand.c \
	lib/commap/topology.h lib/topology.c \
	lib/topology_internal.h lib/topology_tree.c lib/topology_restrict.c \
	lib/commap/matrix.h lib/matrix.c \
	lib/commap/matrix_io.h lib/matrix_io.c \
	lib/commap/matrix_gen.h lib/matrix_gen.c \
	lib/commap/cost.h lib/cost.c \
	lib/commap/mapping.h lib/mapping.c \
	lib/map_internal.h lib/map_capacity.c \
	lib/map_groups.h lib/map_groups.c \
	lib/map_groups_internal.h lib/map_groups_heap.c \
	lib/map_groups_quota.c lib/map_groups_split.c \
	lib/map_groups_pairs.c \
	lib/map_bisect.h lib/map_bisect.c \
	lib/map_coords.h lib/map_coords.c \
	lib/map_greedy.c \
	lib/matching.h lib/matching.c \
	lib/matching_internal.h lib/matching_blossom.c \
	lib/map_matching.c \
	lib/map_exact.c \
	lib/map_refine.h lib/map_refine.c \
	lib/map_baseline.c \
	lib/map_validate.c \
	lib/map_align.c \
	lib/map_incremental.c \
	lib/commap/placement_check.h lib/placement_check.c \
	lib/placement_result.c \
	lib/commap/place_nodes.h lib/place_nodes.c
lib_libcommap_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(JANSSON_CFLAGS)
lib_libcommap_la_LIBADD = $(HWLOC_LIBS) $(JANSSON_LIBS) -lm
