# e2e-lib.sh: sourced by the end-to-end tests.  TAP output, and a private
# one-node Slurm cluster (deploy/cluster/cluster.sh) on its own ports and
# directories, so it can run beside a demo cluster; stopped on exit.
#
# Tests that cannot run here (not root, Slurm not installed) print a TAP
# skip plan naming the reason.

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir/build}"
tap_n=0
tap_failed=0

ok() {	# ok CONDITION-STATUS DESCRIPTION
	local status=$1; shift
	tap_n=$((tap_n + 1))
	if [ "$status" -eq 0 ]; then echo "ok $tap_n - $*"
	else echo "not ok $tap_n - $*"; tap_failed=$((tap_failed + 1)); fi
}
diag() { echo "# $*"; }
done_testing() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

# free_port_pair BASE: a free pair of ports from BASE on.
. "$top_srcdir/deploy/cluster/free-port.sh"

e2e_require_cluster() {
	[ "$(id -u)" -eq 0 ] || skip_all "needs root to run a Slurm cluster"
	command -v slurmctld >/dev/null && command -v srun >/dev/null ||
		skip_all "Slurm is not installed (deploy/install-deps.sh)"
	[ -f "$top_builddir/spank/.libs/commap_spank.so" ] ||
		skip_all "the SPANK plugin was not built"
}

# e2e_cluster_start PLUGSTACK-ARGS...: a fresh cluster whose plugstack
# loads the plugin from the build tree with these arguments.
# E2E_CLUSTER_OPTS=--cgroup: proctrack/cgroup and task/cgroup instead of
# proctrack/linuxproc.
e2e_cluster_start() {
	E2E_DIR=$(mktemp -d /tmp/commap-e2e.XXXXXX)
	chmod 755 "$E2E_DIR"
	export COMMAP_CLUSTER_DIR=$E2E_DIR/var
	export SLURM_CONF_DIR=$E2E_DIR/etc
	export SLURM_CONF=$SLURM_CONF_DIR/slurm.conf
	# Ports found free here are taken by the daemons seconds later: a lock
	# over both keeps clusters starting at the same time (make -j, another
	# build tree) from finding the same ones.  The daemons never hold it.
	exec {e2e_port_lock}>>/tmp/commap-e2e-ports.lock
	flock "$e2e_port_lock"
	if [ -z "${COMMAP_SLURMCTLD_PORT:-}" ]; then
		COMMAP_SLURMCTLD_PORT=$(free_port_pair "${E2E_PORT_FROM:-16817}") ||
			COMMAP_SLURMCTLD_PORT=${E2E_PORT_FROM:-16817}
		COMMAP_SLURMD_PORT=$((COMMAP_SLURMCTLD_PORT + 1))
	fi
	export COMMAP_SLURMCTLD_PORT
	export COMMAP_SLURMD_PORT=${COMMAP_SLURMD_PORT:-$((COMMAP_SLURMCTLD_PORT + 1))}
	# job ids of its own (cluster.sh: Open MPI's segments are named by them)
	export COMMAP_FIRST_JOB_ID=$((COMMAP_SLURMCTLD_PORT * 100))
	mkdir -p "$SLURM_CONF_DIR"
	e2e_plugstack "$@"
	trap e2e_cluster_stop EXIT
	bash "$top_srcdir/deploy/cluster/cluster.sh" start ${E2E_CLUSTER_OPTS:-} \
		>"$E2E_DIR/cluster.log" 2>&1 {e2e_port_lock}>&- || {
		cat "$E2E_DIR/cluster.log" >&2
		echo "Bail out! the test cluster did not start"
		exit 1
	}
	exec {e2e_port_lock}>&-
}

# Rewrite plugstack.conf; slurmstepd rereads it for every step.  srun
# loads the plugin as the user who runs it, and a build tree in a private
# directory (a clone in a mktemp -d, or under /root) is closed to other
# users: the plugin is loaded from a world-readable copy in E2E_DIR.
e2e_plugstack() {
	install -m 755 "$top_builddir/spank/.libs/commap_spank.so" \
		"$E2E_DIR/commap_spank.so" || return 1
	echo "optional $E2E_DIR/commap_spank.so $*" \
		>"$SLURM_CONF_DIR/plugstack.conf"
}

e2e_cluster_stop() {
	bash "$top_srcdir/deploy/cluster/cluster.sh" stop >/dev/null 2>&1 || true
	[ -n "${E2E_KEEP:-}" ] || rm -rf "$E2E_DIR"
}

# wait_job JOB: until the job has left the queue, at most 120 s.  A batch
# job starting mpirun takes a few seconds on a quiet machine but several
# times that under load; 120 s only catches a hung job.
wait_job() {
	for _ in $(seq 1200); do
		squeue -h -j "$1" 2>/dev/null | grep -q . || return 0
		sleep 0.1
	done
	return 1
}

# wait_for CMD...: up to 30 s for a condition.  A step's agent starts in
# well under a second on a quiet node; under the sanitizers beside other
# work it has taken over 10 s.  Only a missing outcome waits that long.
wait_for() {
	for _ in $(seq 300); do "$@" && return 0; sleep 0.1; done
	return 1
}

# in_cluster CMD...: CMD as a client of the test cluster (srun, squeue,
# scontrol; with E2E_CLUSTER_OPTS="--nodes N", in the cluster's head
# network namespace: deploy/cluster/cluster.sh exec).
in_cluster() { bash "$top_srcdir/deploy/cluster/cluster.sh" exec -- "$@"; }
