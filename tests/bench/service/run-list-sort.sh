#!/usr/bin/env bash
# How long the job listing takes on a large database, in the default
# order and sorted (docs/PERFORMANCE.md, "Service: sorted job lists").
#
#   bash tests/bench/service/run-list-sort.sh [--builddir DIR] [RESULTS]
#
# As root (it starts munged if needed): DIR/service/commap-service
# (default DIR: build) makes a fresh database in a temporary directory;
# RESULTS rows (default 20000: two nodes per job, 10 users, 20
# applications, 16-thread documents) are inserted with python3's sqlite3
# (uploading them would take minutes) and their model queue emptied; the
# service is started again and each listing is fetched three times with a
# munge credential as root (an admin: every job visible), best of three.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
builddir="$top/build"
if [ "${1:-}" = --builddir ]; then
	builddir=$(cd "$2" && pwd)
	shift 2
fi
n=${1:-20000}
export top_srcdir=$top top_builddir=$builddir
. "$top/tests/integration/tap.sh"
. "$top/tests/service/service-lib.sh"
start_munge
printf 'database = %s\nthreads = 2\n' "$T/svc.db" >"$T/svc.conf"
start_service "$T/svc.conf"
stop_service
make_result "$T/r.json" 1 1000 alice 2.5 16
python3 - "$T/svc.db" "$T/r.json" "$n" <<'PY'
import datetime, sqlite3, sys
db, doc, n = sys.argv[1], open(sys.argv[2]).read(), int(sys.argv[3])
c = sqlite3.connect(db)
t0 = datetime.datetime(2026, 1, 1)
def at(i, secs=0):
    return (t0 + datetime.timedelta(minutes=i // 2, seconds=secs)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
rows = [(100000 + i // 2, 0, "node%d" % (i % 2), 1000 + i % 10,
         "user%d" % (i % 10), "/opt/apps/app%d" % (i % 20), "app%d" % (i % 20),
         "sha256:00", "dynamic", "sample", at(i), at(i, 30 + i % 97), 1, 16,
         120, 3, 12.0, 0, at(i), doc, "") for i in range(n)]
c.executemany("INSERT INTO results (job, step, node, uid, user, executable,"
              " app, exe_hash, mode, backend, started_at, ended_at, ranks,"
              " threads, edges, migrations, final_cost, uploader_uid,"
              " received_at, document, cluster) VALUES"
              " (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
c.execute("DELETE FROM model_queue")
c.commit()
PY
echo "$n results, $(du -m "$T/svc.db" | cut -f1) MB"
start_service "$T/svc.conf"
fetch() {
	local best=999 s e
	for _ in 1 2 3; do
		s=$(date +%s.%N)
		curl -s -o "$T/o" -H "X-Munge-Credential: $(munge -n)" "$url$1"
		e=$(date +%s.%N)
		best=$(python3 -c "print(min($best, $e - $s))")
	done
	printf '%-40s %.3f s  %s bytes\n' "$1" "$best" "$(wc -c <"$T/o")"
}
for p in "/v1/jobs" "/v1/jobs?offset=1000" "/v1/jobs?sort=-duration" \
	"/v1/jobs?sort=threads" "/v1/jobs?sort=-pins" \
	"/v1/jobs?sort=-duration&app=app3" "/jobs?sort=-duration"; do
	fetch "$p"
done
stop_service
