#!/bin/bash
# Two concurrent steps on the node: inside one batch
# job of 2 cores, two srun steps of one core each (--exact) run at once,
# each with its own agent.  Each agent maps only within its own step's
# core: its result's CPU set is that one core, different from the other
# step's, and every pin goes there.  On one core every placement costs
# the same, so an agent may pin nothing, but then its result says why
# (result-check within: a decision, not an agent that never decided).
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 CPUs"
e2e_agent_cluster "${E2E_PORT_BASE:-17057}"

# Each step runs for 2 s of CPU per thread (4 s on its core when the
# machine is quiet): a loaded machine stretches the run instead of ending
# it before the agent has the evidence to pin.
cat >"$E2E_DIR/job.sh" <<EOS
#!/bin/sh
for s in a b; do
	srun -n1 -c1 --exact --commap=dynamic sh -c \
		'grep Cpus_allowed_list /proc/self/status >"\$0.\$SLURM_STEP_ID"
		exec "\$@"' "$E2E_DIR/cpus" "$wl_threads" --pattern pairs --threads 2 \
		--cpu-seconds 2 --seconds 30 &
done
wait
EOS
job=$(sbatch --parsable -n 2 -o "$E2E_DIR/job.out" "$E2E_DIR/job.sh")
ok $? "sbatch of two concurrent one-core steps (job $job)"
wait_job "$job"
r0=$(result_for "$job" 0) && r1=$(result_for "$job" 1)
rc=$?
ok $rc "a result for each step"
[ $rc -eq 0 ] || diag "$(cat "$E2E_DIR/job.out" 2>/dev/null)"
out=$("$result_check" overlap "$r0" "$r1")
ok $? "the two steps ran at the same time ($out)"

c0=$(json_field "$r0" 'd["topology"]["cpuset"]')
c1=$(json_field "$r1" 'd["topology"]["cpuset"]')
s0=$(awk '{print $2}' "$E2E_DIR/cpus.0" 2>/dev/null)
s1=$(awk '{print $2}' "$E2E_DIR/cpus.1" 2>/dev/null)
case "$s0 $s1" in "0 1"|"1 0") true ;; *) false ;; esac
ok $? "Slurm gave the steps one core each (step 0: $s0, step 1: $s1)"
[ "$c0" = "$s0" ] && [ "$c1" = "$s1" ]
ok $? "each agent's CPU set is its own step's core (step 0: $c0, step 1: $c1)"
for r in "$r0" "$r1"; do
	step=$(json_field "$r" 'd["identity"]["step"]')
	out=$("$result_check" within "$r")
	ok $? "step $step decided, and every pin is inside its core ($out)"
done

done_testing
