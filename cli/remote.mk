# cli/remote.mk: the service client commands 'commap report', 'jobs',
# 'apps' (cli/cmd_remote.c; docs/cli.md).  Requests use libcurl and libmunge when configure found them
# (HAVE_CURL/HAVE_MUNGE in config.h); without them the commands say why
# and exit 1.  --format svg|html use the report library (report/render.h).
cli_commap_SOURCES += cli/cmd_remote.c cli/remote.h cli/remote_http.c \
	cli/remote_text.c cli/remote_time.c cli/cmd_check.c
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
