#!/usr/bin/env bash
# Detection overhead (docs/PERFORMANCE.md, "Detection overhead").
#
#   bash tests/bench/detect/run-detect.sh [--builddir DIR] [--reps N]
#        [--periods "default 250 1000 2500"] [--scale K] [--pin] [--stand-in]
#        [--workloads "compute sharing"]
#   bash tests/bench/detect/run-detect.sh [--builddir DIR] --long SECONDS
#        [--start-period US]
#
# For a compute-bound workload (2 threads of register arithmetic) and a
# sharing-heavy one (a producer/consumer pair over a 256 KiB buffer), both
# from tests/workloads with a fixed amount of work (about 0.5 s and 1 s on
# 2 idle cores; --scale K multiplies it), and for each sampling
# period (µs of thread CPU time, or "default": the agent's own choice, no
# --period-us, from the sample cost it measures at start and its 1%
# budget), runs the application alone and under the
# detector, interleaved (each repetition runs the rows in a random order,
# and each row's two runs in a random order), --reps times each (default
# 5; --workloads runs only some).  The application times itself
# (elapsed_s, from its start barrier to its end), so start-up of the tool
# is not counted.
# Prints a Markdown table: medians, ratio detected/alone of the elapsed
# time and of the application's own CPU time (user + system: it includes
# the sampling interrupts and is much less disturbed than elapsed time by
# other jobs on a shared machine), the interquartile range of the
# repetitions' own ratios (detected / the alone run just before it: how
# far the noise reaches), the tool's CPU time, its peak resident
# memory, samples per second and the share decoded to a data address.
# For "default" rows the period column is the median period the agent
# chose and "cost µs" the median sample cost it measured (from its
# --verbose line).
#
# --long SECONDS: one run of the sharing workload for SECONDS of wall time
# under the agent at its default (or starting at --start-period US and
# adapting, as `--period-us US --overhead 1` does), printing the period
# history (stats.sample_periods), the agent's last overhead estimate, and
# the samples per second of application CPU; it shows the adaptive period
# converging on a long run.
#
# The detector is `commap run --mode dynamic --period-us P` when commap run
# works, as a dry run on a synthetic copy of this machine ("pack:1 core:N
# pu:1", N = online CPUs): detection and mapping, no pinning, so the ratio
# is the cost of watching, not the effect of placement (on a shared 2-core
# VM pinning mostly measures the neighbours); --pin lets it pin for real; otherwise, or with --stand-in, `perf record -e cpu-clock:u -c P
# --user-regs=...` (the same samples the agent asks the kernel for, written
# to a file instead of decoded) and the table says so.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
builddir="$top/build-bench"
reps=5
periods="default 250 1000 2500"
standin=0
long=0
start_period=
pin=0
scale=1
workloads="compute sharing"
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) builddir=$(cd "$2" && pwd); shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--periods) periods=$2; shift 2 ;;
	--stand-in) standin=1; shift ;;
	--pin) pin=1; shift ;;
	--scale) scale=$2; shift 2 ;;
	--workloads) workloads=$2; shift 2 ;;
	--long) long=$2; shift 2 ;;
	--start-period) start_period=$2; shift 2 ;;
	*) echo "run-detect.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done

if [ ! -f "$builddir/Makefile" ]; then
	[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null)
	mkdir -p "$builddir"
	(cd "$builddir" && "$top/configure" -q)
fi
if grep -q '^SAN_CFLAGS = -fsanitize' "$builddir/Makefile"; then
	echo "run-detect.sh: $builddir is a sanitizer build; use another --builddir" >&2
	exit 2
fi
make -C "$builddir" -j2 tests/workloads/wl-threads >/dev/null
make -C "$builddir" -j2 cli/commap >/dev/null 2>&1 || true
wl="$builddir/tests/workloads/wl-threads"
commap="$builddir/cli/commap"
T=$(mktemp -d "${TMPDIR:-/tmp}/commap-detect.XXXXXX")
trap 'rm -rf "$T"' EXIT

tool=perf
if [ "$standin" -eq 0 ] && [ -x "$commap" ] &&
	"$commap" run --output "$T/probe.json" -- true >/dev/null 2>&1 &&
	[ -s "$T/probe.json" ]; then
	tool=agent
fi
dry=(--topology "pack:1 core:$(nproc) pu:1")
[ "$pin" -eq 1 ] && dry=()
regs=ax,bx,cx,dx,si,di,bp,sp,ip,r8,r9,r10,r11,r12,r13,r14,r15

# Descendants of a pid (children, grandchildren, ...).
descendants() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

