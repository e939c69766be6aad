#!/usr/bin/env bash
# Run commap's whole test suite from a clean build tree.
#
#   bash tests/run.sh               -Werror build, make check (unit,
#                                   integration, fuzz smoke runs)
#   bash tests/run.sh --sanitizers  the same under ASan + UBSan
#
# Installs missing Debian packages first (as root) unless
# COMMAP_SKIP_DEPS=1.  Prints "N passed, N failed, N skipped" at the end
# and exits non-zero if anything failed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=check
case "${1:-}" in
	"") ;;
	--sanitizers) mode=sanitizers ;;
	*) echo "usage: tests/run.sh [--sanitizers]" >&2; exit 2 ;;
esac

[ "${COMMAP_SKIP_DEPS:-0}" = 1 ] || bash "$top/deploy/install-deps.sh"

cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ]; then
	./autogen.sh >/dev/null 2>&1 || ./autogen.sh
fi

builddir="$top/build-$mode"
conf=(--enable-werror)
[ "$mode" = sanitizers ] && conf+=(--enable-sanitizers)
rm -rf "$builddir"
mkdir -p "$builddir"
cd "$builddir"
"$top/configure" -q "${conf[@]}"
make -j"$(nproc)" >/dev/null

# The machine's load, for reading the log: the suite must pass on a busy
# machine too (docs/testing.md), and this says how busy it was.
echo "$mode: load average before the tests: $(cut -d' ' -f1-3 /proc/loadavg)"

# The order the tests start in.  make -j starts them in the order of
# TESTS, except that each compiled test waits for the end of the list
# (config.h's rule, a no-op after the build above, sends make round the
# test's prerequisites again), so the longest unit test ran alone at the
# end.  Told that config.h is up to date (it is: the build is complete),
# make keeps the order, and the order starts the slowest tests first
# (under the sanitizers on a busy machine each took 40 s to 7 minutes:
# docs/PERFORMANCE.md, "The test suite on a busy machine"), so that the
# short ones fill both slots at the end.
slow_first=(
	tests/agent/test_placement_property.t
	tests/workloads/t0730-accuracy.sh
	tests/agent/t0770-placement.sh
	tests/agent/t0720-learned.sh
	tests/e2e/t0570-learned-mpi.sh
	tests/agent/t0760-mpi-messages.sh
	tests/agent/t0740-stability.sh
	tests/fuzz/fuzz_map_weights.t
	tests/service/t0680-hostile-clients.sh
	tests/agent/t0700-run.sh
	tests/e2e/t0580-cgroup.sh
	tests/agent/t0710-agent.sh
)
all=" $(printf 'commap-tests:\n\t@echo $(TESTS)\n' |
	make -s -f Makefile -f - commap-tests 2>/dev/null) "
order=
for t in "${slow_first[@]}"; do
	[[ $all == *" $t "* ]] && order+="$t "
done
for t in $all; do
	[[ " $order" == *" $t "* ]] || order+="$t "
done
# children_cpu: $cpu, the CPU seconds (user + system) of the processes
# this shell waited for so far (times in this shell, not a subshell).
children_cpu() {
	times >"$builddir/times.txt"
	cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) {
		split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.0f", t }' \
		"$builddir/times.txt")
}
status=0
start=$(date +%s)
children_cpu
cpu0=$cpu
if [ -n "${order// /}" ]; then
	make -j"$(nproc)" check AM_MAKEFLAGS="-o config.h" TESTS="$order" ||
		status=$?
else
	make -j"$(nproc)" check || status=$?
fi
# The CPU time the tests' processes used (daemons they left running not
# counted) against the wall time: how many CPUs the suite kept busy.
children_cpu
echo "$mode: make check took $(( $(date +%s) - start )) s," \
	"$(( cpu - cpu0 )) s of CPU time (user + system)"

# One closing line in the plain form CI reads.
count() { grep -m1 "^# $1:" test-suite.log 2>/dev/null | awk '{print $3}'; }
if [ -f test-suite.log ]; then
	pass=$(count PASS); fail=$(count FAIL); err=$(count ERROR)
	xpass=$(count XPASS); skip=$(count SKIP)
	fail=$(( ${fail:-0} + ${err:-0} + ${xpass:-0} ))
	[ "$fail" -gt 0 ] && cat test-suite.log
	# Where the wall time went (tests/test-times.sh): the slowest
	# tests, and the span of the whole run.
	echo "$mode: the slowest tests:"
	bash "$top/tests/test-times.sh" "$builddir" 15 || true
	echo "$mode: ${pass:-0} passed, $fail failed, ${skip:-0} skipped" \
		"(load average after: $(cut -d' ' -f1-3 /proc/loadavg))"
fi
exit $status
