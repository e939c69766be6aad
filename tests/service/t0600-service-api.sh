#!/bin/sh
# commap-service API end to end: real daemon on loopback, temp database,
# real munge credentials of real users (docs/service.md).
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --users 3 --title "on a free loopback port" \
	"# test configuration" "admins = @commap-test-adm" \
	"writers = commap-test-b" "max_body = 64k" "log_level = debug"
jobs_of() { jq_py '",".join(str(x["job"]) for x in j["jobs"])'; }

# --- no authentication needed -------------------------------------------------
req - GET /healthz
is "/healthz without a credential: 200" "$code" 200
is "  reports the schema version (one per sql/NNNN_*.sql)" \
	"$(jq_py 'j["schema_version"]')" "$(ls "$top_srcdir"/sql/[0-9]*_*.sql | wc -l)"

# --- authentication -------------------------------------------------------------
req - GET /v1/jobs
is "no credential: 401" "$code" 401
ok "  the error names the header" grep -q X-Munge-Credential "$T/body"
req - GET /v1/jobs -H "X-Munge-Credential: MUNGE:garbage:"
is "a forged credential: 401" "$code" 401
c=$(cred $A)
curl -s -o /dev/null -H "X-Munge-Credential: $c" "$url/v1/jobs"
req - GET /v1/jobs -H "X-Munge-Credential: $c"
is "a replayed credential: 401" "$code" 401
ok "  munge says replayed" grep -qi replayed "$T/body"

# --- uploads ----------------------------------------------------------------------
make_result "$T/a.json" 1001 "$uid_a" $A
make_result "$T/b.json" 1002 "$uid_b" $B
req root POST /v1/results --data-binary @"$T/a.json"
is "root uploads A's job: 201" "$code" 201
id_a=$(jq_py 'j["id"]')
req root POST /v1/results --data-binary @"$T/b.json"
is "root uploads B's job: 201" "$code" 201
req root POST /v1/results --data-binary @"$T/a.json"
is "the same upload again (a retry): 200" "$code" 200
is "  acknowledged as a duplicate of the same row" \
	"$(jq_py 'j["status"], j["id"]')" "('duplicate', $id_a)"
make_result "$T/a2.json" 1001 "$uid_a" $A 9.0
req root POST /v1/results --data-binary @"$T/a2.json"
is "other data for the same job/step/node: 409" "$code" 409
req root POST /v1/results --data-binary @"$T/a.json" \
	-H "X-Commap-Upload-Id: bad id!"
is "a malformed upload id: 400" "$code" 400
req - POST /v1/results --data-binary @"$T/a.json"
is "unauthenticated upload: 401" "$code" 401
make_result "$T/a3.json" 1003 "$uid_a" $A
req $A POST /v1/results --data-binary @"$T/a3.json"
is "upload by a user who is not a writer: 403" "$code" 403
ok "  the error says who may upload" grep -q "may not upload" "$T/body"
make_result "$T/b4.json" 1004 "$uid_b" $B
req $B POST /v1/results --data-binary @"$T/b4.json"
is "upload by a configured writer: 201" "$code" 201

# --- reading: users see their own jobs, admins all -----------------------------
req $A GET /v1/jobs
is "A lists only A's job" "$(jobs_of)" 1001
req $B GET /v1/jobs
is "B lists only B's jobs, newest first" "$(jobs_of)" 1004,1002
req $C GET /v1/jobs
is "an admin (by @group) lists all jobs" "$(jobs_of)" 1004,1002,1001
req root GET /v1/jobs
is "root lists all jobs" "$(jobs_of)" 1004,1002,1001
req $A GET /v1/jobs/1002
is "A reads B's job: 403" "$code" 403
req $A GET /v1/results/2
is "A reads B's result by id: 403" "$code" 403
req $A GET /v1/jobs/1001
is "A reads A's job: 200" "$code" 200
printf '%s' "$body" >"$T/job.json"
ok "round trip: the stored document equals the uploaded one" python3 -c '
import json, sys
job = json.load(open(sys.argv[1])); up = json.load(open(sys.argv[2]))
r = job["results"]
assert len(r) == 1 and r[0]["document"] == up, r
assert job["summary"]["threads"] == 4 and job["summary"]["nodes"] == ["node1"]
assert r[0]["edges"] == 6 and r[0]["final_cost"] == 12.0
assert r[0]["user"] == sys.argv[3] and r[0]["app"] == "stencil"' \
	"$T/job.json" "$T/a.json" $A
req $A GET "/v1/jobs/1001?documents=0"
is "documents=0 leaves the documents out" \
	"$(jq_py '"document" in j["results"][0]')" False
req $C GET /v1/jobs/1002
is "an admin reads B's job: 200" "$code" 200
req $A GET /v1/jobs/9999
is "an unknown job: 404" "$code" 404
req $A GET /v1/jobs/12x
is "a bad job id: 400" "$code" 400

# --- filters -------------------------------------------------------------------------
req root GET "/v1/jobs?user=$B"
is "user filter" "$(jobs_of)" 1004,1002
req $A GET "/v1/jobs?user=$B"
is "a user filtering on someone else sees nothing" "$(jobs_of)" ""
req root GET "/v1/jobs?app=stencil&limit=2"
is "app filter and limit" "$(jobs_of)" 1004,1002
req root GET "/v1/jobs?app=/opt/apps/stencil&since=2026-11-22&until=2026-11-23"
is "full path, since and until (dates)" "$(jobs_of)" 1004,1002,1001
req root GET "/v1/jobs?since=2026-11-22T14:00:01Z"
is "since after the start excludes all" "$(jobs_of)" ""
req root GET "/v1/jobs?limit=0"
is "limit=0: 400" "$code" 400
ok "  naming limit" grep -q '"limit:' "$T/body"
req root GET "/v1/jobs?since=yesterday"
is "a bad since: 400" "$code" 400
req root GET "/v1/jobs?usr=x"
is "an unknown query parameter: 400" "$code" 400
req $A GET /v1/apps
is "apps: A sees stencil with one job" \
	"$(jq_py '[(a["app"], a["jobs"]) for a in j["apps"]]')" '[["stencil", 1]]'

