# Integration tests: numbered shell scripts speaking TAP (tap.sh), run
# against the built binaries; AM_TESTS_ENVIRONMENT gives them top_srcdir
# and top_builddir.
INTEGRATION_TESTS = \
	tests/integration/t0100-map.sh \
	tests/integration/t0110-cost.sh \
	tests/integration/t0120-matrix-gen.sh \
	tests/integration/t0130-errors.sh \
	tests/integration/t0140-help.sh \
	tests/integration/t0150-deploy-files.sh \
	tests/integration/t0160-man-pages.sh \
	tests/integration/t0170-completion.sh \
	tests/integration/t0180-bench-map.sh
TESTS += $(INTEGRATION_TESTS)
EXTRA_DIST += $(INTEGRATION_TESTS) tests/integration/tap.sh \
	tests/integration/data/pack2-l3-core4-pu2.xml
