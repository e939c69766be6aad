#!/usr/bin/env bash
# t0730-accuracy: does the node agent find the communication pattern of
# workloads whose pattern is known (tests/workloads/README.md)?
#
# 1. compare-matrix itself, on hand-made result files (known answers);
# 2. the workloads' ground-truth files, read back by commap;
# 3. every workload under `commap run --output`: cosine similarity of the
#    detected matrix with the truth >= 0.9, no migrations for independent
#    threads, and the phase change remapped within 1 s of the switch.
#    Part 3 is skipped while `commap run` is not
#    built.  About 30 s on 2 idle cores (runs are in CPU time: longer on a
#    loaded machine).
. "$top_srcdir/tests/integration/tap.sh"

wl="$top_builddir/tests/workloads/wl-threads"
wl_mpi="$top_builddir/tests/workloads/wl-mpi"
cmp="$top_srcdir/tests/workloads/compare-matrix"
min_cosine=0.9

skip() {
	tap_count=$((tap_count + 1))
	echo "ok $tap_count - $1 # SKIP $2"
}

# result FILE THREADS EDGES [TIMELINE] [MIGRATIONS]: a hand-made agent
# result; THREADS is "rank:index:pid:tid ...".
result() {
	local out=$1 threads=$2 edges=$3 timeline=${4:-[]} mig=${5:-[]}
	python3 - "$out" "$threads" "$edges" "$timeline" "$mig" <<'EOF'
import json, sys
out, threads, edges, timeline, mig = sys.argv[1:]
th = []
for s in threads.split():
    r, i, p, t = (int(x) for x in s.split(":"))
    th.append({"rank": r, "index": i, "pid": p, "tid": t})
json.dump({"format": "commap-result", "version": 1, "threads": th,
           "edges": json.loads(edges), "timeline": json.loads(timeline),
           "migrations": json.loads(mig)}, open(out, "w"))
EOF
}

figure() {		# figure KEY: the value of KEY=... in $out
	printf '%s\n' "$out" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# --- 1. compare-matrix on known answers ---------------------------------
echo '{"format":"commap-matrix","version":1,"threads":4,"edges":[[0,1,2.0],[2,3,2.0]]}' >"$T/pairs.json"
printf '0 0 0 100 100\n1 0 1 100 101\n2 0 2 100 102\n3 0 3 100 103\n' >"$T/map"
result "$T/same.json" "0:0:100:100 0:1:100:101 0:2:100:102 0:3:100:103" \
	'[[0,1,7.0],[2,3,7.0]]'
run "$cmp" cosine --truth "$T/pairs.json" --map "$T/map" --min 0.9 "$T/same.json"
is "compare: same pattern, other scale: cosine 1" "$(figure cosine):$status" "1.0000:0"

# The agent listed the threads in another order (and mpirun's own thread
# with rank 0 index 0 first): matched by tid, not by position.
result "$T/perm.json" "0:0:99:99 0:3:100:103 0:0:100:100 0:2:100:102 0:1:100:101" \
	'[[0,1,50.0],[1,3,5.0],[2,4,5.0]]'
run "$cmp" cosine --truth "$T/pairs.json" --map "$T/map" "$T/perm.json"
is "compare: matched by tid, stray weight outside the truth" \
	"$(figure cosine) $(figure outside_weight) $(figure identity_mismatches)" \
	"1.0000 0.8333 0"

result "$T/wrong.json" "0:0:100:100 0:1:100:101 0:2:100:102 0:3:100:103" \
	'[[0,2,3.0],[1,3,3.0]]'
run "$cmp" cosine --truth "$T/pairs.json" --map "$T/map" --min 0.9 "$T/wrong.json"
is "compare: the other pairs: cosine 0, exit 1" "$(figure cosine):$status" "0.0000:1"

result "$T/half.json" "0:0:100:100 0:1:100:101 0:2:100:102 0:3:100:103" \
	'[[0,1,1.0],[0,2,1.0]]'
run "$cmp" cosine --truth "$T/pairs.json" --map "$T/map" "$T/half.json"
is "compare: one right, one wrong edge: cosine 0.5" "$(figure cosine)" "0.5000"

result "$T/ident.json" "0:0:100:100 0:2:100:101 0:1:100:102" '[[0,1,1.0]]'
run "$cmp" cosine --truth "$T/pairs.json" --map "$T/map" "$T/ident.json"
is "compare: identity mismatches and missing threads counted" \
	"$(figure identity_mismatches) $(figure missing)" "2 1"

run "$cmp" cosine --truth "$T/pairs.json" "$T/same.json"
is "compare: without a map, rank 0 creation order" "$(figure cosine)" "1.0000"

echo '{"format":"commap-matrix","version":1,"threads":2,"edges":[]}' >"$T/none.json"
result "$T/empty.json" "0:0:1:1 0:1:1:2" '[]'
run "$cmp" cosine --truth "$T/none.json" "$T/empty.json"
is "compare: no communication found where there is none: 1" "$(figure cosine)" "1.0000"

echo '{"format":"commap-matrix","version":2}' >"$T/bad.json"
run "$cmp" cosine --truth "$T/bad.json" "$T/same.json"
is "compare: a truth of unknown version is refused (exit 2)" "$status" 2
run "$cmp" cosine --truth "$T/pairs.json" "$T/pairs.json"
is "compare: a matrix given as the result is refused (exit 2)" "$status" 2

result "$T/mig.json" "0:0:1:1 0:1:1:2" '[]' '[]' \
	'[{"t":0.2,"thread":0,"from":0,"to":1},{"t":0.4,"thread":1,"from":1,"to":0}]'
run "$cmp" migrations "$T/mig.json"
is "compare: migrations counted" "$out" 2

# Phase 2 partners (0,2) (1,3); PUs 0-1 are core 0, 2-3 core 1.
echo '{"format":"commap-matrix","version":1,"threads":4,"edges":[[0,2,1.0],[1,3,1.0]]}' >"$T/p2.json"
result "$T/remap.json" "0:0:100:100 0:1:100:101 0:2:100:102 0:3:100:103" '[]' \
	'[{"t":0.2,"pu_of_thread":[0,1,2,3]},{"t":1.1,"pu_of_thread":[0,1,2,3]},
	  {"t":1.6,"pu_of_thread":[0,2,1,3]}]'
