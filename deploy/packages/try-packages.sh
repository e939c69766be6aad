#!/usr/bin/env bash
# Builds commap's Debian packages from this tree, installs them, runs the
# demo's jobs with them and purges them: the packages' own test.
#
#   deploy/packages/try-packages.sh [--head] [--keep]
#
#   --head   build the last commit instead of the working tree
#   --keep   keep the scratch directory (the .deb files, build and demo logs)
#
# Steps: the build dependencies (deploy/install-deps.sh); a copy of the tree
# in a scratch directory; dpkg-buildpackage -us -uc -b there; lintian (its
# errors fail); apt-get install ./*.deb; the paths docs/install.md lists
# checked against dpkg -L, the conffiles and what the maintainer scripts
# made (spool, system user); commap-service run as its system user with
# the packaged configuration; deploy/demo.sh --installed on a cluster,
# service and ports of its own (the demo's daemons, if running, are left
# alone); one job through the packaged plugstack.conf.d line, with the
# service named in /etc/commap/commap.conf as a site does; apt-get purge;
# then no packaged file and no process of the run may be left.  Exits non-zero with a line naming the first failure.
#
# Configuration files of a source install that the packages would own
# (/etc/commap/*.conf, /etc/slurm/plugstack.conf.d/commap.conf) are moved
# aside while the packages are installed and put back afterwards.
# Run as root on Debian 12; commap's packages must not be installed.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
packages=(commap commap-node commap-service)
# Files a source install may hold that would collide with conffiles.
owned_etc=(/etc/commap/commap.conf /etc/commap/service.conf
	/etc/slurm/plugstack.conf.d/commap.conf)

from=worktree keep=no
for arg in "$@"; do
	case $arg in
	--head) from=head ;;
	--keep) keep=yes ;;
	*) echo "usage: $0 [--head] [--keep]" >&2; exit 2 ;;
	esac
done

step() { printf '\n== try-packages: %s (at %d s)\n' "$*" "$SECONDS"; }
die() { echo "try-packages: FAIL: $*" >&2; exit 1; }
apt_get() {	# apt-get that waits for another apt or dpkg to finish
	DEBIAN_FRONTEND=noninteractive apt-get -y -q \
		-o DPkg::Lock::Timeout=600 "$@"
}
installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

[ "$(id -u)" -eq 0 ] || die "run as root (it installs packages)"
for p in "${packages[@]}"; do
	installed "$p" && die "$p is installed already; this script installs" \
		"and purges the packages itself (apt-get purge ${packages[*]} first)"
done

work=$(mktemp -d /tmp/commap-try-packages.XXXXXX)
chmod 755 "$work"	# slurmd's job user reads the demo's workloads here
src=$work/commap
build=$src/debian/build	# dh's build directory (debian/rules)
we_installed=no
moved=()
demo_env=()
service_pid=

# Only this run's daemons: demo.sh stop would stop other demos' as well.
demo_stop() {
	env "${demo_env[@]}" bash "$src/deploy/service/service.sh" stop
	env "${demo_env[@]}" bash "$src/deploy/cluster/cluster.sh" stop
}

