# service/: commap-service, the central store of agent results
# (docs/service.md).  Built only when libmicrohttpd, SQLite and munge are
# found (HAVE_SERVICE).  The numbered migrations in sql/ are compiled into
# the binary by service/embed-sql.sh.  The config parser and the result
# validator are pure and unit-tested (and fuzzed) always.
SERVICE_SQL = sql/0001_init.sql sql/0002_models.sql sql/0003_jobs_index.sql \
	sql/0004_model_queue.sql sql/0005_upload_indexes.sql \
	sql/0006_migrations_are_moves.sql sql/0007_model_quarantine.sql \
	sql/0008_cluster.sql
EXTRA_DIST += $(SERVICE_SQL) service/embed-sql.sh docs/service.md
SERVICE_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) -I$(top_srcdir)/service \
	-I$(top_builddir)/service -DCOMMAP_DOCDIR='"$(docdir)"'

service/sql_migrations.c: $(SERVICE_SQL) service/embed-sql.sh
	$(AM_V_GEN)$(MKDIR_P) service && \
	$(SHELL) $(srcdir)/service/embed-sql.sh $@ \
		$(SERVICE_SQL:%=$(srcdir)/%)
CLEANFILES += service/sql_migrations.c

SERVICE_CORE = \
	service/svc_config.h service/svc_config.c \
	service/result_validate.h service/result_validate_internal.h \
	service/result_json.c service/result_validate.c service/result_read.c \
	service/result_validate_traffic.c

# ---- unit tests that need only jansson --------------------------------------
SERVICE_UNIT_TESTS = \
	tests/service/test_svc_config.t \
	tests/service/test_result_validate.t \
	tests/service/test_svc_models.t \
	tests/service/test_svc_model_ranks.t
check_PROGRAMS += $(SERVICE_UNIT_TESTS)
TESTS += $(SERVICE_UNIT_TESTS)
SERVICE_TEST_CFLAGS = $(SERVICE_CFLAGS) -I$(top_srcdir)/tests/unit
tests_service_test_svc_config_t_SOURCES = tests/service/test_svc_config.c \
	service/svc_config.c
tests_service_test_svc_config_t_CFLAGS = $(SERVICE_TEST_CFLAGS)
tests_service_test_svc_config_t_LDADD = lib/libcommap.la
tests_service_test_result_validate_t_SOURCES = \
	tests/service/test_result_validate.c service/result_validate.c \
	service/result_json.c service/result_read.c \
	service/result_validate_traffic.c
tests_service_test_result_validate_t_CFLAGS = $(SERVICE_TEST_CFLAGS)
tests_service_test_result_validate_t_LDADD = lib/libcommap.la \
	$(JANSSON_LIBS) -lm
# Learned models: the aggregation is pure (svc_model_merge.c).
tests_service_test_svc_models_t_SOURCES = tests/service/test_svc_models.c \
	service/svc_model_merge.c service/svc_model_scan.c \
	service/svc_model_key.c service/svc_model_sparse.c \
	service/result_validate.c service/result_json.c service/result_read.c \
	service/result_validate_traffic.c
tests_service_test_svc_models_t_CFLAGS = $(SERVICE_TEST_CFLAGS)
tests_service_test_svc_models_t_LDADD = lib/libcommap.la \
	$(JANSSON_LIBS) -lm
# The rank matrix across nodes from node results (pure).
tests_service_test_svc_model_ranks_t_SOURCES = \
	tests/service/test_svc_model_ranks.c service/svc_model_ranks.c
tests_service_test_svc_model_ranks_t_CFLAGS = $(SERVICE_TEST_CFLAGS)
tests_service_test_svc_model_ranks_t_LDADD = lib/libcommap.la \
	$(JANSSON_LIBS) -lm

if HAVE_SERVICE
sbin_PROGRAMS += service/commap-service
service_commap_service_SOURCES = $(SERVICE_CORE) \
	service/main.c \
	service/svc_log.h service/svc_log.c \
	service/svc_db.h service/svc_db.c service/svc_db_list.c \
	service/svc_db_internal.h service/svc_db_read.c service/svc_db_pool.c \
	service/svc_auth.h service/svc_auth.c \
	service/svc_session.h service/svc_session.c \
	service/svc_web_login.h service/svc_web_login.c \
	service/svc_metrics.h service/svc_metrics.c \
	service/svc_api.h service/svc_api.c \
	service/svc_http.h service/svc_http.c \
	service/svc_conn_guard.h service/svc_conn_guard.c \
	service/svc_web.h service/svc_web.c service/svc_web_internal.h \
	service/svc_web_apps.c service/svc_web_models.c \
	service/svc_web_compare.c service/svc_web_matrix.c \
	service/svc_models.h service/svc_models.c service/svc_model_merge.c \
	service/svc_model_internal.h service/svc_model_scan.c \
	service/svc_model_key.c service/svc_model_sparse.c \
	service/svc_model_worker.c service/svc_model_quarantine.c \
	service/svc_model_ranks.h service/svc_model_ranks.c \
	service/svc_model_ranks_api.c \
	service/svc_retention.h service/svc_retention.c
nodist_service_commap_service_SOURCES = service/sql_migrations.c
service_commap_service_CFLAGS = $(SERVICE_CFLAGS) $(MHD_CFLAGS) \
	$(SQLITE_CFLAGS) $(MUNGE_CFLAGS) -pthread
