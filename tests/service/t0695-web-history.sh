#!/bin/sh
# What an admin and a user expect of the web pages and the job listing
# (docs/service.md "GET /v1/jobs", docs/reports.md "Pages"): job lists
# sorted and paged (?sort= ?offset= ?limit=) with mode, pins, duration and
# nodes; /apps and /models with their history ("started from model N"
# linked); a job's matrix as JSON and CSV; two runs compared; a job of
# three nodes shown node by node; and none of it showing another user's
# runs.  Real daemon, real munge credentials of real users, curl.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --users 3 "admins = @commap-test-adm"
check="python3 $top_srcdir/tests/service/web-check.py"
has() { ok "$1" sh -c 'printf "%s" "$1" | grep -qF -- "$2"' _ "$body" "$2"; }
lacks() { ok "$1" sh -c '! printf "%s" "$1" | grep -qF -- "$2"' _ "$body" "$2"; }

# prepare FILE JOB UID USER START SECONDS [NODE] [EXE]: a 4-thread
# stencil run of SECONDS on NODE; upload: the same, posted.
prepare() {
	make_result "$1" "$2" "$3" "$4" 2.5 4
	python3 - "$1" "$5" "$6" "${7:-node1}" "${8:-/opt/apps/stencil}" <<'PY'
import datetime, json, sys
p, start, secs, node, exe = sys.argv[1:6]
d = json.load(open(p))
t0 = datetime.datetime.strptime(start, "%Y-%m-%dT%H:%M:%SZ")
d["started_at"] = start
d["ended_at"] = (t0 + datetime.timedelta(seconds=int(secs))).strftime(
    "%Y-%m-%dT%H:%M:%SZ")
d["identity"]["node"] = node
d["identity"]["executable"] = exe
d["identity"]["argv"][0] = exe.rsplit("/", 1)[-1]
json.dump(d, open(p, "w"))
PY
}
upload() {
	prepare "$@"
	req root POST /v1/results --data-binary @"$1"
	[ "$code" = 201 ] || diag "upload of $2 on ${7:-node1}: $code $body"
}

upload "$T/1.json" 5001 "$uid_a" $A 2026-11-22T10:00:00Z 100
upload "$T/2.json" 5002 "$uid_a" $A 2026-11-22T11:00:00Z 90
for n in 1 2 3; do
	upload "$T/3-$n.json" 5003 "$uid_a" $A 2026-11-22T12:00:00Z 80 node$n
done
upload "$T/b.json" 5100 "$uid_b" $B 2026-11-22T12:30:00Z 50 node1 \
	/opt/apps/secret

# --- the listing: sort, page, the new columns -------------------------------
req $A GET /v1/jobs
is "default listing: newest first" "$(jq_py '[x["job"] for x in j["jobs"]]')" \
	"[5003, 5002, 5001]"
is "  with mode, pins, duration and nodes" \
	"$(jq_py '[(x["mode"], x["pins"], x["duration_s"], x["nodes"]) for x in j["jobs"]]')" \
	'[["dynamic", 12, 80, 3], ["dynamic", 4, 90, 1], ["dynamic", 4, 100, 1]]'
is "  and no next page" "$(jq_py 'j["more"]')" False
req $A GET "/v1/jobs?sort=-duration"
is "?sort=-duration: longest first" \
	"$(jq_py '[x["job"] for x in j["jobs"]]')" "[5001, 5002, 5003]"
req $A GET "/v1/jobs?sort=nodes"
is "?sort=nodes: fewest nodes first (ties newest first)" \
	"$(jq_py '[x["job"] for x in j["jobs"]]')" "[5002, 5001, 5003]"
req $A GET "/v1/jobs?sort=-pins"
is "?sort=-pins: the three nodes' pins summed" \
	"$(jq_py '[[x["job"], x["pins"]] for x in j["jobs"]][0]')" "[5003, 12]"
req $A GET "/v1/jobs?sort=duration&limit=2"
is "?limit=2: the first page" "$(jq_py '[x["job"] for x in j["jobs"]]')" \
	"[5003, 5002]"
is "  says there is more" "$(jq_py 'j["more"]')" True
req $A GET "/v1/jobs?sort=duration&limit=2&offset=2"
is "?offset=2: the rest" "$(jq_py '[x["job"] for x in j["jobs"]]')" "[5001]"
is "  and no more" "$(jq_py 'j["more"]')" False
req $A GET "/v1/jobs?offset=1&limit=1"
is "?offset without ?sort: newest first from there" \
	"$(jq_py '[x["job"] for x in j["jobs"]]')" "[5002]"
