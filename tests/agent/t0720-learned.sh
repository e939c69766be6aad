#!/bin/bash
# Learned mappings with the real agent, real perf events, the
# real service on loopback and real munge: a dynamic run uploads, a second
# run in --mode learned pins each thread at its pair's place as it appears
# and never moves it again; a changed executable or another shape gets no
# model; a dead service means dynamic.  Dry runs on a synthetic 8-PU
# machine ("pack:2 core:2 pu:2"), so the 8 threads map meaningfully on
# this 2-PU box.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

need_root_and_munge
export COMMAP_AGENT="$top_builddir/nodeagent/commap-agent"
[ -x "$COMMAP_AGENT" ] || skip_all "commap-agent was not built"
pairs="$top_builddir/tests/agent/pairs"
topo="pack:2 core:2 pu:2"
# Under sanitizers LeakSanitizer's exit-time checker clones a task (not a
# thread) of pairs: the agent follows it as a second process of rank 0,
# its thread repeats identity (0, 0) and the service learns nothing from
# such a run (docs/service.md).  Not what this test is about.
export LSAN_OPTIONS=detect_leaks=0

cat >"$T/svc.conf" <<CONF
database = $T/svc.db
max_body = 16m
threads = 2
CONF
ok "the service starts" start_service "$T/svc.conf"
export COMMAP_SERVICE="$url"

# py FILE EXPR: a Python expression over the result document d.
py() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
}
pyv() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))
EOF
}
nolines() { grep -c "commap-agent: .*$1" "$T/err"; }

# --- run 1: dynamic, no model yet; the result feeds one ------------------
# 5 s of CPU time (-c: a busy machine stretches the run instead of ending
# it) at a fixed period: left to the overhead budget, a node whose
# sample-cost calibration ran beside other work samples every 7.6-10 ms,
# and the model then lacks pairs (docs/testing.md).
run "$commap" run --period-us 1000 --topology "$topo" --output "$T/r1.json" \
	-- "$pairs" -p 4 -t 2500 -c 5000
is "run 1 (dynamic): exit 0" "$status" 0
want="sha256:$(sha256sum "$pairs" | cut -c1-64)"
is "run 1: exe_hash is the executable's sha256" \
	"$(pyv "$T/r1.json" 'd["identity"]["exe_hash"]')" "$want"
is "run 1: argv_shape" "$(pyv "$T/r1.json" 'd["identity"]["argv_shape"]')" \
	"pairs -p # -t # -c #"
ok "run 1: ranks 1, threads_per_rank 9" py "$T/r1.json" \
	'd["identity"]["ranks"] == 1 and d["identity"]["threads_per_rank"] == 9'
ok "run 1: no model to start from (used false, with the reason)" \
	py "$T/r1.json" 'd["model"]["used"] is False and "no model" in d["model"]["reason"]'
is "run 1: one log line about it" "$(nolines 'no learned model')" 1
q="exe_hash=$(printf %s "$want" | sed 's/:/%3A/')&ranks=1&argv_shape=pairs%20-p%20%23%20-t%20%23%20-c%20%23"
req root GET "/v1/models?$q"
is "run 1 was uploaded: the service has a model" "$code" 200
is "  of 1 run" "$(jq_py 'j["runs"]')" 1
diag "dynamic pin latency (ms): $(pyv "$T/r1.json" 'd["stats"]["pin_latency_ms"]')"

# --- run 2: learned ------------------------------------------------------
run "$commap" run --mode learned --period-us 1000 --topology "$topo" \
	--output "$T/r2.json" -- "$pairs" -p 4 -t 1000 -c 2000
is "run 2 (learned): exit 0" "$status" 0
ok "run 2: mode learned, started from the model (1 run)" py "$T/r2.json" \
	'd["mode"] == "learned" and d["model"]["used"] is True and d["model"]["runs"] == 1'
ok "run 2: distance to the model reported, in [0, 1]" py "$T/r2.json" \
	'0 <= d["model"]["distance"] <= 1'
# (threads found by two scans give two "learned" entries: the last has all)
ok "run 2: the learned mapping places the 8 workers" py "$T/r2.json" \
	'all(k >= 0 for k in d["timeline"][-1]["pu_of_thread"][1:9])'
# Run 1's evidence decides the model.  On a busy machine (the sanitizers
# beside other work) the idle main thread, which first touched the pairs'
# buffers, may get a little weight and a PU in the model: nine threads on
# eight PUs.  Then what is asserted is that the learned mapping fills the
# eight PUs; otherwise, the pairs' structure.
main_placed=$(pyv "$T/r2.json" 'int(d["timeline"][-1]["pu_of_thread"][0] >= 0)')
if [ "$main_placed" = 0 ]; then
	ok "run 2: each pair on one core, 8 distinct PUs" py "$T/r2.json" '
