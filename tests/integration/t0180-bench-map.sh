#!/bin/sh
# tests/bench/map --by-level: the weight of the links by the distance of
# their threads adds up to each mapper's cost, and known answers.
. "$top_srcdir/tests/integration/tap.sh"

bench="$top_builddir/tests/bench/map"
py() { python3 -c "$@"; }

run "$bench" --sizes 16,64 --families pairs,stencil2d,clusters4 \
	--algorithms auto,compact,random --reps 1 --quiet --by-level \
	--format csv
is "CSV with --by-level exits 0" "$status" 0
ok "every mapper's cost is the sum of distance x weight by distance" py '
import csv, io, sys
rows = list(csv.DictReader(io.StringIO(sys.argv[1])))
assert len(rows) == 18, len(rows)
for r in rows:
    assert r["state"] == "ok", r
    by = [float(r["by_d%d" % d]) for d in range(7)]
    total = sum(d * w for d, w in enumerate(by))
    assert abs(total - float(r["cost"])) <= 1e-6 * max(1, total), (r, total)
    assert by[0] == 0, r     # one thread per PU: no link inside a PU' "$out"
ok "auto puts every pair on two PUs of a core (distance 1 only)" py '
import csv, io, sys
for r in csv.DictReader(io.StringIO(sys.argv[1])):
    if r["family"] == "pairs" and r["algorithm"] == "auto":
        by = [float(r["by_d%d" % d]) for d in range(7)]
        assert by[1] == sum(by) > 0, r' "$out"
ok "random placement spreads pairs beyond the core" py '
import csv, io, sys
for r in csv.DictReader(io.StringIO(sys.argv[1])):
    if r["family"] == "pairs" and r["algorithm"] == "random" and r["n"] == "64":
        by = [float(r["by_d%d" % d]) for d in range(7)]
        assert sum(by[2:]) > 0, r' "$out"

run "$bench" --sizes 16 --families pairs --algorithms auto --reps 1 \
	--quiet --format csv
ok "without --by-level the CSV keeps its 11 columns" py '
import sys
head = sys.argv[1].splitlines()[0].split(",")
assert len(head) == 11 and head[-1] == "repaired", head' "$out"

run "$bench" --sizes 64 --families stencil2d --algorithms auto,compact \
	--reps 1 --quiet --by-level
is "text with --by-level exits 0" "$status" 0
ok "text output has the table by distance, one line per mapper" py '
import sys
lines = sys.argv[1].splitlines()
i = [k for k, l in enumerate(lines) if l.startswith("weight of the links by distance")]
assert len(i) == 1, lines
body = [l.split() for l in lines[i[0] + 2:] if l.strip()]
assert [b[2] for b in body] == ["auto", "compact"], body' "$out"

done_testing