req $C GET "/v1/jobs?sort=user"
is "an admin sorts everyone's jobs by user" \
	"$(jq_py '[x["user"] for x in j["jobs"]][-1]')" "$B"
req $A GET "/v1/jobs?sort=colour"
is "?sort=colour: 400" "$code" 400
has "  naming the keys" "sort: 'colour' is not one of started ended job"
req $A GET "/v1/jobs?offset=-1"
is "?offset=-1: 400" "$code" 400
has "  naming the parameter" "offset: '-1' is not a count"

# --- the job list page ------------------------------------------------------
req $A GET "/jobs?sort=-duration&limit=2"
is "/jobs?sort=-duration&limit=2: 200" "$code" 200
has "  the duration header sorts the other way" 'href="/jobs?limit=2&amp;sort=duration"'
has "  and is marked" 'class="sorted">duration'
has "  a next page link keeps the order" 'rel="next" href="/jobs?sort=-duration&amp;limit=2&amp;offset=2"'
for col in mode duration nodes pins; do
	has "  a $col column" "\">$col"
done
ok "  rows in the page's order" python3 -c '
import re, sys
rows = re.findall(r"<tr><td><a href=\"/jobs/(\d+)\"", sys.argv[1])
sys.exit(rows != ["5001", "5002"])' "$body"
req $A GET "/jobs?offset=2&limit=2"
has "page 2: a previous page link" 'rel="prev" href="/jobs?limit=2&amp;offset=0"'

# --- three nodes ------------------------------------------------------------
req $A GET /jobs/5003
is "the three-node job's page: 200" "$code" 200
ok "  one section per node, each with its matrix and placement" python3 -c '
import re, sys
b = sys.argv[1]
heads = re.findall(r"<h2>Step 0 on (node\d)</h2>", b)
svgs = [i for k in range(3) for i in ("heatmap-%d" % k, "topology-%d" % k)
        if ("id=\"%s\"" % i) in b]
sys.exit(heads != ["node1", "node2", "node3"] or len(svgs) != 6)' "$body"
has "  the totals: the nodes" "<tr><th>nodes</th><td>node1, node2, node3</td></tr>"
has "  and the results" "<tr><th>results</th><td>3</td></tr>"

# --- applications -----------------------------------------------------------
req $A GET /apps
is "/apps: 200 (was 404)" "$code" 200
has "  links A's application" 'href="/apps/stencil">stencil</a>'
lacks "  not B's" "secret"
req $C GET /apps
has "an admin's /apps lists B's application too" 'href="/apps/secret"'
req $A GET "/apps/stencil?sort=-duration"
is "A's application page sorted: 200" "$code" 200
ok "  its runs longest first" python3 -c '
import re, sys
rows = re.findall(r"<tr><td><a href=\"/jobs/(\d+)\"", sys.argv[1])
sys.exit(rows[:3] != ["5001", "5002", "5003"])' "$body"
has "  its headers sort on the same page" 'href="/apps/stencil?sort=duration"'
has "  a form comparing its first two runs listed" 'name="a" size="8" value="5002"'
req $B GET /apps/stencil
is "B cannot see A's application page: 404" "$code" 404
req $A GET /apps/secret
is "nor A B's: 404" "$code" 404

# --- learned models: wait until the uploads are folded ----------------------
for _ in $(seq 120); do
	req - GET /metrics
	printf '%s' "$body" | grep -qx "commap_model_pending 0" && break
	sleep 0.25
done
req $A GET /v1/models
model=$(jq_py 'j["models"][0]["id"]')
ok "A has a learned model of stencil" test -n "$model"
prepare "$T/4.json" 5004 "$uid_a" $A 2026-11-22T13:00:00Z 60
python3 - "$T/4.json" "$model" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["model"] = {"used": True, "id": int(sys.argv[2]), "runs": 3,
              "distance": 0.01}
d["mode"] = "learned"
d["identity"]["step"] = 1
json.dump(d, open(sys.argv[1], "w"))
PY
req root POST /v1/results --data-binary @"$T/4.json"
is "a run that started from the model is uploaded" "$code" 201
req $A GET /jobs/5004
has "the job page links 'started from model N'" \
	"started from <a href=\"/models/$model\">model $model</a>"
