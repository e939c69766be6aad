#!/usr/bin/env bash
# Run the mapping benchmark (docs/PERFORMANCE.md, "Mapping").
#
#   bash tests/bench/run-map.sh [--builddir DIR] [bench_map options...]
#
# Uses DIR/tests/bench/map (default DIR: build-bench at the top of the
# tree), configuring and building it first if it is missing.  A build with
# sanitizers is refused: its times mean nothing.  Without a --format option
# the table is printed as Markdown, ready for docs/PERFORMANCE.md.
# Examples:
#   bash tests/bench/run-map.sh                       # the documented table
#   bash tests/bench/run-map.sh --sizes 1024 --families random --reps 10
#   bash tests/bench/run-map.sh --check --quiet       # auto never > Scotch?
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
builddir="$top/build-bench"

if [ "${1:-}" = --builddir ]; then
	[ $# -ge 2 ] || { echo "run-map.sh: --builddir needs a directory" >&2; exit 2; }
	builddir=$(cd "$2" 2>/dev/null && pwd || echo "$2")
	shift 2
fi

bench="$builddir/tests/bench/map"
if [ ! -x "$bench" ]; then
	if [ ! -x "$top/configure" ]; then
		(cd "$top" && ./autogen.sh >/dev/null)
	fi
	mkdir -p "$builddir"
	if [ ! -f "$builddir/Makefile" ]; then
		(cd "$builddir" && "$top/configure" -q)
	fi
fi

if grep -q '^SAN_CFLAGS = -fsanitize' "$builddir/Makefile" 2>/dev/null; then
	echo "run-map.sh: $builddir is a sanitizer build; use another --builddir" >&2
	exit 2
fi
[ -x "$bench" ] || make -C "$builddir" -j"$(nproc)" tests/bench/map >/dev/null

args=("$@")
case " $* " in
	*" --format "* | *" --format="*) ;;
	*) args=(--format markdown "${args[@]}") ;;
esac
exec "$bench" "${args[@]}"
