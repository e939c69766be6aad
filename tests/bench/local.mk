# Benchmarks: built by 'make check' but run by hand (see docs/PERFORMANCE.md).
#
# tests/bench/map: commap's mappers against each other and against Scotch
# (when libscotch-dev is installed) on generated communication patterns;
# tests/bench/run-map.sh runs it with the documented settings.
check_PROGRAMS += tests/bench/map
tests_bench_map_SOURCES = \
	tests/bench/bench_map.c tests/bench/bench_map.h \
	tests/bench/bench_map_args.h tests/bench/bench_map_args.c \
	tests/bench/bench_output.c tests/bench/bench_scotch.c
tests_bench_map_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(JANSSON_CFLAGS) \
	$(SCOTCH_CFLAGS)
tests_bench_map_LDADD = lib/libcommap.la $(SCOTCH_LIBS) $(HWLOC_LIBS) \
	$(JANSSON_LIBS) -lm
EXTRA_DIST += tests/bench/run-map.sh