(lambda m: all(m[a] // 2 == m[a + 1] // 2 for a in (1, 3, 5, 7)) and
 len(set(m[1:9])) == 8)(d["timeline"][-1]["pu_of_thread"])'
else
	diag "run 2: the model placed the main thread too (run 1 gave it weight)"
	ok "run 2: nine threads on the 8 PUs, none left free" py "$T/r2.json" \
		'len(set(d["timeline"][-1]["pu_of_thread"][0:9])) == 8'
fi
ok "run 2: every worker pinned once, to its learned PU" py "$T/r2.json" '
(lambda m, mig: sorted(x["thread"] for x in mig) == list(range(1, 9)) and
 all(x["from"] == -1 and x["to"] == m[x["thread"]] for x in mig))(
 d["timeline"][-1]["pu_of_thread"],
 [x for x in d["migrations"] if 1 <= x["thread"] <= 8])'
ok "run 2: no migration after the initial pins (only learned mappings)" \
	py "$T/r2.json" 'all(m["reason"] == "learned" for m in d["timeline"])'
ok "run 2: every learned mapping keeps the placement invariant" \
	"$top_srcdir/tests/e2e/result-check" invariant "$T/r2.json"
ok "run 2: pin latency recorded for the 8 workers" py "$T/r2.json" \
	'd["stats"]["pin_latency_ms"]["n"] == 8 + (d["timeline"][-1]["pu_of_thread"][0] >= 0)'
diag "learned pin latency (ms): $(pyv "$T/r2.json" 'd["stats"]["pin_latency_ms"]')"
diag "  (benchmark figure, target p90 < 100 ms; not asserted: wall time)"
req root GET "/v1/models?$q"
is "run 2 improved the model: 2 runs" "$(jq_py 'j["runs"]')" 2

# --- the model on another allocation: this machine's real PUs -------------
# What the learned mapping placed is asserted (the last "learned" entry and
# the workers' first pins); what comes after it under real pinning (the
# progress guard undoing it on a loaded machine, pins made again after
# the backoff) is the guard's, replayed deterministically in t0780.  A
# model fetch that missed its 500 ms deadline on a loaded machine is the
# job running dynamic, not a failure: then there is nothing to check.
# learned_pins FILE PUS: the 8 workers' first pins are the last learned
# entry's, sorted onto PUS (a Python list), each pair on one PU.
learned_pins() {
	py "$1" '(lambda L, first: bool(L) and
	sorted(L[-1]["pu_of_thread"][1:9]) == '"$2"' and
	all(L[-1]["pu_of_thread"][a] == L[-1]["pu_of_thread"][a + 1]
	    for a in (1, 3, 5, 7)) and
	sorted(first) == list(range(1, 9)) and
	all(first[t] == L[-1]["pu_of_thread"][t] for t in first))(
	[e for e in d["timeline"] if e["reason"] == "learned"],
	{t: m["to"] for t, m in reversed([(m["thread"], m)
	  for m in d["migrations"] if m["from"] == -1])
	 if 1 <= t <= 8})'
}
learned_check() {
	if py "$1" '(d["model"]["used"] is not True and
	"timeout" in d["model"].get("reason", "").lower())'; then
		tap_count=$((tap_count + 1))
		echo "ok $tap_count - $2 # SKIP the model came too late at this load"
	else
		ok "$2" learned_pins "$1" "$3"
	fi
}
run taskset -c 1 "$commap" run --mode learned --output "$T/cpu1.json" \
	-- "$pairs" -p 4 -t 300 -c 600
ok "one real CPU (taskset -c 1): its CPU set, real pinning" \
	py "$T/cpu1.json" '(d["topology"]["cpuset"] == "1" and
	not d["topology"]["dry_run"] and all(m["to"] in (-1, 1)
	for m in d["migrations"]))'
learned_check "$T/cpu1.json" \
	"one real CPU: learned, the 8 workers first pinned to CPU 1" \
	"[1] * 8"
ncpu=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
if [ "$ncpu" -ge 2 ]; then
	run taskset -c 0,1 "$commap" run --mode learned --output "$T/cpu2.json" \
		-- "$pairs" -p 4 -t 300 -c 600
	learned_check "$T/cpu2.json" \
		"two real CPUs: the 8 workers first pinned 4 per CPU, pairs together" \
		"[0, 0, 0, 0, 1, 1, 1, 1]"
fi

# --- a changed executable: another hash, no model -------------------------
mkdir -p "$T/bin"
cp "$pairs" "$T/bin/pairs"
printf 'x' >>"$T/bin/pairs"
run "$commap" run --mode learned --topology "$topo" --output "$T/r3.json" \
	-- "$T/bin/pairs" -p 4 -t 300 -c 600
