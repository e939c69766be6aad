#!/bin/sh
# Build a matrix fuzz target with libFuzzer (clang, ASan, UBSan) and run it.
#
#   tests/fuzz/run-libfuzzer.sh TARGET [SECONDS] [-- libFuzzer options]
#
# TARGET is fuzz_matrix_json or fuzz_matrix_csv; SECONDS defaults to 60.
# Works from any directory; builds in $FUZZ_WORKDIR (default
# /tmp/commap-fuzz-TARGET), grows a working corpus there from the seeds in
# tests/fuzz/corpus/TARGET (the seeds themselves are not touched) and leaves
# any crash-* file in it.  Exit status: libFuzzer's (non-zero on a crash).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
target=${1:?usage: run-libfuzzer.sh TARGET [SECONDS] [-- options]}
secs=${2:-60}
[ $# -ge 2 ] && shift 2 || shift $#
[ "${1:-}" = -- ] && shift
case $target in
fuzz_matrix_json|fuzz_matrix_csv) ;;
*) echo "run-libfuzzer.sh: unknown target '$target'" >&2; exit 2 ;;
esac
CC=${CC:-clang}
work=${FUZZ_WORKDIR:-/tmp/commap-fuzz-$target}
mkdir -p "$work/corpus"

lib="error.c rand.c matrix.c matrix_io.c matrix_gen.c"
srcs="$here/$target.c"
for f in $lib; do srcs="$srcs $top/lib/$f"; done
# shellcheck disable=SC2086
$CC -std=gnu11 -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$top/lib" -I"$here" -o "$work/$target" $srcs \
	$(pkg-config --cflags --libs jansson) -lm

dict=
[ -f "$here/$target.dict" ] && dict="-dict=$here/$target.dict"
cd "$work"
# shellcheck disable=SC2086
exec "./$target" -max_total_time="$secs" -max_len=4096 -timeout=10 \
	-rss_limit_mb=4096 -print_final_stats=1 $dict "$@" \
	"$work/corpus" "$here/corpus/$target"
