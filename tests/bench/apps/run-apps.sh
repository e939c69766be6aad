#!/usr/bin/env bash
# Real applications under the agent (docs/PERFORMANCE.md, "Real
# applications"): each is installed from Debian, run twice under
# `commap run` (a dry run on a synthetic 16-PU machine: nothing pinned, so
# detection alone is measured), recorded and replayed; prints, per run, the
# cosine of the unit matrix (MPI ranks, or thread-MPI ranks) with the
# pattern the application's decomposition implies (written down in each
# application's file, from its documentation or log), the neighbour/far
# ratio, where the decoded samples landed, and the Pearson r of the two
# runs' matrices (repeatability).
#
#   bash tests/bench/apps/run-apps.sh [--builddir DIR] [--keep DIR]
#        [--period-us N] [--app NAME]... [--steps N]
#
# NAME: lammps (lammps.sh), gromacs-tmpi, gromacs-mpi, gromacs-omp
# (gromacs.sh), hpcc (hpcc.sh); default: all.  --period-us N runs the
# agent at a fixed sampling period instead of its default budget.
# --steps N: LAMMPS's steps (default 400).  Run as root: apt-get, and the
# agent's message-passing tracer (CMA) needs it.  A missing package is
# installed, with a message saying so.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
here="$top/tests/bench/apps"
b="$top/build"
steps=400
keep=
period=
apps=()
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) b=$(cd "$2" && pwd); shift 2 ;;
	--steps) steps=$2; shift 2 ;;
	--keep) keep=$2; shift 2 ;;
	--period-us) period=$2; shift 2 ;;
	--app) apps+=("$2"); shift 2 ;;
	*) echo "run-apps.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[ ${#apps[@]} -gt 0 ] ||
	apps=(lammps gromacs-tmpi gromacs-mpi gromacs-omp hpcc)
if [ -n "$keep" ]; then
	mkdir -p "$keep"
	T=$(cd "$keep" && pwd)
else
	T=$(mktemp -d)
	trap 'rm -rf "$T"' EXIT
fi
export COMMAP_AGENT="$b/nodeagent/commap-agent"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
commap="$b/cli/commap"
fig="$here/apps-figures"
topo="pack:2 core:4 pu:2"

# need_pkg CMD PACKAGE: install PACKAGE when CMD is missing.
need_pkg() {
	command -v "$1" >/dev/null && return 0
	[ "$(id -u)" -eq 0 ] || {
		echo "run-apps.sh: $1 missing (apt-get install $2, as root)" >&2
		exit 2
	}
	echo "run-apps.sh: installing Debian's $2 for $1" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" \
		>>"$T/apt.log"
}

# under_agent NAME K DIR CMD...: run CMD in DIR under `commap run`,
# recorded; the wall time goes to $T/NAME$K.wall.
under_agent() {
	local name=$1 k=$2 dir=$3 t0
	shift 3
	t0=$(date +%s.%N)
	(cd "$dir" && "$commap" run --quiet --topology "$topo" \
		${period:+--period-us "$period"} \
		--record "$T/$name$k.rec" --output "$T/$name$k.json" -- "$@" \
		>"$T/$name$k.out" 2>&1)
	echo "$(date +%s.%N) - $t0" | bc >"$T/$name$k.wall"
}

# report NAME LABEL UNITS [ALT]: one table row per run, then the
# repeatability line; ALT: a second pattern's file, its cosine too.
report() {
	local name=$1 label=$2 units=$3 alt=${4:-} k kv
	for k in 1 2; do
		"$commap" replay "$T/$name$k.rec" >"$T/$name$k.r.json"
		kv=$("$fig" row --truth "$T/$name.truth" ${alt:+--alt "$alt"} \
			--units "$units" \
			"$T/$name$k.json" "$T/$name$k.rec")
		local cr
		cr=$("$fig" row --truth "$T/$name.truth" --units "$units" \
			"$T/$name$k.r.json" | sed -n 's/.* cosine=\([0-9.]*\).*/\1/p')
		echo "| $label | $k | $(cat "$T/$name$k.wall" | xargs printf '%.1f') | $kv | replay cosine=$cr |"
	done
	echo "| $label | r | Pearson r live $("$fig" pearson --units "$units" \
		"$T/${name}1.json" "$T/${name}2.json"), replayed $("$fig" \
		pearson --units "$units" "$T/${name}1.r.json" "$T/${name}2.r.json") |"
}

. "$here/lammps.sh"
. "$here/gromacs.sh"
. "$here/hpcc.sh"

echo "# $(date -u +%FT%TZ) agent $COMMAP_AGENT period=${period:-default} load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| application | run | wall s | figures | |"
echo "|---|---|---|---|---|"
for app in "${apps[@]}"; do
	case $app in
	lammps) lammps_bench ;;
	gromacs-tmpi|gromacs-mpi|gromacs-omp) gromacs_bench "${app#gromacs-}" ;;
	hpcc) hpcc_bench ;;
	*) echo "run-apps.sh: unknown application '$app'" >&2; exit 2 ;;
	esac
done
