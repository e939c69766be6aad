#!/bin/sh
# 'commap jobs', 'commap apps', 'commap report' against the real
# commap-service on loopback, with real munge credentials of real users
# (docs/cli.md).
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --users 2 --cli
chmod 755 "$T"
mkdir "$T/out-a" && chown $A "$T/out-a"	# where A may write files

same_json() {	# same_json WHAT FILE1 FILE2: equal as JSON values
	ok "$1" python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(a != b)' "$2" "$3"
}

make_result "$T/a.json" 3001 "$uid_a" $A 2.5 4
make_result "$T/b.json" 3002 "$uid_b" $B 7.0 6
python3 - "$T/a.json" "$T/free.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["identity"].update(job=None, step=None, node="laptop")
d["edges"] = [[0, 1, 100.0], [2, 3, 1.0]]
json.dump(d, open(sys.argv[2], "w"))
PY
req root POST /v1/results --data-binary @"$T/a.json"
is "A's result uploaded" "$code" 201
req root POST /v1/results --data-binary @"$T/b.json"
is "B's result uploaded" "$code" 201
req root POST /v1/results --data-binary @"$T/free.json" \
	-H "X-Commap-Upload-Id: laptop-run-1"
is "A's job-less result uploaded" "$code" 201
free_id=$(jq_py 'j["id"]')

# --- commap jobs -------------------------------------------------------------
as $A jobs
is "jobs as A: exit 0" "$status" 0
has "  shows A's job" "$out" 3001
lacks "  not B's job" "$out" 3002
has "  shows A's job-less result as rID" "$out" "r$free_id"
has "  with a header" "$out" "JOB"
as $B jobs
has "jobs as B shows B's job" "$out" 3002
lacks "  not A's job" "$out" 3001
as $A jobs --format json
printf '%s' "$out" >"$T/jobs-cli.json"
req $A GET /v1/jobs
printf '%s' "$body" >"$T/jobs-api.json"
same_json "jobs --format json is the API's answer" "$T/jobs-cli.json" \
	"$T/jobs-api.json"
as $A jobs --app stencil --since 2026-01-01 --limit 5
has "jobs --app/--since/--limit: A's job" "$out" 3001
as $A jobs --app no-such-app
has "jobs --app with no match: says so" "$out" "(no jobs match --app, --since, --until)"
as $A jobs --since 2026-13-01
is "a bad --since: usage error" "$status" 2
has "  the message names the option" "$err" since
as $A jobs --limit 0
is "--limit 0: usage error" "$status" 2
has "  naming the option" "$err" "--limit"
as $A jobs --format xml
is "--format xml for jobs: usage error" "$status" 2
as $A jobs --step 1
is "an option of another command: usage error" "$status" 2

# --- commap apps ----------------------------------------------------------------
as $A apps
is "apps: exit 0" "$status" 0
has "  lists stencil" "$out" stencil
has "  with its executable" "$out" /opt/apps/stencil
as $A apps --format json
printf '%s' "$out" >"$T/apps-cli.json"
req $A GET /v1/apps
printf '%s' "$body" >"$T/apps-api.json"
same_json "apps --format json is the API's answer" "$T/apps-cli.json" \
	"$T/apps-api.json"

# --- commap report ----------------------------------------------------------------
as $A report 3001
is "report 3001 as A: exit 0" "$status" 0
has "  identity" "$out" "job 3001 step 0 on node1"
has "  user" "$out" "$A (uid $uid_a)"
has "  mode and backend" "$out" "dynamic, backend sample"
has "  run time" "$out" "(70.0 s)"
has "  samples and lost" "$out" "19960 (lost 0"
has "  overhead" "$out" "agent CPU 0.120 s"
has "  pins and migrations" "$out" "pins         4 (0 first placements), migrations 1"
has "  a heatmap" "$out" "communication matrix (4 threads"
has "  drawn with block characters" "$out" "████"
lacks "  no colour escapes when not a terminal" "$out" "$(printf '\033')"
has "  the final mapping per core" "$out" "core 0   PU 0: 0.0"
has "  every thread placed" "$out" "core 3   PU 3: 0.3"
as $A report 3001 --format json
printf '%s' "$out" >"$T/job-cli.json"
req $A GET /v1/jobs/3001
printf '%s' "$body" >"$T/job-api.json"
same_json "report --format json is the API's job document" \
	"$T/job-cli.json" "$T/job-api.json"
