# tap.sh: a tiny Test Anything Protocol helper for the integration scripts,
# read by automake's tap-driver.sh.  Source it, then:
#
#   ok "what is checked" COMMAND [ARGS...]   passes if COMMAND exits 0
#   is "what" GOT WANT                       passes if the strings are equal
#   run COMMAND [ARGS...]                    runs it; sets $status, $out
#                                            (stdout) and $err (stderr)
#   diag "free text"
#   done_testing                             prints the plan, exits 0/1
#
# $commap is the binary under test, $T a scratch directory removed at exit.

: "${top_builddir:?top_builddir is not set (run through make check)}"
: "${top_srcdir:?top_srcdir is not set (run through make check)}"
commap="$top_builddir/cli/commap"
data="$top_srcdir/tests/integration/data"
T=$(mktemp -d "${TMPDIR:-/tmp}/commap-it.XXXXXX")
trap 'rm -rf "$T"' EXIT

tap_count=0
tap_failed=0

tap_result() {
	tap_count=$((tap_count + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $tap_count - $2"
	else
		tap_failed=$((tap_failed + 1))
		echo "not ok $tap_count - $2"
	fi
}

ok() {
	local what=$1 rc=0
	shift
	"$@" || rc=1
	tap_result $rc "$what"
}

is() {
	local rc=0
	[ "$2" = "$3" ] || rc=1
	tap_result $rc "$1"
	[ $rc -eq 0 ] || diag "got '$2', want '$3'"
}

run() {
	status=0
	"$@" >"$T/out" 2>"$T/err" || status=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

diag() {
	echo "# $*" | sed '2,$s/^/# /'
}

done_testing() {
	echo "1..$tap_count"
	[ "$tap_failed" -eq 0 ]
	exit $?
}

# Print the value of a key of the JSON object on stdin; lists come out
# comma separated ("0,1,4,5"), so they can be fed to --mapping.
json_get() {
	python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[k]
print(",".join(str(x) for x in v) if isinstance(v, list) else v)' "$1"
}

# fails_with CODE WORD COMMAND...: COMMAND exits with CODE and its stderr
# is a "commap: " message containing WORD (case-insensitive).
fails_with() {
	local code=$1 word=$2 rc=0
	shift 2
	run "$@"
	[ "$status" -eq "$code" ] || rc=1
	case "$err" in commap:\ *) ;; *) rc=1 ;; esac
	printf '%s' "$err" | grep -qiF -- "$word" || rc=1
	tap_result $rc "exit $code, '$word': ${*#"$commap"}"
	[ $rc -eq 0 ] || diag "status $status, stderr: $err"
}
