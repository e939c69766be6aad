#!/bin/sh
# Whether commap helped, in `commap report` and on the job page
# (docs/reports.md "Did it help"): the predicted cost of the applied
# placement beside the unpinned one, this run's time against earlier runs
# of the same application, the pin latency, and what the matrix rests on
# (samples, decoded share, events, the result's breakdowns).  Real
# service, real munge, real users.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --users 2 --cli
as_columns=100

# upload JOB UID USER START SECONDS [THREADS]: two pairs (0-1, 2-3)
# pinned pair by pair on two packages of two cores, SECONDS long.
upload() {
	make_result "$T/$1.json" "$1" "$2" "$3" 1.0 "${6:-4}"
	python3 - "$T/$1.json" "$4" "$5" <<'PY'
import datetime, json, sys
p, start, secs = sys.argv[1:4]
d = json.load(open(p))
t0 = datetime.datetime.strptime(start, "%Y-%m-%dT%H:%M:%SZ")
d["started_at"] = start
d["ended_at"] = (t0 + datetime.timedelta(seconds=int(secs))).strftime(
    "%Y-%m-%dT%H:%M:%SZ")
if len(d["threads"]) == 4:
    d["topology"].update(synthetic="pack:2 core:2 pu:1", cpuset="0-3")
    d["edges"] = [[0, 1, 100.0], [2, 3, 100.0], [0, 2, 1.0]]
d["stats"]["pin_latency_ms"] = {"p50": 40.0, "p90": 80.0, "max": 120.0,
                                "n": 4}
d["stats"]["levels"] = {"line": 12, "page": 180}
json.dump(d, open(p, "w"))
PY
	req root POST /v1/results --data-binary @"$T/$1.json"
	[ "$code" = 201 ] || diag "upload of $1: $code $body"
}
upload 6001 "$uid_a" $A 2026-11-22T10:00:00Z 100
upload 6002 "$uid_a" $A 2026-11-22T11:00:00Z 80
upload 6003 "$uid_a" $A 2026-11-22T12:00:00Z 60
upload 6004 "$uid_a" $A 2026-11-22T13:00:00Z 70 8   # another shape
upload 6100 "$uid_b" $B 2026-11-22T09:00:00Z 10     # another user

as $A report 6003
is "report 6003: exit 0" "$status" 0
has "  a did-it-help section" "$out" "did it help"
ok "  the applied cost below the unpinned one (pairs kept together)" \
	python3 -c '
import re, sys
m = re.search(r"predicted cost: ([0-9.e+]+) applied against ([0-9.e+]+) "
              r"unpinned \(random placement on the step.s 4 PUs\): "
              r"([0-9.]+)x, \d+% less", sys.argv[1])
sys.exit(not m or not float(m.group(1)) < float(m.group(2))
         or abs(float(m.group(3)) - float(m.group(1)) / float(m.group(2))) > 0.01)' "$out"
has "  this run against the earlier runs of the same shape (100, 80 s)" \
	"$out" "run time: 60 s against a median of 90 s over 2 earlier runs of this application (80 to 100 s): 0.67x"
has "  the pin latency" "$out" \
	"pin latency (thread start to first pin): median 40 ms, p90 80 ms, max 120 ms over 4 threads"
has "  the evidence: samples, decoded share, events" "$out" \
	"evidence: 19960 samples, 99.2% decoded, 0 faults, 201 events in the matrix"
has "  and the breakdown by level the result carries" "$out" \
	"by levels: line 12, page 180"
as $A report 6001
has "the first run: nothing earlier to compare with" "$out" \
	"run time: 100 s; no earlier run of this application with the same shape"
as $A report 6004
has "another shape (8 threads) is not compared with the 4-thread runs" \
	"$out" "no earlier run of this application"

req $A GET /jobs/6003
is "the job page: 200" "$code" 200
has "  a did-it-help list" "$body" '<ul class="benefit">'
has "  with the costs" "$body" '<li class="cost">predicted cost: '
has "  the run times" "$body" \
	'<li class="time">run time: 60 s against a median of 90 s'
has "  the pin latency" "$body" \
	'<li class="latency">pin latency (thread start to first pin): median 40 ms'
has "  the evidence" "$body" '<li class="samples">evidence: 19960 samples'
has "  pin latency in the statistics, not a dash" "$body" \
	'<th>pin_latency_ms</th><td class="num">p50 40'
req $B GET /jobs/6003
is "B cannot read A's report: 403" "$code" 403
req $B GET /v1/jobs/6100
is "B's own run is not among A's earlier runs" \
	"$(jq_py 'j["results"][0]["earlier_runs"]')" "[]"

# A result without a topology or a mapping, and without sampling figures:
# said in words, no numbers made up.
make_result "$T/bare.json" 6200 "$uid_a" $A
python3 - "$T/bare.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["topology"]["synthetic"]
d["timeline"], d["migrations"] = [], []
d["stats"] = {"agent_cpu_s": 0.1}
json.dump(d, open(sys.argv[1], "w"))
PY
req root POST /v1/results --data-binary @"$T/bare.json"
as $A report 6200
has "no topology or mapping: the cost is not known" "$out" \
	"predicted cost: not known"
has "no pins: no latency" "$out" "pin latency: not recorded"
has "no sampling figures: said" "$out" "evidence: no sampling figures"

ok "the service stops cleanly (no leak reported)" stop_service
done_testing
