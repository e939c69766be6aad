# nodeagent/agent.mk: the agent's process tracking and pinning (plain
# Linux, no capstone needed), built and tested always.
noinst_LTLIBRARIES += nodeagent/libtrack.la
nodeagent_libtrack_la_SOURCES = \
	nodeagent/proc_track.h nodeagent/proc_track.c nodeagent/grow.h
nodeagent_libtrack_la_CFLAGS = $(AM_CFLAGS)

TRACK_TESTS = tests/unit/test_proc_track.t
check_PROGRAMS += $(TRACK_TESTS)
TESTS += $(TRACK_TESTS)
tests_unit_test_proc_track_t_SOURCES = tests/unit/test_proc_track.c
tests_unit_test_proc_track_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/nodeagent
tests_unit_test_proc_track_t_LDADD = nodeagent/libtrack.la $(UNIT_LDADD) -lpthread

noinst_LTLIBRARIES += nodeagent/libpin.la
nodeagent_libpin_la_SOURCES = nodeagent/pin.h nodeagent/pin.c
nodeagent_libpin_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS)
nodeagent_libpin_la_LIBADD = $(HWLOC_LIBS)

PIN_TESTS = tests/unit/test_pin.t
check_PROGRAMS += $(PIN_TESTS)
TESTS += $(PIN_TESTS)
tests_unit_test_pin_t_SOURCES = tests/unit/test_pin.c
tests_unit_test_pin_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/nodeagent
tests_unit_test_pin_t_LDADD = nodeagent/libpin.la $(UNIT_LDADD) -lpthread

noinst_LTLIBRARIES += nodeagent/libnumab.la
nodeagent_libnumab_la_SOURCES = nodeagent/numa_balancing.h nodeagent/numa_balancing.c
nodeagent_libnumab_la_CFLAGS = $(AM_CFLAGS)

NUMAB_TESTS = tests/unit/test_numa_balancing.t
check_PROGRAMS += $(NUMAB_TESTS)
TESTS += $(NUMAB_TESTS)
tests_unit_test_numa_balancing_t_SOURCES = tests/unit/test_numa_balancing.c
tests_unit_test_numa_balancing_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/nodeagent
tests_unit_test_numa_balancing_t_LDADD = nodeagent/libnumab.la $(UNIT_LDADD)
