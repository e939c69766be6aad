#!/usr/bin/env bash
# Creation-to-pin latency of threads, learned vs dynamic
# (docs/PERFORMANCE.md "Learned mappings").
#
#   bash tests/bench/learned/run-pin-latency.sh [--builddir DIR] [--reps N]
#   make bench-learned          (from a build directory)
#
# Starts munged (if needed) and a private commap-service on loopback, runs
# the pairs workload (4 pairs, 1.5 s) once in dynamic mode to teach the
# model, then --reps times each of:
#   dynamic      no service (no model): pinned at the first interval end
#   dyn+model    dynamic, starting from the model
#   learned      --mode learned
# as dry runs onto "pack:2 core:2 pu:2" (8 PUs, whatever the machine has), and prints
# the agent's stats.pin_latency_ms (p50/p90/max over the 8 workers of each
# run; thread creation from /proc/TID/stat, 10 ms ticks) as Markdown, with
# the load average (the figures depend on it: the machine is shared).
# Needs root (munged), python3.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
builddir=${top_builddir:-}
reps=5
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) builddir=$(cd "$2" && pwd); shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	*) echo "run-pin-latency.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[ -n "$builddir" ] || { echo "run-pin-latency.sh: give --builddir DIR" >&2; exit 2; }
commap="$builddir/cli/commap"
service="$builddir/service/commap-service"
pairs="$builddir/tests/agent/pairs"
export COMMAP_AGENT="$builddir/nodeagent/commap-agent"
for f in "$commap" "$service" "$pairs" "$COMMAP_AGENT"; do
	[ -x "$f" ] || { echo "run-pin-latency.sh: $f is not built" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "run-pin-latency.sh: needs root (munged)" >&2; exit 1; }

T=$(mktemp -d /tmp/commap-bench-learned.XXXXXX)
svc_pid=
cleanup() { [ -n "$svc_pid" ] && kill "$svc_pid" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT

install -d -o munge -g munge -m 755 /run/munge
munge -n 2>/dev/null | unmunge >/dev/null 2>&1 ||
	runuser -u munge -- /usr/sbin/munged --force
printf 'database = %s/svc.db\nmax_body = 16m\nthreads = 2\n' "$T" >"$T/svc.conf"
: >"$T/svc.log"
"$service" --config "$T/svc.conf" --listen 127.0.0.1:0 --foreground \
	>"$T/svc.log" 2>&1 &
svc_pid=$!
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$T/svc.log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { echo "run-pin-latency.sh: the service did not start" >&2; exit 1; }
url="http://127.0.0.1:$port"
topo="pack:2 core:2 pu:2"

one() {	# KIND OUT
	case $1 in
	dynamic) env -u COMMAP_SERVICE "$commap" run --quiet --topology "$topo" \
		--output "$2" -- "$pairs" -p 4 -t 1500 ;;
	dyn+model) COMMAP_SERVICE=$url "$commap" run --quiet --topology "$topo" \
		--output "$2" -- "$pairs" -p 4 -t 1500 ;;
	learned) COMMAP_SERVICE=$url "$commap" run --quiet --mode learned \
		--topology "$topo" --output "$2" -- "$pairs" -p 4 -t 1500 ;;
	esac 2>/dev/null
}

one dyn+model "$T/teach.json"	# the first run: no model yet, teaches one
echo "| run | mode | model | p50 ms | p90 ms | max ms | pins after the first | load |"
echo "|---|---|---|---|---|---|---|---|"
for r in $(seq "$reps"); do
	for kind in dynamic dyn+model learned; do
		one "$kind" "$T/r.json"
		python3 - "$T/r.json" "$r" "$kind" "$(cut -d' ' -f1 /proc/loadavg)" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["stats"]["pin_latency_ms"]
m = d.get("model") or {}
later = sum(1 for x in d["migrations"] if x["from"] != -1)
f = lambda v: "-" if v is None else "%.0f" % v
print("| %s | %s | %s | %s | %s | %s | %d | %s |" % (
    sys.argv[2], sys.argv[3],
    ("%d runs" % m["runs"]) if m.get("used") else "no",
    f(p["p50"]), f(p["p90"]), f(p["max"]), later, sys.argv[4]))
EOF
	done
done
