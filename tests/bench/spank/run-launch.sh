#!/usr/bin/env bash
# The SPANK plugin's cost at step launch (docs/PERFORMANCE.md, "SPANK
# plugin").
#
#   bash tests/bench/spank/run-launch.sh [--builddir DIR] [--reps N]
#        [--port-base P] [--agent PATH]
#
# Starts a private one-node cluster (tests/e2e/e2e-lib.sh, ports P and P+1,
# default 17097) and times `srun -n1 true` from the shell, the wall time of
# the whole command, in three configurations interleaved (one of each per
# round, in a rotating order, --reps rounds, default 30, after 3 warm-up
# rounds):
#   none     plugstack.conf without the commap line;
#   off      the commap line, srun --commap=off (the plugin loads in srun
#            and slurmstepd, starts nothing);
#   dynamic  the commap line, srun --commap=dynamic: slurmstepd starts the
#            real node agent (detached) and tells it the task.
# --agent PATH replaces the node agent, e.g. tests/bench/spank/null-agent.sh
# (reads the task lines until end of file, does nothing else): the
# plugin's own cost, apart from the agent's start-up work competing for
# the node's CPUs.
#
# Between steps it waits until the previous job has left the queue, the
# node is idle and the previous agent has finished, so each launch is
# timed on a quiet node (otherwise srun waits for the previous job's
# completion, and that wait is what gets measured).  Prints each
# configuration's median and p90, the per-round differences against
# `none` (median, p90) and the ratio of medians.  The target is at most
# 20 ms added per step.
set -euo pipefail
top_srcdir=$(cd "$(dirname "$0")/../../.." && pwd)
top_builddir=$top_srcdir/build-bench
reps=30
port=17097
agent=
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) top_builddir=$(cd "$2" && pwd); shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--port-base) port=$2; shift 2 ;;
	--agent) agent=$2; shift 2 ;;
	*) echo "run-launch.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "run-launch.sh: run as root" >&2; exit 2; }
if [ ! -f "$top_builddir/Makefile" ]; then
	[ -x "$top_srcdir/configure" ] || (cd "$top_srcdir" && ./autogen.sh >/dev/null)
	mkdir -p "$top_builddir"
	(cd "$top_builddir" && "$top_srcdir/configure" -q)
fi
make -C "$top_builddir" -j2 spank/commap_spank.la nodeagent/commap-agent \
	>/dev/null 2>&1 ||
	echo "run-launch.sh: make failed in $top_builddir; using what is built" >&2
agent=${agent:-$top_builddir/nodeagent/commap-agent}
plugin=$top_builddir/spank/.libs/commap_spank.so
[ -x "$agent" ] && [ -f "$plugin" ] ||
	{ echo "run-launch.sh: plugin or agent not built in $top_builddir" >&2; exit 2; }

set +e	# e2e-lib.sh's helpers return non-zero by design
# shellcheck source=../../e2e/e2e-lib.sh
. "$top_srcdir/tests/e2e/e2e-lib.sh"
export COMMAP_SLURMCTLD_PORT=$port COMMAP_SLURMD_PORT=$((port + 1))
e2e_cluster_start "default=off agent=$agent spool=/tmp"
spool=$E2E_DIR/spool
mkdir -p "$spool"
times=$E2E_DIR/times.txt
: >"$times"

configure() {
	case $1 in
	none) : >"$SLURM_CONF_DIR/plugstack.conf" ;;
	*) e2e_plugstack "default=off agent=$agent spool=$spool" ;;
	esac
}

agents_running() { pgrep -f -- "--spool $spool" >/dev/null; }
# The previous job is gone (not even completing) and the node idle: else
# srun waits for resources, and that wait depends on the previous step.
node_quiet() {
	[ -z "$(squeue -h 2>/dev/null)" ] &&
		sinfo -h -o %t 2>/dev/null | grep -qx idle && ! agents_running
}

# one CONFIG: time one srun -n1 true (ms, 0.01 ms resolution).
one() {
	local opt=() t0 t1
	case $1 in off) opt=(--commap=off) ;; dynamic) opt=(--commap=dynamic) ;; esac
	configure "$1"
	for _ in $(seq 200); do node_quiet && break; sleep 0.02; done
	t0=$(date +%s%N)
	srun "${opt[@]}" -n1 true || { echo "run-launch.sh: srun failed ($1)" >&2; exit 1; }
	t1=$(date +%s%N)
	echo "$1 $(( (t1 - t0) / 10000 ))"
}

configs=(none off dynamic)
for round in $(seq -3 "$reps"); do
	for k in 0 1 2; do
		c=${configs[$(( (round + 3 + k) % 3 ))]}
		line=$(one "$c")
		[ -n "$line" ] || exit 1
		[ "$round" -gt 0 ] && echo "$round $line" >>"$times"
	done
done

python3 - "$times" "$reps" "$agent" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
t = {}
for r, c, v in rows:
    t.setdefault(c, {})[int(r)] = int(v) / 100.0
def p90(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
print(f"srun -n1 true, {sys.argv[2]} rounds, wall time of the command (ms), "
      f"agent {sys.argv[3]}\n")
print("| configuration | median | p90 | min |")
print("|---|--:|--:|--:|")
for c in ("none", "off", "dynamic"):
    xs = list(t[c].values())
    print(f"| {c} | {statistics.median(xs):.1f} | {p90(xs):.1f} | {min(xs):.1f} |")
print("\n| added per step, against none | median | p90 | ratio of medians |")
print("|---|--:|--:|--:|")
base = statistics.median(t["none"].values())
for c in ("off", "dynamic"):
    d = [t[c][r] - t["none"][r] for r in t["none"] if r in t[c]]
    print(f"| {c} | {statistics.median(d):+.1f} | {p90(d):+.1f} | "
          f"{statistics.median(t[c].values()) / base:.3f} |")
PY
