#!/bin/bash
# What a site installs from deploy/ works as shipped: the service's systemd
# unit is complete (paths substituted, no unknown keys) and its ExecStart
# line, with the example service.conf, starts a service that answers and
# stops cleanly on the unit's KillSignal.  (The plugin's example settings
# are parsed by tests/unit/test_spank_config.c.)
. "$top_srcdir/tests/integration/tap.sh"

unit=$top_builddir/deploy/systemd/commap-service.service
service=$top_builddir/service/commap-service
example=$top_srcdir/deploy/config/service.conf
if [ ! -x "$service" ]; then
	echo "1..0 # SKIP commap-service was not built"
	exit 0
fi

ok "the unit was generated from its template" [ -s "$unit" ]
run grep -n "@[a-z_]*@" "$unit"
is "no @variable@ left in the unit" "$out" ""
exec_line=$(sed -n 's/^ExecStart=//p' "$unit")
set -- $exec_line
case $1 in
/*/sbin/commap-service) status=0 ;;
*) status=1 ;;
esac
tap_result $status "ExecStart runs the installed commap-service ($1)"
shift
is "ExecStart: foreground (systemd keeps the process), the site's config" \
	"$1 $2 ${3##*/}" "--foreground --config service.conf"
kill_signal=$(sed -n 's/^KillSignal=//p' "$unit")
is "stopped with SIGTERM (the service's clean shutdown)" "$kill_signal" SIGTERM
grep -q "^StateDirectory=commap$" "$unit" &&
	grep -q "^database = /var/lib/commap/" "$example"
tap_result $? "the example database lives in the unit's StateDirectory"

# systemd's own checker: with ExecStart pointing at the built binary (the
# installed one may not exist yet), any warning (an unknown key, a bad
# value) fails.
if command -v systemd-analyze >/dev/null; then
	sed "s|^ExecStart=[^ ]*|ExecStart=$service|" "$unit" \
		>"$T/commap-service.service"
	run systemd-analyze verify "$T/commap-service.service"
	is "systemd-analyze verify: no error, no warning" \
		"$status:$out$err" "0:"
else
	echo "ok $((tap_count + 1)) # SKIP systemd-analyze is not installed"
	tap_count=$((tap_count + 1))
fi

# The unit's command line with the example configuration (in place of the
# installed one); listen and database overridden on the command line so the
# test owns them.
if id slurm >/dev/null 2>&1; then
	"$service" "$1" "$2" "$example" --listen 127.0.0.1:0 --database "$T/db.sqlite" \
		>"$T/svc.log" 2>&1 &
	pid=$!
	port=
	for _ in $(seq 100); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' \
			"$T/svc.log")
		[ -n "$port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	tap_result $([ -n "$port" ]; echo $?) \
		"the unit's command with the example config starts ($(head -c 200 "$T/svc.log"))"
	run curl -s "http://127.0.0.1:$port/healthz"
	is "it answers /healthz" "$status" 0
	kill -TERM "$pid"
	wait "$pid"
	is "SIGTERM: exit 0" "$?" 0
else
	echo "ok $((tap_count + 1)) # SKIP no 'slurm' user (the example's slurm_user)"
	tap_count=$((tap_count + 1))
fi

done_testing