is "changed executable: exit 0" "$status" 0
ok "changed executable: same argv shape, another hash" py "$T/r3.json" \
	"d['identity']['argv_shape'] == 'pairs -p # -t # -c #' and d['identity']['exe_hash'] not in ('$want', None)"
ok "changed executable: no model used, ran dynamic" py "$T/r3.json" \
	'd["model"]["used"] is False and d["mode"] == "dynamic"'
is "changed executable: one log line" "$(nolines 'no learned model')" 1

# --- another shape: more threads than the model knows ----------------------
run "$commap" run --mode learned --topology "$topo" --output "$T/r4.json" \
	-- "$pairs" -p 6 -t 300 -c 600
is "another shape: exit 0" "$status" 0
ok "another shape: the model is not used (reason names the shape)" \
	py "$T/r4.json" 'd["model"]["used"] is False and "shape" in d["model"]["reason"]'
is "another shape: one log line" "$(nolines 'learned model abandoned')" 1
ok "another shape: 13 threads followed, ran dynamic" py "$T/r4.json" \
	'len(d["threads"]) == 13 and d["mode"] == "dynamic"'

# --- identities of several processes of one rank ------------------------------
# bash (the root, rank 0) starts a subshell that never execs (a forked
# helper, like LeakSanitizer's tracer) and the pairs program.  Each
# process of the rank gets its own index space (docs/agent.md, "Thread
# identities"): bash 0, pairs 1000..1008 (its rank is final at its
# exec), the subshell 2000 (final after CM_RANK_PROVISIONAL_NS).  Before,
# all three started at index 0: (0, 0) three times, a result the service
# cannot fold into a model.
mkfifo "$T/fifo"
fork_app() {
	run "$commap" run "$@" --period-us 1000 --topology "$topo" -- bash -c \
		'(read -t 2 x <>"$1") & "$0" -p 4 -t 2500 -c 5000; wait' \
		"$pairs" "$T/fifo"
}
fork_app --output "$T/f1.json"
is "forked helper, run 1: exit 0" "$status" 0
is "run 1: one identity per thread, per process its own index space" \
	"$(pyv "$T/f1.json" 'sorted((t["rank"], t["index"]) for t in d["threads"])')" \
	"[(0, 0), (0, 1000), (0, 1001), (0, 1002), (0, 1003), (0, 1004), (0, 1005), (0, 1006), (0, 1007), (0, 1008), (0, 2000)]"
fq="exe_hash=$(pyv "$T/f1.json" 'd["identity"]["exe_hash"]' | sed 's/:/%3A/')&ranks=1"
fq="$fq&argv_shape=$(pyv "$T/f1.json" '__import__("urllib.parse").parse.quote(d["identity"]["argv_shape"], safe="")')"
req root GET "/v1/models?$fq"
is "run 1 fed a model (identities do not repeat)" "$code" 200
fork_app --mode learned --output "$T/f2.json"
is "forked helper, run 2 (learned): exit 0" "$status" 0
ok "run 2: the model is used to the end (no identity unknown to it)" \
	py "$T/f2.json" 'd["model"]["used"] is True and d["mode"] == "learned"'
# (every pair the model saw communicating: all 4 on a quiet machine,
# fewer when run 1 was starved of CPU, e.g. under sanitizers; the pairs'
# main thread too when the model saw it touch the pairs' pages, as it
# does when it stops them; never bash or its helper)
ok "run 2: pairs threads (1000..1008) pinned once each, from the model" \
	py "$T/f2.json" '(lambda mig, w: len(mig) >= 2 and
	len(set(m["thread"] for m in mig)) == len(mig) and
	all(m["thread"] in w and m["from"] == -1 for m in mig))(d["migrations"],
	[i for i, t in enumerate(d["threads"]) if 1000 <= t["index"] <= 1008])'
ok "run 2: no migration after the learned pins" py "$T/f2.json" \
	'all(m["reason"] == "learned" for m in d["timeline"])'
diag "forked helper, learned pin latency (ms): $(pyv "$T/f2.json" 'd["stats"]["pin_latency_ms"]')"

# --- the service is down: dynamic, the job runs ------------------------------
stop_service
run "$commap" run --mode learned --topology "$topo" --output "$T/r5.json" \
	-- "$pairs" -p 4 -t 300 -x 3
is "service down: the program's status comes through" "$status" 3
ok "service down: no model, ran dynamic, result written" py "$T/r5.json" \
	'd["model"]["used"] is False and d["mode"] == "dynamic" and len(d["threads"]) == 9'
is "service down: one log line about the model" \
	"$(nolines 'no learned model')" 1

done_testing
