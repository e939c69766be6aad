#!/bin/bash
# t0740-stability: the dynamic agent places threads that start late around
# the placed ones and leaves placed threads where they are unless a remap
# is clearly worth it (docs/agent.md "Stability"; the deterministic cases
# are in test_remap_policy.t).
#
# 1. Two pairs run, two more pairs start 1 s later in another process
#    (dry run on a synthetic 8-PU machine): every worker is pinned once,
#    no placed thread ever moves, and each pair ends on one core.  These
#    are the agent's decisions alone: they are replayed from a recording
#    of a real run (tests/data/recordings, README there), so the machine's
#    load cannot change them.
# 2. The demo's MPI job (2 ranks x 2 threads in a ring, plus Open MPI's
#    helper threads) on this machine's CPUs: a ring of 4 on 2 PUs has two
#    equally good groupings.  The agent used to alternate between them (16
#    migrations in 4 s in the demo), then, with the undo hold, to regroup
#    once: pairs pinned to one PU are detected at about half the rate of
#    pairs across cores (docs/detection.md "Co-location bias").  With the
#    bias corrected, no thread moves after the first placement.  Skipped
#    without MPI.
. "$top_srcdir/tests/integration/tap.sh"
recordings="$top_srcdir/tests/data/recordings"
wl_mpi="$top_builddir/tests/workloads/wl-mpi"
export COMMAP_AGENT="$top_builddir/nodeagent/commap-agent"

# py FILE EXPR: a Python expression over the result d; exit 0 when true.
# w = the threads of each multithreaded process in creation order, as
# {pid: {0: main thread, 1: writer 0, 2: reader 0, ...}} (positions in
# d["threads"]); moved = migrations of threads already pinned.
py() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
procs = {}
for k, t in enumerate(d["threads"]):
    procs.setdefault(t["pid"], []).append((t["index"], k))
w = {pid: {c: k for c, (i, k) in enumerate(sorted(th))}
     for pid, th in procs.items() if len(th) > 1}
moved = [m for m in d["migrations"] if m["from"] >= 0]
pinned = {m["thread"] for m in d["migrations"]}
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
}

# --- 1. pairs starting late (replayed) --------------------------------------
run "$commap" replay "$recordings/late-pairs-dry.rec" --output "$T/late.json"
is "late pairs: replayed, exit 0" "$status" 0
ok "late pairs: the recorded run's decisions, no divergence" \
	py "$T/late.json" 'not [x for x in d.get("warnings", []) if "differ" in x]' 
ok "late pairs: two processes of 2 pairs followed" py "$T/late.json" \
	'len(w) == 2 and all(sorted(p) == [0, 1, 2, 3, 4] for p in w.values())'
ok "late pairs: every worker pinned" py "$T/late.json" \
	'all(p[c] in pinned for p in w.values() for c in (1, 2, 3, 4))'
ok "late pairs: the late pairs were placed by a later mapping" \
	py "$T/late.json" 'len(d["timeline"]) >= 2'
ok "late pairs: no placed thread moved" py "$T/late.json" 'not moved'
py "$T/late.json" 'not moved' ||
	diag "moves: $(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["migrations"])' "$T/late.json")"
ok "late pairs: the thread that exited (sleep) is out of the last mapping" \
	py "$T/late.json" '(lambda e: e["threads_live"] ==
len(e["pu_of_thread"]) - 1 and sum(x >= 0 for x in e["pu_of_thread"]) == 8)(
d["timeline"][-1])'
ok "late pairs: each pair ends on one core" py "$T/late.json" '
(lambda m: all(m[p[a]] >= 0 and m[p[a]] // 2 == m[p[a + 1]] // 2
               for p in w.values() for a in (1, 3)))(
d["timeline"][-1]["pu_of_thread"])'

# --- 2. the demo's MPI ring on this machine's CPUs ---------------------------
if "$wl_mpi" --help >/dev/null 2>&1; [ $? -eq 77 ] ||
	! command -v mpirun >/dev/null; then
	echo "ok $((tap_count + 1)) - MPI ring # SKIP no MPI"
	tap_count=$((tap_count + 1))
	done_testing
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# A fixed, short period and a run measured in CPU time (2 s per thread;
# --seconds only bounds it): enough events for the old bias to show
# beyond the noise also on a loaded machine, where a 3 s run sampled too
# little for it (the adaptive period may sample so little that nothing is
# mapped: then there is nothing to check).
run "$commap" run -v --period-us 250 --output "$T/ring.json" -- \
	mpirun --oversubscribe --bind-to none -np 2 "$wl_mpi" --pattern ring \
	--threads 2 --cpu-seconds 2 --seconds 120
is "MPI ring: exit 0" "$status" 0
ok "MPI ring: the ranks' threads were pinned" py "$T/ring.json" \
	'len(pinned) >= 4'
# The grouping of the first placement is as good as the other one: no
# regrouping.  Before the co-location bias was corrected the agent
# regrouped in 5 runs of 6 on a quiet machine (3 s runs) and in 2 of 4
# under a load of 12 (this run), where co-location gains less and the
# bias is smaller; test_remap_policy.t has the deterministic case.
ok "MPI ring: no regrouping after the first placement" py "$T/ring.json" \
	'not moved'
py "$T/ring.json" 'not moved' ||
	diag "moves: $(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["migrations"])' "$T/ring.json")"
diag "MPI ring: $(grep -c 'mapping applied' "$T/err") mappings;" \
	"$(grep 'migrations,' "$T/err")"
done_testing
