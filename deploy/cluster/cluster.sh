#!/usr/bin/env bash
# A Slurm cluster on this machine for commap: munge, slurmctld, slurmd.
#
#   deploy/cluster/cluster.sh start [--cgroup] [--nodes N]
#                                    (re)start everything; N nodes (1)
#   deploy/cluster/cluster.sh stop               stop everything
#   deploy/cluster/cluster.sh status             what is running
#   deploy/cluster/cluster.sh exec [--node NAME] -- CMD...
#                                    CMD as a client of the cluster
#
# One node: slurmd on localhost, clients anywhere with SLURM_CONF set.
# N > 1 (nodes.sh): nodes node1..nodeN, each slurmd in network and UTS
# namespaces of its own on a private bridge (10.200.0.0/24, node I at
# 10.200.0.(10+I), slurmctld and the clients at 10.200.0.1); clients run
# with `exec` (in the head namespace), and so must a service the nodes
# upload to, listening on 10.200.0.1.  `exec` works for one node too.
#
# Environment: COMMAP_CLUSTER_DIR (state), SLURM_CONF_DIR (configuration;
# other than /etc/slurm, export SLURM_CONF=$SLURM_CONF_DIR/slurm.conf for
# the clients), COMMAP_SLURMCTLD_PORT / COMMAP_SLURMD_PORT (6817 / 6818),
# so a test cluster can run beside the demo one, COMMAP_FIRST_JOB_ID (1).
#
# For Debian 12 as root without systemd (daemons are started by hand: there
# is no init system to start them).  Writes /etc/slurm/slurm.conf
# (refusing to replace one it did not write) and keeps state, logs and
# pid files under $COMMAP_CLUSTER_DIR (default /var/lib/commap-cluster).
# Idempotent: start stops what runs first.
set -euo pipefail

dir=${COMMAP_CLUSTER_DIR:-/var/lib/commap-cluster}
conf_dir=${SLURM_CONF_DIR:-/etc/slurm}
conf=$conf_dir/slurm.conf
marker="# written by commap deploy/cluster/cluster.sh"
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=nodes.sh
. "$here/nodes.sh"

log() { echo "cluster: $*"; }
die() { echo "cluster: $*" >&2; exit 1; }

need_root() { [ "$(id -u)" -eq 0 ] || die "run as root"; }

