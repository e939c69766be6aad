#!/bin/bash
# Jobs across nodes: a 3-node cluster on this machine (cluster.sh start
# --nodes 3: each slurmd in network and UTS namespaces of its own), the
# real agent under the plugin, the real service on the cluster's bridge
# address (started here), munge.
#
# - a step on the 3 nodes: one agent per node, a result from each node
#   uploaded (each naming its node), each node's pins inside that node's
#   CPUs for the step (Slurm's CPU_IDs: the nodes share this machine's
#   CPUs, so each node's mapping is checked on its own), one agent log
#   per node in the shared spool;
# - a step on 2 of the 3 nodes: results from those two only;
# - the agent failing on one node and another node unable to reach the
#   service: the job exits 0, the third node's result is uploaded, the
#   unreachable node's waits in the spool, and reaches the service with
#   that node's next result once the service can be reached again.
# - MPI ranks across the nodes with --commap-mpi-traffic (Open MPI's
#   monitoring through the variables the plugin sets): each node's result
#   has rank_traffic for exactly its own ranks, the union is the bytes a
#   PMPI library counted, commap report shows the bytes between nodes and
#   totals that add up, and the per-step directories are gone; without
#   the option no rank_traffic and no monitoring variable in the tasks.
# Pairs of threads, one task per node, for the rest: no MPI needed to
# span nodes there.
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
svc=$top_builddir/service/commap-service
[ -x "$svc" ] || skip_all "commap-service was not built"
command -v curl >/dev/null || skip_all "curl is not installed"
command -v nsenter >/dev/null && command -v unshare >/dev/null &&
	ip netns list >/dev/null 2>&1 || skip_all "needs nsenter, unshare and ip netns"
E2E_CLUSTER_OPTS="--nodes 3" e2e_agent_cluster "${E2E_PORT_BASE:-17097}"
nodes=(node1 node2 node3)

svc_pid=
stop_all() {
	[ -n "$svc_pid" ] && kill "$svc_pid" 2>/dev/null && wait "$svc_pid"
	e2e_cluster_stop
}
trap stop_all EXIT

n=$(in_cluster sinfo -h -N -o %N | sort -u | tr '\n' ' ')
[ "$n" = "node1 node2 node3 " ]
ok $? "3 nodes are up ($n)"

# The service on the bridge address, where every node can reach it.
printf 'database = %s/svc.db\nmax_body = 16m\nthreads = 2\n' "$E2E_DIR" \
	>"$E2E_DIR/svc.conf"
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

# The agent as the plugin runs it, but failing at once on the node named
# in $E2E_DIR/fail-on (none at first), and spooling in a directory of its
# node's (SPOOL/NODE): the nodes here share one file system, where on a
# cluster each has its spool on local disk; with one spool for all, an
# agent uploading on one node would deliver what another node spooled.
for node in "${nodes[@]}"; do install -d -m 700 "$spool/$node"; done
cat >"$E2E_DIR/agent-or-fail" <<EOS
#!/bin/sh
[ "\$(cat "$E2E_DIR/fail-on" 2>/dev/null)" = "\$(hostname)" ] && exit 1
prev=
for a; do
	shift
	if [ "\$prev" = --spool ]; then set -- "\$@" "\$a/\$(hostname)"
	else set -- "\$@" "\$a"; fi
	prev=\$a
done
exec "$plug_agent" "\$@"
EOS
chmod 755 "$E2E_DIR/agent-or-fail"
e2e_plugstack "default=off agent=$E2E_DIR/agent-or-fail spool=$spool service=$url"

