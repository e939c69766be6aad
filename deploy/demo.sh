#!/usr/bin/env bash
# README command 1: set up commap on this machine and run the demo.
#
#  1. installs the Debian packages (deploy/install-deps.sh), builds commap
#     and installs it under $PREFIX (/usr/local): the commap command, the
#     node agent, the SPANK plugin, the service;
#  2. starts munge, a one-node Slurm cluster whose plugstack.conf loads the
#     plugin (deploy/cluster/cluster.sh) and the commap service
#     (deploy/service/service.sh);
#  3. runs two jobs with --commap=dynamic: threads in producer/consumer
#     pairs, and MPI ranks exchanging through shared memory (srun
#     --mpi=pmix);
#  4. shows what commap found and did: `commap jobs` and `commap report`,
#     and prints a one-time link to the web reports (`commap web`).
#
# Idempotent: a second run rebuilds, reinstalls and restarts everything.
# deploy/demo.sh stop stops the daemons.  Run as root.
# deploy/demo.sh --installed uses the Debian packages installed instead
# (docs/install.md) and builds only the demo applications.
# deploy/demo.sh --nodes N: N Slurm nodes on this machine and one job of
# MPI ranks and OpenMP threads across them (deploy/demo-nodes.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
installed=no
[ "${1:-}" = --installed ] && { installed=yes; shift; }
nodes=1
[ "${1:-}" = --nodes ] && { nodes=${2:-}; shift 2 || shift; }
case $nodes in [1-9]|[1-9][0-9]) ;; *) echo "demo: --nodes wants 1 to 99 nodes, not '$nodes'" >&2; exit 2 ;; esac
prefix=${PREFIX:-/usr/local}
[ $installed = no ] || prefix=/usr
spool=/var/spool/commap
# SLURM_CONF_DIR and COMMAP_SERVICE_LISTEN (as for cluster.sh and
# service.sh) keep a second demo apart from the first.
conf_dir=${SLURM_CONF_DIR:-/etc/slurm}
service_url=http://${COMMAP_SERVICE_LISTEN:-127.0.0.1:7733}
export COMMAP_PREFIX=$prefix

if [ "${1:-}" = stop ]; then
	bash "$top/deploy/service/service.sh" stop
	bash "$top/deploy/demo-nodes.sh" stop
	bash "$top/deploy/cluster/cluster.sh" stop
	exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root" >&2; exit 1; }

say() { printf '\n== %s\n' "$*"; }

bash "$top/deploy/install-deps.sh"

if [ $installed = no ]; then say "building and installing commap in $prefix"
else say "commap from the installed packages; building the demo applications"; fi
cd "$top"
[ -x configure ] && [ ! configure.ac -nt configure ] || ./autogen.sh >/dev/null 2>&1
build=${COMMAP_DEMO_BUILD:-$top/build-demo}	# with --installed: any configured tree
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" -q --prefix="$prefix"
plugin=$prefix/lib/commap/commap_spank.so
if [ $installed = no ]; then
	make -j"$(nproc)" >/dev/null
	make install >/dev/null
else
	plugin=$(dpkg -L commap-node | grep '/commap_spank\.so$')
fi
# The demo applications are the test workloads (tests/workloads/README.md).
make -j"$(nproc)" tests/workloads/wl-threads tests/workloads/wl-mpi >/dev/null
wl=$build/tests/workloads
commap=$prefix/bin/commap
echo "installed: $($commap --version); agent $prefix/libexec/commap/commap-agent;" \
	"plugin $plugin; service $prefix/sbin/commap-service"
[ "$nodes" = 1 ] || { export DEMO_PLUGIN=$plugin DEMO_BUILD=$build DEMO_SPOOL=$spool
	exec bash "$top/deploy/demo-nodes.sh" "$nodes"; }

say "starting munge, slurmctld, slurmd and the commap service"
mkdir -p "$conf_dir" "$spool"
# root's only: the agent refuses a spool others can write to
chown root:root "$spool" && chmod 0700 "$spool"
echo "optional $plugin default=off service=$service_url spool=$spool" \
	>"$conf_dir/plugstack.conf"
bash "$top/deploy/demo-nodes.sh" stop	# the service of a --nodes demo, if any
bash "$top/deploy/cluster/cluster.sh" start
bash "$top/deploy/service/service.sh" start
export SLURM_CONF=$conf_dir/slurm.conf
# The workloads must be readable by slurmd's job user (root here).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Each job writes its id where the demo can find it, then execs the
# application (the task keeps its pid: the agent follows it).
run_job() {	# run_job NAME SRUN-ARGS... -- PROGRAM ARGS...
	local name=$1; shift
	local args=()
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	srun "${args[@]}" -J "$name" bash -c \
		'[ "${SLURM_PROCID:-0}" = 0 ] && echo "$SLURM_JOB_ID" >"$0"; exec "$@"' \
		"$work/$name.id" "$@"
	cat "$work/$name.id"
}
work=$(mktemp -d /tmp/commap-demo.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

say "job 1: 8 threads in 4 producer/consumer pairs on 2 CPUs"
echo "\$ srun --commap=dynamic -c 2 wl-threads --pattern pairs --threads 8 --seconds 4"
job1=$(run_job demo-pairs --commap=dynamic -c 2 -- "$wl/wl-threads" \
	--pattern pairs --threads 8 --seconds 4)
say "job 2: 2 MPI ranks x 2 OpenMP threads in a ring across ranks"
echo "\$ srun --mpi=pmix -n 2 --commap=dynamic wl-mpi --pattern ring --threads 2 --seconds 4"
job2=$(run_job demo-mpi --mpi=pmix -n 2 --commap=dynamic -- "$wl/wl-mpi" \
	--pattern ring --threads 2 --seconds 4)

# The agents upload when their step ends: wait for both reports.
for job in "$job1" "$job2"; do
	for _ in $(seq 50); do
		$commap report "$job" --service "$service_url" --format json \
			>/dev/null 2>&1 && break
		sleep 0.2
	done
done

say "what commap knows: commap jobs"
$commap jobs --service "$service_url" --limit 5
for job in "$job1" "$job2"; do
	say "commap report $job"
	$commap report "$job" --service "$service_url"
done
say "done (deploy/demo.sh stop stops the daemons); the reports are also on the web:"
# A one-time login link (root's: every job); the bare URL would answer
# 401 in a browser.
$commap web --service "$service_url" ||
	echo "(no login link: open $service_url/jobs with a munge credential, docs/reports.md)"
