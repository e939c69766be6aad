#!/bin/sh
# Learned models end to end (docs/service.md, "Learned models"): the real
# daemon, real munge credentials of real users.  Two runs of one
# application (threads in different orders) make a model with runs=2, the
# matrix aggregated by thread identity and the last mapping; another
# executable or shape has none; another user's model is refused; malformed
# queries name the parameter; the application page and `commap apps` show
# the model.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --users 3 --cli "admins = @commap-test-adm"
H=sha256:$(printf 'pairs' | sha256sum | cut -c1-64)
H2=sha256:$(printf 'pairs, rebuilt' | sha256sum | cut -c1-64)

# pairs_result FILE JOB UID USER STARTED ORDER EDGES PUS: 4 threads of one
# rank in the document order ORDER (identity indices), edges and final
# PUs over document positions.
pairs_result() {
	python3 - "$@" "$H" <<'PY'
import json, sys
path, job, uid, user, started, order, edges, pus, h = sys.argv[1:]
order = json.loads(order)
doc = {
    "format": "commap-result", "version": 1,
    "identity": {"job": int(job), "step": 0, "node": "node1", "user": user,
                 "uid": int(uid), "executable": "/opt/apps/pairs",
                 "exe_hash": h, "argv": ["./pairs", "-n", "4"],
                 "ranks": 1, "threads": 4},
    "mode": "dynamic", "backend": "sample",
    "started_at": started, "ended_at": "2026-11-23T00:00:00Z",
    "topology": {"cpuset": "0-7", "pus": 8,
                 "synthetic": "pack:1 core:4 pu:2", "dry_run": False},
    "threads": [{"rank": 0, "index": i, "tid": 100 + i, "pid": 100}
                for i in order],
    "edges": json.loads(edges),
    "timeline": [{"t": 0.2, "pu_of_thread": json.loads(pus), "cost": 1.0,
                  "reason": "initial"}],
    "migrations": [],
    "stats": {"samples": 100, "lost": 0},
}
json.dump(doc, open(path, "w"))
PY
}

# Run 1: identities in order; (0,1) 200, (2,3) 100; thread i on PU 3-i.
pairs_result "$T/r1.json" 6001 "$uid_a" $A 2026-11-22T10:00:00Z \
	'[0,1,2,3]' '[[0,1,200.0],[2,3,100.0]]' '[3,2,1,0]'
# Run 2: document order 3,1,0,2: identity (0,1) is positions (2,1), weight
# 50; (2,3) is positions (3,0), weight 100.  Identity i ends on PU 4+i.
pairs_result "$T/r2.json" 6002 "$uid_a" $A 2026-11-22T11:00:00Z \
	'[3,1,0,2]' '[[1,2,50.0],[0,3,100.0]]' '[7,5,4,6]'
# ... and it says it started from a model (written by the agent).
python3 - "$T/r2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["model"] = {"used": True, "id": 1, "runs": 1, "distance": 0.2}
json.dump(d, open(sys.argv[1], "w"))
PY
for f in r1 r2; do
	req root POST /v1/results --data-binary @"$T/$f.json"
	is "upload $f as the agent (root): 201" "$code" 201
	[ "$code" = 201 ] || diag "$body"
done
req root POST /v1/results --data-binary @"$T/r2.json"
is "a re-sent result is a duplicate" "$code" 200