# --- malformed bodies: 400 naming the problem, nothing stored ----------------------
# With 100-continue, as the agent sends: the refusal comes before the body
# (without it, the service closing on an unread body may reset the
# connection before the client reads the answer).
bad() { # bad WHAT WORD FILE
	req root POST /v1/results --data-binary @"$3" -H "Expect: 100-continue"
	is "$1: 400" "$code" 400
	ok "  names the problem ('$2')" grep -qF -- "$2" "$T/body"
	[ "$code" = 400 ] || diag "body: $body"
}
head -c 300 "$T/a.json" >"$T/trunc.json"
bad "truncated body" "body: invalid JSON" "$T/trunc.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["identity"]["job"]=2001; d["edges"][3][2]=-1; json.dump(d,open(sys.argv[2],"w"))' \
	"$T/a.json" "$T/neg.json"
bad "a negative weight" "edges[3][2]: weight is negative" "$T/neg.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["identity"]["job"]=2002; d["edges"][0]=[2,1,1]; json.dump(d,open(sys.argv[2],"w"))' \
	"$T/a.json" "$T/order.json"
bad "an edge with i > j" "edges[0][1]: 1 is not greater than i (2)" "$T/order.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["identity"]["job"]=2003; d["identity"]["uid"]="1000"; json.dump(d,open(sys.argv[2],"w"))' \
	"$T/a.json" "$T/uid.json"
bad "a string uid" "identity.uid: expected an integer" "$T/uid.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["identity"]["job"]=2004; d["version"]=2; json.dump(d,open(sys.argv[2],"w"))' \
	"$T/a.json" "$T/v2.json"
bad "version 2" "version: not supported" "$T/v2.json"
make_result "$T/big.json" 2005 "$uid_a" $A 1.0 200
bad "a body over max_body (64k)" "max_body" "$T/big.json"
: >"$T/empty.json"
bad "an empty body" "body: empty" "$T/empty.json"
req root POST /v1/results -H "Transfer-Encoding: chunked" \
	-H "Expect: 100-continue" --data-binary @"$T/big.json"
is "an oversized chunked body (no Content-Length): 400" "$code" 400
req root GET /v1/jobs
is "nothing of the refused uploads was stored" "$(jobs_of)" 1004,1002,1001

# --- metrics and odd requests ---------------------------------------------------------
req - GET /metrics
is "/metrics without a credential: 200" "$code" 200
ok "  uploads_total counts stored and duplicate uploads" \
	grep -qx 'commap_uploads_total 4' "$T/body"
ok "  upload errors are counted" \
	grep -Eq '^commap_upload_errors_total ([1-9][0-9]+)$' "$T/body"
ok "  requests by code" grep -q 'commap_http_requests_total{code="403"}' "$T/body"
ok "  the database size" grep -Eq '^commap_db_size_bytes [1-9][0-9]*$' "$T/body"
ok "  a latency histogram" \
	grep -q 'commap_http_request_duration_seconds_bucket{le="+Inf"}' "$T/body"
# Group commit: every upload that reached the database (4 stored or
# duplicate, and any conflict) in at least one and at most as many
# transactions.
ok "  uploads stored and the transactions that stored them" awk '
	$1 == "commap_upload_stores_total" { s = $2 }
	$1 == "commap_upload_commits_total" { c = $2 }
	END { exit !(s >= 4 && c >= 1 && c <= s) }' "$T/body"
req $A GET /v1/nothing
is "an unknown path: 404" "$code" 404
req $A DELETE /v1/jobs
is "a wrong method: 405" "$code" 405
ok "debug log has one line per request" \
	grep -q 'debug: GET /v1/jobs/1002 403 uid='"$uid_a" "$T/svc.log"

# --- stop, restart on the same database, bad configurations -----------------------
ok "SIGTERM stops the service with status 0" stop_service
ok "  after logging it" grep -q "stopping" "$T/svc.log"
ok "restart on the same database" start_service "$T/svc.conf"
req root GET /v1/jobs
is "  the jobs are still there" "$(jobs_of)" 1004,1002,1001
stop_service
printf 'database = %s\nmax_body = 12Q\n' "$T/svc.db" >"$T/bad.conf"
run "$service" --config "$T/bad.conf" --foreground
is "a bad value: exit 2" "$status" 2
ok "  the message names the file, line and key" \
	grep -qF "bad.conf:2: max_body: '12Q'" "$T/err"
printf 'colour = blue\n' >"$T/bad2.conf"
run "$service" --config "$T/bad2.conf" --foreground
ok "an unknown key: exit 2 naming it" \
	sh -c "[ $status -eq 2 ] && grep -qF 'bad2.conf:1: colour: unknown key' '$T/err'"
run "$service" --config "$T/svc.conf" --listen nowhere --foreground
ok "a bad --listen: exit 2 naming listen" \
	sh -c "[ $status -eq 2 ] && grep -qF \"listen: 'nowhere'\" '$T/err'"
done_testing
