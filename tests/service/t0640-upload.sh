#!/bin/sh
# The agent's delivery of results (nodeagent/upload.h) against the real
# commap-service on loopback, real munge: upload, spool when the service is
# down or slow, flush when it is back (exactly once), rejected documents
# kept with the reason, a full spool refusing new results.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

drv="$top_builddir/tests/service/upload_driver"
[ -x "$drv" ] || skip_all "tests/service/upload_driver was not built"
service_setup --users 1 "max_body = 64k"
spool="$T/spool"
svc_port=$port

# deliver FILE [driver options]: sets $status, $out, $err
deliver() {
	local f=$1
	shift
	run "$drv" deliver --spool "$spool" "$@" "$f"
}
count() { "$drv" count --spool "$spool"; }
ms() { echo $(($(date +%s%N) / 1000000)); }
# rows_of JOB: how many stored results the service has for the job
rows_of() {
	req root GET "/v1/jobs/$1?documents=0"
	[ "$code" = 200 ] && jq_py 'len(j["results"])' || echo "$code"
}
jobless_copy() {	# SRC DST: the same result outside Slurm (job null)
	python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["identity"]["job"] = None
d["identity"]["step"] = None
d["identity"]["node"] = "laptop"
json.dump(d, open(sys.argv[2], "w"))
PY
}

for j in 2001 2002 2003 2004 2005 2006 2007 2008; do
	make_result "$T/r$j.json" $j "$uid_a" $A
done
jobless_copy "$T/r2001.json" "$T/free.json"

# --- the service is up ---------------------------------------------------------
deliver "$T/r2001.json" --service "$url"
is "service up: uploaded" "$out" uploaded
is "  exit 0" "$status" 0
is "  stored once" "$(rows_of 2001)" 1
ok "  nothing spooled" test "$(count)" = 0
deliver "$T/r2001.json" --service "$url/"
is "the same result again (an agent retry): uploaded (duplicate)" "$out" \
	uploaded
is "  still stored once" "$(rows_of 2001)" 1

# --- the service is down (connection refused) --------------------------------------
stop_service
t0=$(ms)
deliver "$T/r2002.json" --service "$url" --timeout 1500
t1=$(ms)
is "service down: spooled" "$out" spooled
is "  exit 1" "$status" 1
ok "  the message names the URL and the failure" \
	sh -c "printf '%s' \"\$1\" | grep -q '127.0.0.1:$svc_port.*onnect'" _ "$err"
ok "  within the timeout (took $((t1 - t0)) ms, limit 1500 + 3000)" \
	test $((t1 - t0)) -lt 4500
id2002=$("$drv" id "$T/r2002.json")
ok "  spooled as ID.json" test -f "$spool/$id2002.json"
is "  mode 0600" "$(stat -c %a "$spool/$id2002.json")" 600
ok "  with the document unchanged" cmp -s "$T/r2002.json" \
	"$spool/$id2002.json"
ok "  no temporary file left" \
	sh -c "! ls -A '$spool' | grep -q tmp"
deliver "$T/r2002.json" --service "$url" --timeout 1500
is "the same result spooled twice: one file" "$(count)" 1
deliver "$T/free.json" --service "$url"
is "a job-less result is spooled too" "$out" spooled
deliver "$T/r2003.json"
is "no service configured: spooled" "$out" spooled
ok "  and says so" sh -c "printf '%s' \"\$1\" | grep -q 'no service'" _ "$err"
is "three results wait" "$(count)" 3
: >"$T/not-a-socket"
t0=$(ms)
deliver "$T/r2003.json" --service "$url" --munge-socket "$T/not-a-socket"
t1=$(ms)
is "munged unreachable: spooled" "$out" spooled
ok "  the message names munged's socket" \
	sh -c "printf '%s' \"\$1\" | grep -q 'munged is not reachable at $T/not-a-socket'" _ "$err"
ok "  without libmunge's retry loop ($((t1 - t0)) ms < 1500)" \
	test $((t1 - t0)) -lt 1500
is "  still three results (the same one)" "$(count)" 3

# --- a slow service: accepts, never answers -----------------------------------------
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept())
' >"$T/slow.port" &
slow_pid=$!
for _ in $(seq 50); do [ -s "$T/slow.port" ] && break; sleep 0.1; done
slow_url="http://127.0.0.1:$(cat "$T/slow.port")"
t0=$(ms)
deliver "$T/r2004.json" --service "$slow_url" --timeout 1000
t1=$(ms)
is "slow service: spooled" "$out" spooled
ok "  the message says it timed out" \
	sh -c "printf '%s' \"\$1\" | grep -qi 'timeout\|timed out'" _ "$err"
ok "  within the timeout (took $((t1 - t0)) ms, limit 1000 + 3000)" \
	test $((t1 - t0)) -lt 4000
ok "  not before the timeout either (the service was waited for)" \
	test $((t1 - t0)) -ge 900
t0=$(ms)
run "$drv" flush --spool "$spool" --service "$slow_url" --timeout 1000
t1=$(ms)
is "flush against the slow service: nothing delivered" "$out" "delivered 0"
ok "  one timeout, not one per file ($((t1 - t0)) ms)" \
	test $((t1 - t0)) -lt 4000
ok "  says it stopped" sh -c "printf '%s' \"\$1\" | grep -q 'flush stopped'" \
	_ "$err"
kill "$slow_pid" 2>/dev/null
wait "$slow_pid" 2>/dev/null
is "four results wait" "$(count)" 4