run "$cmp" remap --truth "$T/p2.json" --map "$T/map" --switch 1.0 "$T/remap.json"
is "compare: remap found 0.6 s after the switch" "$out:$status" \
	"remap_delay_s=0.600 t=1.600 reason=None:0"
run "$cmp" remap --truth "$T/p2.json" --switch 0.5 --within 1.0 "$T/remap.json"
is "compare: remap 1.1 s after the switch is too late" "$status" 1
run "$cmp" remap --truth "$T/p2.json" --switch 2.0 "$T/remap.json"
is "compare: no remap after the switch" "$status" 1

# --- 2. the workloads' ground truth --------------------------------------
edge_set() {		# the pairs of a matrix with weight > 0: "0-1 2-3"
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["threads"], " ".join(f"{i}-{j}" for i, j, w in d["edges"] if w > 0))' "$1"
}
run "$wl" --pattern phases --threads 8 --seconds 0.2 --phase-seconds 0.1 \
	--truth "$T/t.json" --truth1 "$T/t1.json" --truth2 "$T/t2.json" \
	--truth-map "$T/tm"
is "wl-threads phases runs" "$status" 0
is "phase 1 truth: neighbour pairs" "$(edge_set "$T/t1.json")" "8 0-1 2-3 4-5 6-7"
is "phase 2 truth: distant pairs" "$(edge_set "$T/t2.json")" "8 0-4 1-5 2-6 3-7"
is "whole-run truth: both phases" "$(edge_set "$T/t.json")" \
	"8 0-1 0-4 1-5 2-3 2-6 3-7 4-5 6-7"
run "$wl" --pattern stencil --threads 6 --seconds 0.05 --truth "$T/st.json"
is "stencil truth: 2 x 3 grid" "$(edge_set "$T/st.json")" "6 0-1 0-2 1-3 2-3 2-4 3-5 4-5"
run "$wl" --pattern clusters --cluster 3 --threads 7 --seconds 0.05 --truth "$T/cl.json"
is "clusters truth: groups of 3, the 7th alone" "$(edge_set "$T/cl.json")" \
	"7 0-1 0-2 1-2 3-4 3-5 4-5"
