# Unit tests: one TAP program per module (tests/unit/tap.h).
UNIT_TESTS = \
	tests/unit/test_error.t \
	tests/unit/test_rand.t \
	tests/unit/test_topology.t \
	tests/unit/test_matrix.t \
	tests/unit/test_matrix_io.t \
	tests/unit/test_matrix_gen.t \
	tests/unit/test_cost.t \
	tests/unit/test_map_greedy.t \
	tests/unit/test_map_coords.t \
	tests/unit/test_matching.t \
	tests/unit/test_map_matching.t \
	tests/unit/test_map_exact.t \
	tests/unit/test_map_refine.t \
	tests/unit/test_map_baseline.t \
	tests/unit/test_map_validate.t \
	tests/unit/test_map_align.t \
	tests/unit/test_place_nodes.t \
	tests/unit/test_mapping.t
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)
UNIT_LDADD = lib/libcommap.la $(HWLOC_LIBS) $(JANSSON_LIBS) -lm
UNIT_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(JANSSON_CFLAGS) -I$(top_srcdir)/tests/unit
EXTRA_DIST += tests/unit/tap.h
EXTRA_DIST += tests/unit/map_test_util.h

tests_unit_test_error_t_SOURCES = tests/unit/test_error.c
tests_unit_test_error_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_error_t_LDADD = $(UNIT_LDADD)
tests_unit_test_rand_t_SOURCES = tests/unit/test_rand.c
tests_unit_test_rand_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rand_t_LDADD = $(UNIT_LDADD)
tests_unit_test_topology_t_SOURCES = tests/unit/test_topology.c
tests_unit_test_topology_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_topology_t_LDADD = $(UNIT_LDADD)
tests_unit_test_matrix_t_SOURCES = tests/unit/test_matrix.c
tests_unit_test_matrix_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_matrix_t_LDADD = $(UNIT_LDADD)
tests_unit_test_matrix_io_t_SOURCES = tests/unit/test_matrix_io.c
tests_unit_test_matrix_io_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_matrix_io_t_LDADD = $(UNIT_LDADD)
tests_unit_test_matrix_gen_t_SOURCES = tests/unit/test_matrix_gen.c
tests_unit_test_matrix_gen_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_matrix_gen_t_LDADD = $(UNIT_LDADD)
tests_unit_test_cost_t_SOURCES = tests/unit/test_cost.c
tests_unit_test_cost_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cost_t_LDADD = $(UNIT_LDADD)
tests_unit_test_map_greedy_t_SOURCES = tests/unit/test_map_greedy.c
tests_unit_test_map_greedy_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_map_greedy_t_LDADD = $(UNIT_LDADD)
tests_unit_test_map_coords_t_SOURCES = tests/unit/test_map_coords.c
tests_unit_test_map_coords_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_map_coords_t_LDADD = $(UNIT_LDADD)
tests_unit_test_matching_t_SOURCES = tests/unit/test_matching.c
tests_unit_test_matching_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_matching_t_LDADD = $(UNIT_LDADD)
tests_unit_test_map_matching_t_SOURCES = tests/unit/test_map_matching.c
tests_unit_test_map_matching_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_map_matching_t_LDADD = $(UNIT_LDADD)
tests_unit_test_map_exact_t_SOURCES = tests/unit/test_map_exact.c
tests_unit_test_map_exact_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_map_exact_t_LDADD = $(UNIT_LDADD)
tests_unit_test_map_refine_t_SOURCES = tests/unit/test_map_refine.c
tests_unit_test_map_refine_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_map_refine_t_LDADD = $(UNIT_LDADD)
tests_unit_test_map_baseline_t_SOURCES = tests/unit/test_map_baseline.c
tests_unit_test_map_baseline_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_map_baseline_t_LDADD = $(UNIT_LDADD)
tests_unit_test_mapping_t_SOURCES = tests/unit/test_mapping.c
tests_unit_test_mapping_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_mapping_t_LDADD = $(UNIT_LDADD)
tests_unit_test_map_validate_t_SOURCES = tests/unit/test_map_validate.c
tests_unit_test_map_validate_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_map_validate_t_LDADD = $(UNIT_LDADD)
tests_unit_test_map_align_t_SOURCES = tests/unit/test_map_align.c
tests_unit_test_map_align_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_map_align_t_LDADD = $(UNIT_LDADD)
tests_unit_test_place_nodes_t_SOURCES = tests/unit/test_place_nodes.c
tests_unit_test_place_nodes_t_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_place_nodes_t_LDADD = $(UNIT_LDADD)
