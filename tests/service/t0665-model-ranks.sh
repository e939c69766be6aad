#!/bin/sh
# The rank matrix across nodes (docs/service.md "Rank matrix across
# nodes"): the real daemon, real munge credentials of real users.  A
# step's three node results with MPI traffic counts make the matrix of
# GET /v1/models/{app}/ranks (pairs summed both ways, bytes between nodes
# per step); a step missing a node's result is left out; another user's
# matrix is refused, a writer (the placement, for the job's user) reads
# it; malformed queries name the parameter.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

need_root_and_munge
command -v python3 >/dev/null || skip_all "python3 is not installed"
A=commap-test-a B=commap-test-b
make_user $A && make_user $B || skip_all "cannot create the test users"
uid_a=$(id -u $A)

printf 'database = %s/svc.db\nthreads = 2\n' "$T" >"$T/svc.conf"
ok "the service starts" start_service "$T/svc.conf"

# node_result FILE JOB NODE RANKS PAIRS: rank RANKS of job JOB on NODE
# (user A's run of ring -n 6), sending PAIRS ([[src, dst, bytes, msgs]]).
node_result() {
	python3 - "$@" "$uid_a" "$A" <<'PY'
import json, sys
path, job, node, ranks, pairs, uid, user = sys.argv[1:]
ranks = json.loads(ranks)
doc = {
    "format": "commap-result", "version": 1,
    "identity": {"job": int(job), "step": 0, "node": node, "user": user,
                 "uid": int(uid), "executable": "/opt/apps/ring",
                 "exe_hash": "sha256:" + "ab" * 32,
                 "argv": ["./ring", "-n", "6"], "argv_shape": "ring -n #",
                 "ranks": len(ranks), "threads": len(ranks)},
    "mode": "dynamic", "backend": "sample",
    "started_at": "2026-11-22T10:00:00Z", "ended_at": "2026-11-22T10:01:00Z",
    "topology": {"cpuset": "0-1", "pus": 2, "synthetic": "pack:1 core:2 pu:1",
                 "dry_run": False},
    "threads": [{"rank": r, "index": 0, "tid": 100 + r, "pid": 100 + r}
                for r in ranks],
    "edges": [], "timeline": [], "migrations": [],
    "stats": {"samples": 10, "lost": 0},
    "rank_traffic": {"source": "ompi-monitoring", "ranks": ranks,
                     "pairs": json.loads(pairs)},
}
json.dump(doc, open(path, "w"))
PY
}

# Job 8001: ranks r and r + 3 are partners (on other nodes under block).
node_result "$T/a1.json" 8001 node1 '[0, 1]' '[[0, 3, 4000, 4], [1, 4, 4000, 4], [0, 1, 10, 1]]'
node_result "$T/a2.json" 8001 node2 '[2, 3]' '[[2, 5, 4000, 4], [3, 0, 4000, 4]]'
node_result "$T/a3.json" 8001 node3 '[4, 5]' '[[4, 1, 4000, 4], [5, 2, 4000, 4]]'
# Job 8002: only node1's result arrived.
node_result "$T/b1.json" 8002 node1 '[0, 1]' '[[0, 3, 999999, 1]]'
for f in a1 a2 a3 b1; do
	req root POST /v1/results --data-binary @"$T/$f.json"
	is "upload $f as the agent (root): 201" "$code" 201
	[ "$code" = 201 ] || diag "$body"
done

req $A GET "/v1/models/ring/ranks?argv_shape=ring%20-n%20%23&ranks=6"
is "the owner reads the ring's rank matrix: 200" "$code" 200
[ "$code" = 200 ] || diag "$body"
is "  6 ranks" "$(jq_py 'j["ranks"]')" 6
is "  partners summed both ways, 0-1 inside a node" \
	"$(jq_py 'sorted(map(tuple, j["pairs"]))')" \
	"[[0, 1, 10], [0, 3, 8000], [1, 4, 8000], [2, 5, 8000]]"
is "  one step (8002 lacks two nodes' results)" \
	"$(jq_py '[(r["job"], r["nodes"]) for r in j["runs"]]')" "[[8001, 3]]"
is "  its bytes between nodes and in all" \
	"$(jq_py '[j["runs"][0]["bytes_between_nodes"], j["runs"][0]["bytes_total"]]')" \
	"[24000, 24010]"
req root GET "/v1/models/ring/ranks?uid=$uid_a&exe_hash=sha256:$(printf 'ab%.0s' $(seq 32))"
is "a writer (the placement in srun) reads it for the user: 200" "$code" 200
req $B GET "/v1/models/ring/ranks?uid=$uid_a"
is "another user naming A's uid: 403" "$code" 403
req $B GET /v1/models/ring/ranks
is "B has no ring matrix: 404" "$code" 404
ok "  the answer names the app" grep -q "no rank matrix for app ring" "$T/body"
req $A GET "/v1/models/ring/ranks?ranks=5"
is "no step of 5 ranks: 404" "$code" 404
req $A GET "/v1/models/ring/ranks?ranks=0x"
is "ranks=0x: 400" "$code" 400
ok "  the answer names ranks" grep -q "ranks: '0x'" "$T/body"
req $A GET "/v1/models/ring/ranks?rank=6"
is "an unknown parameter: 400" "$code" 400
req $A POST /v1/models/ring/ranks
is "POST: 405" "$code" 405
req - GET /v1/models/ring/ranks
is "no credential: 401" "$code" 401

ok "the service stops cleanly" stop_service
done_testing
