# Fuzz targets (libFuzzer entry points).  In 'make check' each runs over its
# seed corpus and a bounded number of mutated inputs with a standalone driver.
# Real fuzzing with libFuzzer: tests/fuzz/run-libfuzzer.sh TARGET SECONDS.
FUZZ_TESTS = \
	tests/fuzz/fuzz_matrix_json.t \
	tests/fuzz/fuzz_matrix_csv.t \
	tests/fuzz/fuzz_map_weights.t
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
# The mappers fed extreme weights (seeds in tests/fuzz/corpus/map_weights).
tests_fuzz_fuzz_map_weights_t_SOURCES = \
	tests/fuzz/fuzz_map_weights.c tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_map_weights_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/tests/fuzz -DFUZZ_TARGET='"map_weights"'
tests_fuzz_fuzz_map_weights_t_LDADD = $(FUZZ_LDADD)

# The small parsers: SPANK settings, the service's configuration, the
# agent's stdin protocol, learned models, /proc/PID/maps, kernel sample
# records, the fault tracepoint's format and the instruction decoder.  Each
# target's seeds are in tests/fuzz/corpus/NAME/ (FUZZ_TARGET names it).
FUZZ_SMALL_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/tests/fuzz
EXTRA_DIST += tests/fuzz/fuzz_input.h
FUZZ_TESTS_SMALL = \
	tests/fuzz/fuzz_spank_config.t \
	tests/fuzz/fuzz_svc_config.t \
	tests/fuzz/fuzz_task_line.t \
	tests/fuzz/fuzz_ompi_monitoring.t \
	tests/fuzz/fuzz_model.t \
	tests/fuzz/fuzz_rank_matrix.t \
	tests/fuzz/fuzz_srun_line.t \
	tests/fuzz/fuzz_shm_names.t
check_PROGRAMS += $(FUZZ_TESTS_SMALL)
TESTS += $(FUZZ_TESTS_SMALL)

tests_fuzz_fuzz_spank_config_t_SOURCES = tests/fuzz/fuzz_spank_config.c \
	tests/fuzz/standalone_driver.c spank/spank_config.c
tests_fuzz_fuzz_spank_config_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/spank -DFUZZ_TARGET='"spank_config"'
tests_fuzz_fuzz_spank_config_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_spank_config_t_LDADD = lib/libcommap.la

tests_fuzz_fuzz_svc_config_t_SOURCES = tests/fuzz/fuzz_svc_config.c \
	tests/fuzz/standalone_driver.c service/svc_config.c
tests_fuzz_fuzz_svc_config_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/service -DFUZZ_TARGET='"svc_config"'
tests_fuzz_fuzz_svc_config_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_svc_config_t_LDADD = lib/libcommap.la

tests_fuzz_fuzz_shm_names_t_SOURCES = tests/fuzz/fuzz_shm_names.c \
	tests/fuzz/standalone_driver.c nodeagent/shm_owner.c
tests_fuzz_fuzz_shm_names_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/nodeagent -DFUZZ_TARGET='"shm_names"'
tests_fuzz_fuzz_shm_names_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_shm_names_t_LDADD = lib/libcommap.la

tests_fuzz_fuzz_task_line_t_SOURCES = tests/fuzz/fuzz_task_line.c \
	tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_task_line_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/nodeagent -DFUZZ_TARGET='"task_line"'
tests_fuzz_fuzz_task_line_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_task_line_t_LDADD = nodeagent/libagentcore.la lib/libcommap.la

tests_fuzz_fuzz_ompi_monitoring_t_SOURCES = \
	tests/fuzz/fuzz_ompi_monitoring.c tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_ompi_monitoring_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/nodeagent -DFUZZ_TARGET='"ompi_monitoring"'
tests_fuzz_fuzz_ompi_monitoring_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_ompi_monitoring_t_LDADD = nodeagent/libagentcore.la \
	lib/libcommap.la

tests_fuzz_fuzz_model_t_SOURCES = tests/fuzz/fuzz_model.c \
	tests/fuzz/standalone_driver.c nodeagent/model_fetch.c
