# spank/: the SPANK plugin (needs Slurm's spank.h).  The option/config
# parser and the detached launcher are plain POSIX and unit-tested always.
SPANK_DEFS = -DCOMMAP_AGENT_DEFAULT='"$(libexecdir)/commap/commap-agent"' \
	-DCOMMAP_SPOOL_DEFAULT='"$(localstatedir)/spool/commap"'
if HAVE_SLURM
commapplugindir = $(pkglibdir)
commapplugin_LTLIBRARIES = spank/commap_spank.la
spank_commap_spank_la_SOURCES = \
	spank/commap_spank.c \
	spank/place_nodes.h spank/place_nodes.c \
	spank/place_nodes_line.h spank/place_nodes_line.c \
	spank/spank_config.h spank/spank_config.c \
	spank/agent_launch.h spank/agent_launch.c \
	spank/mpi_traffic.h spank/mpi_traffic.c \
	lib/error.c
# Never built with sanitizers: it is loaded into srun and slurmstepd, which
# are not, and an ASan runtime cannot come second.
spank_commap_spank_la_CFLAGS = -std=gnu11 $(WARN_CFLAGS)
spank_commap_spank_la_CPPFLAGS = $(AM_CPPFLAGS) $(SPANK_DEFS)
spank_commap_spank_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/spank/commap_spank.map \
	-Wl,-z,relro -Wl,-z,now
EXTRA_spank_commap_spank_la_DEPENDENCIES = spank/commap_spank.map
endif
EXTRA_DIST += spank/commap_spank.map

SPANK_UNIT_TESTS = \
	tests/unit/test_spank_config.t \
	tests/unit/test_agent_launch.t \
	tests/unit/test_mpi_traffic.t \
	tests/unit/test_place_nodes_line.t
check_PROGRAMS += $(SPANK_UNIT_TESTS)
TESTS += $(SPANK_UNIT_TESTS)
tests_unit_test_spank_config_t_SOURCES = tests/unit/test_spank_config.c \
	spank/spank_config.c
tests_unit_test_spank_config_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/spank
tests_unit_test_spank_config_t_LDADD = $(UNIT_LDADD)
tests_unit_test_agent_launch_t_SOURCES = tests/unit/test_agent_launch.c \
	spank/agent_launch.c
tests_unit_test_agent_launch_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/spank
tests_unit_test_agent_launch_t_LDADD = $(UNIT_LDADD)
tests_unit_test_place_nodes_line_t_SOURCES = \
	tests/unit/test_place_nodes_line.c spank/place_nodes_line.c
tests_unit_test_place_nodes_line_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/spank
tests_unit_test_place_nodes_line_t_LDADD = $(UNIT_LDADD)

# commap-place-nodes: run by the plugin inside srun for
# --commap-place-nodes (spank/place_nodes_tool.c); the plugin runs the
# one next to the agent.  Plain POSIX, built whenever the agent's
# libraries are.
placenodesdir = $(libexecdir)/commap
placenodes_PROGRAMS = spank/commap-place-nodes
spank_commap_place_nodes_SOURCES = spank/place_nodes_tool.c \
	spank/place_nodes_answer.h spank/place_nodes_answer.c \
	nodeagent/app_identity.h nodeagent/app_identity.c
spank_commap_place_nodes_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) \
	$(CRYPTO_CFLAGS) -I$(top_srcdir)/nodeagent -pthread
spank_commap_place_nodes_LDADD = nodeagent/libupload.la lib/libcommap.la \
	$(HWLOC_LIBS) $(JANSSON_LIBS) $(CRYPTO_LIBS) -lpthread -lm
tests_unit_test_mpi_traffic_t_SOURCES = tests/unit/test_mpi_traffic.c \
	spank/mpi_traffic.c
tests_unit_test_mpi_traffic_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/spank
tests_unit_test_mpi_traffic_t_LDADD = $(UNIT_LDADD)