run "$wl" --pattern ring --threads 2 --passes 10 --truth "$T/r2.json"
is "ring of 2: one edge of 20 passes" "$(cat "$T/r2.json")" \
	'{"format":"commap-matrix","version":1,"threads":2,"edges":[[0,1,20.0]]}'
is "truth map: main thread 0, workers in creation order, one process" \
	"$(awk '{print $1 $2 $3; if ($4 != p && NR > 1) d = 1; p = $4} END {print d + 0}' "$T/tm" | tr '\n' ' ')" \
	"000 101 202 303 404 505 606 707 0 "
reads_matrix() {
	"$commap" map --topology "pack:2 core:2 pu:2" --matrix "$1" >/dev/null
}
for p in ring stencil clusters all2all independent; do
	"$wl" --pattern $p --threads 8 --seconds 0.05 --truth "$T/$p.json"
	ok "$p truth is a matrix commap reads" reads_matrix "$T/$p.json"
done
run "$wl" --pattern ring --threads 0
is "wl-threads: --threads 0 refused" "$status" 2
run "$wl" --pattern nosuch
is "wl-threads: unknown pattern refused" "$status" 2
run "$wl" --pattern pairs --threads 4 --passes 12 --spin-barrier 4 --truth "$T/sb.json"
is "wl-threads --spin-barrier: every pass made, between spinning barriers" \
	"$(cat "$T/sb.json")" \
	'{"format":"commap-matrix","version":1,"threads":4,"edges":[[0,1,24.0],[2,3,24.0]]}'
run "$wl" --pattern pairs --spin-barrier 4 --waves 2
is "wl-threads: --spin-barrier with --waves refused" "$status" 2

# --- 3. the agent ----------------------------------------------------------
run "$commap" run --output "$T/probe.json" -- true
if [ "$status" -ne 0 ] || [ ! -s "$T/probe.json" ]; then
	why="commap run does not work here: $(printf '%s' "$err" | head -1)"
	for w in pairs phases ring stencil clusters all2all independent \
		mpi-pairs hybrid; do
		skip "agent on $w" "$why"
	done
	done_testing
fi

# agent_run NAME TOPOLOGY -- PROGRAM ARGS...: run under the agent; the
# result goes to $T/NAME.json.
agent_run() {
	local name=$1 topo=$2
	shift 3
	run "$commap" run --quiet --period-us "$period" --topology "$topo" \
		--output "$T/$name.json" -- "$@"
	[ "$status" -eq 0 ] && [ -s "$T/$name.json" ]
}

# accuracy NAME TRUTH: cosine >= min, the figures as a diag line.
accuracy() {
	run "$cmp" cosine --truth "$2" --map "$T/$1.map" --min "$min_cosine" \
		"$T/$1.json"
	tap_result "$status" "$1: detected matrix matches the truth (cosine >= $min_cosine)"
	diag "$1: $out"
	case $1 in
	mpi-*|hybrid) ;;	# see the MPI part below
	*)	is "$1: the agent names every thread (rank 0, creation index)" \
			"$(figure missing) $(figure identity_mismatches)" "0 0" ;;
	esac
}

# Sampling every 250 us of CPU time: an edge is seen when both threads are
# sampled on the same 4 KiB block within the agent's window, so a thread
# with many partners needs many samples; the patterns with many edges per
# thread use 64 KiB buffers (16 blocks) for the same reason.  With the
# default 1 ms and 256 KiB, all2all gives a cosine of ~0.7 in 2 s here.
# Runs are measured in CPU time per thread (0.5 s: 2 s of wall time on 2
# idle cores), so that a loaded machine stretches them instead of starving
# the detector of samples; 20 s of wall time at most.
period=250
span="--cpu-seconds 0.5 --seconds 20"
topo8="pack:2 core:2 pu:2"
# all2all and clusters have the most edges per thread: twice the CPU time
# (under the sanitizer build, on a loaded machine, 0.5 s gave all2all a
# cosine of 0.86 once).
for p in pairs ring stencil clusters all2all; do
	kib=64
	[ $p = pairs ] && kib=256
	pspan=$span
	case $p in all2all|clusters) pspan="--cpu-seconds 1 --seconds 30" ;; esac
	if agent_run "$p" "$topo8" -- "$wl" --pattern $p --threads 8 \
		$pspan --buffer-kib $kib --truth "$T/$p.truth" \
		--truth-map "$T/$p.map"; then
		accuracy "$p" "$T/$p.truth"
	else
		tap_result 1 "$p: commap run"
		diag "status $status: $err"
	fi
