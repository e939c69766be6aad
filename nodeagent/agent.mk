# nodeagent/agent.mk: the agent's process tracking and pinning (plain
# Linux, no capstone needed), built and tested always.
noinst_LTLIBRARIES += nodeagent/libtrack.la
nodeagent_libtrack_la_SOURCES = \
	nodeagent/proc_track.h nodeagent/proc_track.c
nodeagent_libtrack_la_CFLAGS = $(AM_CFLAGS)

TRACK_TESTS = tests/unit/test_proc_track.t
check_PROGRAMS += $(TRACK_TESTS)
TESTS += $(TRACK_TESTS)
tests_unit_test_proc_track_t_SOURCES = tests/unit/test_proc_track.c
tests_unit_test_proc_track_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/nodeagent
tests_unit_test_proc_track_t_LDADD = nodeagent/libtrack.la $(UNIT_LDADD) -lpthread
