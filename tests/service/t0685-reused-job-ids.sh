#!/bin/sh
# Reused job ids and cluster names (docs/service.md, "Clusters and reused
# job ids"): two clusters sharing the service, and a cluster that lost
# slurmctld's state, upload results with a job id already stored.  Real
# daemon, real munge, real users; API, CLI and web page.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --users 2 --cli

# variant SRC DST KEY=JSON...: a copy of a result with top-level fields set
variant() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    d[k] = json.loads(v)
json.dump(d, open(sys.argv[2], "w"))
PY
}
post() { req root POST /v1/results --data-binary @"$1"; }

make_result "$T/a.json" 4001 "$uid_a" $A
post "$T/a.json"
is "A's job 4001, no cluster name (an older agent): 201" "$code" 201
make_result "$T/b0.json" 4001 "$uid_b" $B 7.0
variant "$T/b0.json" "$T/b.json" 'cluster="beta"' \
	'started_at="2026-11-23T09:00:00Z"' 'ended_at="2026-11-23T09:05:00Z"'
post "$T/b.json"
is "B's job 4001 on cluster beta, same step and node: 201 (kept)" \
	"$code" 201
is "  a new row" "$(jq_py 'j["status"]')" stored
post "$T/b.json"
is "  the same upload again: 200 duplicate" \
	"$(jq_py 'j["status"]'):$code" duplicate:200
make_result "$T/a0.json" 4001 "$uid_a" $A 3.0
variant "$T/a0.json" "$T/a2.json" 'cluster="alpha"' \
	'started_at="2026-11-24T10:00:00Z"' 'ended_at="2026-11-24T10:01:00Z"'
post "$T/a2.json"
is "A's job 4001 again after a state loss (cluster alpha): 201" "$code" 201
variant "$T/a.json" "$T/a3.json" 'edges=[[0, 1, 99.0]]'
post "$T/a3.json"
is "other data for the very same run (cluster, owner, start): 409" \
	"$code" 409

req $B GET /v1/jobs/4001
is "B reads job 4001: 200 (not 'not yours')" "$code" 200
is "  B's result only" "$(jq_py '[r["cluster"] for r in j["results"]]')" \
	'["beta"]'
req $A GET /v1/jobs/4001
is "A reads job 4001: A's two runs" \
	"$(jq_py '[r["cluster"] for r in j["results"]]')" '["", "alpha"]'
is "  the job lists its clusters" "$(jq_py 'j["clusters"]')" '["", "alpha"]'
req $A GET "/v1/jobs/4001?cluster=alpha"
is "  ?cluster=alpha: one result" "$(jq_py 'len(j["results"])')" 1
req $A GET "/v1/jobs/4001?cluster=a%20b"
is "  a malformed cluster name in the query: 400" "$code" 400
req root GET /v1/jobs
is "the admin's list: job 4001 once per cluster" \
	"$(jq_py 'sorted(x["cluster"] for x in j["jobs"] if x["job"] == 4001)')" \
	'["", "alpha", "beta"]'

for bad in '"a b"' '""' '5' '"'"$(printf 'x%.0s' $(seq 65))"'"'; do
	variant "$T/a.json" "$T/bad.json" "cluster=$bad"
	post "$T/bad.json"
	is "cluster $bad: 400" "$code" 400
	ok "  naming the field" \
		sh -c "printf '%s' \"\$1\" | grep -q '\"error\": *\"cluster: '" - "$body"
done

# The terminal and the web name the cluster where the list holds several.
run env COMMAP_SERVICE="$url" "$commap" jobs
ok "commap jobs: a CLUSTER column" \
	sh -c "printf '%s' \"\$1\" | grep -q '^CLUSTER '" - "$out"
ok "  with beta's row" \
	sh -c "printf '%s' \"\$1\" | grep -q '^beta  *4001 '" - "$out"
run runuser -u $B -- env COMMAP_SERVICE="$url" "$commap" jobs
ok "B's list (one cluster): no CLUSTER column" \
	sh -c "printf '%s' \"\$1\" | grep -q '^JOB '" - "$out"
run runuser -u $B -- env COMMAP_SERVICE="$url" "$commap" report 4001
ok "B's report names the cluster" \
	sh -c "printf '%s' \"\$1\" | grep -q 'job 4001 step 0 on node1 (cluster beta)'" - "$out"
req root GET /jobs
ok "the jobs page has a cluster column" grep -q '<th>cluster</th>' "$T/body"
ok "  linking each job with its cluster" \
	grep -q 'href="/jobs/4001?cluster=beta"' "$T/body"
req root GET "/jobs/4001?cluster=beta"
is "the job page for beta: 200" "$code" 200
ok "  names the cluster" grep -q '<th>cluster</th><td>beta</td>' "$T/body"

ok "the service stops on SIGTERM" stop_service
done_testing
