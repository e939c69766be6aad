#!/bin/sh
# What 'commap jobs|apps|report|check' say when the answer is not what the
# user hoped for (docs/cli.md, "Messages"): another web server at
# --service is named as such with its status, never its page; a listing
# of another user's jobs that the caller may not see says so instead of
# "(no jobs)"; forgetting another user's model speaks of models; another
# command's option is named as typed.  The real
# service with real munge credentials of real users; python's http.server
# as the other web server.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --users 2 --cli

# Another command's option is named as typed, not by its value.
run "$commap" apps --user x
is "apps --user x: usage error" "$status" 2
has "  names the option and the command" "$err" "--user is not an option of 'commap apps'"
lacks "  not its value as an unknown option" "$err" "unknown option 'x'"
run "$commap" apps forget 3 --format json
is "apps forget --format: usage error" "$status" 2
has "  'commap apps forget', explained by 'commap help apps'" "$err" \
	"--format is not an option of 'commap apps forget'; see 'commap help apps'"
run "$commap" apps forget 3 4
has "apps forget with two ids: the help that exists" "$err" "see 'commap help apps'"

# Another web server: a page whose text must never reach the terminal.
mkdir -p "$T/www/v1"
echo '<html><body>WELCOME-TO-ANOTHER-SERVER</body></html>' \
	>"$T/www/index.html"
cp "$T/www/index.html" "$T/www/v1/jobs"	# a 200 at /v1/jobs
(cd "$T/www" && exec python3 -u -m http.server 0 --bind 127.0.0.1) \
	>"$T/www.log" 2>&1 &
www_pid=$!
trap 'kill $www_pid 2>/dev/null; cleanup' EXIT
for _ in $(seq 300); do	# 30 s: python starts slowly on a busy node
	wport=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$T/www.log" | head -1)
	[ -n "$wport" ] && break
	sleep 0.1
done
ok "another web server listens" [ -n "$wport" ]
www=http://127.0.0.1:$wport

run "$commap" apps --service "$www"
is "apps at another web server: exit 1" "$status" 1
has "  says what answered, with the status" "$err" \
	"$www answered HTTP 404 with an HTML page (text/html"
has "  and that it is not a commap service" "$err" "it is not a commap service"
lacks "  never its page" "$err$out" "WELCOME-TO-ANOTHER-SERVER"
run "$commap" jobs --service "$www"
is "jobs: a 200 page that is not JSON: exit 1" "$status" 1
has "  says HTTP 200 and an HTML page" "$err" "answered HTTP 200 with an HTML page"
lacks "  never its page" "$err$out" "WELCOME-TO-ANOTHER-SERVER"
run "$commap" report 42 --service "$www"
has "report at another web server: not a commap service" "$err" \
	"it is not a commap service"
lacks "  and not 'job 42 not found'" "$err" "job 42 not found"
run "$commap" apps forget 7 --service "$www"
has "apps forget at another web server: not a commap service" "$err" \
	"it is not a commap service"
run "$commap" check --service "$www"
is "check at another web server: exit 1" "$status" 1
has "  one line: what answered at /healthz" "$out" \
	"FAIL  reachable        $www/healthz answered HTTP 404 with an HTML page"
lacks "  no 'reachable not found'" "$err$out" "reachable not found"
lacks "  never its page" "$err$out" "WELCOME-TO-ANOTHER-SERVER"

# B's run, which makes B a learned model.
make_result "$T/b.json" 4002 "$uid_b" $B 7.0 4
python3 - "$T/b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["identity"].update(argv_shape="stencil -n #", threads_per_rank=4,
                     exe_hash="sha256:" + "ab" * 32)
json.dump(d, open(sys.argv[1], "w"))
PY
req root POST /v1/results --data-binary @"$T/b.json"
is "B's result uploaded" "$code" 201
req $B GET /v1/models -G --data-urlencode exe_hash=sha256:$(printf "ab%.0s" $(seq 32)) \
	--data-urlencode ranks=1 --data-urlencode threads_per_rank=4 \
	--data-urlencode "argv_shape=stencil -n #"
is "B has a learned model" "$code" 200
[ "$code" = 200 ] || diag "$body"
model_b=$(jq_py 'j["id"]')

as $A jobs --user $B
is "A lists B's jobs: exit 0" "$status" 0
lacks "  not a bare '(no jobs)'" "$out" "(no jobs)"
has "  says that only one's own jobs are visible" "$out" \
	"(no jobs of $B that you may see: the service shows you only your own"
as $B jobs --app nothing-like-it
has "an empty filtered list says the filters matched nothing" "$out" \
	"(no jobs match --app, --since, --until)"
as $B jobs --user $B
has "B lists B's jobs: the job" "$out" "4002"
as $A jobs
has "A's own empty list: '(no jobs)'" "$out" "(no jobs)"

as $A apps forget "$model_b"
is "A forgets B's model: exit 1" "$status" 1
has "  a 403 naming the model" "$err" "model $model_b: permission denied (403)"
has "  speaks of models" "$err" "you may forget only your own models"
lacks "  not of jobs" "$err" "jobs"
as $A report 4002
has "A reads B's job: a 403 about jobs" "$err" "you may read only your own jobs"
as $A report 4999
has "an unknown job: 404 with the service's message" "$err" \
	"job 4999 not found at $url (404): job 4999: not found"

as $A check
has "check against the service: reachable" "$out" "ok    reachable        $url/healthz"
lacks "  no 'not found' for a working service" "$out" "not found"

ok "the service stops cleanly" stop_service
done_testing
