#!/usr/bin/env bash
# Never slower than unpinned (docs/PERFORMANCE.md, "Placement against
# unpinned").
#
#   bash tests/bench/placement/run-placement.sh [--builddir DIR] [--reps N]
#        [--threads "2 8 16"] [--patterns "pairs clusters compute"]
#        [--passes N] [--agent-args "--period-us 1000"]
#
# For each workload of tests/workloads/wl-threads (a pattern) at each
# thread count, runs it unpinned and under `commap run` (dynamic mode,
# real pinning on this machine), interleaved in a random order within
# each repetition, --reps times (default 5), with a fixed amount of work
# (--passes buffer passes per thread, default 8000: 0.4 s at 2 threads,
# 1.6 s at 8 on 2 idle cores).  The program times itself (elapsed_s from its
# start barrier), so the agent's start-up is not counted.  Prints a
# Markdown table: median elapsed unpinned and under commap, their ratio
# (> 1: commap slower), the range of the repetitions' own ratios, and
# what the agent did in the median commap run (pins, mappings, guard
# undos, or why it pinned nothing).  Also prints the machine and its load
# average before and after, since the machine may be shared.
# --agent-args: more options of `commap run` (a fixed --period-us makes
# the agent map short runs on a loaded machine, where its calibrated
# period leaves it too few samples to decide).
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
builddir="$top/build"
reps=5
threads="2 8 16"
patterns="pairs clusters compute"
passes=8000
agent_args=
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) builddir=$(cd "$2" && pwd); shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	--patterns) patterns=$2; shift 2 ;;
	--passes) passes=$2; shift 2 ;;
	--agent-args) agent_args=$2; shift 2 ;;
	*) echo "run-placement.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
commap="$builddir/cli/commap"
wl="$builddir/tests/workloads/wl-threads"
export COMMAP_AGENT="${COMMAP_AGENT:-$builddir/nodeagent/commap-agent}"
for f in "$commap" "$wl" "$COMMAP_AGENT"; do
	[ -x "$f" ] || { echo "run-placement.sh: $f: not built" >&2; exit 2; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

elapsed() { sed -n 's/.*elapsed_s=\([0-9.]*\).*/\1/p' "$1"; }

# one RUN-KIND PATTERN N REP: elapsed seconds to stdout
one() {
	local kind=$1 pat=$2 n=$3 rep=$4 out="$T/$1-$2-$3-$4"
	local args=(--threads "$n" --pattern "$pat" --passes "$passes"
		    --report-time)
	if [ "$kind" = alone ]; then
		"$wl" "${args[@]}" >"$out.txt" 2>/dev/null
	else
		# shellcheck disable=SC2086
		"$commap" run --quiet $agent_args --output "$out.json" -- "$wl" \
			"${args[@]}" >"$out.txt" 2>/dev/null
	fi
	elapsed "$out.txt"
}

echo "commap run options: --quiet ${agent_args:-(none)}"
echo "machine: $(nproc) CPUs, $(uname -r); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| pattern | threads | unpinned s (median) | commap s (median) | ratio | ratios min-max | agent in the median run |"
echo "|---|---|---|---|---|---|---|"
for pat in $patterns; do
	for n in $threads; do
		: >"$T/a" ; : >"$T/c"; : >"$T/r"
		for rep in $(seq "$reps"); do
			if [ $((RANDOM % 2)) = 0 ]; then
				a=$(one alone "$pat" "$n" "$rep")
				c=$(one commap "$pat" "$n" "$rep")
			else
				c=$(one commap "$pat" "$n" "$rep")
				a=$(one alone "$pat" "$n" "$rep")
			fi
			echo "$a" >>"$T/a"
			echo "$c $rep" >>"$T/c"
			python3 -c "print($c / $a)" >>"$T/r"
		done
		python3 - "$T" "$pat" "$n" <<'PY'
import json, statistics, sys
T, pat, n = sys.argv[1:]
a = [float(x) for x in open(f"{T}/a")]
c = [tuple(x.split()) for x in open(f"{T}/c")]
r = [float(x) for x in open(f"{T}/r")]
cs = sorted(c, key=lambda x: float(x[0]))
med = cs[len(cs) // 2]
d = json.load(open(f"{T}/commap-{pat}-{n}-{med[1]}.json"))
undo = sum(e["reason"] == "guard-undo" for e in d["timeline"])
what = (f"not pinned: {d['not_pinned'].split(':')[0]}" if d.get("not_pinned")
        else f"{d['stats']['pins']} pins, {len(d['timeline'])} mappings, "
             f"{undo} guard undos")
ma, mc = statistics.median(a), float(med[0])
print(f"| {pat} | {n} | {ma:.3f} | {mc:.3f} | {mc / ma:.3f} | "
      f"{min(r):.3f}-{max(r):.3f} | {what} |")
PY
	done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
