# Integration tests: numbered shell scripts speaking TAP, run against the
# built binaries.
INTEGRATION_TESTS =
TESTS += $(INTEGRATION_TESTS)
EXTRA_DIST += $(INTEGRATION_TESTS)
