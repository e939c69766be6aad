# tests/agent/: the node agent and 'commap run' (docs/agent.md).  Unit
# tests of the pure parts always; the shell tests run the real agent on
# this machine (they need capstone: the agent is not built without it).
AGENT_UNIT_TESTS = \
	tests/agent/test_agent_opts.t \
	tests/agent/test_remap_policy.t \
	tests/agent/test_agent_result.t
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
# The result is checked with the service's own validator (pure code).
tests_agent_test_agent_result_t_SOURCES = tests/agent/test_agent_result.c \
	service/result_validate.c
tests_agent_test_agent_result_t_CFLAGS = $(AGENT_UNIT_CFLAGS) \
	-I$(top_srcdir)/service
tests_agent_test_agent_result_t_LDADD = $(AGENT_UNIT_LDADD)

tests_agent_pairs_SOURCES = tests/agent/pairs.c
tests_agent_pairs_LDADD = -lpthread

AGENT_SH_TESTS = \
	tests/agent/t0700-run.sh \
	tests/agent/t0710-agent.sh
if HAVE_CAPSTONE
TESTS += $(AGENT_SH_TESTS)
endif
EXTRA_DIST += $(AGENT_SH_TESTS)