# The daemons remove their own pid files on exit: read each one once.
read_pid() { cat "$1" 2>/dev/null || true; }
pid_alive() {
	local pid
	pid=$(read_pid "$1")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

stop_pidfile() {
	local pidfile=$1 name=$2 pid
	pid=$(read_pid "$pidfile")
	if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
		rm -f "$pidfile"
		return 0
	fi
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$pidfile"
	log "stopped $name"
}

start_munge() {
	install -d -o munge -g munge -m 755 /run/munge
	if [ ! -s /etc/munge/munge.key ]; then
		/usr/sbin/mungekey --create --force 2>/dev/null ||
			dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
		chown munge:munge /etc/munge/munge.key
		chmod 400 /etc/munge/munge.key
	fi
	if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
		log "munge already running"
		return 0
	fi
	runuser -u munge -- /usr/sbin/munged --force
	for _ in $(seq 50); do
		munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && { log "munge started"; return 0; }
		sleep 0.1
	done
	die "munged did not start (see /var/log/munge/munged.log)"
}

write_conf() {
	local cgroup=$1 nodes=$2 host node mem plugins
	host=$(hostname -s)
	[ -f "$conf" ] && ! grep -qF "$marker" "$conf" &&
		die "$conf exists and was not written by commap; move it away first"
	node=$(slurmd -C | head -n 1)
	# RealMemory cut a little so slurmd never reports less than configured.
	mem=$(echo "$node" | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
	node=$(echo "$node" | sed "s/RealMemory=[0-9]*/RealMemory=$((mem * 95 / 100))/")
	mkdir -p "$conf_dir" "$dir"/{state,spool,log,run,tmp}
	node_conf "$nodes" "$host" "$node"
	if [ "$cgroup" = yes ]; then
		plugins="ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity"
		printf '%s\nCgroupPlugin=autodetect\nConstrainCores=yes\n' "$marker" >"$conf_dir/cgroup.conf"
	else
		plugins="ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity"
	fi
	[ -f "$conf_dir/plugstack.conf" ] || : >"$conf_dir/plugstack.conf"
	cat >"$conf" <<EOC
$marker
ClusterName=commap
SlurmctldHost=$host($ctld_addr)
SlurmUser=root
SlurmctldPort=${COMMAP_SLURMCTLD_PORT:-6817}
SlurmdPort=${COMMAP_SLURMD_PORT:-6818}
AuthType=auth/munge
CredType=cred/munge
$plugins
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool$per_node
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd$per_node_dash.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd$per_node_dash.log
# mpi/pmix makes TmpFS/spmix_appdir_UID_JOB.STEP: two clusters on one
# machine (tests beside the demo) both run job 1 step 0, so each needs
# its own, or one step's launch fails ("task 0 launch failed").
TmpFS=$dir/tmp$per_node
# Open MPI names its shared-memory segments after the PMIx namespace,
# which is the job and step id: MPI steps of two clusters with the same
# job ids at the same time would map each other's segments (a segfault
# in the vader BTL).  Test clusters start their ids apart.
FirstJobId=${COMMAP_FIRST_JOB_ID:-1}
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$conf_dir/plugstack.conf
KillWait=5
InactiveLimit=0
MinJobAge=60
$node_lines
PartitionName=debug Nodes=$part_nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOC
	log "wrote $conf"
}

# node_conf N HOST HW-LINE: what differs between one node and several.
# Several nodes keep their spool, pid and log files and TmpFS apart by
# name (%n): with MpiDefault=pmix a shared TmpFS fails every step that
# spans nodes ("spmix_appdir ... File exists").
node_conf() {
	if [ "$1" -eq 1 ]; then
		ctld_addr=127.0.0.1 per_node= per_node_dash= node_lines=$3
		part_nodes=$2
	else
		ctld_addr=$nodes_net.1 per_node=/%n per_node_dash=-%n
		node_lines=$(nodes_conf_lines "$1" "$3")
		part_nodes=$(nodes_list "$1")
	fi
}

wait_node_idle() {
	local host
	host=$(hostname -s)
	export SLURM_CONF=$conf
	for _ in $(seq 100); do
		case "$(sinfo -h -n "$host" -o %t 2>/dev/null)" in
		idle*|mix*|alloc*) log "node $host is up"; return 0 ;;
		esac
		sleep 0.2
	done
	sinfo >&2 || true
	die "node $host did not become idle (see $dir/log/)"
}

cmd_stop() {
	need_root
	nodes_stop
	stop_pidfile "$dir/run/slurmd.pid" slurmd
	stop_pidfile "$dir/run/slurmctld.pid" slurmctld
}

cmd_start() {
	need_root
	local cgroup=no nodes=1
	while [ $# -gt 0 ]; do
		case "$1" in
		--cgroup) cgroup=yes ;;
		--nodes) nodes=${2:-}; shift ;;
		*) die "start: unknown option '$1' (--cgroup, --nodes N)" ;;
		esac
		shift
	done
	case "$nodes" in
	[1-9]|[1-9][0-9]) ;;
	*) die "start: --nodes wants a number of nodes from 1 to 99, not '$nodes'" ;;
	esac
	command -v slurmctld >/dev/null || die "slurmctld not installed (deploy/install-deps.sh --cluster)"
	cmd_stop
	start_munge
	write_conf "$cgroup" "$nodes"
	export SLURM_CONF=$conf
	if [ "$nodes" -gt 1 ]; then
		# The state is kept (job ids go on from the last run: the
		# service knows jobs by id); stop cancels every job, so none
		# is recovered to hold a node.
		nodes_net_up "$nodes"
		nodes_start_daemons "$nodes"
		nodes_wait_idle "$nodes"
		return 0
	fi
	slurmctld -i
	for _ in $(seq 50); do pid_alive "$dir/run/slurmctld.pid" && break; sleep 0.1; done
	pid_alive "$dir/run/slurmctld.pid" || die "slurmctld did not start (see $dir/log/slurmctld.log)"
	slurmd
	for _ in $(seq 50); do pid_alive "$dir/run/slurmd.pid" && break; sleep 0.1; done
	pid_alive "$dir/run/slurmd.pid" || die "slurmd did not start (see $dir/log/slurmd.log)"
	log "slurmctld and slurmd started"
	wait_node_idle
}

cmd_status() {
	local rc=0 d f
	for f in "$dir"/run/slurmd-*.pid; do
		[ -e "$f" ] && d=${f##*/} && set -- "$@" "${d%.pid}"
	done
	[ $# -gt 0 ] || set -- slurmd
	for d in slurmctld "$@"; do
		if pid_alive "$dir/run/$d.pid"; then echo "$d: running (pid $(read_pid "$dir/run/$d.pid"))"
		else echo "$d: stopped"; rc=1; fi
	done
	if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then echo "munge: running"
	else echo "munge: stopped"; rc=1; fi
	return $rc
}

case "${1:-}" in
start) shift; cmd_start "$@" ;;
stop) cmd_stop ;;
status) cmd_status ;;
exec) shift; nodes_exec "$@" ;;
*) echo "usage: $0 start [--cgroup] [--nodes N] | stop | status | exec [--node NAME] -- CMD..." >&2; exit 2 ;;
esac
