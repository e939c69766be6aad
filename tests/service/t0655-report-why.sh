#!/bin/sh
# 'commap report' and the job page answer users' questions: what happened
# and why comes first (a refused static file's warning, not_pinned, the
# guard, thin evidence, no model), Slurm's step names and JOBID.STEP,
# sacct's relative times, rank-major rows, tids, an empty matrix said in
# words (docs/reports.md "What happened", docs/cli.md).  Real service,
# real munge, real users.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --users 1 --cli
as_columns=100

# before WHAT TEXT FIRST SECOND: FIRST's line comes before SECOND's
before() {
	ok "$1" python3 -c '
import sys
t, a, b = sys.argv[1:4]
i, j = t.find(a), t.find(b)
sys.exit(not (0 <= i < j))' "$2" "$3" "$4"
}

# 1. The batch step of a static run whose file was refused: nothing was
# pinned, and the only reason is the warning the agent stored.
make_result "$T/static.json" 4001 "$uid_a" $A 2.5 4
python3 - "$T/static.json" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["identity"]["step"] = 4294967291
d["mode"] = "static"
d["timeline"], d["migrations"], d["edges"] = [], [], []
d["stats"]["pins"] = 0
d["warnings"] = ["static mapping: cannot read '/nonexistent.json': "
                 "No such file or directory"]
json.dump(d, open(p, "w"))
PY
req root POST /v1/results --data-binary @"$T/static.json"
is "the static result uploaded" "$code" 201

as $A report 4001
is "report 4001: exit 0" "$status" 0
has "  the batch step named as sacct does" "$out" "job 4001 step batch on node1"
lacks "  not its number" "$out" 4294967291
has "  the headline says nothing was pinned and where to look" "$out" \
	"=> nothing pinned: see the warning below"
has "  the refused file's warning is shown" "$out" \
	"warning: static mapping: cannot read '/nonexistent.json'"
before "  ... before the details" "$out" "warning: static mapping" "  user "
has "  an empty matrix said in words" "$out" \
	"no communication recorded between these threads"
lacks "  not a scale of zeros" "$out" "scale: blank 0"
as $A report 4001.batch
is "report 4001.batch: exit 0" "$status" 0
has "  the batch step" "$out" "step batch"
as $A report 4001 --step batch
is "--step batch: exit 0" "$status" 0
as $A report 4001.0
is "report 4001.0 (no step 0): exit 1" "$status" 1
has "  says which step" "$err" "job 4001 has no result for step 0"
as $A report 4001.bogus
is "report 4001.bogus: usage error" "$status" 2
has "  naming the step forms" "$err" "number, batch, extern or interactive"
as $A report 4001 --step 4294967292
is "--step with the extern id: no such step, exit 1" "$status" 1
has "  named extern" "$err" "for step extern"

req $A GET /jobs/4001
is "the job page: 200" "$code" 200
has "  opens with what happened" "$body" '<ul class="outcome">'
has "  the warning on the page" "$body" \
	"static mapping: cannot read &#39;/nonexistent.json&#39;"
has "  the step is batch" "$body" "Step batch"
before "  what happened before the identity table" "$body" \
	'class="outcome"' 'class="identity"'

# 2. An MPI step whose threads came in document order 0.0 0.1 1.0 1.1 1.2
# 0.2, with tids, thin evidence, and no learned model (the service's
# internal key as the agent stored it).
make_result "$T/mpi.json" 4002 "$uid_a" $A 3.0 6
python3 - "$T/mpi.json" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
ranks = [0, 0, 1, 1, 1, 0]
d["identity"].update(ranks=2, threads_per_rank=3, argv_shape="stencil -n #")
for i, t in enumerate(d["threads"]):
    t.update(rank=ranks[i], index=i, tid=2000 + i)
d["edges"] = [[0, 5, 40.0], [2, 3, 20.0]]
d["stats"].update(samples=300, decoded=250)
d["not_pinned"] = "equidistant: every PU is as near as every other"
d["timeline"], d["migrations"] = [], []
d["stats"]["pins"] = 0
d["model"] = {"used": False, "reason": "service: no model for "
              "exe_hash=sha256:00ff ranks=2 threads_per_rank=3 "
              "argv_shape=stencil -n # uid=%d" % d["identity"]["uid"]}
