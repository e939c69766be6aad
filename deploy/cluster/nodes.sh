# nodes.sh: sourced by cluster.sh for start --nodes N (N > 1): N Slurm
# nodes on this one machine, each slurmd in a network and UTS namespace of
# its own, so each node has its own name and address.
#
# Layout (nothing is added to the root namespace):
#   HEAD netns   bridge br0 with 10.200.0.1/24; slurmctld; the clients
#                (cluster.sh exec -- srun ...) run here
#   NODE netns   eth0 (a veth into br0) with 10.200.0.(10+I)/24; slurmd
#                -N NAME in a UTS namespace whose hostname is NAME
# Namespace names carry a checksum of the state directory, so a test
# cluster runs beside the demo one (and beside another test's); the
# subnet is the same in all (each is private to its own namespaces).
# $dir/run/netns lists what to remove on stop.
#
# Why namespaces and not several slurmd on 127.0.0.1: Open MPI's
# shared-memory transport names its segments after the host name, so
# ranks of "different" nodes with one name collide; and a node's address
# must be its own for the agents' uploads and the MPI traffic between
# nodes to go over a network.  `ip netns exec` is not used: it remounts
# /sys without the cgroup tree and slurmd then refuses to start.

nodes_prefix=${COMMAP_NODE_PREFIX:-node}
nodes_net=10.200.0
nodes_tag=cm$(printf %s "$dir" | cksum | cut -d' ' -f1)
nodes_head=$nodes_tag-head

nodes_name() { echo "$nodes_prefix$1"; }		# nodes_name I
nodes_netns() { echo "$nodes_tag-n$1"; }		# nodes_netns I
nodes_addr() { echo "$nodes_net.$((10 + $1))"; }	# nodes_addr I

# The node lines of slurm.conf: this machine's hardware once per node
# (every node reports all of the machine's CPUs; they share them).
nodes_conf_lines() {	# nodes_conf_lines N HW-LINE
	local i
	for i in $(seq "$1"); do
		echo "$2" | sed "s/^NodeName=[^ ]*/NodeName=$(nodes_name "$i") NodeAddr=$(nodes_addr "$i")/"
	done
}

nodes_list() {	# node1,node2,...
	local i out=
	for i in $(seq "$1"); do out=$out${out:+,}$(nodes_name "$i"); done
	echo "$out"
}

nodes_net_up() {	# nodes_net_up N
	local i ns
	ip netns add "$nodes_head"
	echo "$nodes_head" >"$dir/run/netns"
	ip -n "$nodes_head" link set lo up
	ip -n "$nodes_head" link add br0 type bridge
	ip -n "$nodes_head" addr add "$nodes_net.1/24" dev br0
	ip -n "$nodes_head" link set br0 up
	for i in $(seq "$1"); do
		ns=$(nodes_netns "$i")
		ip netns add "$ns"
		echo "$ns $(nodes_name "$i")" >>"$dir/run/netns"
		ip -n "$ns" link set lo up
		ip -n "$nodes_head" link add "v$i" type veth peer name eth0 netns "$ns"
		ip -n "$nodes_head" link set "v$i" master br0 up
		ip -n "$ns" addr add "$(nodes_addr "$i")/24" dev eth0
		ip -n "$ns" link set eth0 up
	done
}

# Deleting a namespace with no process left in it removes its veth end,
# and so the pair.
nodes_net_down() {
	local ns _
	[ -f "$dir/run/netns" ] || return 0
	while read -r ns _; do
		ip netns del "$ns" 2>/dev/null || true
	done <"$dir/run/netns"
	rm -f "$dir/run/netns"
}

nodes_head_ns() { sed -n 1p "$dir/run/netns" 2>/dev/null || true; }
nodes_ns_of() {		# nodes_ns_of NODE-NAME: its netns
	awk -v n="$1" '$2 == n { print $1 }' "$dir/run/netns" 2>/dev/null || true
}

nodes_start_daemons() {	# nodes_start_daemons N
	local i name
	nsenter --net="/run/netns/$nodes_head" slurmctld -i
	for _ in $(seq 50); do pid_alive "$dir/run/slurmctld.pid" && break; sleep 0.1; done
	pid_alive "$dir/run/slurmctld.pid" ||
		die "slurmctld did not start (see $dir/log/slurmctld.log)"
	for i in $(seq "$1"); do
		name=$(nodes_name "$i")
		mkdir -p "$dir/tmp/$name"
		nsenter --net="/run/netns/$(nodes_netns "$i")" unshare --uts \
			sh -c 'hostname "$1" && exec slurmd -N "$1"' sh "$name"
	done
	for i in $(seq "$1"); do
		name=$(nodes_name "$i")
		for _ in $(seq 50); do pid_alive "$dir/run/slurmd-$name.pid" && break; sleep 0.1; done
		pid_alive "$dir/run/slurmd-$name.pid" ||
			die "slurmd of $name did not start (see $dir/log/slurmd-$name.log)"
	done
	log "slurmctld and $1 slurmd started"
}

nodes_wait_idle() {	# nodes_wait_idle N
	local up
	for _ in $(seq 150); do
		up=$(nsenter --net="/run/netns/$nodes_head" sinfo -h -N \
			-n "$(nodes_list "$1")" -o %t 2>/dev/null |
			grep -cE '^(idle|mix|alloc)') || true
		[ "$up" = "$1" ] && { log "nodes $(nodes_list "$1") are up"; return 0; }
		sleep 0.2
	done
	nsenter --net="/run/netns/$nodes_head" sinfo -N >&2 || true
	die "the nodes did not become idle (see $dir/log/)"
}

# Stop: jobs cancelled first (a job recovered at the next start would hold
# its nodes), then every daemon at once; then the namespaces.
nodes_stop() {
	local head pids=() f pid jobs
	head=$(nodes_head_ns)
	[ -n "$head" ] || return 0
	if pid_alive "$dir/run/slurmctld.pid"; then
		jobs=$(SLURM_CONF=$conf nsenter --net="/run/netns/$head" \
			timeout 10 squeue -h -o %A 2>/dev/null) || true
		# shellcheck disable=SC2086
		[ -z "$jobs" ] || SLURM_CONF=$conf nsenter --net="/run/netns/$head" \
			timeout 10 scancel $jobs 2>/dev/null || true
		for _ in $(seq 50); do
			[ -n "$jobs" ] || break
			SLURM_CONF=$conf nsenter --net="/run/netns/$head" timeout 5 \
				squeue -h 2>/dev/null | grep -q . || break
			sleep 0.1
		done
	fi
	for f in "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid"; do
		pid=$(read_pid "$f")
		[ -n "$pid" ] && kill "$pid" 2>/dev/null && pids+=("$pid")
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	done
	rm -f "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid"
	[ ${#pids[@]} -eq 0 ] || log "stopped slurmctld and the nodes' slurmd"
	nodes_net_down
}

# exec [--node NAME] -- CMD...: CMD in the head namespace (the clients'
# place: srun, sbatch, sinfo, commap, curl to a service on the bridge) or
# in NAME's namespace, with SLURM_CONF set.
nodes_exec() {
	local ns
	ns=$(nodes_head_ns)
	if [ "${1:-}" = --node ]; then
		ns=$(nodes_ns_of "${2:-}")
		[ -n "$ns" ] || die "no node '${2:-}' in this cluster"
		shift 2
	fi
	[ "${1:-}" = -- ] && shift
	[ $# -gt 0 ] || die "exec: no command"
	export SLURM_CONF=$conf
	[ -n "$ns" ] || exec "$@"	# a one-node cluster: here
	exec nsenter --net="/run/netns/$ns" "$@"
}