# job_nodes JOB: "node step" of each result the service holds for JOB.
job_nodes() {
	in_cluster curl -s -H "X-Munge-Credential: $(munge -n)" \
		"$url/v1/jobs/$1?documents=0" | python3 -c '
import json, sys
try:
    rows = json.load(sys.stdin)["results"]
except (ValueError, KeyError):
    sys.exit(1)
for r in sorted(rows, key=lambda r: r["node"]):
    print(r["node"], r["step"])'
}
# has_nodes JOB "node1 0 node2 0 ...": the service holds exactly these.
has_nodes() { [ "$(job_nodes "$1" | tr '\n' ' ')" = "$2 " ]; }
# service_doc JOB NODE FILE: that node's uploaded result.
service_doc() {
	in_cluster curl -s -H "X-Munge-Credential: $(munge -n)" \
		"$url/v1/jobs/$1" | python3 -c '
import json, sys
for r in json.load(sys.stdin)["results"]:
    if r["node"] == sys.argv[1]:
        json.dump(r["document"], open(sys.argv[2], "w"))
        sys.exit(0)
sys.exit(1)' "$2" "$3"
}
# spooled_nodes JOB: the nodes of JOB's results in the nodes' spools.
spooled_nodes() {
	python3 - "$spool" "$1" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*/*.json")):
    try:
        d = json.load(open(f))["identity"]
    except (OSError, ValueError, KeyError):
        continue
    if d.get("job") == int(sys.argv[2]):
        print(d.get("node"))
PY
}
# cpu_ids JOB NODE: the node's CPUs for the job (scontrol show job -d:
# " Nodes=node[1-3] CPU_IDs=0-1 ...", nodes with the same CPUs grouped).
cpu_ids() {
	local names ids
	in_cluster scontrol show job -d "$1" |
		sed -n 's/.* Nodes=\([^ ]*\) CPU_IDs=\([0-9,-]*\).*/\1 \2/p' |
		while read -r names ids; do
			in_cluster scontrol show hostnames "$names" |
				grep -qx "$2" && echo "$ids"
		done | head -1
}
# pairs_step IDFILE SRUN-ARGS...: pairs of threads, one task a node; 4
# threads to 0.6 s of CPU each (a matrix to map), or with PAIRS_SHORT=1
# 2 threads to 0.2 s, for steps that only need a result delivered (the
# nodes share 2 CPUs: the suite's time goes to these threads).
pairs_step() {
	local idfile=$1 wl_args=(--threads 4 --cpu-seconds 0.6)
	shift
	[ -z "${PAIRS_SHORT:-}" ] || wl_args=(--threads 2 --cpu-seconds 0.2)
	timeout 120 bash "$top_srcdir/deploy/cluster/cluster.sh" exec -- \
		srun --commap=dynamic "$@" "${job_wrap[@]}" "$idfile" \
		"$wl_threads" --pattern pairs "${wl_args[@]}" --seconds 30 \
		>"$idfile.out" 2>&1
}

# 1. A step on the three nodes, holding them until its end (its CPU_IDs
#    are read while it runs: scontrol forgets them once the job ends).
pairs_step "$E2E_DIR/job1" -N3 -n3 -c 2 &
srun_pid=$!
wait_for test -s "$E2E_DIR/job1"
job1=$(cat "$E2E_DIR/job1" 2>/dev/null)
declare -A cpus
for node in "${nodes[@]}"; do cpus[$node]=$(cpu_ids "$job1" "$node"); done
wait $srun_pid
rc=$?
ok $rc "srun -N3 --commap=dynamic exits 0 (job $job1)"
[ $rc -eq 0 ] || diag "$(cat "$E2E_DIR/job1.out")"
wait_for has_nodes "$job1" "node1 0 node2 0 node3 0"
ok $? "the service holds a result from each node: $(job_nodes "$job1" | tr '\n' ' ')"
for node in "${nodes[@]}"; do
	res=$E2E_DIR/job1.$node.json
	service_doc "$job1" "$node" "$res" &&
		[ "$(json_field "$res" 'd["identity"]["node"]')" = "$node" ] &&
		[ "$(json_field "$res" 'len(d["edges"]) > 0')" = True ]
	ok $? "$node: its result names it and holds a matrix"
	out=$("$result_check" within --cpus "${cpus[$node]:-none}" "$res" 2>&1)
	ok $? "$node: the step's CPUs there are ${cpus[$node]:-unknown}, every pin inside ($out)"
	out=$("$result_check" invariant "$res" 2>&1)
	ok $? "$node: every mapping keeps the placement invariant ($out)"
	[ -f "$spool/agent-$job1.0.$node.log" ]
	ok $? "$node: its agent's log is agent-$job1.0.$node.log"
done

# The job in the terminal: one view across its nodes, then each node's.
commap=$top_builddir/cli/commap
per_node_lines() {	# per_node_lines REPORT: a row for every node
	local node
	for node in "${nodes[@]}"; do
		echo "$1" | grep -q "^  $node  *0 " || return 1
	done
}
out=$(in_cluster "$commap" report "$job1" --service "$url" 2>&1)
echo "$out" | grep -q "^job $job1 across 3 nodes" && per_node_lines "$out"
rc=$?
ok $rc "commap report $job1: a row per node under 'across 3 nodes'"
[ "$(echo "$out" | grep -c "^communication matrix")" -eq 3 ]
ok $? "commap report $job1: each node's matrix follows"
[ $rc -eq 0 ] || diag "$out"
out=$(in_cluster "$commap" jobs --service "$url" 2>&1)
[ "$(echo "$out" | awk -v j="$job1" '$1 == j { print $7 }')" = 3 ]
rc=$?
ok $rc "commap jobs: NODES 3 for job $job1"
[ $rc -eq 0 ] || diag "$out"

