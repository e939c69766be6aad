#!/bin/sh
# A stored model the service cannot read never stalls the model queue
# (docs/service.md, "Learned models"): real daemon, real munge, a model
# row corrupted in SQLite between two runs of the service.  The worker
# moves the row to models_quarantine, logs one line naming it, folds the
# other users' runs in the same sweep and starts the owner a new model.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --users 2

# sql QUERY: one value from the service's database (read-only)
sql() {
	python3 -c 'import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
r = db.execute(sys.argv[2]).fetchone()
print("" if r is None else r[0])' "$T/svc.db" "$1"
}
# wait_for QUERY VALUE: poll until QUERY gives VALUE (a minute at most)
wait_for() {
	for _ in $(seq 600); do
		[ "$(sql "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
upload() {	# JOB UID USER
	make_result "$T/r$1.json" "$1" "$2" "$3"
	req root POST /v1/results -H 'Content-Type: application/json' \
		--data-binary @"$T/r$1.json"
	[ "$code" = 201 ]
}
ok "A's first run is stored" upload 3001 "$uid_a" $A
ok "B's first run is stored" upload 3002 "$uid_b" $B
ok "both are folded into a model each" \
	wait_for "SELECT COUNT(*) FROM models WHERE runs = 1" 2
id_a=$(sql "SELECT id FROM models WHERE uid = $uid_a")
ok "the service stops" stop_service

python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE models SET model = ? WHERE id = ?", ("{\"format\": \"commap-mo", int(sys.argv[2])))
db.commit()' "$T/svc.db" "$id_a"
is "A's model row is corrupted in SQLite" \
	"$(sql "SELECT json_valid(model) FROM models WHERE id = $id_a")" 0

ok "the service restarts" start_service "$T/svc.conf"
req $A GET /v1/models
is "A lists their models meanwhile: 200" "$code" 200
is "  the unreadable one left out" "$(jq_py 'len(j["models"])')" 0
# A's run first: with the old worker its batch failed, B's waited forever.
ok "A's second run is stored" upload 3003 "$uid_a" $A
ok "B's second run is stored" upload 3004 "$uid_b" $B
ok "B's model gets its second run although A's row is unreadable" \
	wait_for "SELECT runs FROM models WHERE uid = $uid_b" 2
ok "the queue empties" wait_for "SELECT COUNT(*) FROM model_queue" 0
is "A's bad row is in models_quarantine" \
	"$(sql "SELECT model_id FROM models_quarantine WHERE uid = $uid_a")" \
	"$id_a"
ok "  with the reason" test -n \
	"$(sql "SELECT reason FROM models_quarantine WHERE model_id = $id_a AND reason LIKE '%not JSON%'")"
is "  and the text as it was" \
	"$(sql "SELECT model FROM models_quarantine WHERE model_id = $id_a")" \
	'{"format": "commap-mo'
is "A has a new model with the run folded after the quarantine" \
	"$(sql "SELECT runs FROM models WHERE uid = $uid_a AND id != $id_a")" 1
is "  the bad row is gone from models" \
	"$(sql "SELECT COUNT(*) FROM models WHERE id = $id_a")" 0
is "one log line names the quarantined model" \
	"$(grep -c "model $id_a quarantined" "$T/svc.log")" 1
req $A GET /v1/models
is "A reads their models: 200" "$code" 200
is "  one model, one run" "$(jq_py '[m["runs"] for m in j["models"]]')" "[1]"
ok "the service stops on SIGTERM" stop_service
done_testing
