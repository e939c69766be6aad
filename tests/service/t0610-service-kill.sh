#!/bin/sh
# kill -9 of commap-service during a stream of uploads from concurrent
# clients, then a restart on the same port: every acknowledged upload is in
# the database, retries of uploads whose answer was lost are recognised as
# duplicates, and nothing is stored twice.  COMMAP_KILL_UPLOADS sets the
# count (300 in make check; docs/service.md reports a 1,000 run).
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup "threads = 4"
n=${COMMAP_KILL_UPLOADS:-300}
: >"$T/acks"
python3 "$top_srcdir/tests/service/upload-stream.py" "$url" "$n" 4 \
	"$T/acks" 60 >"$T/stream.out" 2>&1 &
stream=$!
# Kill it hard once a third of the uploads are acknowledged.
for _ in $(seq 400); do
	[ "$(wc -l <"$T/acks")" -ge $((n / 3)) ] && break
	sleep 0.05
done
acked_before=$(wc -l <"$T/acks")
kill -9 "$svc_pid"
wait "$svc_pid" 2>/dev/null
svc_pid=
ok "killed -9 after $acked_before acknowledged uploads" \
	[ "$acked_before" -ge $((n / 3)) ]
cp "$T/acks" "$T/acks-at-kill"
sleep 0.3
ok "restarted on the same port $port" start_service "$T/svc.conf" "$port"
wait "$stream"
is "the stream finished, every upload acknowledged" "$?" 0
diag "$(cat "$T/stream.out")"
ok "every upload acknowledged before the kill is in the database" python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
have = {r[0] for r in db.execute("SELECT job FROM results")}
acked = {int(l.split()[0]) for l in open(sys.argv[2])}
missing = acked - have
assert not missing, sorted(missing)[:10]' "$T/svc.db" "$T/acks-at-kill"
ok "all $n uploads are stored exactly once" python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT COUNT(*), COUNT(DISTINCT job) FROM results").fetchone()
assert rows == (int(sys.argv[2]), int(sys.argv[2])), rows' "$T/svc.db" "$n"
# Learned models: each result was queued for its model in its own upload
# transaction (sql/0004_model_queue.sql) and is dequeued in the transaction
# that stores the model, so after the restart the worker resumes what the
# kill left pending and every run is folded exactly once.
folded() {
	python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
runs = db.execute("SELECT COALESCE(SUM(runs), 0) FROM models"
                  " WHERE exe_hash = ?", ("sha256:01",)).fetchone()[0]
queued = db.execute("SELECT COUNT(*) FROM model_queue").fetchone()[0]
sys.exit(0 if (runs, queued) == (int(sys.argv[2]), 0) else 1)' "$T/svc.db" "$n"
}
wait_folded() {
	for _ in $(seq 300); do
		folded && return 0
		sleep 0.1
	done
	return 1
}
ok "no pending model fold lost: the model has all $n runs once, none queued" \
	wait_folded
diag "$(grep "pending from the last run" "$T/svc.log" || echo "no fold was pending at the restart")"
ok "stored documents are intact JSON" python3 -c '
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for job, doc in db.execute("SELECT job, document FROM results"):
    assert json.loads(doc)["identity"]["job"] == job' "$T/svc.db"
ok "the restarted service answers" sh -c \
	"curl -sf -H \"X-Munge-Credential: \$(munge -n)\" '$url/v1/jobs?limit=1' >/dev/null"
ok "SIGTERM stops it cleanly" stop_service
done_testing
