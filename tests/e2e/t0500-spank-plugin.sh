#!/bin/bash
# The SPANK plugin on a real one-node Slurm cluster: option, site policy,
# one agent per step with every task's pid and rank, and a job that never
# fails or waits because of commap.
. "$(dirname "$0")/e2e-lib.sh"
e2e_require_cluster

rec_agent=$top_srcdir/tests/e2e/recording-agent.sh
e2e_cluster_start "default=off agent=$rec_agent spool=/tmp"
spool=$E2E_DIR/spool
mkdir -p "$spool"
e2e_plugstack "default=off agent=$rec_agent spool=$spool"
records() { ls "$spool"/record.*.args 2>/dev/null | wc -l; }
run() { timeout 60 srun "$@"; }

# --help lists the option.
srun --help 2>&1 | grep -q -- '--commap=MODE'
ok $? "srun --help lists --commap"

# An invalid value is an error naming it, and the job does not run.
out=$(run --commap=bogus touch "$E2E_DIR/ran" 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "invalid mode 'bogus'"
ok $? "--commap=bogus fails naming the value (rc $rc)"
[ ! -e "$E2E_DIR/ran" ]
ok $? "the job with an invalid --commap did not run"

# dynamic: one agent for the step, given every task pid and global rank.
run --commap=dynamic -n2 sh -c 'echo $$ > '"$spool"'/task.$SLURM_PROCID; sleep 1'
ok $? "srun --commap=dynamic -n2 exits 0"
wait_for grep -q eof "$spool"/record.*.lines 2>/dev/null
ok $? "the agent saw end of file at step end"
[ "$(records)" -eq 1 ]
ok $? "one agent for the step ($(records))"
args=$(cat "$spool"/record.*.args)
echo "$args" | grep -q -- "--mode dynamic" && echo "$args" | grep -q -- "--job [0-9]" &&
	echo "$args" | grep -q -- "--step 0" && echo "$args" | grep -q -- "--stepd-pid [0-9]"
ok $? "agent arguments carry mode, job, step, slurmstepd pid"
lines=$(cat "$spool"/record.*.lines)
for rank in 0 1; do
	pid=$(cat "$spool/task.$rank")
	echo "$lines" | grep -Eqx "task $pid $rank [0-9][0-9,-]*"
	ok $? "agent told 'task $pid $rank CPULIST'"
done
stepd=$(echo "$args" | sed -n 's/.*--stepd-pid \([0-9]*\).*/\1/p')
ppid=$(echo "$args" | sed -n 's/^pid [0-9]* ppid \([0-9]*\)$/\1/p')
[ -n "$ppid" ] && [ "$ppid" != "$stepd" ]
ok $? "agent is not a child of slurmstepd (parent $ppid, slurmstepd $stepd)"
rm -f "$spool"/record.* "$spool"/task.*

# off: no agent.
run --commap=off true
ok $? "srun --commap=off exits 0"
sleep 0.5
[ "$(records)" -eq 0 ]
ok $? "--commap=off starts no agent"

# Site default applies without the option.
e2e_plugstack "default=dynamic agent=$rec_agent spool=$spool"
run true
wait_for [ "$(records)" -eq 1 ]
ok $? "default=dynamic in plugstack.conf starts an agent without --commap"
rm -f "$spool"/record.*

# allow= restricts what users may ask for.
e2e_plugstack "default=off allow=off,dynamic agent=$rec_agent spool=$spool"
out=$(run --commap=learned true 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "not allowed"
ok $? "--commap=learned refused when allow=off,dynamic (rc $rc)"

# sbatch: the batch step and the srun step inside both get an agent.
cat >"$E2E_DIR/job.sh" <<EOS
#!/bin/sh
srun -n1 true
EOS
jobid=$(sbatch --parsable --commap=dynamic -o /dev/null "$E2E_DIR/job.sh")
wait_job "$jobid"
wait_for [ "$(records)" -ge 2 ]
grep -l -- "--step 4294967291" "$spool"/record.*.args >/dev/null &&
	grep -l -- "--step 0" "$spool"/record.*.args >/dev/null
ok $? "sbatch --commap=dynamic: agents for the batch step and the inner step"
rm -f "$spool"/record.*

# salloc: the allocation's option reaches the srun steps run inside it;
# an invalid value is refused before anything is allocated.
timeout 60 salloc -n1 --commap=dynamic srun -n1 true >/dev/null 2>&1
ok $? "salloc --commap=dynamic running srun exits 0"
wait_for [ "$(records)" -ge 1 ]
grep -l -- "--mode dynamic" "$spool"/record.*.args >/dev/null 2>&1 &&
	grep -l -- "--step 0" "$spool"/record.*.args >/dev/null 2>&1
ok $? "salloc --commap=dynamic: the inner step gets an agent"
rm -f "$spool"/record.*
out=$(timeout 60 salloc -n1 --commap=bogus touch "$E2E_DIR/ran" 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "invalid mode 'bogus'" &&
	[ ! -e "$E2E_DIR/ran" ]
ok $? "salloc --commap=bogus fails naming the value, nothing runs (rc $rc)"

# Agent binary missing: the job runs, one line says why.
e2e_plugstack "default=off agent=/nonexistent/commap-agent spool=$spool"
out=$(run --commap=dynamic echo job-output 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q job-output
ok $? "missing agent: job runs and exits 0"
! echo "$out" | grep -q 'commap:' &&
	wait_for grep -q "/nonexistent/commap-agent" \
		"$COMMAP_CLUSTER_DIR/log/slurmd.log"
ok $? "missing agent: one line naming it in slurmd's log, none for the user"

# A stuck agent never holds the step.
e2e_plugstack "default=off agent=$top_srcdir/tests/e2e/stuck-agent.sh spool=$spool"
start=$(date +%s)
run --commap=dynamic true
rc=$?
took=$(( $(date +%s) - start ))
[ $rc -eq 0 ] && [ $took -lt 15 ]
ok $? "a stuck agent does not hold the step (rc $rc, ${took} s)"
# (it ignores SIGTERM: ended with SIGKILL, by the pid it noted)
for f in "$spool"/stuck.*; do
	[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	rm -f "$f"
done

# A bad site configuration disables the plugin; it never breaks srun.
e2e_plugstack "default=dynamic bogus=1 agent=$rec_agent spool=$spool"
run --commap=dynamic echo still-runs | grep -q still-runs
ok $? "bad plugstack key: srun still works"
sleep 0.5
[ "$(records)" -eq 0 ]
ok $? "bad plugstack key: no agent started"
grep -q "unknown key 'bogus'" "$COMMAP_CLUSTER_DIR"/log/slurmd.log
ok $? "bad plugstack key: the slurmd log names it"

done_testing
