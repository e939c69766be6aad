#!/usr/bin/env bash
# README command 1: set up commap on this machine and run the demo.
#
# Today the demo maps a recorded-style communication pattern onto a
# synthetic 128-PU machine (2 packages x 2 NUMA nodes x 2 L3 x 8 cores x
# 2 SMT) and compares commap's mapping with the naive compact one.  Later
# steps of the project grow it into a local Slurm cluster demo.
#
# Idempotent: a second run rebuilds and reinstalls.  Run as root.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${PREFIX:-/usr/local}

bash "$top/deploy/install-deps.sh"

cd "$top"
[ -x configure ] && [ ! configure.ac -nt configure ] || ./autogen.sh >/dev/null 2>&1
mkdir -p "$top/build-demo"
cd "$top/build-demo"
[ -f Makefile ] || "$top/configure" -q --prefix="$prefix"
make -j"$(nproc)" >/dev/null
make install >/dev/null
commap=$prefix/bin/commap
echo "== installed $($commap --version) in $prefix/bin"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
topo="pack:2 numa:2 l3:2 core:8 pu:2"
matrix=$work/clusters.json

echo "== a 64-thread application in 8 groups of 8 that share data,"
echo "   thread numbers shuffled (as an OpenMP runtime or MPI launcher would):"
$commap matrix gen --pattern clusters:8 --threads 64 --shuffle 7 --output "$matrix"
echo "   $matrix"
echo
echo "== commap's mapping onto '$topo':"
$commap map --topology "$topo" --matrix "$matrix"
echo
echo "== for comparison, compact placement (thread i on PU i):"
$commap map --topology "$topo" --matrix "$matrix" --algorithm compact | tail -n 3
