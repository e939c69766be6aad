#!/usr/bin/env bash
# Install the Debian 12 packages commap needs to build and test.
# Idempotent; run as root.  Starts no daemons.
set -euo pipefail

packages=(
	# build
	build-essential autoconf automake libtool pkg-config
	# core library and CLI
	libhwloc-dev hwloc libjansson-dev
	# node agent: instruction decoding for address sampling
	libcapstone-dev
	# mapping benchmark baseline
	libscotch-dev
	# central service and uploads
	libmicrohttpd-dev libsqlite3-dev sqlite3 libcurl4-openssl-dev curl
	# learned mappings: SHA-256 of executables (libcrypto)
	libssl-dev
	# Slurm integration: SPANK headers, a local cluster for the e2e tests
	libslurm-dev slurm-wlm slurmctld slurmd slurm-client munge libmunge-dev
	# MPI jobs and workloads: Open MPI launched by srun --mpi=pmix
	openmpi-bin libopenmpi-dev libpmix-dev
	# MPICH for the message-passing test (mpicc.mpich, mpiexec.mpich; Open
	# MPI keeps mpicc and mpirun: its alternatives rank higher)
	mpich libmpich-dev
	# tests: integration scripts parse JSON with python3; fuzzing uses clang;
	# the report page is loaded in headless Chromium; the manual pages are
	# checked with groff
	python3 clang libclang-rt-14-dev chromium groff-base
	# Debian packages of commap (debian/, deploy/packages/try-packages.sh)
	debhelper lintian
)

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root (apt-get install)" >&2
	exit 1
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#packages[@]} packages present"
	exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