# Uploads only queue their result for its model (sql/0004_model_queue.sql);
# a read of a model folds that model's pending runs first, so the reads
# below see both runs at once, without waiting for the worker.
req root GET /v1/results/1
is "  the first result is stored" "$code" 200
python3 - "$T/svc.db" >"$T/queue" <<'PY2'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(len(db.execute("SELECT * FROM model_queue").fetchall()),
      [r[0] for r in db.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'")] != [])
PY2
ok "the queue of pending folds and its trigger exist (0004)" grep -qE "^[0-2] True$" "$T/queue"

# wait_folded: the worker folds queued results ~50 ms after an upload;
# wait until /metrics shows none pending.
wait_folded() {
	for _ in $(seq 200); do
		req - GET /metrics
		printf '%s' "$body" | grep -qx "commap_model_pending 0" &&
			return 0
		sleep 0.05
	done
	return 1
}

# model QUERY-ARGS...: GET /v1/models as $who with url-encoded parameters.
model() {
	local who=$1 n
	shift
	n=$#
	for a in "$@"; do
		set -- "$@" --data-urlencode "$a"
	done
	shift "$n"
	req "$who" GET /v1/models -G "$@"
}

model root "exe_hash=$H" ranks=1 "argv_shape=pairs -n #" uid=$uid_a
is "the agent fetches A's model: 200" "$code" 200
is "  format" "$(jq_py 'j["format"]')" commap-model
is "  runs 2" "$(jq_py 'j["runs"]')" 2
is "  key" "$(jq_py '[j["key"][k] for k in ("ranks", "threads_per_rank", "argv_shape")]')" \
	'[1, 4, "pairs -n #"]'
is "  threads by identity" "$(jq_py '[(t["rank"], t["index"]) for t in j["threads"]]')" \
	'[[0, 0], [0, 1], [0, 2], [0, 3]]'
is "  aggregated by identity: 0.5 * run 1 + 0.5 * run 2" \
	"$(jq_py 'sorted([e[0], e[1], round(e[2], 6)] for e in j["edges"])')" \
	'[[0, 1, 0.75], [2, 3, 0.75]]'
is "  stability: cosine of the runs' matrices" \
	"$(jq_py 'round(j["stability"], 6)')" 0.8
is "  the last mapping, by identity" \
	"$(jq_py 'j["last_mapping"]["pu_of_thread"]')" '[4, 5, 6, 7]'
is "  the topology of the last run" \
	"$(jq_py 'j["topology"]["synthetic"]')" "pack:1 core:4 pu:2"
id_a=$(jq_py 'j["id"]')

model $A "exe_hash=$H" ranks=1 "argv_shape=pairs -n #"
is "A reads their own model without uid: 200" "$code" 200
model $A "exe_hash=$H" ranks=1 "argv_shape=pairs -n #" threads_per_rank=4
is "  with threads_per_rank=4: 200" "$code" 200
model $A "exe_hash=$H" ranks=1 "argv_shape=pairs -n #" threads_per_rank=8
is "another threads_per_rank: 404" "$code" 404
model $A "exe_hash=$H2" ranks=1 "argv_shape=pairs -n #"
is "a changed executable (new hash): 404" "$code" 404
ok "  saying there is no model" sh -c 'printf "%s" "$1" | grep -q "no model for exe_hash=$2"' _ "$body" "$H2"
model $A "exe_hash=$H" ranks=2 "argv_shape=pairs -n #"
is "another number of ranks: 404" "$code" 404
model $A "exe_hash=$H" ranks=1 "argv_shape=pairs -n # -v"
is "another command-line shape: 404" "$code" 404

# --- ownership: per user -----------------------------------------------------
model $B "exe_hash=$H" ranks=1 "argv_shape=pairs -n #" uid=$uid_a
is "B asking for A's model: 403" "$code" 403
ok "  naming uid" sh -c 'printf "%s" "$1" | grep -q "uid:"' _ "$body"
model $B "exe_hash=$H" ranks=1 "argv_shape=pairs -n #"
is "B has no model of the same binary: 404" "$code" 404
req $B GET /v1/models/$id_a
is "B reading A's model by id: 403" "$code" 403
req $A GET /v1/models/$id_a
is "A reading it by id: 200" "$code" 200
pairs_result "$T/rb.json" 6003 "$uid_b" $B 2026-11-22T12:00:00Z \
	'[0,1,2,3]' '[[0,3,10.0]]' '[0,1,2,3]'
req root POST /v1/results --data-binary @"$T/rb.json"
is "B's run of the same binary: 201" "$code" 201
model $B "exe_hash=$H" ranks=1 "argv_shape=pairs -n #"
is "  B now has a model of their own: 1 run" "$(jq_py 'j["runs"]')" 1
model $A "exe_hash=$H" ranks=1 "argv_shape=pairs -n #"
is "  A's model is untouched: 2 runs" "$(jq_py 'j["runs"]')" 2
model $C "exe_hash=$H" ranks=1 "argv_shape=pairs -n #" uid=$uid_a
is "an admin reads A's model: 200" "$code" 200

req $A GET /v1/models
is "A's listing: only their own model" "$(jq_py '[(m["user"], m["runs"]) for m in j["models"]]')" \
	"[[\"$A\", 2]]"
is "  summaries without the matrix" "$(jq_py '"edges" in j["models"][0]')" False
req $C GET /v1/models?app=pairs
is "the admin's listing: both users' models" "$(jq_py 'len(j["models"])')" 2
req $A GET "/v1/models?uid=$uid_b"
is "A listing B's models: 403" "$code" 403

# --- malformed queries: 400 naming the parameter ------------------------------
bad() {	# bad WHAT PARAM QUERY...
	local what=$1 param=$2
	shift 2
	model $A "$@"
	is "$what: 400" "$code" 400
	ok "  naming $param" sh -c 'printf "%s" "$1" | grep -q "\"error\":\"$2"' _ "$body" "$param"
}
bad "ranks not a number" ranks "exe_hash=$H" ranks=abc "argv_shape=x"
bad "ranks 0" ranks "exe_hash=$H" ranks=0 "argv_shape=x"
bad "exe_hash missing" exe_hash ranks=1 "argv_shape=x"
bad "exe_hash malformed" exe_hash "exe_hash=sha256:xyz" ranks=1 "argv_shape=x"
bad "argv_shape missing" argv_shape "exe_hash=$H" ranks=1
bad "threads_per_rank 0" threads_per_rank "exe_hash=$H" ranks=1 "argv_shape=x" threads_per_rank=0
bad "uid negative" uid "exe_hash=$H" ranks=1 "argv_shape=x" uid=-1
bad "an unknown parameter" rank "exe_hash=$H" rank=1 "argv_shape=x"
req $A GET /v1/models/abc
is "a malformed model id: 400" "$code" 400
req $A GET /v1/models/999
is "an unknown model id: 404" "$code" 404
req root POST /v1/models --data-binary '{}'
is "POST /v1/models: 405" "$code" 405

# --- results that feed no model: stored all the same ------------------------------
python3 - "$T/r1.json" "$T/nohash.json" "$T/repeat.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["identity"]["job"] = 6010
d["identity"]["exe_hash"] = None
json.dump(d, open(sys.argv[2], "w"))
d["identity"]["job"] = 6011
d["identity"]["exe_hash"] = "sha256:" + "ab" * 32
d["threads"][1]["index"] = 0
json.dump(d, open(sys.argv[3], "w"))
PY
req root POST /v1/results --data-binary @"$T/nohash.json"
is "a result without exe_hash is stored: 201" "$code" 201
req root POST /v1/results --data-binary @"$T/repeat.json"
is "a result with a repeated thread identity is stored: 201" "$code" 201
ok "the worker folds the queue without a read" wait_folded
ok "  and logged as feeding no model" grep -q "feeds no model: threads: identity (rank 0, index 0) repeated" "$T/svc.log"
req - GET /metrics
ok "metrics: 3 model updates" sh -c 'printf "%s" "$1" | grep -qx "commap_model_updates_total 3"' _ "$body"
ok "metrics: 2 results skipped" sh -c 'printf "%s" "$1" | grep -qx "commap_model_skipped_total 2"' _ "$body"
ok "metrics: no failures" sh -c 'printf "%s" "$1" | grep -qx "commap_model_update_errors_total 0"' _ "$body"
ok "metrics: nothing pending" sh -c 'printf "%s" "$1" | grep -qx "commap_model_pending 0"' _ "$body"
ok "metrics: fold batches counted" sh -c 'printf "%s" "$1" | grep -qE "^commap_model_fold_batches_total [1-9]"' _ "$body"
ok "  the queue is empty" python3 -c '
import sqlite3, sys
assert sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM model_queue").fetchone() == (0,)' "$T/svc.db"

# --- the application page and commap apps show the model ------------------------------
req $A GET /apps/pairs
is "A's application page: 200" "$code" 200
cp "$T/body" "$T/app.html"
ok "  with the model's heatmap" python3 "$top_srcdir/tests/service/web-check.py" \
	svgs "$T/app.html" "model-heatmap-$id_a"
ok "  its runs and stability" grep -q "2 runs, stability 0.80" "$T/app.html"
ok "  and not B's model" sh -c '[ "$(grep -o "id=\"model-heatmap-[0-9]*\"" "$1" | sort -u | wc -l)" -eq 1 ]' _ "$T/app.html"
req $C GET /apps/pairs
ok "the admin's application page shows both users' models" sh -c '[ "$(printf "%s" "$1" | grep -o "id=\"model-heatmap-[0-9]*\"" | sort -u | wc -l)" -eq 2 ]' _ "$body"
req $A GET /jobs/6002
ok "the job page says whether a model was used" grep -q "started from <a href=\"/models/1\">model 1</a> (1 run), distance 0.200" "$T/body"

run runuser -u $A -- env COMMAP_SERVICE="$url" COMMAP_CONFIG= NO_COLOR= \
	"$commap" apps
is "commap apps: exit 0" "$status" 0
ok "  lists the model with its runs and stability" sh -c 'printf "%s" "$1" | grep -q "pairs -n #.*2 runs.*stability 0.80"' _ "$out"

run runuser -u $A -- env COMMAP_SERVICE="$url" COMMAP_CONFIG= NO_COLOR= \
	"$commap" report 6002
ok "commap report says the run started from a model" sh -c 'printf "%s" "$1" | grep -q "model        started from model 1 (1 run), distance 0.200"' _ "$out"

# Forgetting a model: the owner (or an admin), not another user; the
# runs stay; the next run of the application starts a new model.
model $B "exe_hash=$H" ranks=1 "argv_shape=pairs -n #"
id_b=$(jq_py 'j["id"]')
req $B DELETE /v1/models/$id_a
is "B deleting A's model: 403" "$code" 403
req $A DELETE /v1/models/$id_a?x=1
is "  an unknown parameter: 400" "$code" 400
req $A DELETE /v1/models
is "DELETE on the model list: 405" "$code" 405
run runuser -u $A -- env COMMAP_SERVICE="$url" COMMAP_CONFIG= NO_COLOR= \
	"$commap" apps forget x7
is "commap apps forget x7: usage error (exit 2)" "$status" 2
ok "  naming the value" sh -c 'printf "%s" "$1" | grep -q "forget: .x7. is not a model id"' _ "$err"
run runuser -u $A -- env COMMAP_SERVICE="$url" COMMAP_CONFIG= NO_COLOR= \
	"$commap" apps forget "$id_a"
is "commap apps forget: A forgets their model (exit 0)" "$status" 0
ok "  saying how many runs it had" sh -c 'printf "%s" "$1" | grep -q "forgot model $2 (2 runs)"' _ "$out" "$id_a"
req $A GET /v1/models/$id_a
is "  the model is gone: 404" "$code" 404
model $A "exe_hash=$H" ranks=1 "argv_shape=pairs -n #"
is "  A has no model for the application any more: 404" "$code" 404
req $A GET /v1/jobs/6002
is "  A's runs are still stored" "$code" 200
run runuser -u $A -- env COMMAP_SERVICE="$url" COMMAP_CONFIG= NO_COLOR= \
	"$commap" apps forget "$id_a"
is "forgetting it again: exit 1" "$status" 1
ok "  model not found" sh -c 'printf "%s" "$1" | grep -q "not found"' _ "$err"
req root POST /v1/results --data-binary @"$T/r1.json"
is "  a re-sent old run is a duplicate, no model again" "$code" 200
pairs_result "$T/r4.json" 6004 "$uid_a" $A 2026-11-22T20:00:00Z \
	'[0,1,2,3]' '[[0,1,200.0],[2,3,100.0]]' '[3,2,1,0]'
req root POST /v1/results --data-binary @"$T/r4.json"
is "  a new run of the application: 201" "$code" 201
[ "$code" = 201 ] || diag "$body"
model $A "exe_hash=$H" ranks=1 "argv_shape=pairs -n #"
is "  a new run starts a new model: 1 run" "$(jq_py 'j["runs"]')" 1
req $C DELETE /v1/models/$id_b
is "an admin forgets B's model: 200" "$code" 200
is "  the answer names it" "$(jq_py 'j["deleted"]')" "$id_b"

ok "the service stops cleanly" stop_service
done_testing
