# tests/agent/: the node agent and 'commap run' (docs/agent.md).  Unit
# tests of the pure parts always; the shell tests run the real agent on
# this machine (they need capstone: the agent is not built without it).
AGENT_UNIT_TESTS = \
	tests/agent/test_agent_opts.t \
	tests/agent/test_remap_policy.t \
	tests/agent/test_placement.t \
	tests/agent/test_placement_property.t \
	tests/agent/test_progress_guard.t \
	tests/agent/test_agent_result.t \
	tests/agent/test_app_identity.t \
	tests/agent/test_user_file.t \
	tests/agent/test_ompi_monitoring.t
check_PROGRAMS += $(AGENT_UNIT_TESTS) tests/agent/pairs
TESTS += $(AGENT_UNIT_TESTS)
AGENT_UNIT_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/nodeagent
AGENT_UNIT_LDADD = nodeagent/libagentcore.la $(UNIT_LDADD)
tests_agent_test_agent_opts_t_SOURCES = tests/agent/test_agent_opts.c
tests_agent_test_agent_opts_t_CFLAGS = $(AGENT_UNIT_CFLAGS)
tests_agent_test_agent_opts_t_LDADD = $(AGENT_UNIT_LDADD)
tests_agent_test_remap_policy_t_SOURCES = tests/agent/test_remap_policy.c
tests_agent_test_remap_policy_t_CFLAGS = $(AGENT_UNIT_CFLAGS)
tests_agent_test_remap_policy_t_LDADD = $(AGENT_UNIT_LDADD)
tests_agent_test_placement_t_SOURCES = tests/agent/test_placement.c
tests_agent_test_placement_t_CFLAGS = $(AGENT_UNIT_CFLAGS)
tests_agent_test_placement_t_LDADD = $(AGENT_UNIT_LDADD)
tests_agent_test_placement_property_t_SOURCES = \
	tests/agent/test_placement_property.c
tests_agent_test_placement_property_t_CFLAGS = $(AGENT_UNIT_CFLAGS)
tests_agent_test_placement_property_t_LDADD = $(AGENT_UNIT_LDADD)
tests_agent_test_user_file_t_SOURCES = tests/agent/test_user_file.c
tests_agent_test_user_file_t_CFLAGS = $(AGENT_UNIT_CFLAGS)
tests_agent_test_user_file_t_LDADD = $(AGENT_UNIT_LDADD)
tests_agent_test_progress_guard_t_SOURCES = tests/agent/test_progress_guard.c \
	nodeagent/remap_decide.c
tests_agent_test_progress_guard_t_CFLAGS = $(AGENT_UNIT_CFLAGS)
tests_agent_test_progress_guard_t_LDADD = $(AGENT_UNIT_LDADD)
# The result is checked with the service's own validator (pure code).
tests_agent_test_agent_result_t_SOURCES = tests/agent/test_agent_result.c \
	service/result_validate.c service/result_json.c service/result_read.c \
	service/result_validate_traffic.c
tests_agent_test_agent_result_t_CFLAGS = $(AGENT_UNIT_CFLAGS) \
	-I$(top_srcdir)/service
tests_agent_test_agent_result_t_LDADD = $(AGENT_UNIT_LDADD)

tests_agent_test_ompi_monitoring_t_SOURCES = \
	tests/agent/test_ompi_monitoring.c service/result_validate.c \
	service/result_json.c service/result_read.c \
	service/result_validate_traffic.c
tests_agent_test_ompi_monitoring_t_CFLAGS = $(AGENT_UNIT_CFLAGS) \
	-I$(top_srcdir)/service
tests_agent_test_ompi_monitoring_t_LDADD = $(AGENT_UNIT_LDADD)

tests_agent_test_app_identity_t_SOURCES = tests/agent/test_app_identity.c
tests_agent_test_app_identity_t_CFLAGS = $(AGENT_UNIT_CFLAGS)
tests_agent_test_app_identity_t_LDADD = $(AGENT_UNIT_LDADD)

# The model reader is built into the agent (it needs libupload's GET).
if HAVE_CAPSTONE
check_PROGRAMS += tests/agent/test_model_fetch.t
TESTS += tests/agent/test_model_fetch.t
endif
tests_agent_test_model_fetch_t_SOURCES = tests/agent/test_model_fetch.c \
	nodeagent/model_fetch.c
tests_agent_test_model_fetch_t_CFLAGS = $(AGENT_UNIT_CFLAGS)
tests_agent_test_model_fetch_t_LDADD = nodeagent/libupload.la \
	$(AGENT_UNIT_LDADD)

tests_agent_pairs_SOURCES = tests/agent/pairs.c
tests_agent_pairs_LDADD = -lpthread
# A workload, not code under test: never built with sanitizers, whose
# exit-time leak checker clones a task the agent would follow (an extra
# process and thread in the results the tests count).
tests_agent_pairs_CFLAGS = -std=gnu11 $(WARN_CFLAGS) -O2
tests_agent_pairs_LDFLAGS =

AGENT_SH_TESTS = \
	tests/agent/t0700-run.sh \
	tests/agent/t0710-agent.sh \
	tests/agent/t0750-check.sh \
	tests/agent/t0770-placement.sh \
	tests/agent/t0785-watchdog.sh
if HAVE_CAPSTONE
TESTS += $(AGENT_SH_TESTS)
endif
EXTRA_DIST += $(AGENT_SH_TESTS)

# Learned mappings against the real service (needs it and libcurl).
if HAVE_CAPSTONE
if HAVE_SERVICE
if HAVE_CURL
TESTS += tests/agent/t0720-learned.sh
# An agent killed during its upload: the result is delivered later.
TESTS += tests/agent/t0787-killed-delivery.sh
endif
endif
endif
EXTRA_DIST += tests/agent/t0720-learned.sh tests/agent/t0787-killed-delivery.sh

# Benchmark, not a test: creation-to-pin latency, learned vs dynamic
# (docs/PERFORMANCE.md "Learned mappings").  make bench-learned
bench-learned: nodeagent/commap-agent cli/commap tests/agent/pairs \
		service/commap-service
	top_builddir=$(abs_top_builddir) top_srcdir=$(abs_top_srcdir) \
		bash $(top_srcdir)/tests/bench/learned/run-pin-latency.sh
.PHONY: bench-learned
EXTRA_DIST += tests/bench/learned/run-pin-latency.sh

# Mapping stability: late threads placed around the placed ones, no
# migrations on noise (the MPI part uses tests/workloads/wl-mpi).
if HAVE_CAPSTONE
TESTS += tests/agent/t0740-stability.sh
endif
EXTRA_DIST += tests/agent/t0740-stability.sh

# Message passing between MPI ranks (CMA transfers) against ground truth
# from Open MPI's pml monitoring and tests/workloads/libwlpmpi.so.
if HAVE_CAPSTONE
TESTS += tests/agent/t0760-mpi-messages.sh
endif
EXTRA_DIST += tests/agent/t0760-mpi-messages.sh
