#!/usr/bin/env bash
# Run the service benchmark (docs/PERFORMANCE.md, "Service").
#
#   bash tests/bench/service/run-service.sh [--builddir DIR] [bench options]
#
# As root (it starts munged if needed): starts DIR/service/commap-service
# (default DIR: build-bench) on a free loopback port with a fresh
# database in a temporary directory, runs DIR/tests/bench/service/
# bench_service against it with the given options (--clients, --uploads,
# --threads, --all-pairs, --pages), prints the CPU time the service and
# munged used, stops the service and prints the database size.  Build it first: make -C DIR service/commap-service
# tests/bench/service/bench_service.  A sanitizer build is refused.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
builddir="$top/build-bench"
if [ "${1:-}" = --builddir ]; then
	builddir=$(cd "$2" && pwd)
	shift 2
fi
svc="$builddir/service/commap-service"
bench="$builddir/tests/bench/service/bench_service"
for f in "$svc" "$bench"; do
	[ -x "$f" ] || { echo "run-service.sh: $f is not built" >&2; exit 2; }
done
if grep -q -- '--enable-sanitizers' "$builddir/config.log" 2>/dev/null &&
   grep -q 'SAN_CFLAGS=.*-fsanitize' "$builddir/config.log"; then
	echo "run-service.sh: $builddir is a sanitizer build" >&2
	exit 2
fi
[ "$(id -u)" -eq 0 ] || { echo "run-service.sh: run as root" >&2; exit 2; }
install -d -o munge -g munge -m 755 /run/munge
munge -n 2>/dev/null | unmunge >/dev/null 2>&1 ||
	runuser -u munge -- /usr/sbin/munged --force

T=$(mktemp -d /tmp/commap-bench-svc.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$T"' EXIT
cat >"$T/svc.conf" <<CONF
database = $T/svc.db
threads = ${COMMAP_BENCH_SVC_THREADS:-2}
max_body = 64M
log_level = warning
CONF
"$svc" --config "$T/svc.conf" --listen 127.0.0.1:0 --foreground \
	--log-level info >"$T/log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$T/log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { cat "$T/log" >&2; exit 1; }
echo "commap-service on port $port, $(nproc) CPUs, service threads" \
	"${COMMAP_BENCH_SVC_THREADS:-2}"
# CPU seconds (user + system) of a process, from /proc/PID/stat.
cpu_of() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' \
		"/proc/$1/stat" 2>/dev/null || echo 0
}
mpid=$(pgrep -x munged | head -1)
m0=$(cpu_of "$mpid")
rc=0
"$bench" --port "$port" "$@" || rc=$?
# Load-independent cost: CPU time per request of the whole run (with
# --pages 1 nearly all of it is uploads).
# The learned models' worker thread (named commap-models) folds results
# into models off the upload path: its share of the service's CPU.
worker_cpu() {
	local t
	for t in /proc/$pid/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = commap-models ] &&
			cpu_of "$pid/task/${t##*/}" && return
	done
	echo 0
}
echo "cpu          service $(cpu_of $pid) s (learned models' worker" \
	"$(worker_cpu) s), munged" \
	"$(awk -v a="$(cpu_of "$mpid")" -v b="$m0" 'BEGIN { printf "%.3f", a - b }') s" \
	"during the run"
kill -TERM $pid
wait $pid || true
pid=
echo "database     $(du -sh "$T/svc.db" | cut -f1) after the run"
exit $rc
