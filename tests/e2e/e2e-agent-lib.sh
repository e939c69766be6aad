# e2e-agent-lib.sh: sourced after e2e-lib.sh by the tests that run the
# real node agent and the workloads (tests/workloads) on the local cluster.

agent=$top_builddir/nodeagent/commap-agent
wl_threads=$top_builddir/tests/workloads/wl-threads
wl_mpi=$top_builddir/tests/workloads/wl-mpi
result_check=$top_srcdir/tests/e2e/result-check
compare_matrix=$top_srcdir/tests/workloads/compare-matrix
# Open MPI refuses root without these (platform.md); srun passes them on.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

e2e_require_agent() {
	[ -x "$agent" ] || skip_all "the agent was not built (capstone missing)"
	[ -x "$wl_threads" ] ||
		skip_all "make check did not build tests/workloads/wl-threads"
	command -v python3 >/dev/null || skip_all "python3 is missing"
}

e2e_require_mpi() {
	[ -x "$wl_mpi" ] && command -v mpirun >/dev/null ||
		skip_all "Open MPI is missing (wl-mpi is a stub)"
	"$wl_mpi" --pattern compute --threads 1 --seconds 0 >/dev/null 2>&1
	[ $? -ne 77 ] || skip_all "wl-mpi was built without MPI"
}


# e2e_agent_cluster PORT-BASE [PLUGSTACK-ARGS...]: a cluster on two free
# ports from PORT-BASE (each test its own base, so they can run in
# parallel) whose plugstack runs the real agent ($plug_agent, below) with
# the spool $spool.
e2e_agent_cluster() {
	unset COMMAP_SLURMCTLD_PORT COMMAP_SLURMD_PORT
	E2E_PORT_FROM=$1
	shift
	e2e_cluster_start "default=off agent=$agent spool=/tmp"
	spool=$E2E_DIR/spool
	mkdir -p "$spool"
	plug_agent=$E2E_DIR/agent
	e2e_fixed_period_agent "$plug_agent"
	e2e_plugstack "default=off agent=$plug_agent spool=$spool $*"
}

# e2e_fixed_period_agent PATH: a script at PATH that runs the real agent
# with a fixed sampling period (E2E_PERIOD_US, 1000 µs) and the plugin's
# arguments; exec keeps the pid the plugin knows.  Left to its overhead
# budget, an agent whose sample-cost calibration runs beside other work
# (the suite runs two tests at once) samples every 7.6-10 ms instead of
# ~1.4 ms, and its matrix, aged in wall time, then never holds the
# evidence a mapping needs: these tests check what is detected, mapped
# and pinned through Slurm, not the budget (tests/unit/test_sample_rate).
e2e_fixed_period_agent() {
	cat >"$1" <<EOS
#!/bin/sh
exec "$agent" --period-us ${E2E_PERIOD_US:-1000} "\$@"
EOS
	chmod 755 "$1"
}

# "${job_wrap[@]}" IDFILE PROGRAM ARGS...: what srun runs to record its
# job id; exec keeps the task's pid, so the agent follows the program.
job_wrap=(sh -c
	'[ "${SLURM_PROCID:-0}" = 0 ] && echo "$SLURM_JOB_ID" >"$0"; exec "$@"')

# find_result JOB STEP: the spooled result of that step, if there is one.
find_result() {
	python3 - "$spool" "$1" "$2" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        d = json.load(open(f))["identity"]
    except (OSError, ValueError, KeyError):
        continue
    if (d.get("job"), d.get("step")) == (int(sys.argv[2]), int(sys.argv[3])):
        print(f)
        sys.exit(0)
sys.exit(1)
PY
}

# result_for JOB STEP: the same, waiting up to 60 s (the agent writes it
# just after the step ends: well under a second on a quiet machine, but a
# loaded one can stretch that; 60 s only catches an agent that never
# delivers).
result_for() {
	for _ in $(seq 300); do
		find_result "$1" "$2" && return 0
		sleep 0.2
	done
	return 1
}

# pid_of_program COMM PATTERN: the pid of the process named COMM whose
# command line contains PATTERN (up to 10 s).
pid_of_program() {
	local p
	for _ in $(seq 100); do
		for p in $(pgrep -f -- "$2"); do
			[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] &&
				{ echo "$p"; return 0; }
		done
		sleep 0.1
	done
	return 1
}

# affinity_snapshots PID FILE: every 0.2 s while PID lives, the
# "tid Cpus_allowed_list" of each of its threads; FILE keeps the last
# snapshot holding the most threads (threads leave at the end of the run:
# the last full one is kept, not a half-empty one).
affinity_snapshots() {
	local pid=$1 out=$2 t l n most=0
	while [ -d "/proc/$pid" ]; do
		: >"$out.tmp"
		for t in /proc/"$pid"/task/*; do
			l=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' \
				"$t/status" 2>/dev/null)
			[ -n "$l" ] && echo "${t##*/} $l" >>"$out.tmp"
		done
		n=$(wc -l <"$out.tmp")
		if [ -d "/proc/$pid" ] && [ "$n" -gt 0 ] && [ "$n" -ge "$most" ]; then
			mv "$out.tmp" "$out"
			most=$n
		fi
		sleep 0.2
	done
	rm -f "$out.tmp"
}

json_field() {	# json_field FILE PYTHON-EXPR-ON-d
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))' "$1" "$2"
}
