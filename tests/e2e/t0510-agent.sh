#!/bin/bash
# The real node agent through the SPANK plugin on the local cluster: a
# pthread pairs program under srun --commap=dynamic leaves a result in the
# spool with the step's identity, its threads and a non-empty matrix, and
# every pin inside the step's CPUs.
. "$(dirname "$0")/e2e-lib.sh"
e2e_require_cluster
agent=$top_builddir/nodeagent/commap-agent
pairs=$top_builddir/tests/agent/pairs
[ -x "$agent" ] && [ -x "$pairs" ] ||
	skip_all "the agent was not built (capstone missing) or make check did not build tests/agent/pairs"

# Ports searched from a base of its own (t0500 searches from 16817).
unset COMMAP_SLURMCTLD_PORT COMMAP_SLURMD_PORT
E2E_PORT_FROM=${E2E_PORT_BASE:-16827}
e2e_cluster_start "default=off agent=$agent spool=/tmp"
spool=$E2E_DIR/spool
mkdir -p "$spool"
# The agent at a fixed period and the pairs to a CPU-time budget, as in
# the other live tests (e2e-agent-lib.sh): under the sanitizers beside
# other work the calibrated period left the matrix empty.
. "$(dirname "$0")/e2e-agent-lib.sh"
plug_agent=$E2E_DIR/agent
e2e_fixed_period_agent "$plug_agent"
e2e_plugstack "default=off agent=$plug_agent spool=$spool"
results() { ls "$spool"/*.json 2>/dev/null; }

out=$(timeout 120 srun --commap=dynamic -n1 "$pairs" -p 4 -t 1500 -c 3000 2>&1)
rc=$?
ok $rc "srun --commap=dynamic of 4 thread pairs exits 0"
[ $rc -eq 0 ] || diag "$out"
wait_for [ -n "$(results)" ]
ok $? "a result appears in the spool"
res=$(results | head -1)
py() {
	python3 - "$res" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
py 'd["format"] == "commap-result" and d["mode"] == "dynamic" and d["identity"]["job"] is not None and d["identity"]["step"] == 0'
ok $? "the result names the job and step 0, mode dynamic"
py 'len(d["threads"]) >= 9 and all(t["rank"] == 0 for t in d["threads"])'
ok $? "the step's threads are listed (main + 8, rank 0)"
py 'len(d["edges"]) > 0 and d["stats"]["samples"] > 0'
ok $? "the matrix is not empty"
py '(lambda cpus: all(m["to"] in cpus for m in d["migrations"]))(
set(int(x) for part in d["topology"]["cpuset"].split(",") for x in
    (range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1))))'
ok $? "every pin is inside the step's CPUs (${res##*/})"
log=$(ls "$spool"/agent-*.log 2>/dev/null | head -1)
[ -n "$log" ] && ! grep -v "^commap-agent: " "$log" | grep -q .
ok $? "the agent's log holds only its own prefixed lines"

done_testing
