#!/bin/sh
# The service against hostile clients (docs/service.md, "Threat model"):
# hundreds of idle and trickling connections, one address opening more
# than its share, large bodies sent without a credential.  Real daemon,
# real sockets from several loopback addresses, real munge.  Every check
# is an outcome (answered, closed, refused, memory), never a duration.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

need_root_and_munge
command -v python3 >/dev/null || skip_all "python3 is not installed"
A=commap-test-a
make_user $A || skip_all "cannot create the test users"
flood="python3 $top_srcdir/tests/service/conn-flood.py"
# j EXPR: a field of the last flood's JSON report
j() { printf '%s' "$rep" | python3 -c "import json,sys; r=json.load(sys.stdin); print($1)"; }

# Idle timeout and request deadline short enough for a test, long enough
# that a busy machine still finishes what the test holds.
cat >"$T/svc.conf" <<CONF
database = $T/svc.db
threads = 2
max_connections = 1024
per_ip_connections = 48
timeout = 30
request_timeout = 6
CONF
ok "the service starts" start_service "$T/svc.conf"

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
done_testing
