# nodeagent/: the per-node agent (needs capstone).
if HAVE_CAPSTONE
noinst_LTLIBRARIES += nodeagent/libagent.la
nodeagent_libagent_la_SOURCES = \
	nodeagent/decode.h nodeagent/decode.c \
	nodeagent/perf_sample.h nodeagent/perf_sample.c \
	nodeagent/detect_table.h nodeagent/detect_table.c
nodeagent_libagent_la_CFLAGS = $(AM_CFLAGS) $(CAPSTONE_CFLAGS) $(HWLOC_CFLAGS) $(JANSSON_CFLAGS)
nodeagent_libagent_la_LIBADD = lib/libcommap.la $(CAPSTONE_LIBS)

AGENT_TESTS = \
	tests/unit/test_decode.t \
	tests/unit/test_perf_sample.t \
	tests/unit/test_detect_table.t
check_PROGRAMS += $(AGENT_TESTS)
TESTS += $(AGENT_TESTS)
AGENT_TEST_CFLAGS = $(UNIT_CFLAGS) $(CAPSTONE_CFLAGS) -I$(top_srcdir)/nodeagent
AGENT_TEST_LDADD = nodeagent/libagent.la $(UNIT_LDADD) $(CAPSTONE_LIBS) -lpthread
tests_unit_test_decode_t_SOURCES = tests/unit/test_decode.c
tests_unit_test_decode_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_decode_t_LDADD = $(AGENT_TEST_LDADD)
tests_unit_test_perf_sample_t_SOURCES = tests/unit/test_perf_sample.c
tests_unit_test_perf_sample_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_perf_sample_t_LDADD = $(AGENT_TEST_LDADD)
tests_unit_test_detect_table_t_SOURCES = tests/unit/test_detect_table.c
tests_unit_test_detect_table_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_detect_table_t_LDADD = $(AGENT_TEST_LDADD)
endif
