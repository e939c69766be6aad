#!/bin/bash
# mpirun inside sbatch: on one node mpirun forks the
# ranks itself (no Slurm task per rank, no SPANK task hook sees them), so
# only the batch step's agent, following the batch script's descendants,
# can see them.  Its result holds the threads of ranks 0 and 1, links the
# cross-rank pairs and maps each pair onto one PU.
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
e2e_require_mpi
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 CPUs"
e2e_agent_cluster "${E2E_PORT_BASE:-17037}"

truth=$E2E_DIR/truth.json
tmap=$E2E_DIR/truth-map.txt
cat >"$E2E_DIR/job.sh" <<EOS
#!/bin/sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec mpirun -np 2 --oversubscribe "$wl_mpi" --pattern phases \
	--phase-seconds 0 --threads 2 --cpu-seconds 1.2 --seconds 40 \
	--truth "$truth" --truth-map "$tmap"
EOS
job=$(sbatch --parsable --commap=dynamic -n 2 -o "$E2E_DIR/job.out" \
	"$E2E_DIR/job.sh")
ok $? "sbatch --commap=dynamic of a script running mpirun (job $job)"
# The batch step is step 4294967291 (SLURM_BATCH_SCRIPT).
res=$(wait_job "$job" &&
	result_for "$job" 4294967291)
ok $? "the batch step's agent spooled a result"
[ -s "$truth" ] && [ -s "$tmap" ]
rc=$?
ok $rc "mpirun ran both ranks to the end (truth written)"
[ $rc -eq 0 ] || diag "$(cat "$E2E_DIR/job.out" 2>/dev/null)"

ranks=$("$result_check" ranks "$res")
echo ",$ranks," | grep -q ",0," && echo ",$ranks," | grep -q ",1,"
ok $? "the ranks forked by mpirun are followed (ranks $ranks)"
out=$("$compare_matrix" cosine --truth "$truth" --map "$tmap" --min 0.9 "$res")
ok $? "the matrix links the ranks' threads ($out)"
out=$("$result_check" together --truth "$truth" --map "$tmap" "$res")
ok $? "each cross-rank pair is mapped onto one PU ($out)"
out=$("$result_check" within "$res")
ok $? "every pin is inside the batch step's CPUs ($out)"
out=$("$result_check" invariant "$res")
ok $? "every mapping keeps the placement invariant ($out)"

done_testing
