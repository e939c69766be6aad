# Fuzz targets (libFuzzer entry points).  In 'make check' each runs over its
# seed corpus and a bounded number of mutated inputs with a standalone driver.
# Real fuzzing with libFuzzer: tests/fuzz/run-libfuzzer.sh TARGET SECONDS.
FUZZ_TESTS = \
	tests/fuzz/fuzz_matrix_json.t \
	tests/fuzz/fuzz_matrix_csv.t
check_PROGRAMS += $(FUZZ_TESTS)
TESTS += $(FUZZ_TESTS)
FUZZ_LDADD = lib/libcommap.la $(HWLOC_LIBS) $(JANSSON_LIBS) -lm
EXTRA_DIST += \
	tests/fuzz/fuzz_check.h \
	tests/fuzz/run-libfuzzer.sh \
	tests/fuzz/fuzz_matrix_json.dict \
	tests/fuzz/corpus

tests_fuzz_fuzz_matrix_json_t_SOURCES = \
	tests/fuzz/fuzz_matrix_json.c tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_matrix_json_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_TARGET='"fuzz_matrix_json"'
tests_fuzz_fuzz_matrix_json_t_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_matrix_csv_t_SOURCES = \
	tests/fuzz/fuzz_matrix_csv.c tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_matrix_csv_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_TARGET='"fuzz_matrix_csv"'
tests_fuzz_fuzz_matrix_csv_t_LDADD = $(FUZZ_LDADD)
