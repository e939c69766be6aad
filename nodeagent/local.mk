# nodeagent/: the per-node agent (needs capstone).
if HAVE_CAPSTONE
noinst_LTLIBRARIES += nodeagent/libagent.la
nodeagent_libagent_la_SOURCES = \
	nodeagent/decode.h nodeagent/decode.c \
	nodeagent/perf_sample.h nodeagent/perf_sample.c \
	nodeagent/perf_record.c nodeagent/perf_open.h nodeagent/perf_open.c \
	nodeagent/detect_table.h nodeagent/detect_table.c \
	nodeagent/detect_overlap.h nodeagent/detect_overlap.c \
	nodeagent/detect_overlap_internal.h nodeagent/detect_overlap_phase.c \
	nodeagent/evidence.h nodeagent/evidence.c \
	nodeagent/collect.h nodeagent/collect.c \
	nodeagent/collect_internal.h nodeagent/collect_calib.c \
	nodeagent/collect_drain.c nodeagent/collect_rate.c \
	nodeagent/tracepoint.h nodeagent/tracepoint.c \
	nodeagent/fault_sample.h nodeagent/fault_sample.c \
	nodeagent/cma_trace.h nodeagent/cma_trace.c nodeagent/cma_pair.c \
	nodeagent/cma_attrib.h nodeagent/cma_attrib.c \
	nodeagent/shm_owner.h nodeagent/shm_owner.c \
	nodeagent/sample_rate.h nodeagent/sample_rate.c
nodeagent_libagent_la_CFLAGS = $(AM_CFLAGS) $(CAPSTONE_CFLAGS) $(HWLOC_CFLAGS) $(JANSSON_CFLAGS)
nodeagent_libagent_la_LIBADD = lib/libcommap.la nodeagent/libnumab.la \
	$(CAPSTONE_LIBS)

AGENT_TESTS = \
	tests/unit/test_decode.t \
	tests/unit/test_decode_live.t \
	tests/unit/test_perf_record.t \
	tests/unit/test_perf_sample.t \
	tests/unit/test_detect_table.t \
	tests/unit/test_detect_overlap.t \
	tests/unit/test_evidence.t \
	tests/unit/test_collect.t \
	tests/unit/test_collect_maps.t \
	tests/unit/test_collect_rate.t \
	tests/unit/test_fault_sample.t \
	tests/unit/test_cma_trace.t \
	tests/unit/test_shm_owner.t \
	tests/unit/test_tracepoint.t \
	tests/unit/test_sample_rate.t \
	tests/unit/test_sample_rate_collect.t
check_PROGRAMS += $(AGENT_TESTS)
TESTS += $(AGENT_TESTS)
AGENT_TEST_CFLAGS = $(UNIT_CFLAGS) $(CAPSTONE_CFLAGS) -I$(top_srcdir)/nodeagent
AGENT_TEST_LDADD = nodeagent/libagent.la $(UNIT_LDADD) $(CAPSTONE_LIBS) -lpthread
tests_unit_test_decode_t_SOURCES = tests/unit/test_decode.c
tests_unit_test_decode_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_decode_t_LDADD = $(AGENT_TEST_LDADD)
tests_unit_test_decode_live_t_SOURCES = tests/unit/test_decode_live.c
tests_unit_test_decode_live_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_decode_live_t_LDADD = $(AGENT_TEST_LDADD)
tests_unit_test_perf_record_t_SOURCES = tests/unit/test_perf_record.c
tests_unit_test_perf_record_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_perf_record_t_LDADD = $(AGENT_TEST_LDADD)
tests_unit_test_perf_sample_t_SOURCES = tests/unit/test_perf_sample.c
tests_unit_test_perf_sample_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_perf_sample_t_LDADD = $(AGENT_TEST_LDADD)
tests_unit_test_detect_table_t_SOURCES = tests/unit/test_detect_table.c
tests_unit_test_detect_table_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_detect_table_t_LDADD = $(AGENT_TEST_LDADD)
# Evidence from every sample, live and replayed (needs the workloads).
TESTS += tests/agent/t0790-overlap.sh
EXTRA_DIST += tests/agent/t0790-overlap.sh
tests_unit_test_detect_overlap_t_SOURCES = tests/unit/test_detect_overlap.c
tests_unit_test_detect_overlap_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_detect_overlap_t_LDADD = $(AGENT_TEST_LDADD) -lm
tests_unit_test_evidence_t_SOURCES = tests/unit/test_evidence.c
tests_unit_test_evidence_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_evidence_t_LDADD = $(AGENT_TEST_LDADD)
tests_unit_test_collect_t_SOURCES = tests/unit/test_collect.c \
	tests/unit/collect_test_util.h tests/unit/collect_test_util.c
