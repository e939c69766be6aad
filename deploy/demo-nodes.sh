#!/usr/bin/env bash
# The demo on several Slurm nodes of this machine: deploy/demo.sh --nodes N
# runs this once commap is built and installed.
#
#   deploy/demo-nodes.sh N       start N nodes and the service, run the job
#   deploy/demo-nodes.sh stop    stop the service started here
#
# The nodes (deploy/cluster/cluster.sh start --nodes N) each have their own
# network and host name; the service listens on the cluster's bridge
# address (http://10.200.0.1:7733), where every node's agent uploads and
# the clients reach it: srun and commap run through `cluster.sh exec`.
# It keeps its database apart from the one-node demo's
# (/var/lib/commap-nodes).  From demo.sh: COMMAP_PREFIX, DEMO_PLUGIN,
# DEMO_BUILD (a configured build tree), DEMO_SPOOL, SLURM_CONF_DIR.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cluster=$top/deploy/cluster/cluster.sh
listen=10.200.0.1:7733
service_url=http://$listen
export COMMAP_SERVICE_DIR=/var/lib/commap-nodes
export COMMAP_SERVICE_CONF=/etc/commap/service-nodes.conf
export COMMAP_SERVICE_LISTEN=$listen

if [ "${1:-}" = stop ]; then
	bash "$top/deploy/service/service.sh" stop
	exit 0
fi
nodes=${1:?usage: demo-nodes.sh N | stop}
prefix=${COMMAP_PREFIX:-/usr/local}
commap=$prefix/bin/commap
conf_dir=${SLURM_CONF_DIR:-/etc/slurm}
spool=${DEMO_SPOOL:-/var/spool/commap}
wl=$DEMO_BUILD/tests/workloads
cx() { bash "$cluster" exec -- "$@"; }
say() { printf '\n== %s\n' "$*"; }

make -C "$DEMO_BUILD" -j"$(nproc)" tests/workloads/wl-mpi-msg >/dev/null

say "starting munge, slurmctld, $nodes slurmd and the commap service on $listen"
mkdir -p "$conf_dir" "$spool"
# root's only: the agent refuses a spool others can write to
chown root:root "$spool" && chmod 0700 "$spool"
echo "optional $DEMO_PLUGIN default=off service=$service_url spool=$spool" \
	>"$conf_dir/plugstack.conf"
bash "$cluster" start --nodes "$nodes"
# In the cluster's head namespace, where the bridge address is.
cx bash "$top/deploy/service/service.sh" start
cx sinfo -N
# The workloads must be readable by slurmd's job user (root here).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

work=$(mktemp -d /tmp/commap-demo.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

ranks=$((nodes * 2))
# --commap-mpi-traffic: Open MPI counts the bytes between ranks, so the
# report shows what crosses nodes (the agents see only their own node).
say "a job over $nodes nodes: $ranks MPI ranks (2 a node) x 2 OpenMP threads, a 2D halo exchange"
echo "\$ srun -N $nodes -n $ranks --ntasks-per-node 2 -c 1 --mpi=pmix --commap=dynamic \\"
echo "      --commap-mpi-traffic wl-mpi-msg --pattern halo2d --threads 2 --bytes 65536 --seconds 4"
cx srun -N "$nodes" -n "$ranks" --ntasks-per-node 2 -c 1 --mpi=pmix \
	--commap=dynamic --commap-mpi-traffic -J demo-nodes bash -c \
	'[ "${SLURM_PROCID:-0}" = 0 ] && echo "$SLURM_JOB_ID" >"$0"; exec "$@"' \
	"$work/job.id" "$wl/wl-mpi-msg" --pattern halo2d --threads 2 \
	--bytes 65536 --seconds 4
job=$(cat "$work/job.id")

# Each node's agent uploads when the step ends there: wait for all.
for _ in $(seq 100); do
	n=$(cx "$commap" report "$job" --service "$service_url" --format json \
		2>/dev/null | python3 -c 'import json, sys
print(len({r["node"] for r in json.load(sys.stdin)["results"]}))' 2>/dev/null) || n=0
	[ "$n" -ge "$nodes" ] && break
	sleep 0.2
done

say "what commap knows: commap jobs"
cx "$commap" jobs --service "$service_url" --limit 5
say "commap report $job"
cx "$commap" report "$job" --service "$service_url"
say "done: clients run in the cluster's namespace, e.g."
echo "  bash deploy/cluster/cluster.sh exec -- commap jobs --service $service_url"
echo "(deploy/demo.sh stop stops the daemons)"
