#!/bin/sh
# commap matrix gen: every pattern, both formats, shuffling, seeds, --output.
. "$top_srcdir/tests/integration/tap.sh"

py() { python3 -c "$@"; }
gen() { "$commap" matrix gen "$@"; }

# check_edges PATTERN N EDGES: a valid commap-matrix with that many edges.
check_edges() {
	gen --pattern "$1" --threads "$2" >"$T/m.json"
	ok "$1 x $2: a commap-matrix v1 with $3 edges, i < j < N, w > 0" py '
import json, sys
m = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert m["format"] == "commap-matrix" and m["version"] == 1, m
assert m["threads"] == n, m["threads"]
e = m["edges"]
assert len(e) == int(sys.argv[3]), len(e)
assert all(0 <= i < j < n and w > 0 for i, j, w in e), e
assert len({(i, j) for i, j, w in e}) == len(e)' "$T/m.json" "$2" "$3"
}
check_edges pairs 8 4
check_edges pairs 7 3
check_edges ring 5 5
check_edges stencil2d 16 24
check_edges stencil2d 12 17
check_edges stencil3d 8 12
check_edges stencil3d 27 54
check_edges all2all 6 15
check_edges clusters:4 8 16
check_edges pairs 1 0

is "pairs x 8: exactly the pairs (2k, 2k+1), weight 1" \
	"$(gen --pattern pairs --threads 8 | json_get edges)" \
	"[0, 1, 1.0],[2, 3, 1.0],[4, 5, 1.0],[6, 7, 1.0]"
ok "clusters:4 x 16: 4 x 6 heavy edges, all inside a group of 4" py '
import json, subprocess, sys
m = json.loads(subprocess.run([sys.argv[1], "matrix", "gen", "--pattern",
    "clusters:4", "--threads", "16"], check=True, capture_output=True).stdout)
heavy = [(i, j) for i, j, w in m["edges"] if w == 1]
assert len(heavy) == 24 and all(i // 4 == j // 4 for i, j in heavy), heavy
assert all(w < 1 and i % 4 == j % 4 for i, j, w in m["edges"] if i // 4 != j // 4)' "$commap"

# --- CSV -----------------------------------------------------------------
gen --pattern ring --threads 6 --format csv >"$T/ring.csv"
ok "CSV: 6 rows of 6 numbers, symmetric, the ring's edges" py '
import sys
rows = [[float(x) for x in l.split(",")] for l in open(sys.argv[1])
        if l.strip() and not l.startswith("#")]
assert len(rows) == 6 and all(len(r) == 6 for r in rows), rows
assert all(rows[i][j] == rows[j][i] for i in range(6) for j in range(6))
assert all(rows[i][(i + 1) % 6] == 1 for i in range(6))
assert sum(map(sum, rows)) == 12' "$T/ring.csv"

# --- shuffling and seeds ---------------------------------------------------
gen --pattern stencil2d --threads 16 >"$T/plain.json"
gen --pattern stencil2d --threads 16 --shuffle 9 >"$T/sh9.json"
gen --pattern stencil2d --threads 16 --shuffle 9 >"$T/sh9b.json"
gen --pattern stencil2d --threads 16 --shuffle 10 >"$T/sh10.json"
ok "same --shuffle seed: same file" cmp -s "$T/sh9.json" "$T/sh9b.json"
ok "shuffled differs from plain" sh -c "! cmp -s '$T/plain.json' '$T/sh9.json'"
ok "another --shuffle seed: another file" \
	sh -c "! cmp -s '$T/sh9.json' '$T/sh10.json'"
ok "a shuffle is a relabelling: same degree sequence and weights" py '
import json, sys
def degrees(f):
    d = {}
    for i, j, w in json.load(open(f))["edges"]:
        d[i] = d.get(i, 0) + w; d[j] = d.get(j, 0) + w
    return sorted(d.values())
assert degrees(sys.argv[1]) == degrees(sys.argv[2])' "$T/plain.json" "$T/sh9.json"
is "--shuffle 0 means no shuffle" \
	"$(gen --pattern stencil2d --threads 16 --shuffle 0)" "$(cat "$T/plain.json")"
gen --pattern random --threads 32 --seed 4 >"$T/r4.json"
gen --pattern random --threads 32 --seed 4 >"$T/r4b.json"
gen --pattern random --threads 32 --seed 5 >"$T/r5.json"
ok "random: same seed, same matrix" cmp -s "$T/r4.json" "$T/r4b.json"
ok "random: another seed, another matrix" sh -c "! cmp -s '$T/r4.json' '$T/r5.json'"
ok "random: weights in [1, 10), sparse" py '
import json, sys
e = json.load(open(sys.argv[1]))["edges"]
assert 32 <= len(e) <= 32 * 8 and all(1 <= w < 10 for i, j, w in e), len(e)' \
	"$T/r4.json"

# --- --output ---------------------------------------------------------------
run gen --pattern ring --threads 6 --format csv --output "$T/out.csv"
is "--output: exits 0" "$status" 0
is "--output: nothing on stdout" "$out" ""
ok "--output: the same bytes as stdout" cmp -s "$T/out.csv" "$T/ring.csv"
fails_with 1 "$T/nodir/x.json" gen --pattern ring --threads 6 \
	--output "$T/nodir/x.json"

done_testing
