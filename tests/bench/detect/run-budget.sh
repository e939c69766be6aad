#!/usr/bin/env bash
# The detection budget over a run (docs/PERFORMANCE.md, "Detection
# budget"): what the agent at its default settings costs the application,
# as ratios against unsampled copies in the same run.
#
#   bash tests/bench/detect/run-budget.sh [--builddir DIR] [--seconds S]
#        [--threads N] [--buffer-kib K] [--busy]
#
# Three copies of tests/workloads/wl-progress (N threads in producer/
# consumer pairs, default 8, each pair over a buffer of K KiB, default
# 256; S seconds, default 60) start together: one
# under `commap run` (a dry run on a synthetic copy of this machine, so
# nothing is pinned: the cost of watching), two alone.  Each prints its
# passes and its process CPU time every second.  The overhead is the
# sampled copy's CPU time per pass over an unsampled one's, over the run
# and in every 1 s window; the two unsampled copies against each other
# give the noise floor of the same measurement.  --busy runs two busy
# loops beside them (killed on every way out).  Prints the ratios, the
# agent's sampling phases (stats.sample_budget: what it spent when) and
# the samples per second of application CPU time.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
builddir="$top/build-bench"
seconds=60
threads=8
buffer=256
busy=0
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) builddir=$(cd "$2" && pwd); shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	--buffer-kib) buffer=$2; shift 2 ;;
	--busy) busy=1; shift ;;
	*) echo "run-budget.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
wl="$builddir/tests/workloads/wl-progress"
commap="$builddir/cli/commap"
export COMMAP_AGENT="$builddir/nodeagent/commap-agent"
for f in "$wl" "$commap" "$COMMAP_AGENT"; do
	[ -x "$f" ] || { echo "run-budget.sh: $f not built" >&2; exit 2; }
done
T=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
if [ "$busy" = 1 ]; then
	for _ in 1 2; do
		( while :; do :; done ) &
		pids+=($!)
	done
fi
args=(--threads "$threads" --seconds "$seconds" --buffer-kib "$buffer")
"$commap" run --quiet --topology "pack:1 core:$(nproc) pu:1" \
	--output "$T/result.json" -- "$wl" "${args[@]}" >"$T/sampled" &
a=$!
"$wl" "${args[@]}" >"$T/alone1" &
b=$!
"$wl" "${args[@]}" >"$T/alone2" &
c=$!
wait "$a" "$b" "$c"
python3 - "$T" "$busy" <<'EOF'
import json, statistics, sys

d, busy = sys.argv[1], sys.argv[2] == "1"

def series(name):
    rows = []
    for line in open(f"{d}/{name}"):
        kv = dict(f.split("=") for f in line.split())
        rows.append((float(kv["work"]), float(kv["cpu_ns"]) / 1e9))
    return rows

def ratios(x, y):
    """CPU time per pass of x over y: the whole run, and per 1 s window."""
    n = min(len(x), len(y))
    run = (x[n - 1][1] / x[n - 1][0]) / (y[n - 1][1] / y[n - 1][0])
    win, prev = [], ((0.0, 0.0), (0.0, 0.0))
    for k in range(n):
        dxw, dxc = x[k][0] - prev[0][0], x[k][1] - prev[0][1]
        dyw, dyc = y[k][0] - prev[1][0], y[k][1] - prev[1][1]
        prev = (x[k], y[k])
        if dxw > 0 and dyw > 0 and dyc > 0:
            win.append((dxc / dxw) / (dyc / dyw))
    return run, win

s, u1, u2 = series("sampled"), series("alone1"), series("alone2")
# against the mean of the two unsampled copies' CPU per pass
u = [((a[0] + b[0]) / 2, (a[1] + b[1]) / 2) for a, b in zip(u1, u2)]
run, win = ratios(s, u)
crun, cwin = ratios(u1, u2)
r = json.load(open(f"{d}/result.json"))
st = r["stats"]
app = s[-1][1]
print(f"{'beside two busy loops' if busy else 'quiet'}: {len(s)} s, "
      f"sampled copy {app:.1f} s of CPU, {st['samples']} samples "
      f"({st['samples'] / app:.0f} per CPU-second), "
      f"{st['decoded']} decoded")
print(f"overhead: run {run:.4f}x, 1 s windows median "
      f"{statistics.median(win):.4f}x max {max(win):.4f}x "
      f"(first 3: {' '.join(f'{w:.3f}' for w in win[:3])})")
print(f"noise floor (unsampled / unsampled): run {crun:.4f}x, 1 s "
      f"windows median {statistics.median(cwin):.4f}x max "
      f"{max(cwin):.4f}x")
for p in st.get("sample_budget", []):
    print(f"  phase {p['phase']:5} from {p['t']:6.2f} s: period "
          f"{p['period_us']} us, {p['samples']} samples in "
          f"{p['app_cpu_s']:.2f} s of app CPU, modelled overhead "
          f"{100 * p['overhead']:.2f}%")
print(f"  dropped: {st.get('dropped')}")
EOF
