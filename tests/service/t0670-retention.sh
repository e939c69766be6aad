#!/bin/sh
# Retention (docs/service.md, "Retention"): the real daemon with
# retention_days deletes the results of steps that started longer ago, at
# its start and every hour; recent results and learned models are kept; /metrics counts the deletions;
# retention_days = 0 (the default) keeps everything.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --title "without retention"

# result FILE JOB STARTED [EXE_HASH]: a small valid result of one step.
result() {
	python3 - "$@" <<'PY'
import json, sys
path, job, started = sys.argv[1:4]
h = sys.argv[4] if len(sys.argv) > 4 else None
ident = {"job": int(job), "step": 0, "node": "node1", "user": "root",
         "uid": 0, "executable": "/opt/apps/stencil", "argv": ["stencil"],
         "ranks": 1, "threads": 2}
if h:
    ident["exe_hash"] = h
doc = {"format": "commap-result", "version": 1, "identity": ident,
       "mode": "dynamic", "backend": "sample",
       "started_at": started, "ended_at": started,
       "topology": {"cpuset": "0-1", "pus": 2},
       "threads": [{"rank": 0, "index": i, "tid": 10 + i} for i in (0, 1)],
       "edges": [[0, 1, 5.0]],
       "timeline": [{"t": 0.1, "pu_of_thread": [0, 1], "cost": 5.0}],
       "migrations": [], "stats": {"samples": 10}}
json.dump(doc, open(path, "w"))
PY
}

now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
old=$(date -u -d '-40 days' +%Y-%m-%dT%H:%M:%SZ)
H=sha256:$(printf 'stencil' | sha256sum | cut -c1-64)
result "$T/old.json" 7001 "$old"
result "$T/old-model.json" 7002 "$old" "$H"
result "$T/new.json" 7003 "$now"

for f in old old-model new; do
	req root POST /v1/results --data-binary @"$T/$f.json"
	is "upload $f: 201" "$code" 201
done
# The model worker folds the hashed run into its model within ~1 s.
for _ in $(seq 100); do
	req - GET /metrics
	printf '%s' "$body" | grep -qx "commap_model_pending 0" && break
	sleep 0.05
done
ok "  the 40-day-old run was folded into its model" \
	sh -c 'printf "%s" "$1" | grep -qx "commap_model_pending 0"' _ "$body"
ok "the service stops" stop_service
ok "retention_days = 0 (the default) deleted nothing" \
	sh -c '[ "$(sqlite3 "$1" "SELECT COUNT(*) FROM results")" = 3 ]' _ "$T/svc.db"

# (A result still queued for its model is kept until it is folded:
# tests/service/test_svc_db.c.  Here the worker folds first, then prunes.)
printf 'database = %s\nthreads = 2\nretention_days = 30\n' "$T/svc.db" \
	>"$T/prune.conf"
ok "the service starts with retention_days = 30" start_service "$T/prune.conf"
for _ in $(seq 100); do
	grep -q "retention: deleted" "$T/svc.log" && break
	sleep 0.05
done
ok "  it logs what it deleted at start" grep -q \
	"retention: deleted 2 results of steps started before .* (retention_days = 30)" \
	"$T/svc.log"
req root GET /v1/jobs/7001
is "  the 40-day-old run is gone: 404" "$code" 404
req root GET /v1/jobs/7002
is "  so is the one that fed a model: 404" "$code" 404
req root GET /v1/jobs/7003
is "  the recent run is kept: 200" "$code" 200
req root GET "/v1/models?exe_hash=$H&ranks=1&argv_shape=stencil"
is "  the learned model of the deleted run is kept: 200" "$code" 200
req - GET /metrics
ok "  /metrics counts it" \
	sh -c 'printf "%s" "$1" | grep -qx "commap_results_pruned_total 2"' _ "$body"
ok "the service stops cleanly" stop_service

printf 'database = %s\nretention_days = 30 days\n' "$T/svc.db" >"$T/bad.conf"
"$service" --config "$T/bad.conf" --foreground >"$T/bad.log" 2>&1
is "a bad retention_days is a configuration error: exit 2" "$?" 2
ok "  naming the key and line" grep -q "bad.conf:2: retention_days:" "$T/bad.log"
done_testing