req $A GET /models
is "/models: 200 (was 404)" "$code" 200
has "  links the model" "href=\"/models/$model\">model $model</a>"
has "  and its application" 'href="/apps/stencil">stencil</a>'
req $A GET "/models/$model"
is "/models/$model: 200" "$code" 200
has "  the model drawn" "id=\"model-heatmap-$model\""
has "  the runs folded into it, linked" 'href="/results/'
ok "  the run that started from it, linked" python3 -c '
import re, sys
m = re.search(r"Runs that started from it</h2>(.*?)</table>", sys.argv[1], re.S)
sys.exit(not m or "href=\"/jobs/5004\"" not in m.group(1)
         or "/jobs/5001" in m.group(1))' "$body"
req $B GET "/models/$model"
is "B cannot see A's model (403, as the API answers)" "$code" 403
lacks "  nothing of it shown" "model-heatmap"
req $B GET /models
lacks "B's /models does not list it" "href=\"/models/$model\""
req $A GET /models/x1
is "/models/x1: 400" "$code" 400

# --- the matrix as files ----------------------------------------------------
req $A GET /v1/jobs/5001
rid=$(jq_py 'j["results"][0]["id"]')
req $A GET /jobs/5001
has "the job page links the matrix as JSON" "href=\"/results/$rid/matrix.json\" download"
has "  and as CSV" "href=\"/results/$rid/matrix.csv\" download"
has "  the step's job id is a link" '<tr><th>job</th><td><a href="/jobs/5001">5001</a></td></tr>'
req $A GET "/results/$rid/matrix.json"
is "matrix.json: 200" "$code" 200
is "  a commap-matrix of the 4 threads and 6 edges" \
	"$(jq_py '[j["format"], j["threads"], len(j["edges"]), j["edges"][0]]')" \
	'["commap-matrix", 4, 6, [0, 1, 2.5]]'
req $A GET "/results/$rid/matrix.csv"
is "matrix.csv: 200" "$code" 200
ok "  4 rows of 4 values, 2.5 off the diagonal" python3 -c '
import sys
rows = [[float(x) for x in l.split(",")] for l in sys.argv[1].split("\n")
        if l and not l.startswith("#")]
sys.exit(not (len(rows) == 4 and all(len(r) == 4 for r in rows)
              and rows[0][1] == 2.5 and rows[2][2] == 0))' "$body"
cp "$T/body" "$T/m.csv"
run "$commap" map --matrix "$T/m.csv" --topology "pack:1 core:4 pu:1"
is "  commap map reads it back" "$status" 0
req $B GET "/results/$rid/matrix.json"
is "B cannot download A's matrix (403, as /v1/results answers)" "$code" 403
lacks "  no edges in the answer" "edges"
req $A GET "/results/999999/matrix.csv"
is "an unknown result's matrix: 404" "$code" 404

# --- two runs compared ------------------------------------------------------
req $A GET "/compare?a=5001&b=5004"
is "/compare?a=5001&b=5004: 200" "$code" 200
has "  the run times side by side, B against A" '<td class="num">0.60x</td>'
has "  the matrices alike (same pattern)" '<td class="num cosine">1.000</td>'
ok "  both heatmaps and placements" $check svgs "$T/body" heatmap-0 heatmap-1 \
	topology-0 topology-1
has "  both jobs linked" 'href="/jobs/5004">job 5004</a>'
prepare "$T/5.json" 5005 "$uid_a" $A 2026-11-22T14:00:00Z 70
python3 - "$T/5.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["edges"][0][2] = 50.0          # threads 0 and 1 now share most
json.dump(d, open(sys.argv[1], "w"))
PY
req root POST /v1/results --data-binary @"$T/5.json"
req $A GET "/compare?a=5001&b=5005"
ok "another pattern: the cosine below 1" python3 -c '
import re, sys
m = re.search(r"num cosine\">([0-9.]+)<", sys.argv[1])
sys.exit(not m or not float(m.group(1)) < 0.99)' "$body"
ok "  the pair that changed most first, with its shares (2.5 of 15, 50 of 62.5)" \
	python3 -c '
import os, re, sys
page = os.fsencode(sys.argv[1]).decode("utf-8")
rows = re.findall(r"<tr><td>([^<]*)</td><td class=\"num\">([0-9.]+)%</td>"
                  r"<td class=\"num\">([0-9.]+)%</td></tr>",
                  page.split("class=\"changes\"")[-1])
sys.exit(not rows or rows[0] != ("r0.t0 \u2013 r0.t1", "16.7", "80.0"))' "$body"
req $B GET "/compare?a=5100&b=5001"
is "B comparing with A's job: 403" "$code" 403
lacks "  nothing of A's shown" "heatmap"
req $A GET "/compare?a=5001"
is "/compare without b: 400" "$code" 400

ok "the service stops cleanly (no leak reported)" stop_service
done_testing