# Peak VmHWM (KiB) of the tool: the descendants of PID that are not the
# application nor /usr/bin/time, polled every 50 ms until PID ends.
watch_peak() {
	local pid=$1 peak=0 v p
	while kill -0 "$pid" 2>/dev/null; do
		for p in $(descendants "$pid"); do
			case $(cat "/proc/$p/comm" 2>/dev/null) in
			wl-threads|time|"") continue ;;
			esac
			v=$(awk '/^VmHWM/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
			[ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
		done
		sleep 0.05
	done
	echo "$peak"
}

# detected PERIOD_US OUT [--peak] -- APP...: run APP under the detector;
# appends "elapsed app_cpu total_cpu peak_kib samples decoded agent_cpu
# period_us cost_us" to OUT, where total_cpu is tool + application (from
# /usr/bin/time), period_us the final period and cost_us the measured
# cost of a sample (-1 when not measured).  PERIOD_US "default": no
# --period-us, the agent chooses.
detected() {
	local period=$1 outf=$2 pid peak=-1 samples app watch=0 cost
	local pargs=(--period-us "$period")
	shift 2
	[ "$1" = --peak ] && { watch=1; shift; }
	shift
	[ "$period" = default ] && pargs=(--verbose)
	if [ "$tool" = agent ]; then
		/usr/bin/time -f "%U %S" -o "$T/time" \
			"$commap" run --quiet --mode dynamic \
			"${pargs[@]}" "${dry[@]}" \
			--output "$T/r.json" -- "$@" >"$T/app" 2>"$T/tool" &
	else
		/usr/bin/time -f "%U %S" -o "$T/time" \
			perf record -q -e cpu-clock:u -c $((period * 1000)) \
			--user-regs=$regs -o "$T/perf.data" -- "$@" \
			>"$T/app" 2>"$T/tool" &
	fi
	pid=$!
	# Polling forks ps tools every 50 ms: only in untimed runs.
	[ "$watch" -eq 1 ] && peak=$(watch_peak "$pid")
	wait "$pid"
	app=$(sed -n 's/.*elapsed_s=\([0-9.]*\) cpu_s=\([0-9.]*\).*/\1 \2/p' "$T/app")
	if [ "$tool" = agent ]; then
		samples=$(python3 -c 'import json,sys; s = json.load(open(sys.argv[1]))["stats"]; print(s["samples"], s["decoded"], s["agent_cpu_s"], s["sample_period_us"])' "$T/r.json")
	else
		samples="$(perf report -i "$T/perf.data" --stats 2>/dev/null |
			awk '/SAMPLE events:/ {print $3; exit}') -1 -1 $period"
	fi
	cost=$(sed -n 's/.*: \([0-9.]*\) us per sample (measured).*/\1/p' \
		"$T/tool" | head -1)
	echo "$app $(awk '{print $1 + $2}' "$T/time") $peak $samples ${cost:--1}" >>"$outf"
}

# --long: one long run of the sharing workload, the period history.
# commap run has no --overhead (with --period-us the period is fixed), so
# a start period is given to the agent itself, attached to the running
# workload with --pid.
long_run() {
	local app=("$wl" --pattern pairs --threads 2 --seconds "$long"
		--report-time) apid
	if [ -z "$start_period" ]; then
		"$commap" run --quiet --verbose "${dry[@]}" \
			--output "$T/long.json" -- "${app[@]}" \
			>"$T/app" 2>"$T/tool"
	else
		"${app[@]}" >"$T/app" &
		apid=$!
		"$builddir/nodeagent/commap-agent" --verbose \
			--period-us "$start_period" --overhead 1 "${dry[@]}" \
			--output "$T/long.json" --pid "$apid" 2>"$T/tool" &
		wait "$apid"
		wait
	fi
	python3 - "$T/long.json" "$T/app" "$T/tool" <<'EOF2'
import json, re, sys
s = json.load(open(sys.argv[1]))["stats"]
app = open(sys.argv[2]).read()
tool = open(sys.argv[3]).read()
el, cpu = (float(x) for x in
           re.search(r"elapsed_s=([0-9.]+) cpu_s=([0-9.]+)", app).groups())
m = re.search(r"([0-9.]+) us per sample \((measured|default)\)", tool)
cost = float(m.group(1)) if m else 15.0
print(f"wall {el:.1f} s, application CPU {cpu:.1f} s, "
      f"{s['samples']} samples ({s['samples'] / cpu:.0f} per s of "
      f"application CPU), sample cost {cost} us "
      f"({m.group(2) if m else 'assumed'}), agent CPU {s['agent_cpu_s']:.3f} s")
print("period history [t s, period us]:",
      " ".join(f"[{t:.2f}, {p}]" for t, p in s["sample_periods"]))
ov = s["samples"] * cost * 1e-6 / cpu
print(f"samples x cost / application CPU = {ov:.2%}; "
      f"agent CPU / application CPU = {s['agent_cpu_s'] / cpu:.2%}")
EOF2
}
if [ "$long" != 0 ]; then
	[ "$tool" = agent ] || {
		echo "run-detect.sh: --long needs commap run" >&2
		exit 2
	}
	long_run
	exit 0