# 2. A step on two of the three nodes.
PAIRS_SHORT=1 pairs_step "$E2E_DIR/job2" -N2 -n2 -c 2 -w node1,node3
ok $? "srun -N2 -w node1,node3 exits 0"
job2=$(cat "$E2E_DIR/job2" 2>/dev/null)
wait_for has_nodes "$job2" "node1 0 node3 0"
ok $? "results from node1 and node3 only: $(job_nodes "$job2" | tr '\n' ' ')"
[ ! -e "$spool/agent-$job2.0.node2.log" ]
ok $? "no agent ran on node2"

# 3. The agent fails on node2; node3 cannot reach the service (connections
#    to its port refused inside node3's namespace only).
echo node2 >"$E2E_DIR/fail-on"
bash "$top_srcdir/deploy/cluster/cluster.sh" exec --node node3 -- \
	ip rule add ipproto tcp dport "$port" prohibit
ok $? "node3 is cut off from the service's port"
PAIRS_SHORT=1 pairs_step "$E2E_DIR/job3" -N3 -n3 -c 2
rc=$?
ok $rc "an agent failing on node2, the service out of node3's reach: the job exits 0"
[ $rc -eq 0 ] || diag "$(cat "$E2E_DIR/job3.out")"
job3=$(cat "$E2E_DIR/job3" 2>/dev/null)
wait_for has_nodes "$job3" "node1 0"
ok $? "node1's result is uploaded"
wait_for test "$(spooled_nodes "$job3")" = node3
ok $? "node3's result waits in the spool ($(spooled_nodes "$job3" | tr '\n' ' '))"
grep -q spool "$spool/agent-$job3.0.node3.log" 2>/dev/null
ok $? "node3's agent log says it spooled the result"
[ "$(job_nodes "$job3" | tr '\n' ' ')" = "node1 0 " ]
ok $? "nothing from node2 for job $job3, nothing of node3 uploaded"
grep -q commap "$E2E_DIR/job3.out"
[ $? -ne 0 ]
ok $? "the user sees no commap line"

# 4. node3 reaches the service again: its next step's agent delivers the
#    spooled result too.
rm -f "$E2E_DIR/fail-on"
bash "$top_srcdir/deploy/cluster/cluster.sh" exec --node node3 -- \
	ip rule del ipproto tcp dport "$port" prohibit
PAIRS_SHORT=1 pairs_step "$E2E_DIR/job4" -N1 -n1 -c 2 -w node3
ok $? "a later step on node3 exits 0"
job4=$(cat "$E2E_DIR/job4" 2>/dev/null)
wait_for has_nodes "$job4" "node3 0"
ok $? "its result is uploaded"
wait_for has_nodes "$job3" "node1 0 node3 0"
ok $? "and node3's spooled result of job $job3 with it: $(job_nodes "$job3" | tr '\n' ' ')"
[ -z "$(spooled_nodes "$job3")" ]
ok $? "the spool no longer holds it"

