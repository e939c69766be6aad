#!/bin/bash
# The agent's watchdog: wherever it is stuck, it ends a bounded time after
# SIGTERM (5 s) or after the end of its step (its standard input closed:
# 10 s), with status 3 and one line saying so.  Stuck here means blocked
# writing its result to standard output, a pipe already full whose reader
# never reads.  An agent that is not stuck still finishes normally, and
# one whose result neither the service nor the spool takes says so in
# syslog.
. "$top_srcdir/tests/integration/tap.sh"
agent="$top_builddir/nodeagent/commap-agent"
[ -x "$agent" ] || { echo "1..0 # SKIP the agent was not built"; exit 0; }

# wait_file FILE: up to 120 s for FILE to be non-empty (generous: only an
# agent that never ends reaches it; the watchdog's own delays are seconds).
wait_file() {
	for _ in $(seq 600); do
		[ -s "$1" ] && return 0
		sleep 0.2
	done
	return 1
}

# The step ends (standard input closes); the result cannot be written.
# 64 KiB fill the pipe to the reader that never reads.
sleep 1 | {
	head -c 65536 /dev/zero
	"$agent" --mode off --tasks-from-stdin 2>"$T/err1"
	echo $? >"$T/status1"
} | sleep 300 &
reader1=$!
ok "step end, stuck writing the result: the agent ends" wait_file "$T/status1"
is "  with status 3" "$(cat "$T/status1" 2>/dev/null)" 3
ok "  and says the watchdog ended it" grep -q "watchdog" "$T/err1"
pkill -P "$reader1" sleep 2>/dev/null
kill "$reader1" 2>/dev/null

# SIGTERM while it follows a process; the result cannot be written.
sleep 300 &
app=$!
{
	head -c 65536 /dev/zero
	"$agent" --mode off --pid "$app" --ready-fd 3 3>"$T/ready2" \
		2>"$T/err2" &
	echo $! >"$T/pid2"
	wait $!
	echo $? >"$T/status2"
} | sleep 300 &
reader2=$!
ok "SIGTERM: the agent is ready" wait_file "$T/ready2"
kill -TERM "$(cat "$T/pid2")"
ok "SIGTERM, stuck writing the result: the agent ends" wait_file "$T/status2"
is "  with status 3" "$(cat "$T/status2" 2>/dev/null)" 3
ok "  and says the watchdog ended it" grep -q "watchdog" "$T/err2"
pkill -P "$reader2" sleep 2>/dev/null
kill "$reader2" 2>/dev/null

# Not stuck: SIGTERM ends it normally, with its result.
"$agent" --mode off --pid "$app" --ready-fd 3 3>"$T/ready3" \
	--output "$T/r3.json" 2>"$T/err3" &
pid3=$!
ok "not stuck: the agent is ready" wait_file "$T/ready3"
kill -TERM "$pid3"
wait "$pid3"
is "not stuck: SIGTERM ends it with status 0" "$?" 0
ok "  and its result written" grep -q '"commap-result"' "$T/r3.json"
ok "  without the watchdog" bash -c "! grep -q watchdog '$T/err3'"
# Neither service nor spool takes the result: one line in syslog.  Only
# where no system logger holds /dev/log: the test listens there itself.
if [ ! -e /dev/log ] && [ "$(id -u)" = 0 ]; then
	python3 - "$T/syslog" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
s.settimeout(120)
with open(sys.argv[1], "ab") as out:
    try:
        while True:
            out.write(s.recv(4096) + b"\n")
            out.flush()
    except socket.timeout:
        pass
os.unlink("/dev/log")
PY
	logger_pid=$!
	for _ in $(seq 100); do [ -S /dev/log ] && break; sleep 0.1; done
	"$agent" --mode off --pid "$app" --ready-fd 3 3>"$T/ready4" \
		--job 77 --step 3 --spool /proc/commap-no-spool \
		--service http://127.0.0.1:1 2>"$T/err4" &
	pid4=$!
	wait_file "$T/ready4"
	kill -TERM "$pid4"
	wait "$pid4"
	is "no service, no spool: status 1" "$?" 1
	# (the listener writes it down a moment later)
	found=1
	for _ in $(seq 600); do
		grep -aq "commap-agent.*job 77 step 3: the result was not delivered" \
			"$T/syslog" 2>/dev/null && { found=0; break; }
		sleep 0.2
	done
	is "  one syslog line with the job and step" "$found" 0
	kill "$logger_pid" 2>/dev/null
	wait "$logger_pid" 2>/dev/null
	rm -f /dev/log
else
	echo "ok $((tap_count + 1)) # SKIP a system logger holds /dev/log"
	tap_count=$((tap_count + 1))
	echo "ok $((tap_count + 1)) # SKIP a system logger holds /dev/log"
	tap_count=$((tap_count + 1))
fi
kill "$app" 2>/dev/null

done_testing
