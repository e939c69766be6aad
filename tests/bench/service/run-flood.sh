#!/usr/bin/env bash
# Hostile connections against the service (docs/PERFORMANCE.md, "Service
# under hostile connections").
#
#   bash tests/bench/service/run-flood.sh [--builddir DIR] [--service BIN]
#
# As root: starts BIN (default DIR/service/commap-service, DIR default
# build-bench) with its default settings on a free loopback port and a
# fresh database, then runs tests/service/conn-flood.py once per
# scenario, printing one JSON line each: what was opened, what the
# service answered or closed, /healthz probes from another address
# (every 0.2 s: failures, median and worst latency) and the service's
# RSS before, at most and after.  Scenarios (8 source addresses unless
# said): 300 idle held 8 s; 300 trickling (a header byte a second) held
# 8 s; 150 idle + 150 trickling held 25 s (past timeout and
# request_timeout); 300 idle from one address; 40 bodies of 15 MB to
# /v1/results without a credential; the same to /healthz.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
builddir="$top/build-bench"
svc=
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) builddir=$(cd "$2" && pwd); shift 2 ;;
	--service) svc=$2; shift 2 ;;
	*) echo "run-flood.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
svc=${svc:-$builddir/service/commap-service}
[ -x "$svc" ] || { echo "run-flood.sh: $svc is not built" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "run-flood.sh: run as root" >&2; exit 2; }

T=$(mktemp -d /tmp/commap-bench-flood.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$T"' EXIT
printf 'database = %s/svc.db\n' "$T" >"$T/svc.conf"
"$svc" --config "$T/svc.conf" --listen 127.0.0.1:0 --foreground \
	>"$T/svc.log" 2>&1 &
pid=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' \
		"$T/svc.log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { cat "$T/svc.log" >&2; exit 1; }
flood() {
	local name=$1
	shift
	printf '%s ' "$name"
	python3 "$top/tests/service/conn-flood.py" --port "$port" \
		--pid "$pid" "$@"
	sleep 1	# let the service close what the scenario left
}
echo "# $svc, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
flood idle-300 --idle 300 --hold 8
flood trickle-300 --trickle 300 --hold 8
flood mixed-300-25s --idle 150 --trickle 150 --hold 25
flood one-address-300 --idle 300 --sources 1 --hold 4
flood bodies-40x15M-upload --bodies 40 --body-path /v1/results --hold 6
flood bodies-40x15M-healthz --bodies 40 --body-path /healthz --hold 6
kill -TERM "$pid"
wait "$pid" || true
pid=
