# HPCC under the agent; sourced by run-apps.sh.
#
# Debian's `hpcc` (1.5.0, Open MPI), 8 ranks, hpccinf.txt written below:
# HPL with N = $HPCC_N (default 1500), NB = 80, a 2 x 4 process grid in
# row-major order (PMAP 0: rank = p * 4 + q), 1-ring-modified panel
# broadcast, mixed row swapping.  HPCC 1.5 runs all its tests in one
# fixed order (RandomAccess, PTRANS, DGEMM, STREAM, FFT, the latency and
# bandwidth rings, then HPL last) and has no switch to skip one, and the
# tests before HPL have patterns of their own (RandomAccess and FFT: all
# to all; b_eff: natural and random rings).  So the agent is attached
# (commap-agent --pid, as the Slurm plugin attaches it) to the ranks when
# hpccoutf.txt says "Begin of HPL section", and follows them to the end:
# the matrix is HPL's alone.
#
# Expected (HPL's documentation, "the algorithm"): the panel is factored
# within a process column and broadcast along process rows; pivot rows
# are swapped and U broadcast within process columns.  So ranks of one
# process row (same p) and of one process column (same q) communicate,
# and no other pair: on 2 x 4, 6 pairs in each of the 2 rows and 1 pair in
# each of the 4 columns, 16 of the 28 pairs (cosine_alt).  With the
# 1-ring broadcasts (BCAST 1rM, HPL.dat's documentation: "increasing
# ring (modified)") the panel travels around the ring of each row, so
# within a row only ring neighbours exchange it: 4 ring pairs per row and
# the 4 column pairs, 12 pairs (the truth, cosine).

hpcc_inf() {
	cat <<EOF
HPLinpack benchmark input file
written by run-apps.sh for the commap real-application yardstick
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
${HPCC_N:-1500}         Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
2            Ps
4            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200                    	values of N
0                       	number of additional blocking sizes for PTRANS
40                      	values of NB
EOF
}

# hpcc_run K: hpcc under mpirun; the agent follows the 8 ranks from the
# start of HPL to their end.
hpcc_run() {
	local k=$1 d="$T/hpcc$1" mp pids=() p i t0
	mkdir -p "$d"
	hpcc_inf >"$d/hpccinf.txt"
	rm -f "$d/hpccoutf.txt"
	(cd "$d" && exec mpirun --oversubscribe --bind-to none -np 8 hpcc \
		>"$d/mpirun.out" 2>&1) &
	mp=$!
	for i in $(seq 1 6000); do
		grep -q "Begin of HPL section" "$d/hpccoutf.txt" 2>/dev/null &&
			break
		kill -0 "$mp" 2>/dev/null || break
		sleep 0.1
	done
	for p in $(pgrep -P "$mp" -x hpcc); do
		[ "$(cat "/proc/$p/environ" 2>/dev/null | tr '\0' '\n' |
			grep -c "^OMPI_COMM_WORLD_RANK=")" -eq 1 ] &&
			pids+=(--pid "$p")
	done
	[ ${#pids[@]} -eq 16 ] || {
		echo "hpcc.sh: found $((${#pids[@]} / 2)) of 8 hpcc ranks at HPL" >&2
		kill "$mp" 2>/dev/null
		exit 1
	}
	t0=$(date +%s.%N)
	"$COMMAP_AGENT" --mode dynamic "${pids[@]}" --topology "$topo" \
		${period:+--period-us "$period"} --record "$T/hpcc$k.rec" \
		--output "$T/hpcc$k.json" >"$T/hpcc$k.out" 2>&1
	echo "$(date +%s.%N) - $t0" | bc >"$T/hpcc$k.wall"
	wait "$mp"
	grep -q "^HPL_nprow=2" "$d/hpccoutf.txt" &&
		grep -q "^HPL_npcol=4" "$d/hpccoutf.txt" || {
		echo "hpcc.sh: $d/hpccoutf.txt: not a 2 x 4 HPL grid" >&2
		exit 1
	}
}

hpcc_bench() {
	local k
	need_pkg hpcc hpcc
	"$fig" truth hplring:2x4 >"$T/hpcc.truth"
	"$fig" truth hpl:2x4 >"$T/hpcc.rowscols"
	for k in 1 2; do
		hpcc_run "$k"
	done
	report hpcc "HPCC's HPL, 8 ranks, 2x4, N=${HPCC_N:-1500}" rank \
		"$T/hpcc.rowscols"
}
