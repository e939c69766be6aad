# cli/remote.mk: the service client commands 'commap report', 'jobs',
# 'apps' (cli/cmd_remote.c; docs/cli.md).  Requests use libcurl and libmunge when configure found them
# (HAVE_CURL/HAVE_MUNGE in config.h); without them the commands say why
# and exit 1.  --format svg|html use the report library (report/render.h).
cli_commap_SOURCES += cli/cmd_remote.c cli/remote.h cli/remote_http.c \
	cli/cmd_web.c \
	cli/remote_args.h cli/remote_args.c \
	cli/remote_text.c cli/remote_time.c cli/cmd_check.c
cli_commap_SOURCES += cli/remote_nodes.c cli/remote_nodes.h
# commap check's Slurm part reads the plugin's settings with its own parser.
cli_commap_SOURCES += cli/check_plugin.c cli/plugstack.h cli/plugstack.c \
	spank/spank_config.h spank/spank_config.c
cli_commap_CFLAGS += -I$(top_srcdir)/spank $(SPANK_DEFS)
cli_commap_CFLAGS += -DCOMMAP_SYSCONFDIR='"$(sysconfdir)"' \
	-DCOMMAP_DOCDIR='"$(docdir)"'
if HAVE_CURL
if HAVE_MUNGE
cli_commap_CFLAGS += $(CURL_CFLAGS) $(MUNGE_CFLAGS)
cli_commap_LDADD += $(CURL_LIBS) $(MUNGE_LIBS)
endif
endif

EXTRA_DIST += tests/service/t0650-cli.sh tests/service/t0655-report-why.sh
EXTRA_DIST += tests/service/t0652-cli-messages.sh
if HAVE_SERVICE
if HAVE_CURL
TESTS += tests/service/t0650-cli.sh tests/service/t0655-report-why.sh
TESTS += tests/service/t0652-cli-messages.sh
endif
endif

# SVG and HTML reports, and the what-happened lines (the report library).
cli_commap_CFLAGS += $(REPORT_CPPFLAGS) -DCLI_HAVE_RENDER
cli_commap_LDADD += report/librender.la lib/libcommap.la $(JANSSON_LIBS) -lm

# commap check's readers of plugstack.conf and slurm.conf: a unit test and
# a fuzz target (seeds in tests/fuzz/corpus/plugstack/).
check_PROGRAMS += tests/unit/test_plugstack.t tests/fuzz/fuzz_plugstack.t
TESTS += tests/unit/test_plugstack.t tests/fuzz/fuzz_plugstack.t \
	tests/integration/t0190-check-plugin.sh
EXTRA_DIST += tests/integration/t0190-check-plugin.sh
tests_unit_test_plugstack_t_SOURCES = tests/unit/test_plugstack.c \
	cli/plugstack.c
tests_unit_test_plugstack_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/cli
tests_unit_test_plugstack_t_LDADD = $(UNIT_LDADD)
tests_fuzz_fuzz_plugstack_t_SOURCES = tests/fuzz/fuzz_plugstack.c \
	tests/fuzz/standalone_driver.c cli/plugstack.c
tests_fuzz_fuzz_plugstack_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/cli -DFUZZ_TARGET='"plugstack"'
tests_fuzz_fuzz_plugstack_t_CFLAGS = $(FUZZ_SMALL_CFLAGS)
tests_fuzz_fuzz_plugstack_t_LDADD = lib/libcommap.la

# commap report across nodes (cli/remote_nodes.c): a unit test.
check_PROGRAMS += tests/unit/test_remote_nodes.t
TESTS += tests/unit/test_remote_nodes.t
tests_unit_test_remote_nodes_t_SOURCES = tests/unit/test_remote_nodes.c \
	cli/remote_nodes.c
tests_unit_test_remote_nodes_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/cli \
	$(REPORT_CPPFLAGS)
tests_unit_test_remote_nodes_t_LDADD = report/librender.la $(UNIT_LDADD)
