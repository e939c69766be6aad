#!/bin/bash
# Waits are not communication (docs/detection.md, "Lines waited on"): two
# kept recordings of real runs at the agent's default settings, replayed.
# Pairs exchanging buffers while every thread spins without `pause` on a
# barrier's flags must come out as the pairs; GROMACS over thread-MPI,
# whose samples are nearly all in its waits (each thread on its own flag,
# all flags in one page; a barrier's words), must not come out as a flat
# matrix of every pair.  Replays only: deterministic, a second each.
. "$top_srcdir/tests/integration/tap.sh"
recordings="$top_srcdir/tests/data/recordings"

# py EXPR FILE: a Python expression over the result r and its unit matrix
# w[(a, b)] (threads by creation index, a < b).
py() {
	python3 - "$@" <<'EOF2'
import json, sys
r = json.load(open(sys.argv[2]))
idx = [t["index"] for t in r["threads"]]
w = {}
for a, b, x in r["edges"]:
    a, b = sorted((idx[a], idx[b]))
    if a != b:
        w[(a, b)] = w.get((a, b), 0) + x
total = sum(w.values())
sys.exit(0 if eval("(" + sys.argv[1] + ")") else 1)
EOF2
}

rec="$recordings/spin-pairs-dry.rec"
run "$commap" replay "$rec" --output "$T/p1.json"
is "pairs with a spinning barrier: replayed" "$status" 0
"$commap" replay "$rec" --output "$T/p2.json"
ok "pairs with a spinning barrier: the same bytes twice" \
	cmp -s "$T/p1.json" "$T/p2.json"
ok "pairs with a spinning barrier: every pair found" \
	py 'all(w.get((i, i + 1), 0) > 0 for i in range(0, 8, 2))' "$T/p1.json"
ok "pairs with a spinning barrier: the pairs carry three quarters of the weight" \
	py 'total > 0 and sum(w.get((i, i + 1), 0)
	    for i in range(0, 8, 2)) > 0.75 * total' "$T/p1.json"
ok "pairs with a spinning barrier: each pair outweighs every other edge" \
	py 'min(w.get((i, i + 1), 0) for i in range(0, 8, 2)) > max(
	    x for (a, b), x in w.items() if not (a % 2 == 0 and b == a + 1))' \
	"$T/p1.json"

rec="$recordings/tmpi-waits-dry.rec"
run "$commap" replay "$rec" --output "$T/g.json"
is "thread-MPI waits: replayed" "$status" 0
ok "thread-MPI waits: the recording's accesses were read" \
	py 'r["stats"]["decoded"] > 1000' "$T/g.json"
ok "thread-MPI waits: under 0.1 units of weight per access (no matrix of \
waits)" \
	py 'total < 0.1 * r["stats"]["decoded"]' "$T/g.json"
ok "thread-MPI waits: not every pair of the 8 ranks joined" \
	py 'sum(1 for x in w.values() if x >= 1) < 28' "$T/g.json"

done_testing
