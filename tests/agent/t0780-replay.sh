#!/bin/bash
# Recordings and replay (docs/formats.md "Recordings"): a live dry run
# recorded with `commap run --record` replays to the same matrix and the
# same mapping timeline as the live result's, and to the same bytes twice;
# the recordings kept in tests/data/recordings (real runs, README there)
# replay to the pairs they were recorded from (version 2), and to the
# decisions of the interval clock (version 3): a stable pattern is mapped
# once, a phase change is remapped, and only with aging; bad recordings
# and command lines are refused with a message naming the problem.
. "$top_srcdir/tests/integration/tap.sh"
pairs="$top_builddir/tests/agent/pairs"
recordings="$top_srcdir/tests/data/recordings"
export COMMAP_AGENT="$top_builddir/nodeagent/commap-agent"

# py EXPR FILE...: a Python expression over the results r[0], r[1], ...
py() {
	python3 - "$@" <<'EOF2'
import json, sys
r = [json.load(open(f)) for f in sys.argv[2:]]
sys.exit(0 if eval("(" + sys.argv[1] + ")") else 1)
EOF2
}
# pairs_on_cores RESULT PER: in the last mapping, every creation-index
# pair (1,2), (3,4), ... is mapped onto one core (PER PUs per core) or
# left unmapped as a whole, and at least one pair is mapped.
pairs_on_cores() {
	python3 - "$1" "$2" <<'EOF2'
import json, sys
m = json.load(open(sys.argv[1]))["timeline"][-1]["pu_of_thread"]
per = int(sys.argv[2])
pairs = [(m[a], m[a + 1]) for a in range(1, len(m) - 1, 2)]
sys.exit(0 if any(x >= 0 for x, _ in pairs) and all(
    (x < 0 and y < 0) or (x >= 0 and x // per == y // per)
    for x, y in pairs) else 1)
EOF2
}

# 1. A live dry run, recorded.  The period is fixed (as in t0700) so that
# a busy machine still gives the matrix some events; 1.5 s of CPU time.
run "$commap" run --quiet --period-us 1000 --topology "pack:2 core:2 pu:2" \
	--record "$T/live.rec" --output "$T/live.json" \
	-- "$pairs" -p 4 -t 800 -c 1500
is "live: exit 0" "$status" 0
ok "live: the recording is complete (ends with 'end')" \
	test "$(tail -n 1 "$T/live.rec")" = end
run "$commap" replay "$T/live.rec" --output "$T/r1.json"
is "replay: exit 0" "$status" 0
run "$commap" replay "$T/live.rec"
printf '%s\n' "$out" >"$T/r2.json"
ok "replay twice: the same bytes (file and standard output)" \
	cmp -s "$T/r1.json" "$T/r2.json"
ok "replay: the live run's matrix, edge for edge" \
	py 'r[0]["edges"] and sorted(map(tuple, r[0]["edges"])) ==
sorted(map(tuple, r[1]["edges"]))' "$T/live.json" "$T/r1.json"
ok "replay: a commap-result of mode replay, the live run's threads" \
	py 'r[1]["format"] == "commap-result" and r[1]["mode"] == "replay" and
[(t["pid"], t["tid"]) for t in r[1]["threads"]] ==
[(t["pid"], t["tid"]) for t in r[0]["threads"]][:len(r[1]["threads"])]' \
	"$T/live.json" "$T/r1.json"
ok "replay: the recorded machine and CPU set" \
	py 'r[0]["topology"]["cpuset"] == "0-7" and r[0]["topology"]["pus"] == 8
and r[0]["topology"]["dry_run"]' "$T/r1.json"
ok "replay: the live run's timeline, mapping for mapping (time, PUs, reason, cost)" \
	py 'r[0]["timeline"] and r[0]["timeline"] == r[1]["timeline"] and
r[0].get("migrations") == r[1].get("migrations") and
r[0]["stats"]["intervals"] == r[1]["stats"]["intervals"]' \
	"$T/live.json" "$T/r1.json"
ok "replay: no divergence from the recorded intervals" \
	py 'not [w for w in r[0].get("warnings", []) if "differ" in w]' \
	"$T/r1.json"

# A live run that pins (this machine's CPUs): the same timeline, moves,
# edges (corrected for pairs pinned near each other, as the agent's are)
# and progress guard's judgements, unless pinning failed (not recorded).
run "$commap" run --quiet --period-us 1000 --record "$T/pin.rec" \
	--output "$T/pin.json" -- "$pairs" -p 2 -t 600 -c 1000
run "$commap" replay "$T/pin.rec" --output "$T/pin-r.json"
is "pinned run replayed: exit 0" "$status" 0
if py 'not [w for w in r[0].get("warnings", []) if "unpinned" in w]' \
	"$T/pin.json"
then
	ok "pinned run: the live timeline, migrations, edges and guard" \
		py 'r[0]["timeline"] == r[1]["timeline"] and
r[0]["migrations"] == r[1]["migrations"] and
r[0].get("guard") == r[1].get("guard") and
sorted(map(tuple, r[0]["edges"])) == sorted(map(tuple, r[1]["edges"]))' \
		"$T/pin.json" "$T/pin-r.json"
else
	tap_count=$((tap_count + 1))
	echo "ok $tap_count - pinned run # SKIP pinning failed (not recorded)"
fi

# MPI ranks passing messages by single-copy transfers (CMA, traced as
# system calls, recorded before their attribution): 2 ranks in a ring at
# 64 KiB for 1 s, a dry run.  The replay attributes every recorded
# transfer with the agent's code to the recorded threads and adds the
# recorded evidence of segment ownership (shm_owner.h, "shm" lines) as
# the agent added it: the live timeline and the live matrix, edge for
# edge.
wl_mpi="$top_builddir/tests/workloads/wl-mpi-msg"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$wl_mpi" --help >/dev/null 2>&1
if [ $? -ne 77 ] && command -v mpirun >/dev/null && [ "$(id -u)" -eq 0 ]
then
	run "$commap" run --quiet --period-us 1000 \
		--topology "pack:2 core:2 pu:2" --record "$T/cma.rec" \
		--output "$T/cma.json" -- mpirun --oversubscribe --bind-to none \
		-np 2 "$wl_mpi" --pattern ring --bytes 65536 --seconds 1
fi
if [ -s "$T/cma.rec" ] && grep -q '^cma ' "$T/cma.rec"; then
	"$commap" replay "$T/cma.rec" >"$T/c1.json" &&
		"$commap" replay "$T/cma.rec" >"$T/c2.json"
	ok "CMA: the same bytes twice" cmp -s "$T/c1.json" "$T/c2.json"
	ok "CMA: the live timeline (times, PUs, reasons) and moves" \
		py '[[e[k] for k in ("t", "pu_of_thread", "reason")] for e in
r[0]["timeline"]] == [[e[k] for k in ("t", "pu_of_thread", "reason")]
for e in r[1]["timeline"]] and
r[0].get("migrations") == r[1].get("migrations")' "$T/cma.json" "$T/c1.json"
	n=$(grep -c '^cma ' "$T/cma.rec")
	ns=$(grep -c '^shm ' "$T/cma.rec")
	ok "CMA: all $n transfers (64 KiB: a unit each) on the ranks' edge" \
		py '(lambda P: P and max(P.values()) >= '"$n"')(
{(i, j): w for i, j, w in r[0]["edges"]})' "$T/c1.json"
	ok "CMA and $ns references into another rank's segment: the live matrix, edge for edge" \
		py 'sorted(map(tuple, r[0]["edges"])) ==
