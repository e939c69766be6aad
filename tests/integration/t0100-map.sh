#!/bin/sh
# commap map: known answers, cpuset restriction, input formats, seeds.
. "$top_srcdir/tests/integration/tap.sh"

py() { python3 -c "$@"; }

# --- pairs on SMT siblings (the mapper's known answer) -----------------
"$commap" matrix gen --pattern pairs --threads 8 >"$T/pairs.json"
run sh -c "\"$commap\" matrix gen --pattern pairs --threads 8 |
	\"$commap\" map --topology 'pack:2 core:2 pu:2' --matrix - --format json"
is "map pairs (matrix from a pipe) exits 0" "$status" 0
echo "$out" >"$T/pairs.out"
ok "each pair (2k, 2k+1) lands on SMT siblings (one core)" py '
import json, sys
p = json.load(open(sys.argv[1]))["pu_of_thread"]
assert len(p) == 8 and sorted(p) == list(range(8)), p
assert all(p[2*k] // 2 == p[2*k+1] // 2 for k in range(4)), p' "$T/pairs.out"
is "cost of the pairs mapping: 4 pairs x weight 1 x core distance 1" \
	"$(json_get cost <"$T/pairs.out")" 4.0
is "data_sharing.core is 1 when every pair shares a core" \
	"$(json_get data_sharing.core <"$T/pairs.out")" 1.0
is "mapping_accuracy is 1" "$(json_get mapping_accuracy <"$T/pairs.out")" 1.0
ok "JSON has algorithm, threads, pus, cpuset, time_ms" py '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["algorithm"] == "auto" and o["threads"] == 8 and o["pus"] == 8
assert o["cpuset"] == "0-7" and o["time_ms"] >= 0
assert set(o["data_sharing"]) == {"core", "l1", "l2", "l3", "numa", "package"}
' "$T/pairs.out"

# Shuffled pairs: the pairs are only in the matrix, not in thread order.
"$commap" matrix gen --pattern pairs --threads 16 --shuffle 7 >"$T/spairs.json"
run "$commap" map --topology "pack:2 core:4 pu:2" --matrix "$T/spairs.json" \
	--format json
echo "$out" >"$T/spairs.out"
ok "shuffled pairs: every edge of the matrix joins SMT siblings" py '
import json, sys
m = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))["pu_of_thread"]
assert len(m["edges"]) == 8
assert all(p[i] // 2 == p[j] // 2 for i, j, w in m["edges"]), p' \
	"$T/spairs.json" "$T/spairs.out"

# --- planted clusters of the L3 width end up under one L3 -------------------
"$commap" matrix gen --pattern clusters:4 --threads 16 --shuffle 5 >"$T/cl.json"
run "$commap" map --topology "pack:2 l3:2 core:4 pu:1" --matrix "$T/cl.json" \
	--format json
echo "$out" >"$T/cl.out"
ok "clusters:4 on L3s of 4 cores: each cluster under one L3" py '
import json, sys
m = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))["pu_of_thread"]
heavy = [(i, j) for i, j, w in m["edges"] if w >= 0.5]
assert len(heavy) == 4 * 6, len(heavy)
assert all(p[i] // 4 == p[j] // 4 for i, j in heavy), p' "$T/cl.json" "$T/cl.out"

# --- text output -------------------------------------------------------------
run "$commap" map --topology "pack:2 core:2 pu:2" --matrix "$T/pairs.json"
is "text output exits 0" "$status" 0
ok "text output has the cost line" grep -qx "cost: 4" "$T/out"
ok "text table header names thread, pu, core, package" \
	grep -Eq "^ *thread +pu +core +package$" "$T/out"
ok "text table has a row per thread" \
	test "$(grep -Ec '^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+$' "$T/out")" -eq 8
ok "text and JSON give the same PUs" py '
import json, sys
p = json.load(open(sys.argv[1]))["pu_of_thread"]
rows = [l.split() for l in open(sys.argv[2]) if l[:1] == " " and l.split()[0].isdigit()]
assert [int(r[1]) for r in rows] == p
assert all(int(r[2]) == int(r[1]) // 2 for r in rows)   # core ordinal
assert all(int(r[3]) == int(r[1]) // 4 for r in rows)   # package ordinal
' "$T/pairs.out" "$T/out"

# --- cpuset restriction ------------------------------------------------------
cpus="1,3,5-6,9,12-14"
"$commap" matrix gen --pattern stencil2d --threads 8 >"$T/st8.json"
run "$commap" map --topology "pack:2 core:4 pu:2" --cpuset "$cpus" \
	--matrix "$T/st8.json" --format json
echo "$out" >"$T/cs.out"
is "map with a cpuset with holes exits 0" "$status" 0
ok "8 threads on an 8-PU cpuset use exactly the cpuset" py '
import json, sys
o = json.load(open(sys.argv[1]))
assert sorted(o["pu_of_thread"]) == [1, 3, 5, 6, 9, 12, 13, 14], o
assert o["cpuset"] == "1,3,5-6,9,12-14" and o["pus"] == 8' "$T/cs.out"
"$commap" matrix gen --pattern ring --threads 4 >"$T/ring4.json"
for alg in auto greedy matching exact compact scatter roundrobin random; do
	run "$commap" map --topology "pack:2 core:4 pu:2" --cpuset "$cpus" \
		--matrix "$T/ring4.json" --algorithm "$alg" --format json
	echo "$out" >"$T/alg.out"
	ok "$alg: 4 threads, distinct PUs, all inside the cpuset" py '
import json, sys
o = json.load(open(sys.argv[1])); p = o["pu_of_thread"]
assert len(p) == 4 and len(set(p)) == 4, p
assert set(p) <= {1, 3, 5, 6, 9, 12, 13, 14}, p
assert o["algorithm"] == sys.argv[2], o' "$T/alg.out" "$alg"
done

# --- CSV and JSON inputs give the same mapping ------------------------------
"$commap" matrix gen --pattern stencil2d --threads 16 --shuffle 3 \
	--format json >"$T/st.json"
"$commap" matrix gen --pattern stencil2d --threads 16 --shuffle 3 \
	--format csv >"$T/st.csv"
"$commap" map --topology "pack:2 l3:2 core:2 pu:2" --matrix "$T/st.json" \
	--format json | json_get pu_of_thread >"$T/from-json"
"$commap" map --topology "pack:2 l3:2 core:2 pu:2" --matrix "$T/st.csv" \
	--format json | json_get pu_of_thread >"$T/from-csv"
ok "stencil2d from CSV and from JSON: same mapping" cmp -s "$T/from-json" "$T/from-csv"
ok "... and a non-empty one" test -s "$T/from-json"

# --- seeds ---------------------------------------------------------------
m16() {
	"$commap" map --topology "pack:2 core:4 pu:2" --matrix "$T/st.json" \
		--format json "$@" | json_get pu_of_thread
}
a=$(m16 --algorithm random --seed 1)
b=$(m16 --algorithm random --seed 1)
c=$(m16 --algorithm random --seed 2)
is "random with the same seed twice: same mapping" "$a" "$b"
ok "random with another seed: another mapping" test "$a" != "$c"
ok "random mapping is a permutation of the 16 PUs" py '
import sys
p = [int(x) for x in sys.argv[1].split(",")]
assert sorted(p) == list(range(16)), p' "$a"
is "auto is deterministic" "$(m16)" "$(m16)"
is "--seed 0 is the default" "$(m16 --algorithm random)" \
	"$(m16 --algorithm random --seed 0)"

# --- oversubscription, --no-refine, XML, this machine ----------------------
"$commap" matrix gen --pattern ring --threads 12 >"$T/ring12.json"
run "$commap" map --topology "pack:2 core:2 pu:2" --matrix "$T/ring12.json" \
	--oversubscribe --format json
echo "$out" >"$T/over.out"
ok "12 threads on 8 PUs with --oversubscribe: 1 or 2 threads per PU" py '
import json, sys, collections
p = json.load(open(sys.argv[1]))["pu_of_thread"]
c = collections.Counter(p)
assert len(p) == 12 and set(c) == set(range(8)), p
assert all(1 <= v <= 2 for v in c.values()), c' "$T/over.out"
run "$commap" map --topology "pack:2 core:2 pu:2" --matrix "$T/pairs.json" \
	--algorithm greedy --no-refine --format json
ok "--no-refine: valid mapping" py '
import json, sys
assert sorted(json.loads(sys.argv[1])["pu_of_thread"]) == list(range(8))' "$out"
run "$commap" map --topology-xml "$data/pack2-l3-core4-pu2.xml" \
	--matrix "$T/spairs.json" --format json
echo "$out" >"$T/xml.out"
ok "--topology-xml: 16 PUs, pairs on siblings" py '
import json, sys
m = json.load(open(sys.argv[1])); o = json.load(open(sys.argv[2]))
p = o["pu_of_thread"]
assert o["pus"] == 16 and sorted(p) == list(range(16)), o
assert all(p[i] // 2 == p[j] // 2 for i, j, w in m["edges"]), p' \
	"$T/spairs.json" "$T/xml.out"
"$commap" matrix gen --pattern pairs --threads 2 >"$T/p2.json"
run "$commap" map --topology this --matrix "$T/p2.json" --oversubscribe \
	--format json
is "--topology this exits 0" "$status" 0
ok "--topology this: 2 threads mapped" py '
import json, sys
o = json.loads(sys.argv[1]); assert len(o["pu_of_thread"]) == 2
assert o["topology"] == "this" and o["pus"] >= 1' "$out"

done_testing
