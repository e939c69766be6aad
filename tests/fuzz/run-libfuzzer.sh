#!/bin/sh
# Build a fuzz target with libFuzzer (clang, ASan, UBSan) and run it.
#
#   tests/fuzz/run-libfuzzer.sh TARGET [SECONDS] [-- libFuzzer options]
#
# TARGET is one of tests/fuzz/fuzz_*.c without .c; SECONDS defaults to 60.
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
# Sources and libraries of each target (built without configure: an empty
# config.h stands in for the generated one).
lib="lib/error.c lib/rand.c lib/matrix.c lib/matrix_io.c lib/matrix_gen.c"
inc="-I$top/lib -I$here"
libs="$(pkg-config --cflags --libs jansson) -lm"
case $target in
fuzz_matrix_json|fuzz_matrix_csv) ;;
fuzz_map_weights)
	lib=$(cd "$top" && echo lib/*.c)
	libs="$libs $(pkg-config --cflags --libs hwloc)"
	# an input runs two mappings; the exact search alone may use its
	# whole budget (~0.3 s here, ten times that under the sanitizers)
	timeout=60
	;;
fuzz_result_upload)
	lib="$lib service/result_validate.c lib/placement_check.c"
	lib="$lib service/result_json.c service/result_read.c service/result_validate_traffic.c"
	lib="$lib lib/placement_result.c"; inc="$inc -I$top/service" ;;
fuzz_spank_config) lib="lib/error.c spank/spank_config.c"; inc="$inc -I$top/spank" ;;
fuzz_svc_config) lib="lib/error.c service/svc_config.c"; inc="$inc -I$top/service" ;;
fuzz_plugstack) lib="$lib cli/plugstack.c"; inc="$inc -I$top/cli" ;;
fuzz_task_line) lib="$lib nodeagent/agent_opts.c"; inc="$inc -I$top/nodeagent" ;;
fuzz_shm_names) lib="$lib nodeagent/shm_owner.c"; inc="$inc -I$top/nodeagent" ;;
fuzz_srun_line) lib="$lib spank/place_nodes_line.c"; inc="$inc -I$top/spank" ;;
fuzz_rank_matrix)
	lib="$lib service/svc_model_ranks.c spank/place_nodes_answer.c"
	inc="$inc -I$top/service -I$top/spank" ;;
fuzz_ompi_monitoring)
	lib="lib/error.c nodeagent/ompi_monitoring.c nodeagent/user_file.c"
	inc="$inc -I$top/nodeagent" ;;
fuzz_model)
	lib="$lib nodeagent/model_fetch.c nodeagent/upload.c nodeagent/spool.c"
	inc="$inc -I$top/nodeagent"
	libs="$libs $(pkg-config --cflags --libs libcurl) -lmunge"
	;;
fuzz_proc_maps|fuzz_perf_record|fuzz_fault_format|fuzz_decode)
	lib="$lib nodeagent/detect_table.c nodeagent/perf_sample.c"
	lib="$lib nodeagent/perf_record.c nodeagent/perf_open.c"
	lib="$lib nodeagent/fault_sample.c nodeagent/tracepoint.c"
	lib="$lib nodeagent/decode.c"
	inc="$inc -I$top/nodeagent"
	libs="$libs $(pkg-config --cflags --libs capstone)"
	;;
fuzz_cma_record|fuzz_recording)
	# the detection library (nodeagent/local.mk, record.mk)
	lib=$(cd "$top" && echo lib/*.c nodeagent/decode.c \
		nodeagent/perf_*.c nodeagent/detect_table.c \
		nodeagent/shm_owner.c \
		nodeagent/detect_overlap*.c nodeagent/evidence.c \
		nodeagent/collect*.c nodeagent/fault_sample.c \
		nodeagent/tracepoint.c nodeagent/cma_trace.c \
		nodeagent/cma_pair.c \
		nodeagent/cma_attrib.c nodeagent/sample_rate.c \
		nodeagent/numa_balancing.c nodeagent/record.c \
		nodeagent/record_read.c nodeagent/proc_track.c)
	inc="$inc -I$top/nodeagent"
	libs="$libs $(pkg-config --cflags --libs hwloc capstone)"
	;;
fuzz_report_args)
	lib=$(cd "$top" && echo lib/*.c report/render_*.c cli/remote_time.c)
	inc="$inc -I$top/report -I$top/cli"
	libs="$libs $(pkg-config --cflags --libs hwloc)"
	;;
*) echo "run-libfuzzer.sh: unknown target '$target'" >&2; exit 2 ;;
esac
CC=${CC:-clang}
work=${FUZZ_WORKDIR:-/tmp/commap-fuzz-$target}
mkdir -p "$work/corpus" "$work/include"
: >"$work/include/config.h"
# The seeds: tests/fuzz/corpus/TARGET or, for newer targets, the name
# without "fuzz_".
seeds=$here/corpus/$target
[ -d "$seeds" ] || seeds=$here/corpus/${target#fuzz_}

srcs="$here/$target.c"
for f in $lib; do srcs="$srcs $top/$f"; done
# shellcheck disable=SC2086
$CC -std=gnu11 -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$work/include" $inc -o "$work/$target" $srcs $libs

dict=
[ -f "$here/$target.dict" ] && dict="-dict=$here/$target.dict"
cd "$work"
# shellcheck disable=SC2086
exec "./$target" -max_total_time="$secs" -max_len=4096 -timeout="${timeout:-10}" \
	-rss_limit_mb=4096 -print_final_stats=1 $dict "$@" \
	"$work/corpus" "$seeds"
