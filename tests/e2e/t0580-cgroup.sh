#!/bin/bash
# Sites mostly run proctrack/cgroup with task/cgroup (ConstrainCores):
# there slurmstepd signals every process of the step's cgroup at its end
# and each step is confined to its cores by a cpuset cgroup.  Under that
# configuration the agent must still see the step's threads, pin only
# inside the step's cpuset, survive the step's end long enough to deliver
# its result, and leave nothing running.
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
e2e_require_mpi
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 CPUs"
# Slurm 22.05 runs cgroup/v1 here; a pure cgroup v2 host needs systemd
# (platform.md), which these machines do not have.
[ -d /sys/fs/cgroup/cpuset ] && [ -d /sys/fs/cgroup/freezer ] ||
	skip_all "no cgroup v1 cpuset/freezer hierarchy for proctrack/cgroup"
E2E_CLUSTER_OPTS=--cgroup
e2e_agent_cluster "${E2E_PORT_BASE:-17087}"
grep -q "^ProctrackType=proctrack/cgroup" "$SLURM_CONF"
ok $? "the cluster runs proctrack/cgroup and task/cgroup"

# One task confined to one core by task/cgroup.
out=$(timeout 60 srun -n1 -c1 --commap=dynamic "${job_wrap[@]}" \
	"$E2E_DIR/job1" sh -c 'grep Cpus_allowed_list /proc/self/status \
	>"$0"; exec "$@"' "$E2E_DIR/cpus1" "$wl_threads" --pattern pairs \
	--threads 2 --cpu-seconds 2 --seconds 30 2>&1)
ok $? "srun -c1 --commap=dynamic of thread pairs exits 0"
[ -z "$out" ] || diag "$out"
job=$(cat "$E2E_DIR/job1" 2>/dev/null)
res=$(result_for "$job" 0)
ok $? "the agent outlived the step's end and delivered (job $job)"
step_cpus=$(awk '{print $2}' "$E2E_DIR/cpus1" 2>/dev/null)
cpus=$(json_field "$res" 'd["topology"]["cpuset"]')
[ -n "$step_cpus" ] && [ "$cpus" = "$step_cpus" ]
ok $? "the agent maps inside the step's cgroup cpuset ($cpus, step $step_cpus)"
# One core: the agent may pin nothing (every placement costs the same),
# but then says why; a result with neither pins nor that decision fails.
out=$("$result_check" within --cpus "$step_cpus" "$res")
ok $? "a mapping decision, every pin inside it ($out)"
wait_for sh -c "! pgrep -f '^$agent .*--job $job ' >/dev/null"
ok $? "no agent of job $job is left running"

# MPI ranks under srun --mpi=pmix: both ranks seen and mapped.
out=$(timeout 60 srun --mpi=pmix -n 2 --commap=dynamic \
	"${job_wrap[@]}" "$E2E_DIR/job2" "$wl_mpi" --pattern phases \
	--phase-seconds 0 --threads 2 --cpu-seconds 1.2 --seconds 40 2>&1)
ok $? "srun --mpi=pmix -n 2 --commap=dynamic exits 0"
[ -z "$out" ] || diag "$out"
job=$(cat "$E2E_DIR/job2" 2>/dev/null)
res=$(result_for "$job" 0)
ok $? "a result for the MPI step (job $job)"
[ "$("$result_check" ranks "$res")" = 0,1 ] &&
	[ "$(json_field "$res" 'len(d["edges"]) > 0')" = True ]
ok $? "it holds the threads of ranks 0 and 1 and a matrix"

done_testing
