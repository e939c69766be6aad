#!/bin/bash
# Learned placement of ranks across nodes (docs/slurm.md "Learned
# placement across nodes"): a 3-node cluster on this machine, the real
# agent under the plugin, Open MPI's monitoring counts collected into each
# node's result, the real service on the cluster's bridge address, munge.
#
# wl-mpi-msg pairs with stride 3 on 6 ranks, 2 per node: partners (0,3)
# (1,4) (2,5) are all on different nodes under block distribution.
#  1. srun --commap-place-nodes without a learned matrix: one line says
#     so, the job runs with block distribution and its traffic is counted;
#  2. the same srun again: the plugin writes a hostfile from the learned
#     matrix, and the counted bytes between nodes fall by at least 30%;
#     the results and commap report say so, with block's prediction;
#  3. pairs without stride (partners on one node already under block): the
#     learned matrix gains nothing, block is kept, never more bytes;
#  4. a step that names its own distribution (-m cyclic) is left alone;
#  5. the site's place_nodes=yes places an srun without the option;
#  6. an srun with the option inside a batch script is placed too.
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
e2e_require_mpi
svc=$top_builddir/service/commap-service
helper=$top_builddir/spank/commap-place-nodes
wl_msg=$top_builddir/tests/workloads/wl-mpi-msg
[ -x "$svc" ] || skip_all "commap-service was not built"
[ -x "$helper" ] || skip_all "commap-place-nodes was not built"
[ -x "$wl_msg" ] || skip_all "wl-mpi-msg was not built"
command -v curl >/dev/null || skip_all "curl is not installed"
command -v nsenter >/dev/null && command -v unshare >/dev/null &&
	ip netns list >/dev/null 2>&1 || skip_all "needs nsenter, unshare and ip netns"
E2E_CLUSTER_OPTS="--nodes 3" e2e_agent_cluster "${E2E_PORT_BASE:-17098}"

svc_pid=
stop_all() {
	[ -n "$svc_pid" ] && kill "$svc_pid" 2>/dev/null && wait "$svc_pid"
	e2e_cluster_stop
}
trap stop_all EXIT

printf 'database = %s/svc.db\nthreads = 2\n' "$E2E_DIR" >"$E2E_DIR/svc.conf"
bash "$top_srcdir/deploy/cluster/cluster.sh" exec -- "$svc" \
	--config "$E2E_DIR/svc.conf" --listen 10.200.0.1:0 --foreground \
	>"$E2E_DIR/svc.log" 2>&1 &
svc_pid=$!
svc_port() {
	port=$(sed -n 's/.*listening on 10\.200\.0\.1:\([0-9]*\),.*/\1/p' \
		"$E2E_DIR/svc.log")
	[ -n "$port" ]
}
wait_for svc_port
ok $? "the service listens on the bridge address (port $port)"
url=http://10.200.0.1:$port
# The plugin runs commap-place-nodes from the agent's directory.
install -m 755 "$helper" "$E2E_DIR/commap-place-nodes"
e2e_plugstack "default=off agent=$plug_agent spool=$spool service=$url"

