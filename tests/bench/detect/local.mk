# tests/bench/detect: the node agent's detection overhead (run by hand,
# docs/PERFORMANCE.md "Detection overhead"); included from
# tests/workloads/local.mk.  It runs the workloads of tests/workloads.
EXTRA_DIST += tests/bench/detect/run-detect.sh tests/bench/detect/run-accuracy.sh \
	tests/bench/detect/run-budget.sh
