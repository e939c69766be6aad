#!/bin/bash
# The root node agent and the plugin against a hostile local user, on a
# private cluster with a real unprivileged Unix user running the jobs:
# - static:FILE is read with the user's rights: /etc/shadow and a root-only
#   file give a message naming the path and a reason, never their content,
#   the same for a missing file; a relative path is the job's directory;
# - a FIFO as static file, and a matrix of huge weights, leave no agent
#   behind once the step is over;
# - a spool others can write to is refused: a link planted there is never
#   followed by root;
# - launch problems reach slurmd's log, not the user's output;
# - bad service= URLs and blanks around '=' in conf= files;
# - the result carries the cluster's name; an agent killed mid-step is
#   noted in slurmd's log.
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
command -v useradd >/dev/null && command -v runuser >/dev/null ||
	skip_all "useradd or runuser is missing"
e2e_agent_cluster "${E2E_PORT_BASE:-17077}"

user=commap-hostile
made_user=
if ! id -u "$user" >/dev/null 2>&1; then
	useradd -M -s /bin/sh "$user" || skip_all "useradd $user failed"
	made_user=1
fi
trap 'e2e_cluster_stop; [ -n "$made_user" ] && userdel "$user" 2>/dev/null' EXIT
slurmd_log=$COMMAP_CLUSTER_DIR/log/slurmd.log
udir=$E2E_DIR/home
mkdir -p "$udir" && chown "$user" "$udir"
as_user() { (cd "$udir" && timeout 60 runuser -u "$user" -- "$@"); }
# usrun IDFILE ARGS...: srun as the user, recording the job id; the task
# lasts $usleep seconds (1 by default).
usrun() {
	local idf=$1
	shift
	as_user srun -n1 "$@" sh -c 'echo $SLURM_JOB_ID >'"$idf"'; sleep '"${usleep:-1}"
}
warnings() { json_field "$1" '"\n".join(d.get("warnings", []))'; }
no_agent_for() {	# no_agent_for JOB: within 60 s
	wait_for_gone() {
		for _ in $(seq 300); do
			pgrep -f -- "--job $1 " >/dev/null || return 0
			sleep 0.2
		done
		return 1
	}
	wait_for_gone "$1"
}

