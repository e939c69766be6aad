#!/bin/bash
# MPI and hybrid: learned mappings under
# srun --mpi=pmix on the local cluster, with the real agent, the real
# service (on loopback, started here) and munge.
#
# For each job shape — MPI ranks (2 ranks x 1 thread, the pair across the
# ranks) and hybrid MPI+OpenMP (2 ranks x 2 OpenMP threads, thread t of
# rank 0 with thread t of rank 1) — run 1 (--commap=dynamic) uploads and
# makes the model; run 2 (--commap=learned) must start from it: every
# workload thread pinned once, as the scan finds it, to the PU of its
# (rank, index) in the learned mapping, and never moved again; the
# threads' real affinity (read from /proc while the job runs) agrees.
# Creation-to-pin latencies (the agent's stats.pin_latency_ms, creation
# from /proc/TID/stat in 10 ms ticks) are printed as TAP diagnostics: a
# wall time, reported, not asserted (docs/PERFORMANCE.md "Learned
# mappings").
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-agent-lib.sh"
e2e_require_cluster
e2e_require_agent
e2e_require_mpi
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 CPUs"
svc=$top_builddir/service/commap-service
[ -x "$svc" ] || skip_all "commap-service was not built"
command -v curl >/dev/null || skip_all "curl is not installed"
e2e_agent_cluster "${E2E_PORT_BASE:-17067}"

# The service, on a free port (munged runs: the cluster started it).
svc_pid=
stop_all() {
	[ -n "$svc_pid" ] && kill "$svc_pid" 2>/dev/null && wait "$svc_pid"
	e2e_cluster_stop
}
trap stop_all EXIT
printf 'database = %s/svc.db\nmax_body = 16m\nthreads = 2\n' "$E2E_DIR" \
	>"$E2E_DIR/svc.conf"
"$svc" --config "$E2E_DIR/svc.conf" --listen 127.0.0.1:0 --foreground \
	>"$E2E_DIR/svc.log" 2>&1 &
svc_pid=$!
svc_port() {
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' \
		"$E2E_DIR/svc.log")
	[ -n "$port" ]
}
wait_for svc_port
ok $? "the service runs (port $port)"
url=http://127.0.0.1:$port
# E2E_AGENT_VERBOSE=1: the agent logs every scan's pins (-v -v) into
# $spool/agent-JOB.0.NODE.log (with E2E_KEEP=1 to read them afterwards).
if [ -n "${E2E_AGENT_VERBOSE:-}" ]; then
	printf '#!/bin/sh\nexec %s -v -v "$@"\n' "$plug_agent" >"$E2E_DIR/agent-v"
	chmod 755 "$E2E_DIR/agent-v"
	plug_agent=$E2E_DIR/agent-v
fi
e2e_plugstack "default=off agent=$plug_agent spool=$spool service=$url"
[ -n "${E2E_KEEP:-}" ] && diag "e2e dir: $E2E_DIR"

# service_result JOB FILE: the step's result as the agent uploaded it
# (up to 10 s: the agent delivers just after the step ends).
service_result() {
	for _ in $(seq 50); do
		curl -s -H "X-Munge-Credential: $(munge -n)" \
			"$url/v1/jobs/$1" >"$2.job" 2>/dev/null &&
			python3 - "$2.job" "$2" <<'PY' && return 0
import json, sys
try:
    rows = json.load(open(sys.argv[1]))["results"]
except (OSError, ValueError, KeyError):
    sys.exit(1)
if not rows:
    sys.exit(1)
json.dump(rows[0]["document"], open(sys.argv[2], "w"))
PY
		sleep 0.2
	done
	return 1
}

