#!/usr/bin/env bash
# Wall time of each test whose result is in a build directory (from the
# last make check that ran it), the slowest first, and the span from the
# first test's start to the last one's end.
#
#   bash tests/test-times.sh [BUILDDIR] [N]     the N slowest (default 15)
#   bash tests/test-times.sh BUILDDIR all       every test
#
# Automake's harness opens a test's .log when the test starts and writes
# its .trs when it ends, so a test's wall time is the .trs's modification
# time less the .log's birth time.  File systems that keep no birth time
# (stat prints 0) give no figures: said so, never a guess.
set -euo pipefail
dir=${1:-.}
n=${2:-15}
cd "$dir"

# One line per test: start end name, in seconds with nanoseconds.
rows=$(find . -name '*.trs' -newer config.status -print0 2>/dev/null |
	while IFS= read -r -d '' trs; do
		log=${trs%.trs}.log
		[ -f "$log" ] || continue
		stat -c '%.3W %.3Y' "$log" "$trs" | tr '\n' ' '
		echo "${trs#./}"
	done | awk '{ print $1, $4, $5 }')
if [ -z "$rows" ]; then
	echo "test times: no test results under $dir" >&2
	exit 0
fi
if awk '$1 == 0 || $1 == "-" { bad = 1 } END { exit !bad }' <<<"$rows"; then
	echo "test times: this file system keeps no birth times" >&2
	exit 0
fi

awk '{ printf "%8.1f s  %s\n", $2 - $1, substr($3, 1, length($3) - 4) }' \
	<<<"$rows" | sort -rn | { [ "$n" = all ] && cat || head -n "$n"; }
awk 'NR == 1 || $1 < s { s = $1 } $2 > e { e = $2 } { t += $2 - $1 }
	END { printf "%d tests, %.0f s from the first start to the last end, " \
		"%.0f s of test time in all\n", NR, e - s, t }' <<<"$rows"
