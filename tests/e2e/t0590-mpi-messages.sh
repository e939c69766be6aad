#!/bin/bash
# MPI ranks that talk by message passing, under Slurm: 4 ranks started by
# srun --mpi=pmix exchange 1 MiB messages in a ring (MPI_Sendrecv), which
# Open MPI copies between the ranks by CMA (docs/detection.md "Message
# passing").  The step's agent counts those calls: its matrix between ranks
# matches the bytes the PMPI library (tests/workloads/libwlpmpi.so,
# preloaded) counted, cosine >= 0.95, and every pin stays inside the
# step's CPUs.
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
e2e_require_mpi
wl_msg=$top_builddir/tests/workloads/wl-mpi-msg
pmpi=$top_builddir/tests/workloads/.libs/libwlpmpi.so
rank_matrix=$top_srcdir/tests/workloads/rank-matrix
[ -x "$wl_msg" ] && [ -f "$pmpi" ] || skip_all "wl-mpi-msg or libwlpmpi.so not built"
e2e_agent_cluster "${E2E_PORT_BASE:-17059}"

truth=$E2E_DIR/pmpi.json
out=$(WL_PMPI_OUT=$truth LD_PRELOAD=$pmpi timeout 90 srun --mpi=pmix -n 4 \
	--overcommit --commap=dynamic "${job_wrap[@]}" "$E2E_DIR/job" \
	"$wl_msg" --pattern ring --bytes 1048576 --seconds 3 2>&1)
rc=$?
[ -s "$truth" ] || rc=1
ok $rc "srun --mpi=pmix -n 4 --commap=dynamic wl-mpi-msg ring runs to its end"
[ $rc -eq 0 ] || diag "$out"
job=$(cat "$E2E_DIR/job" 2>/dev/null)
res=$(result_for "$job" 0)
ok $? "one result for the step (job $job)"
out=$("$rank_matrix" cosine --truth "$truth" --min 0.95 "$res" 2>&1)
ok $? "the rank matrix follows the bytes sent ($out)"
cpus=$(json_field "$res" 'd["topology"]["cpuset"]')
out=$("$result_check" within --cpus "$cpus" "$res")
ok $? "every pin inside the step's CPUs $cpus ($out)"

done_testing
