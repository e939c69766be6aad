#!/bin/sh
# commap cost: the cost of a given mapping, and agreement with commap map.
. "$top_srcdir/tests/integration/tap.sh"

py() { python3 -c "$@"; }
topo="pack:2 core:2 pu:2"

"$commap" matrix gen --pattern pairs --threads 8 >"$T/pairs.json"
cost_of() {
	"$commap" cost --topology "$topo" --matrix "$T/pairs.json" \
		--format json --mapping "$1" | json_get cost
}
# Weights (commap/topology.h): core 1, package 5, machine 6.
is "pairs on SMT siblings cost 4 x 1" "$(cost_of 0,1,2,3,4,5,6,7)" 4.0
is "pairs split over the cores of a package cost 4 x 5" \
	"$(cost_of 0,2,1,3,4,6,5,7)" 20.0
is "pairs split over the packages cost 4 x 6" "$(cost_of 0,4,1,5,2,6,3,7)" 24.0
is "the order of the pairs does not matter" "$(cost_of 6,7,4,5,2,3,0,1)" 4.0

run "$commap" cost --topology "$topo" --matrix "$T/pairs.json" \
	--mapping 0,1,2,3,4,5,6,7
is "text output exits 0" "$status" 0
ok "text output prints the cost" grep -qx "cost: 4" "$T/out"
ok "text output prints the mapping accuracy" \
	grep -qx "mapping accuracy: 1.0000" "$T/out"
ok "text output prints the data sharing per level" \
	grep -Eq "^data sharing: core 1.0000 .* package 1.0000$" "$T/out"
ok "text output has no algorithm line" sh -c "! grep -q '^algorithm' '$T/out'"

run "$commap" cost --topology "$topo" --matrix "$T/pairs.json" \
	--mapping 0,2,1,3,4,6,5,7 --format json
ok "JSON: split pairs share no core, all share a package, accuracy 0" py '
import json, sys
o = json.loads(sys.argv[1])
assert o["data_sharing"]["core"] == 0 and o["data_sharing"]["package"] == 1, o
assert o["mapping_accuracy"] == 0, o
assert o["pu_of_thread"] == [0, 2, 1, 3, 4, 6, 5, 7], o
assert "time_ms" not in o and "algorithm" not in o' "$out"

# --- cost agrees with map ----------------------------------------------------
"$commap" matrix gen --pattern stencil3d --threads 27 --shuffle 11 >"$T/s3.json"
big="pack:2 l3:2 core:4 pu:2"
for alg in auto greedy matching compact scatter random; do
	"$commap" map --topology "$big" --cpuset 0-29 --matrix "$T/s3.json" \
		--algorithm "$alg" --format json >"$T/map.out"
	mapping=$(json_get pu_of_thread <"$T/map.out")
	run "$commap" cost --topology "$big" --cpuset 0-29 \
		--matrix "$T/s3.json" --mapping "$mapping" --format json
	echo "$out" >"$T/cost.out"
	ok "$alg: cost of the printed mapping equals the cost map reported" py '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert a["cost"] == b["cost"], (a["cost"], b["cost"])
assert a["data_sharing"] == b["data_sharing"]
assert a["mapping_accuracy"] == b["mapping_accuracy"]' "$T/map.out" "$T/cost.out"
done
ok "compact is no better than auto on a shuffled 3D stencil" py '
import json, subprocess, sys
def cost(alg):
    out = subprocess.run([sys.argv[1], "map", "--topology", sys.argv[2],
        "--matrix", sys.argv[3], "--algorithm", alg, "--format", "json"],
        check=True, capture_output=True).stdout
    return json.loads(out)["cost"]
assert cost("auto") <= cost("compact"), (cost("auto"), cost("compact"))' \
	"$commap" "$big" "$T/s3.json"

# --- cpusets, stdin, oversubscription ---------------------------------------
"$commap" matrix gen --pattern pairs --threads 4 >"$T/p4.json"
run sh -c "\"$commap\" cost --topology '$topo' --cpuset 0-1,4-7 --matrix - \
	--mapping 0,1,4,5 --format json <'$T/p4.json'"
is "cost inside a cpuset, matrix on stdin: exits 0" "$status" 0
is "... cpuset reported" "$(echo "$out" | json_get cpuset)" "0-1,4-7"
is "... cost 2 (two pairs on siblings)" "$(echo "$out" | json_get cost)" 2.0
run "$commap" cost --topology "$topo" --matrix "$T/p4.json" \
	--mapping 0,0,1,1 --oversubscribe --format json
is "--oversubscribe: pairs stacked on one PU cost 0" \
	"$(echo "$out" | json_get cost)" 0.0

# --- bad mappings ----------------------------------------------------------
fails_with 1 "7 entries" "$commap" cost --topology "$topo" \
	--matrix "$T/pairs.json" --mapping 0,1,2,3,4,5,6
fails_with 1 "8 threads" "$commap" cost --topology "$topo" \
	--matrix "$T/pairs.json" --mapping 0,1,2,3,4,5,6,7,0
fails_with 1 "PU 12 does not exist" "$commap" cost --topology "$topo" \
	--matrix "$T/p4.json" --mapping 0,1,12,3
fails_with 1 "PU 2 is not in the cpuset 0-1,4-7" "$commap" cost \
	--topology "$topo" --cpuset 0-1,4-7 --matrix "$T/p4.json" \
	--mapping 0,1,2,4
fails_with 1 "PU 1 is given to threads 1 and 2" "$commap" cost \
	--topology "$topo" --matrix "$T/p4.json" --mapping 0,1,1,3
fails_with 2 "'x'" "$commap" cost --topology "$topo" \
	--matrix "$T/p4.json" --mapping 0,x,1,3
fails_with 2 "entry 3" "$commap" cost --topology "$topo" \
	--matrix "$T/p4.json" --mapping 0,1,,3
fails_with 2 "'-1'" "$commap" cost --topology "$topo" \
	--matrix "$T/p4.json" --mapping 0,1,-1,3
fails_with 2 "--mapping" "$commap" cost --topology "$topo" \
	--matrix "$T/p4.json"

done_testing
