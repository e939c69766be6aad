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
status=0
make -j"$(nproc)" check || status=$?

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