sorted(map(tuple, r[1]["edges"]))' "$T/cma.json" "$T/c1.json"
else
	for what in "the same bytes twice" "the live timeline" "the transfers" \
		"the live matrix"
	do
		tap_count=$((tap_count + 1))
		echo "ok $tap_count - CMA: $what # SKIP no MPI, not root, or CMA not traced here"
	done
fi
# 2. The kept recordings of version 2 (still read): real runs of pairs
# (README there), one mapping at the end.
for rec in "$recordings"/pairs4-dry.rec:2 "$recordings"/pairs2-2cpus.rec:1; do
	f=${rec%:*} per=${rec##*:} name=$(basename "${rec%:*}")
	"$commap" replay "$f" >"$T/a.json" 2>"$T/err"
	"$commap" replay "$f" >"$T/b.json" 2>>"$T/err"
	ok "$name: replays to the same bytes twice" cmp -s "$T/a.json" "$T/b.json"
	ok "$name: the matrix is the pairs, nothing else" py '
r[0]["edges"] and all(j == i + 1 and i % 2 == 1 for i, j, w in r[0]["edges"])' \
		"$T/a.json"
	ok "$name: each mapped pair on one core" pairs_on_cores "$T/a.json" "$per"
done

# 3. The decisions, from kept recordings of real runs (version 3).
# A run that pinned 2 pairs on 2 CPUs: the pairs are the heaviest edges
# (corrected for being pinned together), each pair on one PU.
rec="$recordings/pairs2-pinned.rec"
"$commap" replay "$rec" >"$T/q1.json" && "$commap" replay "$rec" >"$T/q2.json"
ok "pinned pairs: the same bytes twice" cmp -s "$T/q1.json" "$T/q2.json"
ok "pinned pairs: the pairs are the heaviest edges, each pair on one PU" \
	py '(lambda e, m: sorted((i, j) for i, j, w in e if w > 100) ==
[(1, 2), (3, 4)] and m[1] == m[2] >= 0 and m[3] == m[4] >= 0)(
r[0]["edges"], r[0]["timeline"][-1]["pu_of_thread"])' "$T/q1.json"
ok "pinned pairs: the guard judged the mapping from its snapshots, kept it" \
	py 'r[0]["guard"] == {"checked": 1, "undone": 0}' "$T/q1.json"