# --- a spooled document the service refuses -----------------------------------------
python3 - "$T/r2005.json" "$T/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["identity"]["job"] = 2099
d["edges"][0][2] = -1.0
json.dump(d, open(sys.argv[2], "w"))
PY
deliver "$T/bad.json"
id_bad=$("$drv" id "$T/bad.json")
is "five results wait (one of them bad)" "$(count)" 5

# --- the service is back: flush --------------------------------------------------------
ok "the service restarts on the same port and database" \
	start_service "$T/svc.conf" "$svc_port"
run "$drv" flush --spool "$spool" --service "$url"
is "flush delivers the four good results" "$out" "delivered 4"
ok "  and names the refused one" \
	sh -c "printf '%s' \"\$1\" | grep -q '$id_bad.*rejected'" _ "$err"
is "  the spool is empty" "$(count)" 0
ok "  the bad one is kept under rejected/" \
	cmp -s "$T/bad.json" "$spool/rejected/$id_bad.json"
ok "  with the service's reason" \
	grep -q "400.*weight is negative" "$spool/rejected/$id_bad.error"
is "job 2002 stored once" "$(rows_of 2002)" 1
is "job 2003 stored once" "$(rows_of 2003)" 1
is "job 2004 stored once" "$(rows_of 2004)" 1
is "job 2099 (refused) not stored" "$(rows_of 2099)" 404
req root GET "/v1/jobs?limit=1000"
is "the job-less result is stored once" \
	"$(jq_py 'sum(1 for x in j["jobs"] if x["job"] is None)')" 1

# An agent that crashed after sending but before removing its spool file:
# the retry is acknowledged as a duplicate and nothing is stored twice.
mkdir -p "$spool"
cp "$T/r2002.json" "$spool/$id2002.json"
run "$drv" flush --spool "$spool" --service "$url"
is "a retry of a delivered result: acknowledged" "$out" "delivered 1"
is "  spool empty" "$(count)" 0
is "  job 2002 still stored once" "$(rows_of 2002)" 1

# --- a refused document on the first attempt ---------------------------------------------
rm -rf "$spool/rejected"
deliver "$T/bad.json" --service "$url"
is "a bad document: error" "$out" error
is "  exit 3 (driver: -1)" "$status" 3
ok "  the error gives the service's reason" \
	sh -c "printf '%s' \"\$1\" | grep -q 'weight is negative'" _ "$err"
ok "  kept as rejected/ID.json" test -f "$spool/rejected/$id_bad.json"
ok "  with ID.error" grep -q "weight is negative" \
	"$spool/rejected/$id_bad.error"
is "  not pending" "$(count)" 0
make_result "$T/huge.json" 2098 "$uid_a" $A 1.0 200
deliver "$T/huge.json" --service "$url"
id_huge=$("$drv" id "$T/huge.json")
is "a result over the service's max_body: error, not spooled for retry" \
	"$out" error
ok "  kept as rejected/ID.json" test -f "$spool/rejected/$id_huge.json"
ok "  with the service's reason naming max_body" grep -q "400.*max_body" \
	"$spool/rejected/$id_huge.error"
is "  not pending" "$(count)" 0
make_result "$T/r2001b.json" 2001 "$uid_a" $A 9.0
deliver "$T/r2001b.json" --service "$url"
is "other data for a stored job step (409): error" "$out" error
id_conf=$("$drv" id "$T/r2001b.json")
ok "  kept under rejected/" test -f "$spool/rejected/$id_conf.json"

# --- a successful delivery drains the spool ------------------------------------------
stop_service
deliver "$T/r2007.json" --service "$url"
is "service down again: spooled" "$out" spooled
ok "the service restarts" start_service "$T/svc.conf" "$svc_port"
deliver "$T/r2008.json" --service "$url" --timeout 5000
is "the next result: uploaded" "$out" uploaded
is "  and the spooled one went with it" "$(count)" 0
is "  job 2007 stored once" "$(rows_of 2007)" 1
is "  job 2008 stored once" "$(rows_of 2008)" 1

# --- a full spool ---------------------------------------------------------------------------
stop_service
rm -rf "$spool"
deliver "$T/r2005.json" --service "$url"
is "spool: first result spooled" "$out" spooled
sum_before=$(cat "$spool"/*.json | md5sum)
size=$(stat -c %s "$T/r2006.json")
used=$(stat -c %s "$spool"/*.json)
deliver "$T/r2006.json" --service "$url" --max-bytes $((used + size - 1))
is "spool full: error" "$out" error
ok "  the message says full and NOT spooled" \
	sh -c "printf '%s' \"\$1\" | grep -q 'full.*NOT spooled'" _ "$err"
is "  the new result is not there" "$(count)" 1
is "  the spooled one is untouched" "$(cat "$spool"/*.json | md5sum)" \
	"$sum_before"
deliver "$T/r2006.json" --service "$url" --max-bytes $((used + size))
is "one byte more room: spooled" "$out" spooled
id5=$("$drv" id "$T/r2005.json")
deliver "$T/r2006.json" --service "$url" --id "$id5"
is "a different result under a spooled id: error" "$out" error
ok "  says it was not overwritten" \
	sh -c "printf '%s' \"\$1\" | grep -q 'not overwritten'" _ "$err"
ok "  the spooled file is unchanged" cmp -s "$T/r2005.json" \
	"$spool/$id5.json"
deliver "$T/r2006.json" --service "$url" --id "bad id"
is "an invalid upload id: error" "$out" error

done_testing