# place_step NAME STRIDE [SRUN-OPTS...]: 6 ranks of wl-mpi-msg pairs (with
# --stride STRIDE unless it is 1, a command line of another shape) on
# the 3 nodes in an allocation of 2 tasks per node, 64 KiB both ways for
# 1 s (a time, not a count: six ranks polling on the 2 CPUs of a busy
# machine may take minutes for a fixed count); the job id in
# $E2E_DIR/NAME, srun's output in NAME.out.  srun
# runs the program itself: the plugin identifies the application by the
# program on srun's command line (a wrapper would be another one).
place_step() {
	local name=$1 stride=()
	[ "$2" = 1 ] || stride=(--stride "$2")
	shift 2
	mkdir -p "$E2E_DIR/tmp"
	TMPDIR=$E2E_DIR/tmp timeout 300 \
		bash "$top_srcdir/deploy/cluster/cluster.sh" exec -- \
		salloc -N3 -n6 srun --mpi=pmix --commap=dynamic \
		"${place_opt[@]}" "$@" "$wl_msg" --pattern pairs \
		"${stride[@]}" --bytes 65536 --seconds 1 \
		>"$E2E_DIR/$name.out" 2>&1
	local rc=$?
	sed -n 's/^salloc: Granted job allocation \([0-9]*\)$/\1/p' \
		"$E2E_DIR/$name.out" >"$E2E_DIR/$name"
	return $rc
}
# ranks_doc: the learned rank matrix of wl-mpi-msg for 6 ranks.
ranks_doc() {
	in_cluster curl -s -H "X-Munge-Credential: $(munge -n)" \
		"$url/v1/models/wl-mpi-msg/ranks?ranks=6&argv_shape=$1" \
		>"$E2E_DIR/ranks.json"
}
# between JOB SHAPE: the bytes between nodes counted in JOB's step 0.
between() {
	ranks_doc "$2" && python3 - "$E2E_DIR/ranks.json" "$1" <<'PY'
import json, sys
try:
    runs = json.load(open(sys.argv[1]))["runs"]
except (OSError, ValueError, KeyError):
    sys.exit(1)
for r in runs:
    if r["job"] == int(sys.argv[2]) and r["step"] == 0:
        print(r["bytes_between_nodes"], r["bytes_total"])
        sys.exit(0)
sys.exit(1)
PY
}
place_opt=(--commap-place-nodes)
shape3='wl-mpi-msg%20--pattern%20pairs%20--stride%20%23%20--bytes%20%23%20--seconds%20%23'

# 1. No learned matrix yet.
place_step job1 3
rc=$?
ok $rc "run 1: srun --commap-place-nodes exits 0"
[ $rc -eq 0 ] || diag "$(cat "$E2E_DIR/job1.out")"
grep -q "commap: --commap-place-nodes: no learned rank matrix .*; default distribution" \
	"$E2E_DIR/job1.out"
ok $? "run 1: one line says there is no learned matrix yet"
job1=$(cat "$E2E_DIR/job1" 2>/dev/null)
wait_for between "$job1" "$shape3" >/dev/null
ok $? "run 1: its traffic reached the service from the 3 nodes"
read -r b1 t1 < <(between "$job1" "$shape3")
diag "run 1 (block): $b1 of $t1 bytes between nodes"
[ "${t1:-0}" -gt 0 ] && [ "$b1" -eq "$t1" ]
ok $? "run 1: every partner on another node (block)"

# 2. The learned placement.
place_step job2 3
rc=$?
ok $rc "run 2: srun --commap-place-nodes exits 0"
[ $rc -eq 0 ] || diag "$(cat "$E2E_DIR/job2.out")"
grep -q "commap: ranks placed across nodes from the learned traffic" \
	"$E2E_DIR/job2.out"
ok $? "run 2: the plugin placed the ranks from the learned matrix"
[ $? -eq 0 ] || diag "$(cat "$E2E_DIR/job2.out")"
job2=$(cat "$E2E_DIR/job2" 2>/dev/null)
wait_for between "$job2" "$shape3" >/dev/null
read -r b2 t2 < <(between "$job2" "$shape3")
diag "run 2 (learned): $b2 of $t2 bytes between nodes"
# runs last a time, not a count: their shares of bytes between nodes
awk -v b1="$b1" -v t1="$t1" -v b2="$b2" -v t2="$t2" \
	'BEGIN { exit !(t1 > 0 && t2 > 0 && b2 / t2 <= 0.7 * b1 / t1) }'
ok $? "run 2: at least 30% fewer bytes between nodes ($b1 of $t1 -> $b2 of $t2)"
python3 - "$E2E_DIR/ranks.json" "$job2" "$b1" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
p = [r["placement"] for r in runs if r["job"] == int(sys.argv[2])][0]
sys.exit(0 if p == {"distribution": "learned", "predicted_block":
                    int(sys.argv[3]), "predicted": 0, "runs": 1} else 1)
PY
ok $? "run 2: its results record the learned placement and its prediction"
out=$(in_cluster "$top_builddir/cli/commap" report "$job2" --service "$url" 2>&1)
echo "$out" | grep -q "ranks placed across nodes: from the learned traffic (between nodes predicted from earlier runs: $b1 under block distribution, 0 so)" &&
	echo "$out" | grep -q "bytes between nodes: $b2 "