cleanup() {
	local rc=$? f
	set +e
	[ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null
	[ ${#demo_env[@]} -eq 0 ] || demo_stop >/dev/null 2>&1
	if [ $we_installed = yes ]; then
		apt_get purge "${packages[@]}" >/dev/null 2>&1
	fi
	for f in "${moved[@]}"; do
		mv -f "$f.try-packages" "$f" && echo "try-packages: put back $f"
	done
	if [ $keep = yes ] || [ $rc -ne 0 ]; then
		echo "try-packages: scratch directory kept: $work" >&2
	else
		rm -rf "$work"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "build dependencies"
bash "$top/deploy/install-deps.sh"

step "copying the tree ($from) to $src"
mkdir "$src"
if [ $from = head ]; then
	git -C "$top" archive HEAD | tar -C "$src" -xf -
elif git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	# Tracked and new files as they are now; no build directories.
	(cd "$top" && git ls-files -z -c -o --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
		tar -C "$src" -xf -
else
	tar -C "$top" --exclude='./build*' --exclude=./debian/tmp -cf - . |
		tar -C "$src" -xf -
fi

step "dpkg-buildpackage -us -uc -b"
# nocheck: the suite starts clusters as root (tests/run.sh runs it);
# noddebs: no debug-symbol packages, which this test does not install.
(cd "$src" && DEB_BUILD_OPTIONS="nocheck noddebs" \
	dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) || {
	tail -n 30 "$work/build.log" >&2
	die "dpkg-buildpackage failed (log: $work/build.log)"
}
debs=()
for p in "${packages[@]}"; do
	f=$(ls "$work/${p}_"*.deb 2>/dev/null | head -n 1)
	[ -n "$f" ] || die "dpkg-buildpackage made no package $p"
	debs+=("$f")
done
ls -l "${debs[@]}"

if command -v lintian >/dev/null; then
	step "lintian"
	# An error tag fails; warnings are printed, not fatal.
	rc=0
	lintian --fail-on error "$work"/commap_*.changes >"$work/lintian.log" 2>&1 || rc=$?
	grep -v 'running with root privileges' "$work/lintian.log" || true
	[ $rc -eq 0 ] || die "lintian reports errors (above)"
else
	step "lintian not installed: skipped"
fi

step "apt-get install ${debs[*]##*/}"
for f in "${owned_etc[@]}"; do
	if [ -e "$f" ] && ! dpkg -S "$f" >/dev/null 2>&1; then
		mv "$f" "$f.try-packages"
		moved+=("$f")
		echo "try-packages: moved aside $f (not from a package)"
	fi
done
we_installed=yes
apt_get install "${debs[@]}" >"$work/install.log" 2>&1 || {
	tail -n 20 "$work/install.log" >&2
	die "apt-get install of the packages failed"
}
for p in "${packages[@]}"; do
	installed "$p" || die "$p is not installed after apt-get install"
done

step "contents: the paths docs/install.md lists"
# The copy's, which the packages were built from (--head included).
bash "$src/deploy/packages/check-contents.sh" "$src/docs/install.md"

step "commap-service as the system user commap, packaged settings"
# As systemd would run it (the unit's drop-in names User=commap), on a
# port of its own and a database beside the default one.
db=/var/lib/commap/try-packages.db
runuser -u commap -- /usr/sbin/commap-service --foreground \
	--config /etc/commap/service.conf --listen 127.0.0.1:0 --database "$db" \
	>"$work/user-service.log" 2>&1 &
service_pid=$!
port=
for _ in $(seq 150); do
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' \
		"$work/user-service.log" | head -n 1)
	[ -n "$port" ] && break
	kill -0 "$service_pid" 2>/dev/null || break
	sleep 0.2
done
[ -n "$port" ] || { cat "$work/user-service.log" >&2
	die "commap-service did not start as user commap with /etc/commap/service.conf"; }
curl -fsS --max-time 10 "http://127.0.0.1:$port/healthz" >/dev/null ||
	die "commap-service as user commap does not answer /healthz on port $port"
[ "$(stat -c %U "$db")" = commap ] || die "$db is not owned by commap"
kill "$service_pid"
wait "$service_pid" 2>/dev/null || true
service_pid=
rm -f "$db" "$db-wal" "$db-shm"
echo "commap-service ran as commap on port $port and stopped on SIGTERM"

step "the demo's jobs with the installed packages (deploy/demo.sh --installed)"
# A cluster, service and ports of its own: a demo or test cluster already
# running on this machine keeps its own.
. "$top/deploy/cluster/free-port.sh"
ctld_port=$(free_port_pair 26817 || true)
svc_port=$(free_port_pair 27733 || true)
[ -n "$ctld_port" ] && [ -n "$svc_port" ] || die "no free ports for the demo"
demo_env=(SLURM_CONF_DIR="$work/slurm" COMMAP_CLUSTER_DIR="$work/cluster"
	COMMAP_SLURMCTLD_PORT="$ctld_port" COMMAP_SLURMD_PORT=$((ctld_port + 1))
	COMMAP_FIRST_JOB_ID=$((ctld_port * 100))
	COMMAP_SERVICE_DIR="$work/service" COMMAP_SERVICE_CONF="$work/service/service.conf"
	COMMAP_SERVICE_LISTEN="127.0.0.1:$svc_port" COMMAP_DEMO_BUILD="$build")
env "${demo_env[@]}" bash "$src/deploy/demo.sh" --installed 2>&1 |
	tee "$work/demo.log" || die "the demo with the installed packages failed"
grep -q "plugin /usr/lib/.*/slurm-wlm/commap_spank.so" "$work/demo.log" ||
	die "the demo did not use the packaged plugin"
n=$(grep -c '^== commap report ' "$work/demo.log" || true)
[ "$n" -eq 2 ] || die "the demo printed $n reports, not 2"
# The agents that ran were the packaged one, started by the packaged plugin.
for job in $(sed -n 's/^== commap report \([0-9]*\)$/\1/p' "$work/demo.log"); do
	ls /var/spool/commap/agent-"$job".* >/dev/null 2>&1 ||
		die "no agent log of job $job in /var/spool/commap"
done

step "a job through the packaged plugstack.conf.d line and /etc/commap/commap.conf"
# As a site enables it: Debian's plugstack.conf includes the directory,
# the site names its service in commap.conf; the plugin's defaults give
# the agent and the spool.
echo 'include /etc/slurm/plugstack.conf.d/*.conf' >"$work/slurm/plugstack.conf"
sed -i "s|^service=.*|service=http://127.0.0.1:$svc_port|" /etc/commap/commap.conf
SLURM_CONF=$work/slurm/slurm.conf srun --commap=dynamic -c 2 -J pkg-conf \
	bash -c 'echo "job=$SLURM_JOB_ID"; exec "$@"' job "$build/tests/workloads/wl-threads" \
	--pattern pairs --threads 4 --seconds 2 >"$work/conf-job.log" 2>&1 || {
	cat "$work/conf-job.log" >&2
	die "srun --commap=dynamic failed with the packaged plugstack line"
}
job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$work/conf-job.log")
[ -n "$job" ] || die "no job id from the job with the packaged plugstack line"
for _ in $(seq 150); do
	/usr/bin/commap report "$job" --service "http://127.0.0.1:$svc_port" \
		--format json >"$work/conf-job.json" 2>/dev/null && break
	sleep 0.2
done
grep -q '"mode": *"dynamic"' "$work/conf-job.json" || {
	cat "$work/conf-job.json" /var/spool/commap/agent-"$job".* >&2 || true
	die "job $job (packaged plugstack line) has no dynamic result at the service"
}
echo "job $job: agent started by the packaged plugstack line, result at the service"

pids=$(cat "$work"/cluster/run/*.pid "$work/service/service.pid" 2>/dev/null || true)
demo_stop
demo_env=()

step "apt-get purge ${packages[*]}"
files=$(dpkg -L "${packages[@]}" | while read -r f; do
	[ -f "$f" ] && echo "$f"; done)
we_installed=no
apt_get purge "${packages[@]}" >"$work/purge.log" 2>&1 || {
	tail -n 20 "$work/purge.log" >&2
	die "apt-get purge failed"
}
for p in "${packages[@]}"; do
	# A purged package is unknown to dpkg, or "not-installed".
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case $st in
	''|*not-installed) ;;
	*) die "$p is still known to dpkg after purge: $st" ;;
	esac
done
for f in $files; do
	[ -e "$f" ] && die "$f is left after purge"
done
for pid in $pids; do
	kill -0 "$pid" 2>/dev/null && die "process $pid of the demo is still running"
done
left=$(find /proc/[0-9]*/exe -maxdepth 0 \( -lname '/usr/sbin/commap-service*' \
	-o -lname '/usr/libexec/commap/*' \) 2>/dev/null || true)
[ -z "$left" ] || die "packaged programs still running: $left"
echo "try-packages: ok: built, installed, ran the demo's jobs, purged (${SECONDS} s)"
