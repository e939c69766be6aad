#!/bin/sh
# commap --help, help CMD, CMD --help, --version.
. "$top_srcdir/tests/integration/tap.sh"

run "$commap" --help
is "--help exits 0" "$status" 0
for c in map cost matrix; do
	ok "--help lists '$c'" grep -Eq "^  $c " "$T/out"
done
ok "--help documents the exit codes" grep -q "2 usage error" "$T/out"
ok "--help points to a doc that is installed (share/doc/commap, dist_doc_DATA)" \
	python3 - "$T/out" "$top_srcdir/deploy/local.mk" <<'PY'
import re, sys
m = re.search(r"share/doc/commap/([\w.-]+\.md)", open(sys.argv[1]).read())
mk = open(sys.argv[2]).read().replace("\\\n", " ")
inst = re.search(r"dist_doc_DATA\s*=([^\n]*)", mk).group(1).split()
sys.exit(not (m and "docs/" + m.group(1) in inst))
PY

for c in map cost matrix; do
	run "$commap" help "$c"
	is "help $c exits 0" "$status" 0
	help_text=$out
	ok "help $c starts with its usage line" \
		grep -q "^usage: commap $c" "$T/out"
	run "$commap" "$c" --help
	is "$c --help exits 0 and prints the same text" "$status:$out" \
		"0:$help_text"
done
run "$commap" matrix gen --help
is "matrix gen --help exits 0" "$status" 0
ok "matrix gen --help lists the patterns" grep -q "clusters:K" "$T/out"
run "$commap" map --help
for o in --topology --topology-xml --cpuset --matrix --algorithm --seed \
	--oversubscribe --no-refine --format; do
	ok "map --help mentions $o" grep -q -- "$o " "$T/out"
done

version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' \
	"$top_builddir/config.h")
run "$commap" --version
is "--version prints PACKAGE_VERSION" "$status:$out" "0:commap $version"

fails_with 2 "unknown command 'nope'" "$commap" help nope
run "$commap"
is "no command: usage on stderr, exit 2" "$status" 2
ok "... and the usage names the commands" grep -q "map" "$T/err"

done_testing