# The progress guard: the same run with the readings around its mapping
# made to show a slowdown (busy threads before, threads that mostly wait
# after): the mapping is undone, the pairs unplaced, and nothing is mapped
# again before the backoff (4 s) has passed.
python3 - "$rec" "$T/slow.rec" <<'EOF2'
import sys
L = open(sys.argv[1]).read().split("\n")
snaps = {}
for i, l in enumerate(L):
    w = l.split()
    if w[:1] == ["snap"] and w[1] not in snaps:
        snaps[w[1]] = (i, int(w[2]), int(w[3]))
(im, tm, n), (ia, ta, _), (ip, tp, _) = snaps["m"], snaps["a"], snaps["p"]
m = [tuple(map(float, L[im + 1 + k].split()[1:])) for k in range(n)]
da, dp = (ta - tm) / 1e9, (tp - ta) / 1e9
a = [(c + 0.8 * da, w + 0.1 * da) if c >= 0 else (c, w) for c, w in m]
p = [(c + 0.1 * dp, w + 0.9 * dp) if c >= 0 else (c, w) for c, w in a]
for i, v in ((ia, a), (ip, p)):
    for k, (c, w) in enumerate(v):
        L[i + 1 + k] = "s %.17g %.17g" % (c, w)
open(sys.argv[2], "w").write("\n".join(L))
EOF2
"$commap" replay "$T/slow.rec" >"$T/g1.json" &&
	"$commap" replay "$T/slow.rec" >"$T/g2.json"
ok "guard: the same bytes twice" cmp -s "$T/g1.json" "$T/g2.json"
ok "guard: the mapping undone, the pairs unplaced, the measures said" \
	py '(lambda t: r[0]["guard"] == {"checked": 1, "undone": 1} and
t[0]["reason"] == "initial" and t[1]["reason"] == "guard-undo" and
all(x < 0 for x in t[1]["pu_of_thread"]) and "CPU" in t[1]["note"])(
r[0]["timeline"])' "$T/g1.json"
ok "guard: no mapping within the backoff after the undo" \
	py '(lambda t: all(e["t"] >= t[1]["t"] + 4.0 for e in t[2:]))(
r[0]["timeline"])' "$T/g1.json"

# Pins that failed (version 4, "nopin" lines): the same run with one of
# its first mapping's pins met by a thread gone (ESRCH: that thread stays
# unplaced, the others are pinned) or refused (EPERM: nothing pinned,
# the job said to run unpinned, nothing judged).
python3 - "$rec" "$T/q1.json" "$T/gone.rec" "$T/refused.rec" <<'EOF2'
import json, sys
L = open(sys.argv[1]).read().split("\n")
r = json.load(open(sys.argv[2]))
t0 = int(next(l for l in L if l.startswith("options ")).split()[1])
mig = r["migrations"]
t = t0 + int(round(mig[0]["t"] * 1e9))
at = next(i for i, l in enumerate(L) if l.startswith("interval %d " % t))
L[0] = "commap-recording 4"
for out, (m, err) in zip(sys.argv[3:], ((mig[-1], 3), (mig[0], 1))):
    K = L[:at + 1] + ["nopin %d %d %d %d" % (t, m["thread"], m["to"], err)] \
        + L[at + 1:]
    open(out, "w").write("\n".join(K))
