#!/bin/bash
# Failures of the real agent never fail the job:
# - the agent killed with -9 mid-step: the job runs to its end and exits 0
#   within the 60 s limit a hung job would hit (its time and that of the
#   same job with --commap=off are reported, not compared: on a busy
#   machine two runs of one job differ by seconds);
# - the service unreachable (a closed port): the job exits 0 and the result
#   is kept in the spool.
# (A missing agent binary is t0500's.)
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
e2e_agent_cluster "${E2E_PORT_BASE:-17047}"

now_ms() { date +%s%3N; }
job_args=(--pattern pairs --threads 4 --seconds 2)

# The same job without commap: its normal time here, now.
start=$(now_ms)
timeout 60 srun --commap=off -n1 -c 2 "$wl_threads" "${job_args[@]}"
rc=$?
normal=$(( $(now_ms) - start ))
ok $rc "the job without commap exits 0 (${normal} ms)"

# Killed with -9 once it has mapped the threads.
start=$(now_ms)
timeout 60 srun --commap=dynamic -n1 -c 2 "${job_wrap[@]}" "$E2E_DIR/job1" \
	"$wl_threads" "${job_args[@]}" --truth "$E2E_DIR/truth1.json" &
srun_pid=$!
apid=$(pid_of_program commap-agent "--spool $spool")
ok $? "the agent runs during the step (pid $apid)"
sleep 0.8
[ -n "$apid" ] && kill -9 "$apid"
ok $? "agent killed with SIGKILL mid-step"
wait $srun_pid
rc=$?
took=$(( $(now_ms) - start ))
[ $rc -eq 0 ] && [ -s "$E2E_DIR/truth1.json" ]
ok $? "the job ran to its end and exits 0, not held (rc $rc)"
diag "the job took ${took} ms, ${normal} ms without commap"
job=$(cat "$E2E_DIR/job1" 2>/dev/null)
[ -z "$(pgrep -f -- "--job $job --step 0 .*--spool $spool")" ]
ok $? "no agent left for job $job"

# The service unreachable: a port nobody listens on.
port=$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
e2e_plugstack "default=off agent=$plug_agent spool=$spool service=http://127.0.0.1:$port"
out=$(timeout 60 srun --commap=dynamic -n1 -c 2 "${job_wrap[@]}" \
	"$E2E_DIR/job2" "$wl_threads" --pattern pairs --threads 4 \
	--cpu-seconds 1 --seconds 30 2>&1)
rc=$?
ok $rc "service unreachable (port $port): the job exits 0"
[ $rc -eq 0 ] || diag "$out"
job=$(cat "$E2E_DIR/job2" 2>/dev/null)
res=$(result_for "$job" 0)
ok $? "the result is spooled (${res##*/})"
[ "$(json_field "$res" 'len(d["timeline"])')" -ge 1 ] 2>/dev/null
ok $? "the spooled result is complete (a mapping)"
echo "$out" | grep -q commap
[ $? -ne 0 ]
ok $? "the user sees no commap line for a service problem"
log=$spool/agent-$job.0.$(hostname).log
grep -q "spool" "$log" 2>/dev/null
rc=$?
ok $rc "the agent's log says the result was spooled"
[ $rc -eq 0 ] || diag "agent log: $(cat "$log" 2>/dev/null)"

done_testing