# model_ready RESULT: up to 60 s for the service to hold a model of the
# run's application (exe_hash, ranks, argv_shape): the service folds
# uploads into models in the background, and on a busy machine a learned
# run started at once could ask before the model exists.
model_ready() {
	local q
	q=$(python3 - "$1" <<'PY'
import json, sys, urllib.parse
i = json.load(open(sys.argv[1]))["identity"]
print(urllib.parse.urlencode({"exe_hash": i["exe_hash"], "ranks": i["ranks"],
                              "argv_shape": i["argv_shape"]}))
PY
)
	for _ in $(seq 300); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' \
			-H "X-Munge-Credential: $(munge -n)" \
			"$url/v1/models?$q")" = 200 ] && return 0
		sleep 0.2
	done
	return 1
}

# snapshots TMAP OUT: while the job runs, the affinity of every thread of
# its wl-mpi processes (the ranks), the last full snapshot of each.
snapshots() {
	local p pids=() n=0 snappers=()
	for _ in $(seq 100); do
		pids=()
		for p in $(pgrep -f -- "$1"); do
			[ "$(cat "/proc/$p/comm" 2>/dev/null)" = wl-mpi ] &&
				pids+=("$p")
		done
		[ ${#pids[@]} -ge 2 ] && break
		sleep 0.05
	done
	for p in "${pids[@]}"; do
		affinity_snapshots "$p" "$2.$n" &
		snappers+=($!)
		n=$((n + 1))
	done
	[ ${#snappers[@]} -eq 0 ] || wait "${snappers[@]}"
	cat "$2".* >"$2" 2>/dev/null
}

# run_job NAME MODE THREADS PATTERN SECONDS: srun --mpi=pmix -n 2 of
# wl-mpi, each thread for SECONDS of CPU time (a busy machine stretches
# the run instead of starving the agent of samples; the runs of one shape
# write SECONDS alike, "1.5" and "1.0", since the argument's shape is part
# of the application's identity); sets $res (the result), $truth, $tmap, $snap.  The truth files
# are named by shape (the runs of one shape have one command-line shape).
run_job() {
	local name=$1 mode=$2 threads=$3 pattern=$4 secs=$5 out rc job
	truth=$E2E_DIR/$pattern.truth.json
	tmap=$E2E_DIR/$pattern.map
	snap=$E2E_DIR/$name.snap
	res=$E2E_DIR/$name.result.json
	rm -f "$truth" "$tmap"
	timeout 60 srun --mpi=pmix -n 2 --commap="$mode" "${job_wrap[@]}" \
		"$E2E_DIR/job" "$wl_mpi" --pattern "$pattern" \
		--phase-seconds 0 --threads "$threads" --cpu-seconds "$secs" \
		--seconds 50 \
		--truth "$truth" --truth-map "$tmap" >"$E2E_DIR/$name.out" 2>&1 &
	local srun_pid=$!
	snapshots "$tmap" "$snap"
	wait $srun_pid
	rc=$?
	[ -s "$truth" ] || rc=1
	ok $rc "$name: srun --mpi=pmix -n 2 --commap=$mode runs to its end"
	[ $rc -eq 0 ] || diag "$(cat "$E2E_DIR/$name.out")"
	job=$(cat "$E2E_DIR/job" 2>/dev/null)
	service_result "$job" "$res"
	ok $? "$name: the agent uploaded the result of job $job"
	log=$spool/agent-$job.0.$(hostname).log
}

# py EXPR: a Python expression over the result d (exit status).
py() {
	python3 - "$res" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
pyv() {
	python3 - "$res" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))
PY
}

# learned_checks NAME: the acceptance on a learned run's result.
learned_checks() {
	local name=$1 out rc
	py '(d["mode"] == "learned" and d["model"]["used"] is True and
	    d["model"]["runs"] >= 1)'
	rc=$?
	ok $rc "$name: mode learned, started from the model ($(pyv \
		'd["model"]'))"
	[ -s "$log" ] && diag "$name: agent log: $(grep -E 'model|rebound' "$log")"
	# The workload threads (truth map: rank, index, pid, tid) and the
	# learned mapping's PU for each.
	out=$(python3 - "$res" "$tmap" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
thr = d["threads"]
learned = [e for e in d["timeline"] if e["reason"] == "learned"]
if not learned:
    print("no learned mapping"); sys.exit(1)
place = learned[-1]["pu_of_thread"]
work = []
for line in open(sys.argv[2]):
    if line.strip():
        _i, rank, index, pid, tid = map(int, line.split())
        k = [k for k, t in enumerate(thr) if t["tid"] == tid]
        if not k or (thr[k[0]]["rank"], thr[k[0]]["index"]) != (rank, index):
            print(f"workload thread ({rank}, {index}) tid {tid} not in the"
                  " result with that identity"); sys.exit(1)
        work.append(k[0])
migs = d["migrations"]
bad = []
for k in work:
    mine = [m for m in migs if m["thread"] == k]
    if len(mine) != 1 or mine[0]["from"] != -1 or place[k] < 0 or \
       mine[0]["to"] != place[k]:
        bad.append(f"thread {k} ({thr[k]['rank']}, {thr[k]['index']}): "
                   f"learned PU {place[k]}, migrations {mine}")
others = [m for m in migs if m["thread"] not in work and m["from"] != -1]
print(f"{len(work)} workload threads, PUs {[place[k] for k in work]}; "
      f"{len(migs)} migrations" + ("; " + "; ".join(bad) if bad else ""))
sys.exit(1 if bad or others else 0)
PY
)
	ok $? "$name: each workload thread pinned once, to its learned PU ($out)"
	py 'all(e["reason"] == "learned" for e in d["timeline"])'
	ok $? "$name: no migration after the learned pins (timeline: $(pyv \
		'[e["reason"] for e in d["timeline"]]'))"
	out=$("$result_check" affinity "$res" "$snap" 2>&1)
	ok $? "$name: the threads' real affinity is their learned PU ($out)"
	out=$("$result_check" within --cpus 0-1 "$res")
	ok $? "$name: every pin inside the step's CPUs 0-1 ($out)"
	diag "$name: learned pin latency (ms): $(pyv 'd["stats"]["pin_latency_ms"]')"
}

# --- MPI ranks: 2 ranks x 1 thread, the pair across the ranks -------------
run_job mpi-dyn dynamic 1 pairs 1.5
res_dyn=$res
py 'd["identity"]["ranks"] == 2 and d["identity"]["exe_hash"].startswith("sha256:")'
ok $? "mpi-dyn: identity of 2 ranks with the executable's hash"
py 'len(set((t["rank"], t["index"]) for t in d["threads"])) == len(d["threads"])'
ok $? "mpi-dyn: no thread identity repeats ($(pyv \
	'sorted((t["rank"], t["index"]) for t in d["threads"])'))"
diag "mpi-dyn: dynamic pin latency (ms): $(pyv 'd["stats"]["pin_latency_ms"]')"
model_ready "$res_dyn"
ok $? "mpi-dyn: the service made a model of it"
run_job mpi-learned learned 1 pairs 1.0
learned_checks mpi-learned

# --- hybrid MPI+OpenMP: 2 ranks x 2 threads, thread t of each rank paired --
run_job hyb-dyn dynamic 2 phases 1.5
out=$("$compare_matrix" cosine --truth "$truth" --map "$tmap" --min 0.9 "$res")
ok $? "hyb-dyn: the model's run detected the cross-rank pairs ($out)"
diag "hyb-dyn: dynamic pin latency (ms): $(pyv 'd["stats"]["pin_latency_ms"]')"
model_ready "$res"
ok $? "hyb-dyn: the service made a model of it"
run_job hyb-learned learned 2 phases 1.0
learned_checks hyb-learned
out=$("$result_check" together --truth "$truth" --map "$tmap" "$res")
ok $? "hyb-learned: each cross-rank pair on one PU from the start ($out)"

done_testing
