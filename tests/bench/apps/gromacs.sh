# GROMACS under the agent; sourced by run-apps.sh.
#
# Debian's `gromacs` (2022.5): `gmx` with thread-MPI and OpenMP, and
# `gmx_mpi` with Open MPI.  Input: a 4 nm box of SPC/E water (2,165
# molecules, 6,495 atoms) made with `gmx solvate` from GROMACS's own
# spc216.gro and water.top, water.mdp (reaction-field, no PME, so no PME
# ranks and no FFT all-to-all).
#
# Three runs of 8 threads or ranks:
#   tmpi  gmx mdrun -ntmpi 8 -ntomp 1 -dd 2 2 2 -npme 0: 8 thread-MPI
#         ranks, threads of one process (created in rank order: the main
#         thread is rank 0), so their messages are copies through shared
#         memory that only sampled addresses can see (no CMA).
#   mpi   mpirun -np 8 gmx_mpi mdrun -ntomp 1 -dd 2 2 2 -npme 0: the same
#         decomposition over Open MPI processes (CMA for large messages).
#   omp   gmx mdrun -ntmpi 1 -ntomp 8: one rank, 8 OpenMP threads.
#
# Expected, tmpi and mpi: md.log says "Domain decomposition grid 2 x 2 x
# 2, separate PME ranks 0" (checked after each run).  GROMACS's
# eighth-shell halo exchange sends coordinates and receives forces along
# each decomposed dimension in turn, to the neighbouring cell only
# (GROMACS reference manual, "Domain decomposition"); with 2 cells per
# dimension both neighbours in a dimension are one rank, so a rank talks
# to the 3 ranks whose cell coordinates differ in one place: the cube's 12
# edges (for GROMACS's z-fastest rank order as for any other).  Global
# reductions (energies every nstcalcenergy = 100 steps) add all-to-one
# traffic that the pattern leaves out.
# Expected, omp: GROMACS documents no thread-to-thread pattern (pair-list
# work is split over threads and the per-thread force buffers are reduced
# by all); the truth used is "all pairs alike", so the cosine measures how
# flat the matrix is, and only repeatability is a yardstick.

gromacs_prepare() {
	local d="$T/gromacs"
	[ -f "$d/water.tpr" ] && return 0
	need_pkg gmx gromacs
	mkdir -p "$d"
	gmx -quiet solvate -cs spc216.gro -box 4 4 4 -o "$d/water.gro" \
		>"$d/solvate.log" 2>&1
	cp "$here/water.top" "$d/water.top"
	echo "SOL $(( ($(wc -l <"$d/water.gro") - 3) / 3 ))" >>"$d/water.top"
	gmx -quiet grompp -f "$here/water.mdp" -c "$d/water.gro" \
		-p "$d/water.top" -po "$d/mdout.mdp" -o "$d/water.tpr" \
		>"$d/grompp.log" 2>&1
}

# gromacs_check LOG: the decomposition the pattern assumes.
gromacs_check() {
	grep -q "Domain decomposition grid 2 x 2 x 2, separate PME ranks 0" \
		"$1" || {
		echo "gromacs.sh: $1: not a 2 x 2 x 2 grid without PME ranks:" \
			"$(grep "Domain decomposition grid" "$1")" >&2
		exit 1
	}
}

gromacs_bench() {
	local mode=$1 name="gromacs-$1" k n units=thread pattern=cube label
	local d="$T/gromacs"
	gromacs_prepare
	case $mode in
	tmpi) n=${GMX_TMPI_STEPS:-20}
		label="GROMACS water, 8 thread-MPI ranks, 2x2x2, $n steps" ;;
	mpi) n=${GMX_MPI_STEPS:-100}; units=rank
		label="GROMACS water, 8 Open MPI ranks, 2x2x2, $n steps" ;;
	omp) n=${GMX_OMP_STEPS:-1000}; pattern=all:8
		label="GROMACS water, 1 rank x 8 OpenMP threads, $n steps" ;;
	esac
	"$fig" truth "$pattern" >"$T/$name.truth"
	for k in 1 2; do
		case $mode in
		tmpi) under_agent "$name" "$k" "$d" gmx -quiet mdrun \
			-s water.tpr -deffnm "$mode$k" -ntmpi 8 -ntomp 1 \
			-dd 2 2 2 -npme 0 -pin off -nsteps "$n" ;;
		mpi) under_agent "$name" "$k" "$d" mpirun --oversubscribe \
			--bind-to none -np 8 gmx_mpi -quiet mdrun \
			-s water.tpr -deffnm "$mode$k" -ntomp 1 \
			-dd 2 2 2 -npme 0 -pin off -nsteps "$n" ;;
		omp) under_agent "$name" "$k" "$d" gmx -quiet mdrun \
			-s water.tpr -deffnm "$mode$k" -ntmpi 1 -ntomp 8 \
			-pin off -nsteps "$n" ;;
		esac
		[ "$mode" = omp ] || gromacs_check "$d/$mode$k.log"
	done
	report "$name" "$label" "$units"
}