fi
# perf record needs a number.
[ "$tool" = agent ] || periods=${periods//default/}

declare -A work=(
	[compute]="--pattern compute --threads 2 --passes $((12000 * scale))"
	[sharing]="--pattern pairs --threads 2 --passes $((30000 * scale))")
for w in $workloads; do
	[ -n "${work[$w]:-}" ] || {
		echo "run-detect.sh: unknown workload '$w' (compute, sharing)" >&2
		exit 2
	}
done
for w in $workloads; do
	for p in $periods; do
		: >"$T/$w.$p.alone"
		: >"$T/$w.$p.with"
	done
done
# alone W P: one run of workload W without the tool, for row (W, P).
alone() {
	# shellcheck disable=SC2086
	"$wl" ${work[$1]} --report-time |
		sed -n 's/.*elapsed_s=\([0-9.]*\) cpu_s=\([0-9.]*\).*/\1 \2/p' \
		>>"$T/$1.$2.alone"
}
# Each repetition runs the rows in a random order, and each row's pair
# in a random order (alone first or detected first): a run's place in the
# sequence (after a detected run whose agent is still writing its result,
# after a long idle gap, ...) then biases no row.
for r in $(seq "$reps"); do
	for row in $(for w in $workloads; do for p in $periods; do
			echo "$w:$p"; done; done | shuf); do
		w=${row%%:*} p=${row#*:}
		if [ $((RANDOM % 2)) -eq 0 ]; then
			alone "$w" "$p"
			# shellcheck disable=SC2086
			detected "$p" "$T/$w.$p.with" -- "$wl" ${work[$w]} --report-time
		else
			# shellcheck disable=SC2086
			detected "$p" "$T/$w.$p.with" -- "$wl" ${work[$w]} --report-time
			alone "$w" "$p"
		fi
	done
done
# One more, untimed, run per row for the tool's peak memory.
for w in $workloads; do
	for p in $periods; do
		# shellcheck disable=SC2086
		detected "$p" "$T/$w.$p.peak" --peak -- "$wl" ${work[$w]} --report-time
	done
done

python3 - "$T" "$tool" "$reps" "$periods" "$pin" "$workloads" <<'EOF'
import statistics as st, sys
d, tool, reps, periods = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
pin = sys.argv[5] == "1"
workloads = sys.argv[6].split()
label = ("commap run (agent" + (", pinning)" if pin else ", dry run)")
         if tool == "agent" else
         "STAND-IN: perf record -e cpu-clock:u --user-regs (no decoding)")
print(f"Detector: {label}; {reps} interleaved repetitions; medians.\n")
print("| workload | period µs | cost µs | alone s | detected s | ratio | "
      "pair ratios IQR | app CPU ratio | tool CPU s | tool CPU / app CPU | "
      "tool peak RSS MiB | samples/s | decoded |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for w in workloads:
    for p in periods:
        arows = [l.split() for l in open(f"{d}/{w}.{p}.alone") if l.strip()]
        alone = [float(r[0]) for r in arows]
        alonecpu = [float(r[1]) for r in arows]
        rows = [l.split() for l in open(f"{d}/{w}.{p}.with") if l.strip()]
        el = [float(r[0]) for r in rows]
        appcpu = [float(r[1]) for r in rows]
        peak = [int(l.split()[3]) for l in open(f"{d}/{w}.{p}.peak")]
        samples = [float(r[4]) for r in rows]
        totcpu = [float(r[2]) for r in rows]
        decoded = [float(r[5]) for r in rows]
        chosen = [float(r[7]) for r in rows]
        costs = [float(r[8]) for r in rows if float(r[8]) >= 0]
        plabel = (f"default ({st.median(chosen):.0f}, "
                  f"{min(chosen):.0f}-{max(chosen):.0f})"
                  if p == "default" else p)
        clabel = (f"{st.median(costs):.1f} ({min(costs):.1f}-{max(costs):.1f})"
                  if costs else "-")
        ratio = st.median(el) / st.median(alone)
        pairs = sorted(e / a for e, a in zip(el, alone))
        q = (st.quantiles(pairs, n=4) if len(pairs) >= 2 else
             [pairs[0]] * 3)
        cratio = st.median(appcpu) / st.median(alonecpu)
        sps = st.median([s / e for s, e in zip(samples, el)])
        dec = (sum(decoded) / sum(samples) if tool == "agent" and
               sum(samples) else float("nan"))
        # The tool's CPU: total (tool + app) minus the app's own.
        tcpu = st.median([t - a for t, a in zip(totcpu, appcpu)])
        frac = tcpu / st.median(appcpu) if tcpu == tcpu else float("nan")
        def f(x, fmt):
            return "n/a" if x != x else format(x, fmt)
        print(f"| {w} | {plabel} | {clabel} | {st.median(alone):.3f} | {st.median(el):.3f} | "
              f"{ratio:.3f} | {q[0]:.3f}-{q[2]:.3f} | {cratio:.3f} | {f(tcpu, '.3f')} | {f(frac, '.3f')} | "
              f"{max(peak) / 1024:.1f} | {sps:.0f} | "
              f"{'n/a' if dec != dec else format(dec, '.1%')} |")
EOF
