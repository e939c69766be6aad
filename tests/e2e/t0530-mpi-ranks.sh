#!/bin/bash
# MPI: 2 ranks started by srun --mpi=pmix, each with 2
# threads, thread t of rank 0 sharing with thread t of rank 1 through an
# MPI-3 shared window (wl-mpi phases with the switch at 0: edges (0,2) and
# (1,3) over rank-major workload threads, all across ranks).  The agent's
# matrix links those (rank, index) threads, as the workload's own truth
# says, and the final mapping puts each cross-rank pair on one PU, inside
# the step's CPUs.
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
e2e_require_mpi
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 CPUs"
e2e_agent_cluster "${E2E_PORT_BASE:-17027}"

truth=$E2E_DIR/truth.json
tmap=$E2E_DIR/truth-map.txt
out=$(timeout 60 srun --mpi=pmix -n 2 --commap=dynamic \
	"${job_wrap[@]}" "$E2E_DIR/job" "$wl_mpi" --pattern phases \
	--phase-seconds 0 --threads 2 --cpu-seconds 1.2 --seconds 40 \
	--truth "$truth" --truth-map "$tmap" 2>&1)
rc=$?
[ -s "$truth" ] || rc=1
ok $rc "srun --mpi=pmix -n 2 --commap=dynamic wl-mpi runs to its end"
[ $rc -eq 0 ] || diag "$out"
job=$(cat "$E2E_DIR/job" 2>/dev/null)
res=$(result_for "$job" 0)
ok $? "one result for the step (job $job)"

[ "$(json_field "$res" 'd["identity"]["ranks"]')" = 2 ] &&
	[ "$("$result_check" ranks "$res")" = 0,1 ]
ok $? "the result holds the threads of ranks 0 and 1"
out=$("$compare_matrix" cosine --truth "$truth" --map "$tmap" --min 0.9 "$res")
rc=$?
echo "$out" | grep -q "identity_mismatches=0 " &&
	echo "$out" | grep -q "missing=0 "
ok $((rc + $?)) "the matrix links the right (rank, index) threads ($out)"
out=$("$result_check" together --truth "$truth" --map "$tmap" "$res")
ok $? "each cross-rank pair is placed on one PU ($out)"
# Every pin inside the union of the tasks' CPUs (Slurm binds rank 0 to
# CPU 0 and rank 1 to CPU 1: 0-1).  The plugin passes each task's binding
# with its task line, so a rank's transient binding inside MPI_Init is
# never taken for it.
out=$("$result_check" within --cpus 0-1 "$res")
rc=$?
cpus=$(json_field "$res" 'd["topology"]["cpuset"]')
[ "$cpus" = 0-1 ] || rc=1
ok $rc "the step's CPUs are the tasks' union 0-1 ($cpus), every pin inside ($out)"
out=$("$result_check" invariant "$res")
ok $? "every mapping keeps the placement invariant ($out)"

done_testing
