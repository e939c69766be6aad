#!/bin/sh
# The service against hostile clients (docs/service.md, "Threat model"):
# hundreds of idle and trickling connections, one address opening more
# than its share, large bodies sent without a credential.  Real daemon,
# real sockets from several loopback addresses, real munge.  Every check
# is an outcome (answered, closed, refused, memory), never a duration.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

# Idle timeout and request deadline short enough for a test, long enough
# that a busy machine still finishes what the test holds.
service_setup --users 1 "max_connections = 1024" \
	"per_ip_connections = 48" "timeout = 30" "request_timeout = 6"
flood="python3 $top_srcdir/tests/service/conn-flood.py"
# j EXPR: a field of the last flood's JSON report
j() { printf '%s' "$rep" | python3 -c "import json,sys; r=json.load(sys.stdin); print($1)"; }

# --- 320 idle and trickling connections from 8 addresses ---------------------
rep=$($flood --port "$port" --pid "$svc_pid" --idle 160 --trickle 160 \
	--sources 8 --hold 2)
diag "$rep"
is "320 connections opened" "$(j 'r["opened"]')" 320
ok "  the service holds them all (none refused at this size)" \
	test "$(j 'sum(r["held_to_the_end"].values())')" -ge 300
ok "  /healthz was asked meanwhile" test "$(j 'r["probes"]')" -ge 3
is "  and answered 200 every time" "$(j 'r["probe_failures"]')" 0

# --- trickling clients are cut at request_timeout -----------------------------
rep=$($flood --port "$port" --pid "$svc_pid" --trickle 20 --sources 4 \
	--hold 20)
diag "$rep"
is "20 connections sending a header byte a second: all closed" \
	"$(j 'r["closed_by_service"].get("trickle", 0)')" 20
is "  /healthz answered meanwhile" "$(j 'r["probe_failures"]')" 0
ok "  the log says why, once" \
	grep -q 'whose request took longer than request_timeout' "$T/svc.log"
req - GET /metrics
ok "  /metrics counts them" test "$(printf '%s\n' "$body" |
	sed -n 's/^commap_http_connections_cut_total //p')" -ge 20

# --- one address may not take every slot --------------------------------------
rep=$($flood --port "$port" --pid "$svc_pid" --idle 80 --sources 1 --hold 1)
diag "$rep"
ok "80 idle connections from one address: at most 48 held" \
	test "$(j 'r["held_to_the_end"].get("idle", 0)')" -le 48
ok "  the rest closed at once" \
	test "$(j 'r["closed_by_service"].get("idle", 0) + r["refused_at_connect"]')" -ge 32
is "  another address is still served" "$(j 'r["probe_failures"]')" 0

# --- bodies without a credential are not buffered -----------------------------
rep=$($flood --port "$port" --pid "$svc_pid" --bodies 40 \
	--body-bytes $((15 << 20)) --body-path /healthz --hold 4)
diag "$rep"
is "40 x 15 MB posted to /healthz: every connection refused" \
	"$(j 'r["closed_by_service"].get("body", 0)')" 40
ok "  the service grew by less than 64 MB (not 600)" \
	test "$(j 'r["rss_kb_max"] - r["rss_kb_before"]')" -lt 65536
rep=$($flood --port "$port" --pid "$svc_pid" --bodies 40 \
	--body-bytes $((15 << 20)) --body-path /v1/results --hold 4)
diag "$rep"
is "40 x 15 MB uploads without a credential: every connection refused" \
	"$(j 'r["closed_by_service"].get("body", 0)')" 40
ok "  the service grew by less than 64 MB" \
	test "$(j 'r["rss_kb_max"] - r["rss_kb_before"]')" -lt 65536
head -c $((1 << 20)) /dev/zero | tr '\0' ' ' >"$T/mb"
req - POST /healthz --data-binary @"$T/mb"
is "a 1 MB body to /healthz: 413" "$code" 413
ok "  saying what the path takes" \
	sh -c "printf '%s' \"\$1\" | grep -q 'more than this path takes'" - "$body"
req $A GET /v1/jobs --data-binary @"$T/mb"
is "a 1 MB body with a reader's credential: 413 too" "$code" 413
req - GET /healthz
is "the service still answers" "$code" 200

ok "the service stops on SIGTERM" stop_service

# --- a writer's bodies in flight are bounded in total -------------------------
# (a compromised node holds root's credential: many uploads at once must
# not take the service's memory)
cat >>"$T/svc.conf" <<CONF
max_body = 1M
max_body_total = 2M
CONF
ok "the service restarts with max_body_total = 2M" start_service "$T/svc.conf"
for _ in 1 2 3; do munge -n; done >"$T/creds"
rep=$($flood --port "$port" --pid "$svc_pid" --bodies 3 --body-bytes 900000 \
	--body-path /v1/results --creds "$T/creds" --sources 1 --hold 4)
diag "$rep"
is "three 900 kB uploads at once, 2 MB for all: the third is 503" \
	"$(j 'r["answers"]["body"].get("503", 0)')" 1
is "  the other two were read (and refused as invalid JSON: 400)" \
	"$(j 'r["answers"]["body"].get("400", 0)')" 2
make_result "$T/r.json" 5001 "$(id -u $A)" $A
req root POST /v1/results --data-binary @"$T/r.json"
is "  the budget is given back: the next upload is stored" "$code" 201
echo "max_body_total = 512k" >"$T/small.conf"
run "$service" --config "$T/small.conf" --foreground
is "max_body_total below max_body: exit 2" "$status" 2
ok "  saying why" sh -c "printf '%s' \"\$1\" | grep -q 'max_body_total (524288) is smaller than max_body'" - "$err"
ok "the service stops on SIGTERM" stop_service
done_testing