as $A report 3001 --format json --output "$T/out-a/job.json"
is "--output: nothing on stdout" "$out" ""
same_json "  the file has the document" "$T/out-a/job.json" "$T/job-api.json"
as $A report 3001 --color always
has "--color always: 24-bit colour cells" "$out" "$(printf '\033[48;2;')"
as $A report "r$free_id"
has "report rID: the job-less result" "$out" "run outside Slurm on laptop"
has "  its heatmap has a full cell (the heavy pair)" "$out" "██"
has "  and a light one (1 of 100)" "$out" "░░"

as $A report 3002
is "A reads B's job: exit 1" "$status" 1
has "  a 403 message" "$err" "403"
has "  saying whose jobs may be read" "$err" "your own jobs"
is "  nothing on stdout" "$out" ""
as $B report 3002
is "B reads B's job" "$status" 0
as $A report 9999
is "an unknown job: exit 1" "$status" 1
has "  404, job not found" "$err" "job 9999 not found"
as $A report 3001 --step 7
is "--step with no result: exit 1" "$status" 1
has "  says so" "$err" "job 3001 has no result for step 7"
as $A report 3001 --node node1 --step 0
has "--node/--step matching: the report" "$out" "job 3001 step 0"
as $A report 30x1
is "a bad JOBID: usage error" "$status" 2
as $A report
is "no JOBID: usage error" "$status" 2
as $A report 3001 --format png
is "--format png: usage error" "$status" 2
has "  listing the formats" "$err" "text, json, svg, html"

# Many threads on a narrow terminal: buckets.
make_result "$T/big.json" 3003 "$uid_a" $A 1.0 100
req root POST /v1/results --data-binary @"$T/big.json"
run runuser -u $A -- env COMMAP_SERVICE="$url" COLUMNS=60 "$commap" \
	report 3003
has "100 threads, 60 columns: aggregated and said so" "$out" \
	"aggregated in buckets of 2 threads"
ok "  no heatmap line wider than the terminal" python3 -c '
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
start = [i for i, l in enumerate(lines) if l.startswith("communication")][0]
end = [i for i, l in enumerate(lines) if l.startswith("scale:")][0]
sys.exit(any(len(l) > 60 for l in lines[start + 1:end]))' "$T/out"

# svg and html (the report library)
as $A report 3001 --format svg --output "$T/out-a/h.svg"
if [ "$status" -eq 0 ]; then
	ok "--format svg: a standalone SVG heatmap" \
		grep -q '<svg.*id="heatmap' "$T/out-a/h.svg"
	as $A report 3001 --format html --output "$T/out-a/j.html"
	is "--format html: exit 0" "$status" 0
	ok "  an HTML page" grep -qi '<html' "$T/out-a/j.html"
else
	has "--format svg without the report library: says so" "$err" \
		"not available in this build"
fi

# --- finding the service -------------------------------------------------------------
run runuser -u $A -- env -u COMMAP_SERVICE COMMAP_CONFIG= "$commap" jobs \
	--service "$url"
has "--service URL" "$out" 3001
printf '# client\nservice = %s\n' "$url" >"$T/commap.conf"
run runuser -u $A -- env -u COMMAP_SERVICE COMMAP_CONFIG="$T/commap.conf" \
	"$commap" jobs
has "the configuration file's service key" "$out" 3001
printf 'servce = %s\n' "$url" >"$T/bad.conf"
run runuser -u $A -- env -u COMMAP_SERVICE COMMAP_CONFIG="$T/bad.conf" \
	"$commap" jobs
is "an unknown configuration key: exit 1" "$status" 1
has "  naming the file, line and key" "$err" "$T/bad.conf:1: unknown key 'servce'"
run runuser -u $A -- env COMMAP_SERVICE="$url" \
	COMMAP_CONFIG="$T/bad.conf" "$commap" jobs
is "COMMAP_SERVICE wins over the file" "$status" 0
as $A jobs --service http://127.0.0.1:1
is "an unreachable service: exit 1" "$status" 1
has "  naming the URL" "$err" "cannot reach the service at http://127.0.0.1:1/v1/jobs"

# commap check: the service half (the node half: tests/agent/t0750).
as $A check
has "commap check: the service answers" "$out" "ok    reachable        $url/healthz"
has "  and accepts the user's munge credential" "$out" "ok    munge credential $url/v1/jobs?limit=1"
stop_service
as $A check
is "commap check with the service stopped: exit 1" "$status" 1
has "  the service does not answer" "$out" "FAIL  reachable        $url does not answer"

as $A report 3001
is "the service stopped: exit 1" "$status" 1
has "  says it cannot reach it" "$err" "cannot reach the service at $url"

done_testing
