#!/bin/bash
# 'commap run': exit status passthrough, mapping quality (dry runs on a
# synthetic machine: this one has 2 PUs), pins only inside the program's
# affinity, static and off modes, an agent killed with -9, bad options.
. "$top_srcdir/tests/integration/tap.sh"
pairs="$top_builddir/tests/agent/pairs"
export COMMAP_AGENT="$top_builddir/nodeagent/commap-agent"

# py FILE EXPR: evaluate a Python expression over the result document d;
# exits 0 when it is true.
py() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
sys.exit(0 if ok else 1)
EOF
}

# Exit status passthrough.
run "$commap" run --quiet -- "$pairs" -t 100
is "program exiting 0: exit 0" "$status" 0
run "$commap" run --quiet -- "$pairs" -t 100 -x 3
is "program exiting 3: exit 3" "$status" 3
run "$commap" run --quiet -- "$pairs" -t 100 -k 15
is "program killed by SIGTERM: exit 143" "$status" 143
run "$commap" run --quiet -- "$T/no-such-program"
is "program not found: exit 127" "$status" 127
run "$commap" run -- sh -c 'echo out; echo err >&2; exit 4'
ok "the program's output is its own" [ "$status" -eq 4 -a "$out" = out ]
ok "the summary goes to stderr" grep -q "^commap: .* threads" "$T/err"

# Four pairs on a synthetic 8-PU machine (dry run): the matrix holds the
# four pairs, and each pair ends on one core.  The period is fixed: left
# to the overhead budget, a node whose sample-cost calibration ran under
# load samples every 7.6-10 ms instead of ~1.4 ms, and the matrix, aged in
# wall time, then never holds the 4 events per thread a mapping needs
# (0 mappings in 3 of 3 runs beside two busy loops).  At 1 ms, 0.5 s of
# CPU per thread gives each ~500 samples however busy the machine is.
run "$commap" run --period-us 1000 --topology "pack:2 core:2 pu:2" \
	--output "$T/dry.json" -- "$pairs" -p 4 -t 1500 -c 4000
is "dry run: exit 0" "$status" 0
ok "dry run: result marked dry_run, 8 PUs" \
	py "$T/dry.json" 'd["topology"]["dry_run"] and d["topology"]["pus"] == 8'
ok "dry run: 9 threads (main + 8)" py "$T/dry.json" 'len(d["threads"]) == 9'
# Cosine similarity of the detected matrix with the ground truth.
ok "dry run: detected matrix ~ the 4 pairs (cosine >= 0.9)" py "$T/dry.json" '
(lambda e: sum(w for i, j, w in e if j == i + 1 and i % 2 == 1) /
 (sum(w * w for i, j, w in e) ** 0.5 * 2) >= 0.9)(d["edges"])'
ok "dry run: each pair on one core" py "$T/dry.json" '
(lambda m: all(m[a] >= 0 and m[a] // 2 == m[a + 1] // 2
               for a in (1, 3, 5, 7)))(d["timeline"][-1]["pu_of_thread"])'
ok "dry run: every migration recorded with time, thread, from, to" \
	py "$T/dry.json" 'd["migrations"] and all(
set(m) == {"t", "thread", "from", "to"} for m in d["migrations"])'
ok "summary names the top pairs" grep -q "top communicating pairs" "$T/err"
ok "dry run: every mapping keeps the placement invariant" \
	"$top_srcdir/tests/e2e/result-check" invariant "$T/dry.json"

# A restricted affinity: the result's CPU set is CPU 1 and nothing is
# pinned anywhere else.  On one PU every placement costs the same, so the
# agent may pin nothing; then it must say so ("not_pinned"), which shows
# it reached a mapping decision: a result with neither pins nor that
# reason means it never had the evidence to decide, and fails.  On one
# CPU the threads take turns, so links between them show only across
# time slices and evidence accrues slowly: 4 s of CPU time (-c, so that a
# loaded machine stretches the run instead of ending it), at a fixed
# period for the reason above.
run taskset -c 1 "$commap" run --period-us 1000 --output "$T/cpu1.json" \
	-- "$pairs" -t 4000 -c 4000
is "taskset -c 1: exit 0" "$status" 0
ok "taskset -c 1: cpuset of the result is 1" \
	py "$T/cpu1.json" 'd["topology"]["cpuset"] == "1" and not d["topology"]["dry_run"]'
ok "taskset -c 1: a mapping decision, every pin to CPU 1" \
	py "$T/cpu1.json" '((d["migrations"] or d.get("not_pinned")) and
all(m["to"] == 1 for m in d["migrations"]) and
all(p in (-1, 1) for e in d["timeline"] for p in e["pu_of_thread"]))'

# Off: followed, not pinned.
run "$commap" run --mode off --output "$T/off.json" -- "$pairs" -p 2 -t 300
ok "off: exit 0, threads listed, nothing pinned" py "$T/off.json" \
	'd["mode"] == "off" and len(d["threads"]) == 5 and not d["migrations"] and d["backend"] is None'

# Static: a mapping file applied as threads appear (dry run).
echo '{"pu_of_thread": [7, 6, 5, 4, 3, 2, 1, 0, 7]}' >"$T/static.json"
run "$commap" run --mode static "$T/static.json" \
	--topology "pack:2 core:2 pu:2" --output "$T/st.json" -- "$pairs" -t 300
ok "static: each thread k went to the file's PU" py "$T/st.json" '(
d["mode"] == "static" and len(d["migrations"]) == 9 and
all(m["to"] == [7, 6, 5, 4, 3, 2, 1, 0, 7][m["thread"]] for m in d["migrations"]))'

# The agent killed with -9 mid-run: the program finishes normally.
"$commap" run --quiet -- "$pairs" -t 1500 -x 5 2>"$T/kill.err" &
runpid=$!
agent=
for _ in $(seq 50); do
	agent=$(ps -o pid=,comm= --ppid "$runpid" | awk '$2 == "commap-agent" {print $1}')
	[ -n "$agent" ] && break
	sleep 0.05
done
sleep 0.4
[ -n "$agent" ] && kill -9 "$agent"
wait "$runpid"
is "agent killed with -9: the program's status 5 comes through" "$?" 5
ok "agent killed with -9: it was found and killed" [ -n "$agent" ]

# Usage errors name the option.
fails_with 2 "--mode" "$commap" run --mode fast -- true
fails_with 2 "--period-us" "$commap" run --period-us 5 -- true
fails_with 2 "--backend" "$commap" run --backend pebs -- true
fails_with 2 "no program" "$commap" run --quiet
fails_with 2 "needs a FILE" "$commap" run --mode static -- true
fails_with 2 "--bogus" "$commap" run --bogus -- true

# No agent: the program still runs, one line says why.
run env COMMAP_AGENT=/nonexistent/agent "$commap" run -- sh -c 'exit 6'
ok "missing agent: program runs, its status, one line" \
	[ "$status" -eq 6 -a "$(grep -c '^commap:' "$T/err")" -eq 1 ]

done_testing