EOF2
"$commap" replay "$T/gone.rec" >"$T/gone.json"
ok "a pin met by a thread gone: that thread unplaced, the others pinned" \
	py '(lambda a, b, i: b["timeline"][0]["t"] == a["timeline"][0]["t"] and
b["timeline"][0]["pu_of_thread"] == [-1 if k == i else x for k, x in
enumerate(a["timeline"][0]["pu_of_thread"])] and
not [w for w in b.get("warnings", []) if "unpinned" in w])(
r[0], r[1], r[0]["migrations"][-1]["thread"])' \
	"$T/q1.json" "$T/gone.json"
"$commap" replay "$T/refused.rec" >"$T/refused.json"
"$commap" replay "$T/refused.rec" >"$T/refused2.json"
ok "a pin refused: nothing pinned, the job said to run unpinned, no judgement" \
	py 'not r[0].get("migrations") and
all(x < 0 for x in r[0]["timeline"][0]["pu_of_thread"]) and
[w for w in r[0]["warnings"] if "unpinned from now on" in w] and
not r[0].get("guard", {}).get("checked")' "$T/refused.json"
ok "a pin refused: the same bytes twice" cmp -s "$T/refused.json" \
	"$T/refused2.json"
# Message passing (version 4): 2 Open MPI ranks in a ring at 1 MiB, a
# dry run.  Every recorded transfer lands on the edge between the two
# ranks (their bytes in 64 KiB units), and the ranks share a core.
rec="$recordings/mpi-ring2-cma.rec"
"$commap" replay "$rec" >"$T/m1.json" && "$commap" replay "$rec" >"$T/m2.json"
ok "MPI ring (CMA): the same bytes twice" cmp -s "$T/m1.json" "$T/m2.json"
units=$(awk '$1 == "cma" { s += $6 } END { print s / 65536 }' "$rec")
ok "MPI ring (CMA): the $units units of transfers between the ranks, on one core" \
	py '(lambda e, th, m: e[2] >= '"$units"' and
th[e[0]]["pid"] != th[e[1]]["pid"] and m[e[0]] >= 0 and
m[e[0]] // 2 == m[e[1]] // 2)(max(r[0]["edges"], key=lambda x: x[2]),
r[0]["threads"], r[0]["timeline"][-1]["pu_of_thread"])' "$T/m1.json"
# A stable pattern: one mapping, none after it, in every interval.
rec="$recordings/pairs4-stable.rec"
"$commap" replay "$rec" >"$T/s1.json" && "$commap" replay "$rec" >"$T/s2.json"
ok "stable pairs: the same bytes twice" cmp -s "$T/s1.json" "$T/s2.json"
n=$(grep -c '^interval ' "$rec")
ok "stable pairs: one mapping (initial) over all its $n intervals, no remap" \
	py 'len(r[0]["timeline"]) == 1 and
r[0]["timeline"][0]["reason"] == "initial" and
r[0]["stats"]["intervals"] == '"$n" "$T/s1.json"
ok "stable pairs: each mapped pair on one core" pairs_on_cores "$T/s1.json" 2
# A phase change (threads 0-1 and 2-3, then 0-2 and 1-3 from 1.5 s):
# remapped after the switch, the new partners each within a package.
rec="$recordings/phases4-dry.rec"
"$commap" replay "$rec" >"$T/p1.json" && "$commap" replay "$rec" >"$T/p2.json"
ok "phases: the same bytes twice" cmp -s "$T/p1.json" "$T/p2.json"
ok "phases: remapped after the switch (pattern or recheck)" \
	py 'len(r[0]["timeline"]) >= 2 and r[0]["timeline"][-1]["t"] > 1.5 and
r[0]["timeline"][-1]["reason"] in ("pattern", "recheck")' "$T/p1.json"
ok "phases: the second phase's partners share a package at the end" \
	py 'all(m[a] // 4 == m[b] // 4 for m in [r[0]["timeline"][-1]