json.dump(d, open(p, "w"))
PY
req root POST /v1/results --data-binary @"$T/mpi.json"
is "the MPI result uploaded" "$code" 201
as $A report 4002
is "report 4002: exit 0" "$status" 0
has "  not_pinned is the headline" "$out" \
	"=> nothing pinned: equidistant: every PU is as near"
has "  thin evidence said" "$out" "evidence too thin: 250 decoded samples"
has "  the model line names the application" "$out" \
	"none learned yet for stencil with 2 ranks"
lacks "  not the internal key" "$out" "exe_hash="
ok "  heatmap rows rank-major: 0.0 0.1 0.2 1.0 1.1 1.2" python3 -c '
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
s = [i for i, l in enumerate(lines) if l.startswith("communication")][0]
rows = [l.split()[0] for l in lines[s + 1:] if l[:4].strip()[:1].isdigit()
        and "." in l.split()[0]][:6]
sys.exit(rows != ["0.0", "0.1", "0.2", "1.0", "1.1", "1.2"])' "$T/out"
make_result "$T/pinned.json" 4003 "$uid_a" $A 2.5 4
req root POST /v1/results --data-binary @"$T/pinned.json"
as $A report 4003
has "a pinned run: the headline says so" "$out" \
	"=> pinned: 1 mapping applied, 4 pins"
has "  threads on their PUs with their tid" "$out" "PU 3: 0.3 (tid 1003)"
req $A GET /jobs/4002
lacks "the job page: no internal key either" "$body" "exe_hash="
has "  the evidence line" "$body" '<li class="evidence">'

# 3. An sbatch job: the batch script (bash, 1 thread, started first) and
# two srun steps of stencil with 4 threads each, one after the other.
for step in batch 0 1; do
	make_result "$T/sb-$step.json" 4010 "$uid_a" $A 2.5 4
	python3 - "$T/sb-$step.json" $step <<'PY'
import json, sys
p, step = sys.argv[1], sys.argv[2]
d = json.load(open(p))
if step == "batch":
    d["identity"].update(step=4294967291, executable="/bin/bash",
                         argv=["bash", "job.sh"], threads=1)
    d["threads"], d["edges"] = d["threads"][:1], []
    d["timeline"][0]["pu_of_thread"] = [0]
    d["migrations"], d["started_at"] = [], "2026-11-22T13:59:00Z"
else:
    d["identity"]["step"] = int(step)
    d["started_at"] = "2026-11-22T14:00:%02dZ" % (int(step) * 30)
json.dump(d, open(p, "w"))
PY
	req root POST /v1/results --data-binary @"$T/sb-$step.json"
	is "sbatch job: result of step $step uploaded" "$code" 201
done
as $A jobs
ok "commap jobs: the sbatch job is listed as stencil with 4 threads" \
	sh -c 'printf "%s\n" "$1" | grep -E "^4010 +$2 +stencil +[^ ]+ +4 +3 "' \
	_ "$out" $A
req $A GET /v1/jobs/4010
is "the job's summary: the largest step's threads" \
	"$(jq_py 'j["summary"]["threads"]')" 4

# ... and the batch script, a shell that shared nothing, gets no learned
# model; its stencil steps do (the service folds uploads in the
# background: wait until /metrics shows none pending).
for _ in $(seq 120); do
	req - GET /metrics
	printf '%s' "$body" | grep -qx "commap_model_pending 0" && break
	sleep 0.5
done
req $A GET /v1/models
is "learned models of the sbatch job: stencil's, none for bash" \
	"$(jq_py 'sorted(set(m["app"] for m in j["models"]))')" '["stencil"]'

# 4. sacct's times.
as $A jobs --since yesterday
is "--since yesterday: exit 0" "$status" 0
as $A jobs --since now-2hours
is "--since now-2hours: exit 0" "$status" 0
as $A jobs --since 2026-11-01 --until now
has "--since DATE --until now: the jobs (uploaded with 2026-11-22)" "$out" 4001
as $A jobs --until 2026-11-01
lacks "--until before them: not listed" "$out" 4001
as $A jobs --since 2026-02-31
is "--since 2026-02-31: usage error" "$status" 2
has "  an impossible date named" "$err" "'2026-02-31' is not a date on the calendar"
as $A jobs --since last-tuesday
is "--since in no known form: usage error" "$status" 2
has "  listing the forms" "$err" "now-COUNT"

done_testing