tests_fuzz_fuzz_model_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/nodeagent -DFUZZ_TARGET='"model"'
tests_fuzz_fuzz_model_t_CFLAGS = $(FUZZ_SMALL_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_fuzz_model_t_LDADD = nodeagent/libupload.la \
	nodeagent/libagentcore.la lib/libcommap.la $(JANSSON_LIBS) -lm
# Rank matrices across nodes: the service's fold and the placement's reader.
tests_fuzz_fuzz_rank_matrix_t_SOURCES = tests/fuzz/fuzz_rank_matrix.c \
	tests/fuzz/standalone_driver.c service/svc_model_ranks.c \
	spank/place_nodes_answer.c
tests_fuzz_fuzz_rank_matrix_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/service -I$(top_srcdir)/spank \
	-DFUZZ_TARGET='"rank_matrix"'
tests_fuzz_fuzz_rank_matrix_t_CFLAGS = $(FUZZ_SMALL_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_fuzz_rank_matrix_t_LDADD = lib/libcommap.la $(JANSSON_LIBS) -lm
# srun's command line as the plugin reads it for --commap-place-nodes.
tests_fuzz_fuzz_srun_line_t_SOURCES = tests/fuzz/fuzz_srun_line.c \
	tests/fuzz/standalone_driver.c spank/place_nodes_line.c
tests_fuzz_fuzz_srun_line_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/spank -DFUZZ_TARGET='"srun_line"'
tests_fuzz_fuzz_srun_line_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_srun_line_t_LDADD = lib/libcommap.la

# The agent's readers of kernel data and its decoder need Capstone.
if HAVE_CAPSTONE
FUZZ_TESTS_AGENT = \
	tests/fuzz/fuzz_proc_maps.t \
	tests/fuzz/fuzz_perf_record.t \
	tests/fuzz/fuzz_fault_format.t \
	tests/fuzz/fuzz_cma_record.t \
	tests/fuzz/fuzz_decode.t
check_PROGRAMS += $(FUZZ_TESTS_AGENT)
TESTS += $(FUZZ_TESTS_AGENT)
endif
FUZZ_AGENT_LDADD = nodeagent/libagent.la lib/libcommap.la $(CAPSTONE_LIBS)
tests_fuzz_fuzz_proc_maps_t_SOURCES = tests/fuzz/fuzz_proc_maps.c \
	tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_proc_maps_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/nodeagent -DFUZZ_TARGET='"proc_maps"'
tests_fuzz_fuzz_proc_maps_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_proc_maps_t_LDADD = $(FUZZ_AGENT_LDADD)
tests_fuzz_fuzz_perf_record_t_SOURCES = tests/fuzz/fuzz_perf_record.c \
	tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_perf_record_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/nodeagent -DFUZZ_TARGET='"perf_record"'
tests_fuzz_fuzz_perf_record_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_perf_record_t_LDADD = $(FUZZ_AGENT_LDADD)
tests_fuzz_fuzz_fault_format_t_SOURCES = tests/fuzz/fuzz_fault_format.c \
	tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_fault_format_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/nodeagent -DFUZZ_TARGET='"fault_format"'
tests_fuzz_fuzz_fault_format_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_fault_format_t_LDADD = $(FUZZ_AGENT_LDADD)
tests_fuzz_fuzz_cma_record_t_SOURCES = tests/fuzz/fuzz_cma_record.c \
	tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_cma_record_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/nodeagent -DFUZZ_TARGET='"cma_record"'
tests_fuzz_fuzz_cma_record_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_cma_record_t_LDADD = $(FUZZ_AGENT_LDADD)
tests_fuzz_fuzz_decode_t_SOURCES = tests/fuzz/fuzz_decode.c \
	tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_decode_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/nodeagent -DFUZZ_TARGET='"decode"'
tests_fuzz_fuzz_decode_t_CFLAGS = $(FUZZ_SMALL_CFLAGS) $(CAPSTONE_CFLAGS)
tests_fuzz_fuzz_decode_t_LDADD = $(FUZZ_AGENT_LDADD)