["pu_of_thread"]] for a, b in ((0, 2), (1, 3)))' "$T/p1.json"
ok "phases: the recorded run's decisions, no divergence" \
	py 'not [w for w in r[0].get("warnings", []) if "differ" in w]' \
	"$T/p1.json"
# Aging: the same events without aging (alpha 1) never forget the first
# phase, so no remap comes, and the replay says it left the recorded run.
sed 's/^options \([0-9]*\) [^ ]* /options \1 1 /' "$rec" >"$T/noage.rec"
"$commap" replay "$T/noage.rec" >"$T/n1.json"
ok "aging: without it, the first phase's mapping stays, said to differ" \
	py 'len(r[0]["timeline"]) == 1 and
[w for w in r[0].get("warnings", []) if "differ from the recorded" in w]' \
	"$T/n1.json"

# 4. Refused: each message names the problem.
printf 'commap-recording 1\nstart 1 2\ndetect 4096 1024 0\na 5 0 0 0 zz 0\n' \
	>"$T/bad.rec"
run "$commap" replay "$T/bad.rec"
ok "bad access line: exit 1, the line named" \
	[ "$status" -eq 1 ] && printf '%s' "$err" | grep -q "line 4: want 'a TIME"
printf 'commap-recording 1\nstart 1 2\n' >"$T/short.rec"
run "$commap" replay "$T/short.rec"
ok "header cut short: exit 1, said so" \
	[ "$status" -eq 1 ] && printf '%s' "$err" | grep -q "ends inside its header"
printf 'commap-recording 9\nstart 1 2\ndetect 4096 1024 0\n' >"$T/v9.rec"
run "$commap" replay "$T/v9.rec"
ok "a later version: exit 1, the version named" \
	[ "$status" -eq 1 ] && printf '%s' "$err" | grep -q "unsupported version 9"
printf 'commap-recording 3\nstart 1 2\ndetect 4096 1024 0\ninterval 5 200\n' \
	>"$T/noopt.rec"
run "$commap" replay "$T/noopt.rec"
ok "an interval before the options: exit 1, said so" \
	[ "$status" -eq 1 ] && printf '%s' "$err" | grep -q "line 4: a clock line before"
printf 'commap-recording 3\nstart 1 2\ndetect 4096 1024 0\noptions 1 0.75 0.05 dynamic\ninterval 9 200\ncheckpoint 8\n' \
	>"$T/back.rec"
run "$commap" replay "$T/back.rec"
ok "time going back: exit 1, the line named" \
	[ "$status" -eq 1 ] && printf '%s' "$err" | grep -q "line 6: time goes back"
printf 'commap-recording 2\nstart 1 2\ndetect 4096 1024 0\ninterval 9 200\n' \
	>"$T/v2clock.rec"
run "$commap" replay "$T/v2clock.rec"
ok "a clock line in version 2: exit 1, said so" \
	[ "$status" -eq 1 ] && printf '%s' "$err" | grep -q "needs version 3"
printf 'P1\n' >"$T/other.rec"
run "$commap" replay "$T/other.rec"
ok "not a recording: exit 1, said so" \
	[ "$status" -eq 1 ] && printf '%s' "$err" | grep -q "not a commap recording"
run "$commap" replay "$T/none.rec"
ok "missing file: exit 1, the file named" \
	[ "$status" -eq 1 ] && printf '%s' "$err" | grep -q "none.rec"
fails_with 2 "no recording" "$commap" replay
fails_with 2 "--bogus" "$commap" replay --bogus x
# A recording the agent could not finish (killed): replayed, with a warning.
head -n 200 "$recordings/pairs4-dry.rec" >"$T/cut.rec"
run "$commap" replay "$T/cut.rec" --output "$T/cut.json"
ok "cut recording: replayed, a warning says it ends early" \
	py '[w for w in r[0].get("warnings", []) if "ends early" in w]' \
	"$T/cut.json"
# The agent refuses --record where it cannot write, and the run goes on.
run "$commap" run --quiet --period-us 1000 --topology "pack:2 core:2 pu:2" \
	--record "$T/no/such/dir.rec" --output "$T/nodir.json" \
	-- "$pairs" -p 1 -t 200
ok "unwritable --record: the program's status, a warning in the result" \
	py '[w for w in r[0].get("warnings", []) if "cannot create" in w]' \
	"$T/nodir.json"

done_testing
