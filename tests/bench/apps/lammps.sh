# LAMMPS under the agent; sourced by run-apps.sh.
#
# Debian's `lammps`: the MPI build, Open MPI.  Debian builds it without
# the OPENMP package (`lmp -h` lists no OPENMP among the installed
# packages and no /omp styles), so there is no OpenMP run.  Its "melt"
# example on a fixed 2 x 2 x 2 processor grid (in.lj-grid), 8 ranks.
# Expected: each rank with its 3 grid neighbours (ranks differing in one
# coordinate; the same for LAMMPS's x-fastest and MPI_Cart's z-fastest
# orders on 2 x 2 x 2): the cube's 12 edges.

lammps_bench() {
	local k
	need_pkg lmp lammps
	"$fig" truth cube >"$T/lammps.truth"
	for k in 1 2; do
		under_agent lammps "$k" "$T" \
			mpirun --oversubscribe --bind-to none -np 8 lmp \
			-in "$here/in.lj-grid" -var steps "$steps" -log none \
			-screen none
	done
	report lammps "LAMMPS melt, 8 ranks, 2x2x2, $steps steps" rank
}