rc=$?
ok $rc "run 2: commap report compares the bytes between nodes with block's"
[ $rc -eq 0 ] || diag "$out"
[ -z "$(ls -A "$E2E_DIR/tmp")" ]
ok $? "run 2: srun removed its hostfile ($(ls -A "$E2E_DIR/tmp" | tr '\n' ' '))"

# 3. Already best under block: block is kept.
shape1='wl-mpi-msg%20--pattern%20pairs%20--bytes%20%23%20--seconds%20%23'
place_step job3 1
rc=$?
ok $rc "run 3 (no stride): exits 0"
place_step job4 1
rc=$?
ok $rc "run 4 (no stride, learned): exits 0"
grep -q "gains nothing over block distribution; default distribution" \
	"$E2E_DIR/job4.out"
ok $? "run 4: the learned matrix gains nothing, block is kept"
[ $? -eq 0 ] || diag "$(cat "$E2E_DIR/job4.out")"
job4=$(cat "$E2E_DIR/job4" 2>/dev/null)
wait_for between "$job4" "$shape1" >/dev/null
read -r b4 t4 < <(between "$job4" "$shape1")
[ "${b4:-1}" -eq 0 ]
ok $? "run 4: no byte between nodes (${b4:-?} of ${t4:-?})"

# 4. The user's own distribution wins.
place_step job5 3 -m cyclic
rc=$?
ok $rc "run 5 (-m cyclic): exits 0"
grep -q "the step chooses its own distribution; default distribution" \
	"$E2E_DIR/job5.out"
ok $? "run 5: left to the user's -m, with one line saying so"
grep -q "ranks placed" "$E2E_DIR/job5.out"
[ $? -ne 0 ]
ok $? "run 5: no hostfile"

# 5. The site's place_nodes=yes: an srun without the option is placed
#    (and its traffic counted) all the same.
e2e_plugstack "default=off agent=$plug_agent spool=$spool service=$url place_nodes=yes"
place_opt=()
place_step job6 3
rc=$?
ok $rc "run 6 (place_nodes=yes, no option): exits 0"
grep -q "commap: ranks placed across nodes from the learned traffic (" \
	"$E2E_DIR/job6.out"
ok $? "run 6: placed from the learned traffic"
[ $? -eq 0 ] || diag "$(cat "$E2E_DIR/job6.out")"
job6=$(cat "$E2E_DIR/job6" 2>/dev/null)
wait_for between "$job6" "$shape3" >/dev/null
read -r b6 t6 < <(between "$job6" "$shape3")
[ "${b6:-1}" -eq 0 ] && [ "${t6:-0}" -gt 0 ]
ok $? "run 6: no byte between nodes (${b6:-?} of ${t6:-?})"

# 6. srun inside a batch script, the user's option (the site's default
#    back to off).
e2e_plugstack "default=off agent=$plug_agent spool=$spool service=$url"
cat >"$E2E_DIR/job7.sh" <<EOS
#!/bin/sh
srun --mpi=pmix --commap=dynamic --commap-place-nodes "$wl_msg" \
	--pattern pairs --stride 3 --bytes 65536 --seconds 1
EOS
chmod 755 "$E2E_DIR/job7.sh"
TMPDIR=$E2E_DIR/tmp timeout 300 bash "$top_srcdir/deploy/cluster/cluster.sh" \
	exec -- sbatch -N3 -n6 -o "$E2E_DIR/job7.out" --wait "$E2E_DIR/job7.sh" \
	>"$E2E_DIR/job7.sbatch" 2>&1
ok $? "run 7 (sbatch, srun --commap-place-nodes inside): exits 0"
grep -q "commap: ranks placed across nodes from the learned traffic (" \
	"$E2E_DIR/job7.out"
ok $? "run 7: the srun in the batch script is placed"
[ $? -eq 0 ] || diag "$(cat "$E2E_DIR/job7.out" "$E2E_DIR/job7.sbatch")"
job7=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$E2E_DIR/job7.sbatch")
wait_for between "$job7" "$shape3" >/dev/null
read -r b7 t7 < <(between "$job7" "$shape3")
[ "${b7:-1}" -eq 0 ] && [ "${t7:-0}" -gt 0 ]
ok $? "run 7: no byte between nodes (${b7:-?} of ${t7:-?})"
[ -z "$(ls -A "$E2E_DIR/tmp")" ]
ok $? "no hostfile left behind"

done_testing
