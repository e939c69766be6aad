#!/usr/bin/env bash
# Creation-to-pin latency of learned mappings for MPI ranks and hybrid
# MPI+OpenMP jobs under srun --mpi=pmix (docs/PERFORMANCE.md
# "Learned mappings").
#
#   bash tests/bench/learned/run-pin-latency-mpi.sh --builddir DIR [--reps N]
#
# Runs tests/e2e/t0570-learned-mpi.sh N times (a private Slurm cluster and
# service each time: root, Slurm, Open MPI) with the agent verbose, and
# prints per learned run the agent's stats.pin_latency_ms over the
# workload threads, and how late the agent learned of each task (the
# task's age when its line arrived, from the agent's log): the part of a
# rank's main-thread latency spent before the agent could know the rank.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
builddir=
reps=3
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) builddir=$(cd "$2" && pwd); shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	*) echo "run-pin-latency-mpi.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[ -n "$builddir" ] || { echo "run-pin-latency-mpi.sh: give --builddir DIR" >&2; exit 2; }
echo "| rep | job | threads pinned | p50 ms | p90 ms | max ms | task age at its line, ms | learned model at t= s | load |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in $(seq "$reps"); do
	load=$(cut -d' ' -f1 /proc/loadavg)
	out=$(top_srcdir=$top top_builddir=$builddir E2E_KEEP=1 \
		E2E_AGENT_VERBOSE=1 bash "$top/tests/e2e/t0570-learned-mpi.sh" 2>&1) || true
	dir=$(printf '%s\n' "$out" | sed -n 's/^# e2e dir: //p')
	if [ -z "$dir" ] || [ ! -d "$dir" ]; then
		printf '%s\n' "$out" >&2
		echo "run-pin-latency-mpi.sh: the test did not run" >&2
		exit 1
	fi
	fails=$(printf '%s\n' "$out" | grep -c '^not ok' || true)
	for name in mpi-learned hyb-learned; do
		python3 - "$dir" "$name" "$r" "$load" "$fails" <<'PY'
import glob, json, re, socket, sys
d, name, rep, load, fails = sys.argv[1:]
res = json.load(open(f"{d}/{name}.result.json"))
p = res["stats"]["pin_latency_ms"]
job = json.load(open(f"{d}/{name}.result.json.job"))["job"]
ages, tmodel = [], "-"
for line in open(f"{d}/spool/agent-{job}.0.{socket.gethostname()}.log"):
    m = re.search(r"created (\d+) ms ago", line)
    if m:
        ages.append(m.group(1))
    m = re.search(r"learned model .*\(t=([0-9.]+) s\)", line)
    if m:
        tmodel = m.group(1)
f = lambda v: "-" if v is None else "%.0f" % v
print("| %s | %s%s | %d | %s | %s | %s | %s | %s | %s |" % (
    rep, name, "" if fails == "0" else f" ({fails} checks failed)", p["n"],
    f(p["p50"]), f(p["p90"]), f(p["max"]), ", ".join(ages), tmodel, load))
PY
	done
	rm -rf "$dir"
done
