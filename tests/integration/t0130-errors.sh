#!/bin/sh
# Every error names the problem on stderr ("commap: ...") and exits 1
# (runtime) or 2 (usage), as docs/cli.md says.
. "$top_srcdir/tests/integration/tap.sh"

topo="pack:2 core:2 pu:2"
"$commap" matrix gen --pattern pairs --threads 8 >"$T/p8.json"
"$commap" matrix gen --pattern ring --threads 12 >"$T/r12.json"
map() { "$commap" map "$@"; }

# --- usage errors (2) --------------------------------------------------------
fails_with 2 "unknown algorithm" \
	map --topology "$topo" --matrix "$T/p8.json" --algorithm fastest
fails_with 2 "greedy" \
	map --topology "$topo" --matrix "$T/p8.json" --algorithm fastest
fails_with 2 "not both" map --topology "$topo" \
	--topology-xml "$data/pack2-l3-core4-pu2.xml" --matrix "$T/p8.json"
fails_with 2 "--topology" map --matrix "$T/p8.json"
fails_with 2 "--matrix" map --topology "$topo"
for bad in abc -1 12x "" " 3" +3 0x10 99999999999999999999999; do
	fails_with 2 "--seed" map --topology "$topo" --matrix "$T/p8.json" \
		--seed "$bad"
done
fails_with 2 "'12x'" map --topology "$topo" --matrix "$T/p8.json" --seed 12x
fails_with 2 "unknown option '--frobnicate'" map --topology "$topo" \
	--matrix "$T/p8.json" --frobnicate
fails_with 2 "unknown option '-x'" map --topology "$topo" -x
fails_with 2 "'--matrix' needs a value" map --topology "$topo" --matrix
fails_with 2 "unexpected argument 'extra'" map --topology "$topo" \
	--matrix "$T/p8.json" extra
fails_with 2 "unknown format 'yaml'" map --topology "$topo" \
	--matrix "$T/p8.json" --format yaml
fails_with 2 "unknown command 'mpa'" "$commap" mpa
fails_with 2 "unknown option '--frob'" "$commap" --frob
fails_with 2 "unknown option" "$commap" cost --bogus
fails_with 2 "unknown subcommand 'make'" "$commap" matrix make
fails_with 2 "--threads" "$commap" matrix gen --pattern ring
fails_with 2 "--pattern" "$commap" matrix gen --threads 4
for bad in 0 -4 four 4.5 2000000; do
	fails_with 2 "--threads" "$commap" matrix gen --pattern ring \
		--threads "$bad"
done
fails_with 2 "--shuffle" "$commap" matrix gen --pattern ring --threads 4 \
	--shuffle 1e3
fails_with 2 "hexagon" "$commap" matrix gen --pattern hexagon --threads 4
fails_with 2 "unknown format 'xml'" "$commap" matrix gen --pattern ring \
	--threads 4 --format xml

# --- runtime errors (1) ------------------------------------------------------
fails_with 1 "$T/missing.json" map --topology "$topo" \
	--matrix "$T/missing.json"
fails_with 1 "12 threads but only 8 PUs in cpuset 0-7; use --oversubscribe" \
	map --topology "$topo" --matrix "$T/r12.json"
fails_with 1 "8 threads but only 6 PUs in cpuset 0-3,6-7; use --oversubscribe" \
	map --topology "$topo" --cpuset 0-3,6-7 --matrix "$T/p8.json"
fails_with 1 "12 threads but only 8 PUs" "$commap" cost --topology "$topo" \
	--matrix "$T/r12.json" --mapping 0,1,2,3,4,5,6,7,0,1,2,3
fails_with 1 "topology 'pack:2 gizmo:3'" \
	map --topology "pack:2 gizmo:3" --matrix "$T/p8.json"
fails_with 1 "$T/missing.xml" \
	map --topology-xml "$T/missing.xml" --matrix "$T/p8.json"
printf 'not xml at all\n' >"$T/bad.xml"
fails_with 1 "$T/bad.xml" \
	map --topology-xml "$T/bad.xml" --matrix "$T/p8.json"
fails_with 1 "cpuset '0-3,99'" \
	map --topology "$topo" --cpuset 0-3,99 --matrix "$T/p8.json"
fails_with 1 "cpuset 'zero'" \
	map --topology "$topo" --cpuset zero --matrix "$T/p8.json"
printf '0,1,0\n1,0\n' >"$T/ragged.csv"
fails_with 1 "line 2" map --topology "$topo" --matrix "$T/ragged.csv"
fails_with 1 "$T/ragged.csv" map --topology "$topo" --matrix "$T/ragged.csv"
printf '{"format": "commap-matrix", "version": 7, "threads": 2, "edges": []}' \
	>"$T/v7.json"
fails_with 1 "version" map --topology "$topo" --matrix "$T/v7.json"
"$commap" matrix gen --pattern ring --threads 16 >"$T/r16.json"
fails_with 1 "exact" map --topology "pack:2 core:4 pu:2" \
	--matrix "$T/r16.json" --algorithm exact

done_testing
