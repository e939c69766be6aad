# End-to-end tests: a real Slurm cluster started by the tests themselves
# (tests/e2e/e2e-lib.sh); skipped with a reason when not root or Slurm is
# missing.
E2E_TESTS = \
	tests/e2e/t0500-spank-plugin.sh \
	tests/e2e/t0510-agent.sh
TESTS += $(E2E_TESTS)
EXTRA_DIST += $(E2E_TESTS) tests/e2e/e2e-lib.sh \
	tests/e2e/recording-agent.sh tests/e2e/stuck-agent.sh
