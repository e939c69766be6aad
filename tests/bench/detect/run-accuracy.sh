#!/usr/bin/env bash
# Detection accuracy at the agent's DEFAULT sampling period
# (docs/PERFORMANCE.md, "Detection overhead").
#
#   bash tests/bench/detect/run-accuracy.sh [--builddir DIR] [--reps N]
#        [--cpu-seconds S] [--period-us N] [--workloads "pairs ring ..."]
#
# Runs the workloads of tests/workloads/t0730-accuracy.sh (8 threads of
# pairs, ring, stencil, clusters, all2all; phases; independent threads; MPI
# pairs and hybrid MPI+threads when wl-mpi has MPI) under `commap run` with
# no --period-us: the agent measures the cost of a sample at start and
# samples at the period that spends 1% of the application's CPU time on
# samples (docs/detection.md, "Sampling period").  The same workloads and
# sizes as t0730, but each thread runs S seconds of CPU (default 3: at the
# default period a thread is sampled about 7 times less often than at
# t0730's 250 µs, so it needs longer to give the same evidence), at most
# 120 s of wall time.  Prints one line per run: the cosine similarity of
# the detected matrix with the workload's counted ground truth
# (tests/workloads/compare-matrix), the period the agent chose, the cost
# it measured, samples, and migrations (independent threads: must be 0).
# --period-us N runs at a fixed period instead (for comparison).
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
builddir="$top/build-bench"
reps=1
cpus=3
fixed=
workloads="pairs ring stencil clusters all2all phases independent mpi-pairs hybrid"
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) builddir=$(cd "$2" && pwd); shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--cpu-seconds) cpus=$2; shift 2 ;;
	--period-us) fixed=$2; shift 2 ;;
	--workloads) workloads=$2; shift 2 ;;
	*) echo "run-accuracy.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[ -f "$builddir/Makefile" ] || {
	echo "run-accuracy.sh: $builddir is not a configured build" >&2
	exit 2
}
make -C "$builddir" -j2 tests/workloads/wl-threads tests/workloads/wl-mpi \
	cli/commap nodeagent/commap-agent >/dev/null
wl="$builddir/tests/workloads/wl-threads"
wl_mpi="$builddir/tests/workloads/wl-mpi"
commap="$builddir/cli/commap"
cmp="$top/tests/workloads/compare-matrix"
T=$(mktemp -d "${TMPDIR:-/tmp}/commap-acc.XXXXXX")
trap 'rm -rf "$T"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi=(mpirun --oversubscribe --bind-to none)
topo8="pack:2 core:2 pu:2"
span=(--cpu-seconds "$cpus" --seconds 120)
pargs=(--verbose)
[ -n "$fixed" ] && pargs=(--period-us "$fixed")
have_mpi=1
"$wl_mpi" --help >/dev/null 2>&1 || [ $? -ne 77 ] || have_mpi=0

# The program of workload W, its truth in $T/W.truth, map in $T/W.map.
program() {
	local w=$1 kib=64
	case $w in
	pairs|ring|stencil|clusters|all2all)
		[ "$w" = pairs ] && kib=256
		echo "$wl" --pattern "$w" --threads 8 "${span[@]}" \
			--buffer-kib $kib --truth "$T/$w.truth" \
			--truth-map "$T/$w.map" ;;
	phases)
		echo "$wl" --pattern phases --threads 8 "${span[@]}" \
			--phase-seconds 1.2 --truth "$T/$w.truth" \
			--truth-map "$T/$w.map" ;;
	independent)
		echo "$wl" --pattern independent --threads 4 "${span[@]}" \
			--truth "$T/$w.truth" --truth-map "$T/$w.map" ;;
	mpi-pairs)
		echo "${mpi[@]}" -np 4 "$wl_mpi" --pattern pairs --threads 1 \
			"${span[@]}" --truth "$T/$w.truth" --truth-map "$T/$w.map" ;;
	hybrid)
		echo "${mpi[@]}" -np 2 "$wl_mpi" --pattern ring --threads 4 \
			"${span[@]}" --buffer-kib 64 --truth "$T/$w.truth" \
			--truth-map "$T/$w.map" ;;
	esac
}

echo "commap run $(
	[ -n "$fixed" ] && echo "--period-us $fixed" || echo "(default period)"
), $cpus s of CPU per thread, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$reps"); do
	for w in $workloads; do
		case $w in mpi-pairs|hybrid) [ $have_mpi = 1 ] || continue ;; esac
		topo=(--topology "$topo8")
		[ "$w" = independent ] && topo=()	# real pins, as t0730
		# shellcheck disable=SC2046
		if ! "$commap" run --quiet "${pargs[@]}" "${topo[@]}" \
			--output "$T/$w.json" -- $(program "$w") \
			>/dev/null 2>"$T/$w.err"; then
			echo "$w: commap run failed: $(tail -1 "$T/$w.err")"
			continue
		fi
		fig=$("$cmp" cosine --truth "$T/$w.truth" --map "$T/$w.map" \
			"$T/$w.json" | cut -d' ' -f1)
		mig=$("$cmp" migrations "$T/$w.json")
		cost=$(sed -n 's/.*: \([0-9.]*\) us per sample.*/\1/p' \
			"$T/$w.err" | head -1)
		python3 - "$T/$w.json" "$w" "$fig" "$mig" "${cost:--}" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["stats"]
w, fig, mig, cost = sys.argv[2:]
hist = " ".join(f"{t:.1f}s:{p}" for t, p in s.get("sample_periods", []))
print(f"{w}: {fig} period_us={s['sample_period_us']} ({hist}) "
      f"cost_us={cost} samples={s['samples']} threads={len(d['threads'])} "
      f"migrations={mig}")
EOF
	done
done
