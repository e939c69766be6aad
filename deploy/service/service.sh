#!/usr/bin/env bash
# The commap service on this machine: commap-service on 127.0.0.1:7733
# with its SQLite database, for the local cluster and the demo.
#
#   deploy/service/service.sh start    (re)start it
#   deploy/service/service.sh stop     stop it
#   deploy/service/service.sh status   is it answering?
#
# Environment: COMMAP_PREFIX (where commap is installed, /usr/local),
# COMMAP_SERVICE_DIR (database, log, pid file: /var/lib/commap),
# COMMAP_SERVICE_CONF (/etc/commap/service.conf, written if absent),
# COMMAP_SERVICE_LISTEN (127.0.0.1:7733).
#
# Runs in the foreground of its own session (for hosts without
# systemd) with its log in $COMMAP_SERVICE_DIR/service.log.
# munged must be running (deploy/cluster/cluster.sh start starts it).
set -euo pipefail

prefix=${COMMAP_PREFIX:-/usr/local}
dir=${COMMAP_SERVICE_DIR:-/var/lib/commap}
conf=${COMMAP_SERVICE_CONF:-/etc/commap/service.conf}
listen=${COMMAP_SERVICE_LISTEN:-127.0.0.1:7733}
bin=$prefix/sbin/commap-service
pidfile=$dir/service.pid
marker="# written by commap deploy/service/service.sh"

log() { echo "service: $*"; }
die() { echo "service: $*" >&2; exit 1; }

healthy() { curl -fsS --max-time 1 "http://$listen/healthz" >/dev/null 2>&1; }

write_conf() {
	[ -f "$conf" ] && return 0
	mkdir -p "$(dirname "$conf")"
	# The agents run as root under slurmd here (SlurmUser=root), and
	# root may always upload: no separate Slurm user.
	cat >"$conf" <<EOC
$marker
listen = $listen
database = $dir/service.db
slurm_user =
log_level = info
EOC
	log "wrote $conf"
}

cmd_stop() {
	local pid
	pid=$(cat "$pidfile" 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		log "stopped commap-service"
	fi
	rm -f "$pidfile"
}

cmd_start() {
	[ "$(id -u)" -eq 0 ] || die "run as root"
	[ -x "$bin" ] || die "$bin is not installed (bash deploy/demo.sh builds and installs it)"
	cmd_stop
	mkdir -p "$dir"
	write_conf
	setsid "$bin" --foreground --config "$conf" </dev/null >>"$dir/service.log" 2>&1 &
	echo $! >"$pidfile"
	for _ in $(seq 50); do
		healthy && { log "commap-service answers on http://$listen"; return 0; }
		kill -0 "$(cat "$pidfile")" 2>/dev/null || break
		sleep 0.1
	done
	tail -n 5 "$dir/service.log" >&2 || true
	die "commap-service did not start (see $dir/service.log)"
}

cmd_status() {
	if healthy; then echo "commap-service: answering on http://$listen"
	else echo "commap-service: not answering on http://$listen"; return 1; fi
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
*) echo "usage: $0 start | stop | status" >&2; exit 2 ;;
esac
