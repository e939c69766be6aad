# nodeagent/upload.mk: delivering results to commap-service with a disk
# spool (nodeagent/upload.h).  With libcurl and libmunge the library
# uploads; without them it is built spool-only (every result is spooled,
# with a message saying why).  Part of the upload work.
noinst_LTLIBRARIES += nodeagent/libupload.la
nodeagent_libupload_la_SOURCES = nodeagent/upload.h nodeagent/upload.c \
	nodeagent/upload_internal.h nodeagent/spool.c
nodeagent_libupload_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
nodeagent_libupload_la_LIBADD = lib/libcommap.la $(JANSSON_LIBS)
if HAVE_CURL
if HAVE_MUNGE
nodeagent_libupload_la_CFLAGS += $(CURL_CFLAGS) $(MUNGE_CFLAGS)
nodeagent_libupload_la_LIBADD += $(CURL_LIBS) $(MUNGE_LIBS)
endif
endif

# The test driver (a tiny command around the library) and the end-to-end
# test against the real service on loopback.
check_PROGRAMS += tests/service/upload_driver
tests_service_upload_driver_SOURCES = tests/service/upload_driver.c
tests_service_upload_driver_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/nodeagent
tests_service_upload_driver_LDADD = nodeagent/libupload.la
if HAVE_SERVICE
if HAVE_CURL
TESTS += tests/service/t0640-upload.sh
endif
endif
EXTRA_DIST += tests/service/t0640-upload.sh
