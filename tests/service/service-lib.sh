# service-lib.sh: helpers for the commap-service integration tests.
# Source after tests/integration/tap.sh.  Needs root (it starts munged and
# creates test users) and munge; otherwise the test is skipped.
#
#   need_root_and_munge        skip the whole test unless possible
#   make_user NAME [GROUP]     idempotent useradd (kept between runs)
#   start_service CONF         commap-service on 127.0.0.1:<free port>;
#                              sets $svc_pid, $port, $url
#   stop_service               SIGTERM, wait
#   req USER METHOD PATH [curl args...]   sets $code and $body;
#                              USER "-" sends no credential
#   jq_py EXPR                 evaluate a Python expression on $body (as j)
#   service_setup [--users N] [--cli] [--title TEXT] [CONF-LINE...]
#                              what the tests begin with (below)
#   as USER ARGS...            $commap as USER against the service
#   has/lacks WHAT TEXT NEEDLE a test that TEXT holds NEEDLE (or not)

service="$top_builddir/service/commap-service"
svc_pid=

skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

start_munge() {
	install -d -o munge -g munge -m 755 /run/munge || return 1
	if [ ! -s /etc/munge/munge.key ]; then
		/usr/sbin/mungekey --create --force 2>/dev/null || return 1
		chown munge:munge /etc/munge/munge.key
		chmod 400 /etc/munge/munge.key
	fi
	munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
	runuser -u munge -- /usr/sbin/munged --force || return 1
	for _ in $(seq 50); do
		munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

need_root_and_munge() {
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (starts munged, adds users)"
	command -v munge >/dev/null && [ -x /usr/sbin/munged ] ||
		skip_all "munge is not installed"
	command -v curl >/dev/null || skip_all "curl is not installed"
	[ -x "$service" ] || skip_all "commap-service was not built"
	start_munge || skip_all "munged does not start"
}

make_user() {
	if [ -n "${2:-}" ] && ! getent group "$2" >/dev/null; then
		groupadd "$2" || return 1
	fi
	if ! id -u "$1" >/dev/null 2>&1; then
		useradd -M -s /usr/sbin/nologin "$1" || return 1
	fi
	if [ -n "${2:-}" ]; then
		usermod -a -G "$2" "$1" || return 1
	fi
}

# commap_for_users: the tests run $commap as the test users too, and the
# build tree may sit under a directory they cannot enter (a clone under
# /root or mktemp -d is mode 700): use a copy in $T, which they can.
commap_for_users() {
	chmod 755 "$T"
	cp "$commap" "$T/commap" && chmod 755 "$T/commap" && commap=$T/commap
}

cleanup() {
	[ -n "$svc_pid" ] && kill -9 "$svc_pid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# start_service CONF [PORT]: the daemon in the foreground, logging to
# $T/svc.log; waits for its "listening on" line.
start_service() {
	local conf=$1 p=${2:-0}
	: >"$T/svc.log"
	"$service" --config "$conf" --listen "127.0.0.1:$p" --foreground \
		>>"$T/svc.log" 2>&1 &
	svc_pid=$!
	for _ in $(seq 100); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' \
			"$T/svc.log")
		[ -n "$port" ] && break
		kill -0 "$svc_pid" 2>/dev/null || break
		sleep 0.05
	done
	url="http://127.0.0.1:$port"
	[ -n "$port" ]
}

stop_service() {
	local rc=0
	kill -TERM "$svc_pid" 2>/dev/null
	wait "$svc_pid" || rc=$?
	svc_pid=
	return $rc
}

cred() {
	if [ "$1" = root ]; then munge -n; else runuser -u "$1" -- munge -n; fi
}

req() {
	local user=$1 method=$2 path=$3
	shift 3
	if [ "$user" = - ]; then
		code=$(curl -s -o "$T/body" -w '%{http_code}' -X "$method" \
			"$@" "$url$path")
	else
		code=$(curl -s -o "$T/body" -w '%{http_code}' -X "$method" \
			-H "X-Munge-Credential: $(cred "$user")" "$@" "$url$path")
	fi
	body=$(cat "$T/body")
}

jq_py() {
	printf '%s' "$body" | python3 -c '
import json, sys
j = json.load(sys.stdin)
v = eval(sys.argv[1])
print(json.dumps(v) if isinstance(v, (dict, list)) else v)' "$1"
}

# make_result FILE JOB UID USER [WEIGHT] [THREADS]: a valid result.
make_result() {
	python3 - "$@" <<'PY'
import json, sys
path, job, uid, user = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
w = float(sys.argv[5]) if len(sys.argv) > 5 else 2.5
n = int(sys.argv[6]) if len(sys.argv) > 6 else 4
doc = {
    "format": "commap-result", "version": 1,
    "identity": {"job": job, "step": 0, "node": "node1", "user": user,
                 "uid": uid, "executable": "/opt/apps/stencil",
                 "exe_hash": "sha256:00ff", "argv": ["stencil", "-n", str(n)],
                 "ranks": 1, "threads": n},
    "mode": "dynamic", "backend": "sample",
    "started_at": "2026-11-22T14:00:00Z", "ended_at": "2026-11-22T14:01:10Z",
    "topology": {"cpuset": "0-%d" % (n - 1), "pus": n,
                 "synthetic": "pack:1 core:%d pu:1" % n, "dry_run": False},
    "threads": [{"rank": 0, "index": i, "tid": 1000 + i, "pid": 1000,
                 "cpu_s": 1.5} for i in range(n)],
    "edges": [[i, j, w] for i in range(n) for j in range(i + 1, n)],
    "timeline": [{"t": 0.2, "pu_of_thread": list(range(n)), "cost": 12.0,
                  "reason": "initial"}],
    "migrations": [{"t": 0.2, "thread": 1, "from": 3, "to": 1}],
    "stats": {"samples": 19960, "lost": 0, "decoded": 19800, "faults": 0,
              "agent_cpu_s": 0.12, "mapping_ms": 0.8, "pins": n,
              "intervals": 40, "sample_period_us": 1000},
}
json.dump(doc, open(path, "w"))
PY
}

# test_users N: the test users A, B and C (the first N of them; C is an
# admin, in commap-test-adm) and their uids uid_a, uid_b, uid_c.
test_users() {
	A=commap-test-a B=commap-test-b C=commap-test-c
	[ "$1" -lt 1 ] || { make_user $A && uid_a=$(id -u $A); } || return 1
	[ "$1" -lt 2 ] || { make_user $B && uid_b=$(id -u $B); } || return 1
	[ "$1" -lt 3 ] || { make_user $C commap-test-adm &&
		uid_c=$(id -u $C); } || return 1
}

# service_setup [--users N] [--cli] [--title TEXT] [CONF-LINE...]: skip
# unless root, munge, curl and python3 are there; with --users, the first
# N test users (test_users); with --cli, $commap where they can run it;
# then $T/svc.conf (the database in $T, each CONF-LINE, 2 threads unless a
# line sets them) and the service started on it, as the test "the service
# starts[ TITLE]".
service_setup() {
	local users=0 cli= title=
	while [ $# -gt 0 ]; do
		case $1 in
		--users) users=$2; shift 2 ;;
		--cli) cli=1; shift ;;
		--title) title=" $2"; shift 2 ;;
		*) break ;;
		esac
	done
	need_root_and_munge
	command -v python3 >/dev/null || skip_all "python3 is not installed"
	test_users "$users" || skip_all "cannot create the test users"
	[ -z "$cli" ] || commap_for_users
	{
		echo "database = $T/svc.db"
		[ $# -eq 0 ] || printf '%s\n' "$@"
		printf '%s\n' "$@" | grep -q '^threads *=' || echo "threads = 2"
	} >"$T/svc.conf"
	ok "the service starts$title" start_service "$T/svc.conf"
}

# as USER ARGS...: $commap ARGS run as USER against this test's service,
# without a user configuration or colours ($status, $out, $err);
# COLUMNS=$as_columns when the test sets it.
as() {
	local u=$1
	shift
	run runuser -u "$u" -- env COMMAP_SERVICE="$url" COMMAP_CONFIG= \
		NO_COLOR= ${as_columns:+COLUMNS=$as_columns} "$commap" "$@"
}

has() {	# has WHAT TEXT NEEDLE: grep -F
	ok "$1" sh -c 'printf "%s" "$1" | grep -qF -- "$2"' _ "$2" "$3"
}
lacks() {
	ok "$1" sh -c '! printf "%s" "$1" | grep -qF -- "$2"' _ "$2" "$3"
}