tests_unit_test_collect_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_collect_t_LDADD = nodeagent/libagent.la nodeagent/libtrack.la $(AGENT_TEST_LDADD)
tests_unit_test_collect_maps_t_SOURCES = tests/unit/test_collect_maps.c \
	tests/unit/collect_test_util.h tests/unit/collect_test_util.c
tests_unit_test_collect_maps_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_collect_maps_t_LDADD = nodeagent/libagent.la nodeagent/libtrack.la $(AGENT_TEST_LDADD)
tests_unit_test_fault_sample_t_SOURCES = tests/unit/test_fault_sample.c
tests_unit_test_fault_sample_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_fault_sample_t_LDADD = nodeagent/libagent.la nodeagent/libtrack.la $(AGENT_TEST_LDADD)
tests_unit_test_cma_trace_t_SOURCES = tests/unit/test_cma_trace.c
tests_unit_test_cma_trace_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_cma_trace_t_LDADD = nodeagent/libagent.la nodeagent/libtrack.la $(AGENT_TEST_LDADD)
tests_unit_test_shm_owner_t_SOURCES = tests/unit/test_shm_owner.c
tests_unit_test_shm_owner_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_shm_owner_t_LDADD = $(AGENT_TEST_LDADD)
tests_unit_test_tracepoint_t_SOURCES = tests/unit/test_tracepoint.c \
	tests/unit/tracepoint_test_util.h
tests_unit_test_tracepoint_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_tracepoint_t_LDADD = $(AGENT_TEST_LDADD)
tests_unit_test_sample_rate_t_SOURCES = tests/unit/test_sample_rate.c
tests_unit_test_sample_rate_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_sample_rate_t_LDADD = nodeagent/libagent.la nodeagent/libtrack.la $(AGENT_TEST_LDADD)
tests_unit_test_collect_rate_t_SOURCES = tests/unit/test_collect_rate.c
tests_unit_test_collect_rate_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_collect_rate_t_LDADD = nodeagent/libagent.la nodeagent/libtrack.la $(AGENT_TEST_LDADD)
tests_unit_test_sample_rate_collect_t_SOURCES = tests/unit/test_sample_rate_collect.c
tests_unit_test_sample_rate_collect_t_CFLAGS = $(AGENT_TEST_CFLAGS)
tests_unit_test_sample_rate_collect_t_LDADD = nodeagent/libagent.la nodeagent/libtrack.la $(AGENT_TEST_LDADD)
endif

# The agent's pure parts (options, remap policy, result document, static
# files): no capstone needed, unit-tested always (tests/agent/local.mk).
noinst_LTLIBRARIES += nodeagent/libagentcore.la
nodeagent_libagentcore_la_SOURCES = \
	nodeagent/agent_opts.h nodeagent/agent_opts.c \
	nodeagent/remap_policy.h nodeagent/remap_policy.c \
	nodeagent/placement.h nodeagent/placement.c \
	nodeagent/progress_guard.h nodeagent/progress_guard.c \
	nodeagent/agent_result.h nodeagent/agent_result.c \
	nodeagent/agent.h nodeagent/agent_static.c \
	nodeagent/user_file.h nodeagent/user_file.c \
	nodeagent/ompi_monitoring.h nodeagent/ompi_monitoring.c \
	nodeagent/app_identity.h nodeagent/app_identity.c
nodeagent_libagentcore_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) \
	$(CRYPTO_CFLAGS)
nodeagent_libagentcore_la_LIBADD = lib/libcommap.la $(JANSSON_LIBS) \
	$(CRYPTO_LIBS)

# commap-agent, started by the SPANK plugin and 'commap run' (docs/agent.md).
if HAVE_CAPSTONE
commapexecdir = $(libexecdir)/commap
commapexec_PROGRAMS = nodeagent/commap-agent
nodeagent_commap_agent_SOURCES = nodeagent/agent_main.c nodeagent/agent_loop.c \
	nodeagent/agent_internal.h nodeagent/agent_identity.c \
	nodeagent/agent_place.c \
	nodeagent/agent_interval.c nodeagent/agent_model.c \
	nodeagent/agent_fill.c \
	nodeagent/agent_check.c \
	nodeagent/model_fetch.h nodeagent/model_fetch.c
nodeagent_commap_agent_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) \
	$(JANSSON_CFLAGS) $(CAPSTONE_CFLAGS)
nodeagent_commap_agent_LDADD = nodeagent/libagentcore.la \
	nodeagent/libagent.la nodeagent/libtrack.la nodeagent/libpin.la \
	nodeagent/libupload.la lib/libcommap.la $(CAPSTONE_LIBS) \
	$(HWLOC_LIBS) $(JANSSON_LIBS) $(CRYPTO_LIBS) -lm
endif
