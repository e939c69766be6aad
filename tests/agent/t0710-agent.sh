#!/bin/bash
# commap-agent on its own: bad options, the stdin protocol of the SPANK
# plugin, a foreign user's process refused, slurmstepd gone, SIGTERM.
. "$top_srcdir/tests/integration/tap.sh"
pairs="$top_builddir/tests/agent/pairs"
agent="$top_builddir/nodeagent/commap-agent"
topo="pack:2 core:2 pu:2"

py() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
}

# Bad options: exit 2, one line naming the option and value.
run "$agent" --pid 1 --period-us 5
ok "bad --period-us: exit 2, named" [ "$status" -eq 2 ] &&
	ok "  message" grep -q "^commap-agent: --period-us: invalid value '5'" "$T/err"
run "$agent" --pid 1 --frobnicate
ok "unknown option: exit 2, named" [ "$status" -eq 2 ] &&
	ok "  message" grep -q "unknown option '--frobnicate'" "$T/err"
run "$agent" --mode dynamic
ok "no process to follow: exit 2" [ "$status" -eq 2 ]

# The stdin protocol: task lines, then end of file = the step ends.  The
# result is spooled, with job and step.  End of file comes once the app
# used 1.5 s of CPU time (a busy machine delays it instead of leaving the
# agent without samples; the period is fixed for the same reason, see
# docs/testing.md); the app has 4.5 s of CPU left, so it outlives the
# agent.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
"$pairs" -t 3000 -c 6000 &
app=$!
mkfifo "$T/stdin"
"$agent" --mode dynamic --tasks-from-stdin --job 7 --step 3 --period-us 1000 \
	--spool "$T/spool" --topology "$topo" <"$T/stdin" 2>"$T/stdin.err" &
ag=$!
exec 4>"$T/stdin"
printf 'garbage line\ntask %d 0\n' "$app" >&4
hz=$(getconf CLK_TCK)
for _ in $(seq 600); do
	[ "$(cpu_ticks "$app")" -ge $((hz * 3 / 2)) ] && break
	sleep 0.1
done
exec 4>&-
# Up to 60 s to finish after end of file: it takes well under a second,
# and only an agent that ignores the end of the step takes that long.
for _ in $(seq 600); do kill -0 "$ag" 2>/dev/null || break; sleep 0.1; done
kill -0 "$ag" 2>/dev/null
ended=$?
[ "$ended" -eq 0 ] && kill "$ag"
wait "$ag"
rc=$?
kill -0 "$app" 2>/dev/null
alive=$?
is "stdin: exit 0" "$rc" 0
ok "stdin: exits by itself after end of file" [ "$ended" -ne 0 ]
res=$(ls "$T"/spool/*.json 2>/dev/null | head -1)
ok "stdin: one result in the spool" [ -n "$res" ]
ok "stdin: job 7 step 3, the app's threads, a matrix" py "$res" \
	'd["identity"]["job"] == 7 and d["identity"]["step"] == 3 and len(d["threads"]) == 9 and d["edges"]'
ok "stdin: a bad line is one log line naming it" \
	grep -q "^commap-agent: stdin: bad line 'garbage line'" "$T/stdin.err"
is "stdin: the app goes on after the agent" "$alive" 0
wait "$app"
is "stdin: the app exits 0" "$?" 0

# A process of another user is refused (tracker uid check).
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
	id nobody >/dev/null 2>&1; then
	# Long enough to outlive the agent's run on a busy machine; killed below.
	setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 300 &
	foreign=$!
	sleep 0.2
	before=$(taskset -p "$foreign" | awk '{print $NF}')
	run "$agent" --pid "$foreign:0" --output "$T/foreign.json"
	ok "foreign pid: refused, one line" grep -q "refused" "$T/err"
	ok "foreign pid: nothing followed, nothing pinned" py "$T/foreign.json" \
		'not d["threads"] and not d["migrations"]'
	is "foreign pid: its affinity is untouched" \
		"$(taskset -p "$foreign" | awk '{print $NF}')" "$before"
	run "$agent" --uid 0 --pid "$foreign" --output "$T/foreign2.json"
	ok "foreign pid with --uid 0: refused too" grep -q "refused" "$T/err"
	kill "$foreign"
	wait "$foreign" 2>/dev/null
else
	diag "skipping the foreign-user checks (needs root, setpriv, nobody)"
fi

# slurmstepd gone: the agent finishes by itself even with stdin open.
sleep 30 &
stepd=$!
mkfifo "$T/in"
exec 3<>"$T/in"
"$agent" --tasks-from-stdin --stepd-pid "$stepd" --output "$T/stepd.json" \
	<"$T/in" 2>/dev/null &
ag=$!
sleep 0.3
kill "$stepd"
wait "$stepd" 2>/dev/null
for _ in $(seq 50); do kill -0 "$ag" 2>/dev/null || break; sleep 0.1; done
kill -0 "$ag" 2>/dev/null
is "stepd gone: the agent exited by itself" "$?" 1
wait "$ag"
is "stepd gone: exit 0" "$?" 0
ok "stepd gone: a result was written" [ -s "$T/stepd.json" ]
exec 3>&-

# SIGTERM: result written, the application untouched.
"$pairs" -t 1500 -x 4 &
app=$!
"$agent" --pid "$app" --output "$T/term.json" --topology "$topo" &
ag=$!
# SIGTERM once the agent catches it (its handler is installed at start,
# which under the sanitizers on a busy machine can take seconds): before
# that the kernel's default action, not the agent, answers it.
catches_term() {
	local m
	m=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) &&
		[ -n "$m" ] && [ $(( 0x$m >> 14 & 1 )) -eq 1 ]
}
for _ in $(seq 300); do catches_term "$ag" && break; sleep 0.1; done
sleep 0.5
kill -TERM "$ag"
wait "$ag"
is "SIGTERM: the agent exits 0" "$?" 0
ok "SIGTERM: result written" py "$T/term.json" 'len(d["threads"]) == 9'
wait "$app"
is "SIGTERM: the application finishes with its status" "$?" 4

done_testing