service_commap_service_CPPFLAGS = $(AM_CPPFLAGS) $(REPORT_CPPFLAGS) \
	-DSYSCONFDIR='"$(sysconfdir)"'
service_commap_service_LDADD = report/librender.la lib/libcommap.la \
	$(MHD_LIBS) \
	$(SQLITE_LIBS) $(MUNGE_LIBS) $(JANSSON_LIBS) -lpthread -lm

SERVICE_DB_TESTS = tests/service/test_svc_db.t \
	tests/service/test_svc_session.t
check_PROGRAMS += $(SERVICE_DB_TESTS)
TESTS += $(SERVICE_DB_TESTS)
tests_service_test_svc_db_t_SOURCES = tests/service/test_svc_db.c \
	service/svc_db.c service/svc_db_list.c service/result_validate.c \
	service/svc_db_read.c service/svc_db_pool.c service/svc_db_internal.h \
	service/result_json.c service/result_read.c \
	service/result_validate_traffic.c \
	service/svc_retention.c
nodist_tests_service_test_svc_db_t_SOURCES = service/sql_migrations.c
tests_service_test_svc_db_t_CFLAGS = $(SERVICE_TEST_CFLAGS) \
	$(SQLITE_CFLAGS) -pthread
tests_service_test_svc_db_t_LDADD = lib/libcommap.la $(SQLITE_LIBS) \
	$(JANSSON_LIBS) -lpthread -lm
tests_service_test_svc_session_t_SOURCES = \
	tests/service/test_svc_session.c service/svc_session.c
tests_service_test_svc_session_t_CFLAGS = $(SERVICE_TEST_CFLAGS) -pthread
tests_service_test_svc_session_t_LDADD = -lpthread

# Integration: the real daemon on loopback, real munge, real users.
SERVICE_INTEGRATION_TESTS = \
	tests/service/t0600-service-api.sh \
	tests/service/t0610-service-kill.sh \
	tests/service/t0620-web.sh \
	tests/service/t0625-web-login.sh \
	tests/service/t0630-chromium.sh \
	tests/service/t0660-models.sh \
	tests/service/t0665-model-ranks.sh \
	tests/service/t0670-retention.sh \
	tests/service/t0680-hostile-clients.sh \
	tests/service/t0685-reused-job-ids.sh \
	tests/service/t0690-model-quarantine.sh \
	tests/service/t0695-web-history.sh
TESTS += $(SERVICE_INTEGRATION_TESTS)
# Did it help, in `commap report` too (the CLI's service client).
if HAVE_CURL
TESTS += tests/service/t0656-report-help.sh
endif

# Benchmark (built by make check, run by hand: docs/PERFORMANCE.md,
# "Service"): tests/bench/service/run-service.sh.
check_PROGRAMS += tests/bench/service/bench_service
tests_bench_service_bench_service_SOURCES = \
	tests/bench/service/bench_service.c
tests_bench_service_bench_service_CFLAGS = $(AM_CFLAGS) $(MUNGE_CFLAGS) \
	-pthread
tests_bench_service_bench_service_LDADD = $(MUNGE_LIBS) -lpthread
endif
EXTRA_DIST += tests/service/t0600-service-api.sh \
	tests/service/t0610-service-kill.sh tests/service/service-lib.sh \
	tests/service/upload-stream.py \
	tests/service/t0620-web.sh tests/service/t0630-chromium.sh \
	tests/service/t0625-web-login.sh \
	tests/service/web-check.py tests/service/layout-check.js tests/bench/service/run-service.sh \
	tests/bench/service/run-flood.sh tests/bench/service/run-list-sort.sh \
	tests/service/t0660-models.sh tests/service/t0670-retention.sh \
	tests/service/t0665-model-ranks.sh \
	tests/service/t0680-hostile-clients.sh tests/service/conn-flood.py \
	tests/service/t0685-reused-job-ids.sh \
	tests/service/t0690-model-quarantine.sh \
	tests/service/t0695-web-history.sh tests/service/t0656-report-help.sh

# Fuzz target for the upload parser (tests/fuzz/standalone_driver.c runs it
# over tests/fuzz/corpus/result_upload/ plus mutations in make check;
# tests/fuzz/run-libfuzzer.sh for real fuzzing).
SERVICE_FUZZ_TESTS = tests/fuzz/fuzz_result_upload.t
check_PROGRAMS += $(SERVICE_FUZZ_TESTS)
TESTS += $(SERVICE_FUZZ_TESTS)
tests_fuzz_fuzz_result_upload_t_SOURCES = tests/fuzz/fuzz_result_upload.c \
	tests/fuzz/standalone_driver.c service/result_validate.c \
	service/result_json.c service/result_read.c \
	service/result_validate_traffic.c
tests_fuzz_fuzz_result_upload_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/service -DFUZZ_TARGET='"result_upload"'
tests_fuzz_fuzz_result_upload_t_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_fuzz_result_upload_t_LDADD = lib/libcommap.la $(JANSSON_LIBS) -lm

# /metrics: what the agents did, from the stored results (svc_metrics.c).
EXTRA_DIST += tests/service/t0646-metrics-agents.sh
if HAVE_SERVICE
TESTS += tests/service/t0646-metrics-agents.sh
endif
