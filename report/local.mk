# report/: SVG and HTML reports of commap results (docs/reports.md),
# shared by the service's web pages and `commap report`.  Depends on
# lib/ and jansson only.  Users add $(REPORT_CPPFLAGS) and link
# report/librender.la (plus lib/libcommap.la and $(JANSSON_LIBS)).
REPORT_CPPFLAGS = -I$(top_srcdir)/report
noinst_LTLIBRARIES += report/librender.la
report_librender_la_SOURCES = \
	report/render.h report/render_internal.h \
	report/render_result.c \
	report/render_heatmap.c \
	report/render_topology.c \
	report/render_migrations.c \
	report/render_html.c \
	report/render_model.c \
	report/render_outcome.c \
	report/render_benefit.c report/render_lines.c \
	report/render_lists.c \
	report/render_compare.c \
	report/render_traffic.h report/render_traffic.c
report_librender_la_CPPFLAGS = $(AM_CPPFLAGS) $(REPORT_CPPFLAGS)
report_librender_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
report_librender_la_LIBADD = lib/libcommap.la $(JANSSON_LIBS) -lm
EXTRA_DIST += docs/reports.md

# Unit test: parsing, escaping, and every renderer on edge cases; the
# SVGs and pages are checked to be well-formed XML by tests/service's
# integration tests (python3) and here by structure.
check_PROGRAMS += report/test_render.t
TESTS += report/test_render.t
report_test_render_t_SOURCES = report/test_render.c
report_test_render_t_CPPFLAGS = $(AM_CPPFLAGS) $(REPORT_CPPFLAGS) \
	-I$(top_srcdir)/tests/unit
report_test_render_t_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
report_test_render_t_LDADD = report/librender.la lib/libcommap.la \
	$(JANSSON_LIBS) -lm

# The did-it-help lines against lib's cost model (every placement
# enumerated), the earlier runs' median and the evidence line.
check_PROGRAMS += report/test_benefit.t
TESTS += report/test_benefit.t
report_test_benefit_t_SOURCES = report/test_benefit.c
report_test_benefit_t_CPPFLAGS = $(report_test_render_t_CPPFLAGS)
report_test_benefit_t_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
report_test_benefit_t_LDADD = report/librender.la lib/libcommap.la \
	$(JANSSON_LIBS) -lm

# Fuzz target of the report commands' parsers: --since/--until times and
# step names (seeds in tests/fuzz/corpus/report_args).
check_PROGRAMS += tests/fuzz/fuzz_report_args.t
TESTS += tests/fuzz/fuzz_report_args.t
EXTRA_DIST += tests/fuzz/fuzz_report_args.c
tests_fuzz_fuzz_report_args_t_SOURCES = tests/fuzz/fuzz_report_args.c \
	tests/fuzz/standalone_driver.c cli/remote_time.c
tests_fuzz_fuzz_report_args_t_CPPFLAGS = $(AM_CPPFLAGS) $(REPORT_CPPFLAGS) \
	-I$(top_srcdir)/cli -I$(top_srcdir)/tests/fuzz \
	-DFUZZ_TARGET='"report_args"'
tests_fuzz_fuzz_report_args_t_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_fuzz_report_args_t_LDADD = report/librender.la lib/libcommap.la \
	$(JANSSON_LIBS) -lm
