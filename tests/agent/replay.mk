# Recordings and their replay (nodeagent/record.mk): the live record and
# replay test, and the fuzz target of the recording reader.
if HAVE_CAPSTONE
TESTS += tests/agent/t0780-replay.sh tests/agent/t0795-replay-waits.sh
FUZZ_TESTS_RECORDING = tests/fuzz/fuzz_recording.t
check_PROGRAMS += $(FUZZ_TESTS_RECORDING)
TESTS += $(FUZZ_TESTS_RECORDING)
endif
EXTRA_DIST += tests/agent/t0780-replay.sh tests/agent/t0795-replay-waits.sh \
	tests/data/recordings
tests_fuzz_fuzz_recording_t_SOURCES = tests/fuzz/fuzz_recording.c \
	tests/fuzz/standalone_driver.c
tests_fuzz_fuzz_recording_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/nodeagent -DFUZZ_TARGET='"recording"'
tests_fuzz_fuzz_recording_t_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/tests/fuzz
tests_fuzz_fuzz_recording_t_LDADD = nodeagent/libagent.la \
	nodeagent/libtrack.la lib/libcommap.la \
	$(CAPSTONE_LIBS) -lm
if HAVE_CAPSTONE
check_PROGRAMS += tests/unit/test_record.t
TESTS += tests/unit/test_record.t
endif
tests_unit_test_record_t_SOURCES = tests/unit/test_record.c
tests_unit_test_record_t_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/nodeagent
tests_unit_test_record_t_LDADD = nodeagent/libagent.la \
	nodeagent/libtrack.la $(UNIT_LDADD) \
	$(CAPSTONE_LIBS)