# 5. Traffic between MPI ranks across the nodes, then a step without it.
wl_msg=$top_builddir/tests/workloads/wl-mpi-msg
pmpi=$top_builddir/tests/workloads/.libs/libwlpmpi.so
traffic_checks() {	# traffic_checks JOB TRUTH: the results against it
	in_cluster curl -s -H "X-Munge-Credential: $(munge -n)" \
		"$url/v1/jobs/$1" | python3 -c '
import json, sys
rows = json.load(sys.stdin)["results"]
truth = json.load(open(sys.argv[1]))
ok, union, seen = True, {}, set()
for r in rows:
    d = r["document"]
    mine = {t["rank"] for t in d["threads"] if t.get("rank") is not None}
    rt = d.get("rank_traffic")
    if not rt or set(rt["ranks"]) != mine or len(rt["ranks"]) != len(mine):
        print("# %s: ranks %s, rank_traffic %s" % (r["node"], sorted(mine),
              rt and rt["ranks"]))
        ok = False
        continue
    seen |= mine
    for s, t, b, m in rt["pairs"]:
        ok &= s in mine
        k = (min(s, t), max(s, t))
        union[k] = union.get(k, 0) + b
want = {(i, j): w for i, j, w in truth["edges"]}
got = {k: v for k, v in union.items() if v and k[0] != k[1]}
if got != want:
    print("# union %s != PMPI %s" % (sorted(got.items()), sorted(want.items())))
    ok = False
print("ranks=%d pairs=%d bytes=%d" % (len(seen), len(got), sum(got.values())))
sys.exit(0 if ok and seen == set(range(truth["threads"])) else 1)' "$2"
}
if [ -x "$wl_msg" ] && [ -f "$pmpi" ] && command -v mpirun >/dev/null &&
	{ "$wl_msg" --help >/dev/null 2>&1; [ $? -ne 77 ]; }; then
	timeout 180 bash "$top_srcdir/deploy/cluster/cluster.sh" exec -- \
		srun -N3 -n6 --ntasks-per-node 2 -c 1 --mpi=pmix \
		--commap=dynamic --commap-mpi-traffic "${job_wrap[@]}" \
		"$E2E_DIR/job5" env LD_PRELOAD="$pmpi" \
		WL_PMPI_OUT="$E2E_DIR/job5.pmpi.json" "$wl_msg" \
		--pattern ring --bytes 65536 --seconds 2 >"$E2E_DIR/job5.out" 2>&1
	rc=$?
	ok $rc "srun -N3 -n6 --mpi=pmix --commap-mpi-traffic: a ring of MPI ranks exits 0"
	[ $rc -eq 0 ] || diag "$(cat "$E2E_DIR/job5.out")"
	job5=$(cat "$E2E_DIR/job5" 2>/dev/null)
	wait_for has_nodes "$job5" "node1 0 node2 0 node3 0"
	ok $? "a result from each node: $(job_nodes "$job5" | tr '\n' ' ')"
	out=$(traffic_checks "$job5" "$E2E_DIR/job5.pmpi.json" 2>&1)
	ok $? "each node's rank_traffic holds exactly its ranks; the union is what PMPI counted ($out)"
	out=$(in_cluster "$commap" report "$job5" --service "$url" 2>&1)
	within=$(echo "$out" | sed -n 's/^  bytes within nodes: *\([0-9]*\) .*/\1/p')
	between=$(echo "$out" | sed -n 's/^  bytes between nodes: *\([0-9]*\) .*/\1/p')
	total=$(echo "$out" | sed -n 's/^  bytes total: *\([0-9]*\) in .*/\1/p')
	[ "${between:-0}" -gt 0 ] && [ "${within:-0}" -gt 0 ] &&
		[ $((within + between)) -eq "${total:--1}" ] &&
		[ "$total" -eq "$(python3 -c 'import json, sys
print(sum(e[2] for e in json.load(open(sys.argv[1]))["edges"]))' \
			"$E2E_DIR/job5.pmpi.json")" ]
	rc=$?
	ok $rc "commap report $job5: bytes between nodes $between > 0, within $within, total $total (PMPI's)"
	[ $rc -eq 0 ] || diag "$out"
	echo "$out" | grep -q "^    ranks [0-9]* and [0-9]* (node[123], node[123]): [1-9]"
	ok $? "commap report $job5: the heaviest rank pairs across nodes"
	wait_for sh -c "! ls -d /tmp/commap-mpi-$job5.* >/dev/null 2>&1"
	ok $? "the step's monitoring directories are removed"
else
	for _ in 1 2 3 4 5 6; do
		echo "ok $((tap_n += 1)) # SKIP Open MPI or wl-mpi-msg missing"
	done
fi
[ "$(json_field "$E2E_DIR/job1.node1.json" '"rank_traffic" in d')" = False ]
ok $? "without --commap-mpi-traffic: no rank_traffic"
out=$(in_cluster srun -N3 -n3 --commap=dynamic sh -c \
	'env | grep -c "^OMPI_MCA_pml_monitoring"; exit 0' 2>&1)
[ "$(echo "$out" | tr -d ' \n')" = 000 ]
ok $? "without it: no monitoring variable in the tasks' environment ($(echo $out))"
out=$(in_cluster srun -N1 -n1 --commap=dynamic --commap-mpi-traffic sh -c \
	'echo "$OMPI_MCA_pml_monitoring_enable $OMPI_MCA_pml_monitoring_enable_output $OMPI_MCA_pml_monitoring_filename"; ls -ld "${OMPI_MCA_pml_monitoring_filename%/prof}"' 2>&1)
echo "$out" | grep -q "^2 3 /tmp/commap-mpi-[0-9]*\.0\.[A-Za-z0-9]\{6\}/prof$" &&
	echo "$out" | grep -q "^drwx------ "
ok $? "with it: the variables name a 0700 directory of the step ($(echo $out))"

done_testing
