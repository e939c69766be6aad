#!/bin/bash
# Threads: a program of 4 threads in communicating
# pairs under srun --commap=dynamic -c 2 ends with each pair on one PU of
# its own (2 PUs), in the agent's spooled result and in the kernel's real
# affinity of the live threads; the site default applies without the
# option, and --commap=off starts no agent (the real agent).
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 CPUs"
e2e_agent_cluster "${E2E_PORT_BASE:-17017}"

truth=$E2E_DIR/truth.json
tmap=$E2E_DIR/truth-map.txt
snap=$E2E_DIR/affinity.txt
timeout 60 srun --commap=dynamic -n1 -c 2 "${job_wrap[@]}" "$E2E_DIR/job1" \
	"$wl_threads" --pattern pairs --threads 4 --cpu-seconds 1.2 --seconds 40 \
	--truth "$truth" --truth-map "$tmap" >"$E2E_DIR/out1" 2>&1 &
srun_pid=$!
wl=$(pid_of_program wl-threads "$tmap")
[ -n "$wl" ] && affinity_snapshots "$wl" "$snap"
wait $srun_pid
rc=$?
ok $rc "srun --commap=dynamic -c 2 of 4 threads in pairs exits 0"
[ $rc -eq 0 ] || diag "$(cat "$E2E_DIR/out1")"
job=$(cat "$E2E_DIR/job1" 2>/dev/null)
res=$(result_for "$job" 0)
ok $? "the agent spooled a result for job $job step 0"

out=$("$compare_matrix" cosine --truth "$truth" --map "$tmap" --min 0.9 "$res")
ok $? "the matrix is the pairs pattern ($out)"
out=$("$result_check" together --truth "$truth" --map "$tmap" "$res")
ok $? "final mapping: each pair on one PU, the pairs on different PUs ($out)"
out=$("$result_check" within --cpus 0-1 "$res")
ok $? "the step's CPUs are 0-1 and every pin is inside ($out)"
out=$("$result_check" invariant "$res")
ok $? "every mapping keeps the placement invariant ($out)"
out=$("$result_check" affinity "$res" "$snap" 2>&1)
rc=$?
echo "$out" | grep -q "affinity: 4 mapped" || rc=1
ok $rc "the live threads' real affinity agrees ($out)"
[ $rc -eq 0 ] || diag "snapshot: $(cat "$snap" 2>/dev/null)"

# Site default, real agent: no option, an agent maps the step.
e2e_plugstack "default=dynamic agent=$plug_agent spool=$spool"
timeout 60 srun -n1 -c 2 "${job_wrap[@]}" "$E2E_DIR/job2" "$wl_threads" \
	--pattern pairs --threads 4 --cpu-seconds 1 --seconds 30
ok $? "default=dynamic: srun without --commap exits 0"
job=$(cat "$E2E_DIR/job2" 2>/dev/null)
res=$(result_for "$job" 0) &&
	[ "$(json_field "$res" 'd["mode"]')" = dynamic ] &&
	[ "$(json_field "$res" 'len(d["timeline"])')" -ge 1 ]
ok $? "default=dynamic: the agent ran and mapped job $job"

# --commap=off overrides the site default: no agent, no result, no log.
timeout 60 srun --commap=off -n1 "${job_wrap[@]}" "$E2E_DIR/job3" \
	"$wl_threads" --pattern pairs --threads 2 --seconds 0.5
ok $? "--commap=off with default=dynamic exits 0"
job=$(cat "$E2E_DIR/job3" 2>/dev/null)
sleep 0.5
[ -n "$job" ] && [ ! -e "$spool/agent-$job.0.$(hostname).log" ] &&
	! find_result "$job" 0 >/dev/null
ok $? "--commap=off: no agent started for job $job"

done_testing
