#!/usr/bin/env bash
# Message passing between MPI ranks (docs/PERFORMANCE.md, "Message
# passing"; docs/detection.md, "Message passing").
#
#   bash tests/bench/mpi/run-mpi.sh sizes [--builddir DIR] [--np N]
#        [--sizes "64 1024 4096 ..."] [--pattern ring] [--mpi openmpi|mpich]
#        [--seconds S] [--mpi-args "--mca mpi_yield_when_idle 0"]
#   bash tests/bench/mpi/run-mpi.sh overhead [--builddir DIR] [--np N]
#        [--bytes B] [--iters N] [--reps R]
#
# sizes: per message size, N ranks (default 4) exchange for 3 s under
# 'commap run' (dry run on a synthetic topology); prints a Markdown row
# per size: iterations, CMA transfers the agent counted and their bytes,
# the bytes the PMPI library counted (libwlpmpi.so), the samples, the
# references into another rank's shared segment (evidence by ownership,
# nodeagent/shm_owner.h) and their weight, the weight between ranks, the
# share of it that came from CMA (the rest is sampled sharing and
# ownership), and the cosine of the rank matrix with the PMPI truth.
# --mpi-args go to mpirun (Open MPI) or mpiexec (MPICH) as they are.
# overhead: the same ring with a fixed number of iterations, alone and
# under the agent, interleaved (random order within each repetition); the
# agent maps onto a synthetic topology (a dry run: nothing pinned, so the
# two runs differ only by detection, not by placement);
# prints the median elapsed time of each and their ratio, and the agent's
# CPU time.  Run as root (CMA tracing needs it).
set -euo pipefail
mode=${1:?usage: run-mpi.sh sizes|overhead [options]}
shift
top=$(cd "$(dirname "$0")/../../.." && pwd)
b="$top/build"
np=4
sizes="64 256 1024 4096 8192 65536 1048576 4194304"
pattern=ring
mpi=openmpi
bytes=65536
iters=20000
reps=5
seconds=3
mpi_args=
topo="pack:1 core:2 pu:1"
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) b=$(cd "$2" && pwd); shift 2 ;;
	--np) np=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--pattern) pattern=$2; shift 2 ;;
	--mpi) mpi=$2; shift 2 ;;
	--bytes) bytes=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--mpi-args) mpi_args=$2; shift 2 ;;
	*) echo "run-mpi.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
export COMMAP_AGENT="$b/nodeagent/commap-agent"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d /tmp/commap-mpi.XXXXXX)
trap 'rm -rf "$T"' EXIT
rm_="$top/tests/workloads/rank-matrix"
if [ "$mpi" = mpich ]; then
	mpicc.mpich -O2 -fopenmp -o "$T/wl" "$top/tests/workloads/wl_mpi_msg.c"
	mpicc.mpich -O2 -shared -fPIC -o "$T/pmpi.so" \
		"$top/tests/workloads/wl_pmpi.c"
	launch() { mpiexec.mpich -n "$np" $mpi_args -genv WL_PMPI_OUT "$T/pmpi.json" \
		-genv LD_PRELOAD "$T/pmpi.so" "$T/wl" "$@"; }
else
	cp "$b/tests/workloads/wl-mpi-msg" "$T/wl" 2>/dev/null ||
		cp "$b/tests/workloads/.libs/wl-mpi-msg" "$T/wl"
	cp "$b/tests/workloads/.libs/libwlpmpi.so" "$T/pmpi.so"
	launch() { WL_PMPI_OUT="$T/pmpi.json" mpirun --oversubscribe \
		--bind-to none -np "$np" $mpi_args -x WL_PMPI_OUT -x LD_PRELOAD="$T/pmpi.so" \
		"$T/wl" "$@"; }
fi

sizes_table() {
	echo "| bytes | iterations | CMA transfers | CMA bytes | PMPI bytes | samples | into a peer's segment (weight) | weight between ranks | from CMA | cosine |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for s in $sizes; do
		"$b/cli/commap" run -v --topology "pack:2 core:4 pu:2" \
			--output "$T/r.json" -- bash -c "$(declare -f launch); \
			T=$T np=$np mpi_args='$mpi_args'; launch --pattern \
			$pattern --bytes $s --seconds $seconds --report" \
			>"$T/out" 2>"$T/err"
		it=$(sed -n 's/^iters=\([0-9]*\).*/\1/p' "$T/out")
		read -r n cb < <(sed -n 's/.*(CMA): \([0-9]*\) transfers, \([0-9]*\) bytes.*/\1 \2/p' "$T/err") || true
		read -r sn sw < <(sed -n "s/.*shared segments: [0-9]* references, \([0-9]*\) into another process's (weight \([0-9.]*\)).*/\1 \2/p" "$T/err") || true
		smp=$(sed -n 's/.* threads, \([0-9]*\) samples.*/\1/p' "$T/err")
		pb=$(python3 -c 'import json,sys; print(sum(e[2] for e in json.load(open(sys.argv[1]))["edges"]))' "$T/pmpi.json")
		line=$("$rm_" cosine --truth "$T/pmpi.json" "$T/r.json" || true)
		w=$(sed -n 's/.* weight=\([0-9.]*\).*/\1/p' <<<"$line")
		c=$(sed -n 's/^cosine=\([0-9.]*\).*/\1/p' <<<"$line")
		share=$(python3 -c "w=float('$w'); print(f'{${cb:-0}/65536/w:.3f}' if w else '-')")
		echo "| $s | $it | ${n:-0} | ${cb:-0} | $pb | ${smp:-0} | ${sn:-0} (${sw:-0}) | $w | $share | $c |"
	done
}

# The workload's own time, from its start barrier to its end (MPI start-up
# and the tool's are not counted).
elapsed() {
	"$@" 2>"$T/err.last" | sed -n 's/.*elapsed_s=\([0-9.]*\).*/\1/p'
}

overhead_table() {
	: >"$T/alone"; : >"$T/agent"; : >"$T/cpu"
	for r in $(seq "$reps"); do
		for which in $(shuf -e alone agent); do
			if [ "$which" = alone ]; then
				elapsed launch --pattern ring --bytes "$bytes" \
					--iters "$iters" --report >>"$T/alone"
			else
				elapsed "$b/cli/commap" run -v --output "$T/o.json" \
					--topology "$topo" -- bash -c \
					"$(declare -f launch); T=$T np=$np; launch \
					--pattern ring --bytes $bytes --iters $iters \
					--report" >>"$T/agent"
				python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"]["agent_cpu_s"])' "$T/o.json" >>"$T/cpu"
			fi
		done
	done
	python3 - "$T/alone" "$T/agent" "$T/cpu" "$bytes" "$iters" "$np" <<'PY'
import statistics as st, sys
a = [float(x) for x in open(sys.argv[1])]
g = [float(x) for x in open(sys.argv[2])]
c = [float(x) for x in open(sys.argv[3])]
print("| ranks | bytes | iterations | alone s (median) | agent s (median) | ratio | agent CPU s |")
print("|---|---|---|---|---|---|---|")
print(f"| {sys.argv[6]} | {sys.argv[4]} | {sys.argv[5]} | {st.median(a):.3f} | "
      f"{st.median(g):.3f} | {st.median(g) / st.median(a):.3f} | "
      f"{st.median(c):.3f} |")
PY
}

case $mode in
sizes) sizes_table ;;
overhead) overhead_table ;;
*) echo "run-mpi.sh: unknown mode $mode" >&2; exit 2 ;;
esac