done

# Independent threads: nothing to find, nothing to move (real machine, so
# a remap would really pin).
run "$commap" run --quiet --period-us $period --output "$T/indep.json" \
	-- "$wl" --pattern independent \
	--threads 4 --seconds 1.5 --truth "$T/indep.truth" --truth-map "$T/indep.map"
is "independent: commap run" "$status" 0
run "$cmp" migrations "$T/indep.json"
is "independent: no migrations" "$out" 0
run "$cmp" cosine --truth "$T/indep.truth" --map "$T/indep.map" "$T/indep.json"
diag "independent: $out"

# phase_change NAME SWITCH CPU_S (SPCD §V-B): wl-threads phases under the
# agent, neighbours until SWITCH s, then distant partners until every
# thread used CPU_S s of CPU; passes when the phase-2 partners are mapped
# after the switch, before the program ends.  How soon is a figure, not
# asserted (a wall time): the agent's clock is the program's progress,
# so on a loaded machine (the sanitizers beside busy loops: 2.6 s once)
# the same progress takes longer; the target is 1 s on an idle machine
# (docs/PERFORMANCE.md has the measured delays, and the delay is printed
# below).
phase_change() {
	local name=$1 switch=$2 cpus=$3

	if ! agent_run "$name" "$topo8" -- "$wl" --pattern phases --threads 8 \
		--cpu-seconds "$cpus" --seconds 60 --phase-seconds "$switch" \
		--truth "$T/$name.truth" --truth2 "$T/$name.truth2" \
		--truth-map "$T/$name.map"; then
		tap_result 1 "$name: commap run"
		diag "status $status: $err"
		return 1
	fi
	run "$cmp" remap --truth "$T/$name.truth2" --map "$T/$name.map" \
		--switch "$switch" --within 60 "$T/$name.json"
	tap_result "$status" "$name: remapped to the phase-2 partners after the switch"
	diag "$name: $out"
}

# A short first phase: 1.2 s, then 1.25 s of CPU per thread (5 s in all
# on 2 idle cores: the second phase lasts long enough for a remap, also
# under the sanitizer build on a loaded machine, where 0.75 s once ended
# it before a remap).
phase_change phases 1.2 1.25 && accuracy phases "$T/phases.truth"
# A long stable phase: 8 s of neighbours grow the interval towards
# LHMapping's 1 s, which the short phase does not reach.  Aged once per
# interval and decided only at interval ends the agent remapped 2.6 s
# after the switch; aged per 200 ms and checkpointed inside long
# intervals, 0.52-0.74 s.
phase_change phases-long 8 2.75

# MPI: 4 ranks in pairs through a shared window; hybrid 2 ranks x 4
# threads in a ring crossing the ranks.  Identities are only reported
# (identity_mismatches in the diag line): the agent may take a rank's
# process before it execs, while it still has mpirun's environment, and
# then names it rank 0 (seen as mismatched=2:0->0:0); the cosine does not
# depend on it, threads being matched by tid.
if "$wl_mpi" --help >/dev/null 2>&1; [ $? -eq 77 ]; then
	skip "agent on mpi-pairs" "wl-mpi built without MPI"
	skip "agent on hybrid" "wl-mpi built without MPI"
	done_testing
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="mpirun --oversubscribe --bind-to none"
if agent_run mpi-pairs "$topo8" -- $mpi -np 4 "$wl_mpi" --pattern pairs \
	--threads 1 $span --truth "$T/mpi.truth" \
	--truth-map "$T/mpi-pairs.map"; then
	accuracy mpi-pairs "$T/mpi.truth"
else
	tap_result 1 "mpi-pairs: commap run"
	diag "status $status: $err"
fi
if agent_run hybrid "$topo8" -- $mpi -np 2 "$wl_mpi" --pattern ring \
	--threads 4 $span --buffer-kib 64 --truth "$T/hy.truth" \
	--truth-map "$T/hybrid.map"; then
	accuracy hybrid "$T/hy.truth"
else
	tap_result 1 "hybrid: commap run"
	diag "status $status: $err"
fi
done_testing