# 1. /etc/shadow, a root-only file and a missing one.
printf 'SECRET-CONTENT-42,0\n0,0\n' >"$E2E_DIR/secret.csv"
chmod 600 "$E2E_DIR/secret.csv"
declare -A msg
for f in /etc/shadow "$E2E_DIR/secret.csv" "$E2E_DIR/missing.csv"; do
	usrun "$udir/job" --commap="static:$f"
	job=$(cat "$udir/job" 2>/dev/null)
	res=$(result_for "$job" 0)
	ok $? "static:$f: the step's result is delivered"
	! grep -q 'root:\|SECRET-CONTENT' "$res" 2>/dev/null && [ -n "$res" ]
	ok $? "static:$f: the result holds none of the file's content"
	w=$(warnings "$res" 2>/dev/null)
	echo "$w" | grep -qF "$f: no such file, or not readable by the job's user"
	ok $? "static:$f: the warning names the path and the reason only"
	[ $? -eq 0 ] || diag "warnings: $w"
	msg[$f]=${w//$f/FILE}
done
[ "${msg[/etc/shadow]}" = "${msg[$E2E_DIR/missing.csv]}" ] &&
	[ "${msg[$E2E_DIR/secret.csv]}" = "${msg[$E2E_DIR/missing.csv]}" ]
ok $? "a missing file and an unreadable one read the same"

# A relative path is the job's directory, not slurmd's.
printf '0,5,0,0\n5,0,0,0\n0,0,0,1\n0,0,1,0\n' >"$udir/m.csv"
chown "$user" "$udir/m.csv"
usrun "$udir/job" --commap=static:m.csv
job=$(cat "$udir/job" 2>/dev/null)
res=$(result_for "$job" 0)
[ -n "$res" ] && ! warnings "$res" | grep -q 'm.csv'
ok $? "static:m.csv (relative) is read from the job's directory"
[ $? -eq 0 ] || diag "warnings: $(warnings "$res" 2>/dev/null)"

# 2. A FIFO: the step ends, the agent does not stay blocked.
runuser -u "$user" -- mkfifo "$udir/fifo"
usrun "$udir/job" --commap="static:$udir/fifo"
ok $? "static:FIFO: srun returns 0"
job=$(cat "$udir/job" 2>/dev/null)
no_agent_for "$job"
ok $? "static:FIFO: no agent left for job $job"
res=$(result_for "$job" 0)
warnings "$res" 2>/dev/null | grep -q "fifo: not a regular file"
ok $? "static:FIFO: the warning says it is not a regular file"

# 3. Two weights of 1.7e308: on 4+ PUs the exact search's sums overflowed
# to infinity and it spun for ever, deaf to SIGTERM (`commap map
# --topology "pack:1 core:4 pu:2"` never returned).  The node has too few
# CPUs for that search, so this step's agent maps onto that synthetic
# machine (a dry run, --topology: it maps from its start, before any task
# line, and pins nothing).  The matrix must be refused at once: the job
# runs and ends as usual, and the agent ends by itself, with its result
# and a warning, not by its watchdog (which would leave no result).
python3 - "$udir/huge.json" <<'PY'
import json, sys
json.dump({"format": "commap-matrix", "version": 1, "threads": 4,
           "edges": [[0, 1, 1.7e308], [2, 3, 1.7e308]]},
          open(sys.argv[1], "w"))
PY
chown "$user" "$udir/huge.json"
cat >"$E2E_DIR/agent-dry" <<EOS
#!/bin/sh
exec "$plug_agent" --topology "pack:1 core:4 pu:2" "\$@"
EOS
chmod 755 "$E2E_DIR/agent-dry"
e2e_plugstack "default=off agent=$E2E_DIR/agent-dry spool=$spool"
out=$(as_user srun -n1 --commap="static:$udir/huge.json" \
	sh -c 'echo $SLURM_JOB_ID >'"$udir/job"'; sleep 1; echo task-done')
ok $? "huge weights: srun returns 0"
[ "$out" = task-done ]
ok $? "huge weights: the job's output is whole"
job=$(cat "$udir/job" 2>/dev/null)
no_agent_for "$job"
ok $? "huge weights: no agent left for job $job"
res=$(result_for "$job" 0)
ok $? "huge weights: the agent ended by itself, with its result"
warnings "$res" 2>/dev/null | grep -q "above the limit"
ok $? "huge weights: the warning says a weight is above the limit"
log=$spool/agent-$job.0.$(hostname).log
grep -q "above the limit" "$log" 2>/dev/null && ! grep -q watchdog "$log"
ok $? "huge weights: the agent's log has the refusal, no watchdog line"
e2e_plugstack "default=off agent=$plug_agent spool=$spool"

# 9. A spool the user can write to (the user's own: in a sticky
# world-writable one the kernel's protected_symlinks already stops root):
# refused, a planted link not followed.
echo untouched >"$E2E_DIR/victim"
chmod 600 "$E2E_DIR/victim"
uspool=$E2E_DIR/uspool
mkdir -p "$uspool" && chown "$user" "$uspool"
e2e_plugstack "default=off agent=$agent spool=$uspool"
usrun "$udir/job" --commap=off
last=$(cat "$udir/job")
for j in $(seq $((last + 1)) $((last + 4))); do
	runuser -u "$user" -- ln -sf "$E2E_DIR/victim" "$uspool/agent-$j.0.$(hostname).log"
done
# (a missing static file: the agent has a line to write to its log)
usrun "$udir/job" --commap="static:$udir/missing.csv"
ok $? "user-writable spool: the job exits 0"
job=$(cat "$udir/job")
no_agent_for "$job"
[ "$(cat "$E2E_DIR/victim")" = untouched ]
ok $? "a link planted in the spool was not followed (victim untouched)"
wait_for grep -q "spool $uspool refused" "$slurmd_log"
ok $? "slurmd's log says the spool is refused"

# 10. Launch errors: slurmd's log, never the user's output.
e2e_plugstack "default=off agent=/nonexistent/commap-agent spool=$spool"
out=$(as_user srun -n1 --commap=dynamic echo job-output 2>&1)
echo "$out" | grep -q job-output && ! echo "$out" | grep -qi commap
ok $? "missing agent: srun's output has no commap line"
[ $? -eq 0 ] || diag "$out"
printf '#!/bin/sh\nsrun -n1 true\necho batch-done\n' >"$udir/job.sh"
chown "$user" "$udir/job.sh"
bjob=$(as_user sbatch --parsable --commap=dynamic -o "$udir/batch.out" \
	"$udir/job.sh")
wait_job "$bjob"
wait_for grep -q batch-done "$udir/batch.out"
! grep -qi commap "$udir/batch.out"
ok $? "missing agent: the batch output file has no commap line"
grep -q "cannot execute the agent /nonexistent/commap-agent" "$slurmd_log"
ok $? "missing agent: slurmd's log names it"

# 11. service= with a port out of range disables the plugin, named.
e2e_plugstack "default=off agent=$agent spool=$spool service=http://h:99999"
as_user srun -n1 --commap=dynamic true
ok $? "service=http://h:99999: jobs still run"
wait_for grep -q "service: 'http://h:99999': port must be 1-65535" "$slurmd_log"
ok $? "service=http://h:99999: refused in slurmd's log, naming the key"

# conf= files with blanks around '='.
printf 'default = dynamic\nagent = %s\nspool =\t%s \n' "$agent" "$spool" \
	>"$E2E_DIR/commap.conf"
e2e_plugstack "conf=$E2E_DIR/commap.conf"
usrun "$udir/job"
job=$(cat "$udir/job" 2>/dev/null)
res=$(result_for "$job" 0)
ok $? "conf= with blanks around '=': default = dynamic applies"

# 7. The result carries the cluster's name (ClusterName=commap).
[ "$(json_field "$res" 'd.get("cluster")' 2>/dev/null)" = commap ]
ok $? "the result's cluster is the slurm.conf ClusterName"

# 8. An agent killed with SIGKILL mid-step leaves a line in slurmd's log.
e2e_plugstack "default=off agent=$agent spool=$spool"
as_user srun -n1 --commap=dynamic sh -c 'echo $SLURM_JOB_ID >'"$udir/job"'; sleep 4' &
srun_pid=$!
apid=$(pid_of_program commap-agent "--spool $spool")
[ -n "$apid" ] && kill -9 "$apid"
wait $srun_pid
job=$(cat "$udir/job" 2>/dev/null)
wait_for grep -q "of step $job.0 ended before the step did" "$slurmd_log"
ok $? "an agent killed mid-step is noted in slurmd's log"

done_testing
