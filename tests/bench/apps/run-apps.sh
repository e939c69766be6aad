#!/usr/bin/env bash
# Real applications under the agent (docs/PERFORMANCE.md, "Real
# applications"): each is installed from Debian, run twice under
# `commap run` (a dry run on a synthetic 16-PU machine: nothing pinned, so
# detection alone is measured), recorded and replayed; prints, per run, the
# cosine of the rank matrix with the pattern the application's
# decomposition implies (written down below from its documentation), for
# the live result and its replay, and the Pearson r of the two runs' rank
# matrices (repeatability).
#
#   bash tests/bench/apps/run-apps.sh [--builddir DIR] [--steps N] [--keep DIR]
#
# LAMMPS (Debian's `lammps`: the MPI build, Open MPI; Debian builds it
# without the OPENMP package, so no /omp styles): its "melt" example on a
# fixed 2 x 2 x 2 processor grid (in.lj-grid), 8 ranks.  Expected: each
# rank with its 3 grid neighbours (ranks differing in one coordinate; the
# same for LAMMPS's x-fastest and MPI_Cart's z-fastest orders on 2 x 2 x 2).
# Run as root: apt-get, and the agent's message-passing tracer (CMA)
# needs it.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
here="$top/tests/bench/apps"
b="$top/build"
steps=400
keep=
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) b=$(cd "$2" && pwd); shift 2 ;;
	--steps) steps=$2; shift 2 ;;
	--keep) keep=$2; shift 2 ;;
	*) echo "run-apps.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
if [ -n "$keep" ]; then
	mkdir -p "$keep"
	T=$(cd "$keep" && pwd)
else
	T=$(mktemp -d)
	trap 'rm -rf "$T"' EXIT
fi
export COMMAP_AGENT="$b/nodeagent/commap-agent"
commap="$b/cli/commap"
rm_="$top/tests/workloads/rank-matrix"

if ! command -v lmp >/dev/null; then
	[ "$(id -u)" -eq 0 ] || { echo "run-apps.sh: lmp missing (apt-get install lammps, as root)" >&2; exit 2; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q lammps >"$T/apt.log"
fi

# The cube's edges over 8 ranks, as a commap-matrix.
python3 - "$T/lammps.truth" <<'PY'
import json, sys
e = [[i, j, 1.0] for i in range(8) for j in range(i + 1, 8)
     if bin(i ^ j).count("1") == 1]
json.dump({"format": "commap-matrix", "version": 1, "threads": 8,
           "edges": e}, open(sys.argv[1], "w"))
PY

# lammps_run K: one run under the agent, recorded and replayed.
lammps_run() {
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	"$commap" run --quiet --topology "pack:2 core:4 pu:2" \
		--record "$T/lammps$1.rec" --output "$T/lammps$1.json" -- \
		mpirun --oversubscribe --bind-to none -np 8 lmp \
		-in "$here/in.lj-grid" -var steps "$steps" -log none \
		-screen none >"$T/lammps$1.out" 2>&1
	"$commap" replay "$T/lammps$1.rec" >"$T/lammps$1.r.json"
}

# Pearson r of two results' rank matrices (the pairs of ranks 0..7).
pearson() {
	python3 - "$@" <<'PY'
import json, math, sys
def ranks(path):
    r = json.load(open(path))
    th = r["threads"]
    w = {}
    for i, j, x in r["edges"]:
        a, b = th[i]["rank"], th[j]["rank"]
        if a != b and a >= 0 and b >= 0:
            k = (min(a, b), max(a, b))
            w[k] = w.get(k, 0) + x
    return [w.get((i, j), 0) for i in range(8) for j in range(i + 1, 8)]
x, y = ranks(sys.argv[1]), ranks(sys.argv[2])
mx, my = sum(x) / len(x), sum(y) / len(y)
sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
sx = math.sqrt(sum((a - mx) ** 2 for a in x))
sy = math.sqrt(sum((b - my) ** 2 for b in y))
print(f"{sxy / (sx * sy):.4f}" if sx and sy else "-")
PY
}

figures() {
	"$rm_" cosine --truth "$T/lammps.truth" "$1" 2>/dev/null |
		sed -n 's/^cosine=\([0-9.]*\).* weight=\([0-9.]*\).*/\1 \2/p'
}

echo "| application | run | samples | decoded | weight between ranks | cosine (live) | cosine (replay) |"
echo "|---|---|---|---|---|---|---|"
for k in 1 2; do
	lammps_run "$k"
	read -r c w < <(figures "$T/lammps$k.json") || true
	read -r cr _ < <(figures "$T/lammps$k.r.json") || true
	read -r s d < <(python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['stats']; print(s['samples'], s['decoded'])" "$T/lammps$k.json")
	echo "| LAMMPS melt, 8 ranks, 2x2x2, $steps steps | $k | $s | $d | ${w:-0} | ${c:--} | ${cr:--} |"
done
echo
echo "repeat-to-repeat Pearson r (rank matrices, live): $(pearson "$T/lammps1.json" "$T/lammps2.json")"
echo "repeat-to-repeat Pearson r (replayed): $(pearson "$T/lammps1.r.json" "$T/lammps2.r.json")"
