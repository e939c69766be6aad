#!/bin/sh
# A job page in a real browser: headless Chromium (Debian's `chromium`)
# loads it, the DOM it built has the heatmap and the topology, a
# screenshot of it is not blank, and the layout holds (what happened
# first, the strongest cell darkest, no text past a picture's edge, move
# labels clear of the marks, round ticks; docs/reports.md).  The service runs with
# web_auth = none (loopback only) so the browser needs no credential; at
# the end, behind web_auth = munge, a browser logs in with a `commap web`
# link and sees the user's own jobs.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

chromium=${COMMAP_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || skip_all "$chromium is missing (apt-get install chromium)"
service_setup --title "(web_auth = none)" "web_auth = none"
check="python3 $top_srcdir/tests/service/web-check.py"
make_result "$T/r.json" 3001 0 root 4.0 64
python3 - "$T/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = 64
d["edges"] = [[i, i + 1, 10.0 + i] for i in range(n - 1)] + \
             [[i, i + 8, 3.0] for i in range(n - 8)]
d["topology"]["synthetic"] = "pack:2 l3:2 core:8 pu:2"
d["identity"]["argv"] = ["<script>document.title='pwned'</script>"]
json.dump(d, open(sys.argv[1], "w"))
PY
req root POST /v1/results --data-binary @"$T/r.json"
is "a 64-thread result is uploaded" "$code" 201

# Flags that work on a VM run as root: no sandbox (root), no GPU, nothing fetched
# from the network, a fresh profile per run.
browse() {
	rm -rf "$T/profile"
	mkdir -p "$T/profile"
	timeout 60 "$chromium" --headless --no-sandbox --disable-gpu \
		--disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync \
		--disable-dev-shm-usage --hide-scrollbars \
		--user-data-dir="$T/profile" "$@" 2>>"$T/chromium.log"
}

browse --dump-dom "$url/jobs/3001" >"$T/dom.html"
ok "Chromium loads the job page" test -s "$T/dom.html"
ok "  the DOM has the heatmap" grep -q 'id="heatmap-0"' "$T/dom.html"
ok "  with its cells" grep -q '<rect class="h[0-9]' "$T/dom.html"
ok "  the DOM has the topology" grep -q 'id="topology-0"' "$T/dom.html"
ok "  with PUs carrying threads" grep -q 'class="pu used"' "$T/dom.html"
ok "  the DOM has the migrations" grep -q 'id="migrations-0"' "$T/dom.html"
ok "  the injected argv stayed text (title not changed)" \
	sh -c "! grep -q '<title>pwned' '$T/dom.html'"
ok "  the SVGs in the browser's DOM parse" \
	$check svgs "$T/dom.html" heatmap-0 topology-0 migrations-0

browse --screenshot="$T/shot.png" --window-size=1200,1600 \
	"$url/jobs/3001" >/dev/null
ok "Chromium saves a screenshot" test -s "$T/shot.png"
ok "  its pixels are not blank (many colours)" $check png "$T/shot.png"
[ -s "$T/shot.png" ] && [ -n "${COMMAP_KEEP_SCREENSHOT:-}" ] &&
	cp "$T/shot.png" "$COMMAP_KEEP_SCREENSHOT"

# Layout only a browser can judge: a saved page with layout-check.js
# appended, loaded from a file, reports into <pre id="layout-check">.
# Job 3002 is a one-core step whose six other threads ended on PUs
# outside it (a long "not on a drawn PU" note) and whose thread moved
# twice within 0.7 s (labels that would overlap a mark).
make_result "$T/r2.json" 3002 0 root 2.0 7
python3 - "$T/r2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["topology"].update(cpuset="0", pus=1, synthetic="pack:1 core:1 pu:1")
d["timeline"] = [{"t": 0.2, "pu_of_thread": [0, 11, 12, 13, 14, 15, 16],
                  "reason": "initial", "forced": True}]
d["migrations"] = [{"t": 3.5, "thread": 1, "from": 3, "to": 11},
                   {"t": 4.2, "thread": 1, "from": 11, "to": 12},
                   {"t": 40.0, "thread": 1, "from": 12, "to": 11},
                   {"t": 10.0, "thread": 2, "from": 5, "to": 12}]
json.dump(d, open(sys.argv[1], "w"))
PY
req root POST /v1/results --data-binary @"$T/r2.json"
is "a one-core result is uploaded" "$code" 201
for job in 3001 3002; do
	curl -s -o "$T/page-$job.html" "$url/jobs/$job"
	python3 - "$T/page-$job.html" \
		"$top_srcdir/tests/service/layout-check.js" <<'PY'
import sys
page, js = sys.argv[1], open(sys.argv[2]).read()
html = open(page).read()
open(page, "w").write(html.replace("</body>",
                                   "<script>" + js + "</script></body>"))
PY
	browse --window-size=1200,1600 --dump-dom "file://$T/page-$job.html" \
		>"$T/layout-$job.html"
	python3 - "$T/layout-$job.html" >"$T/checks-$job" <<'PY'
import html, re, sys
m = re.findall(r'<pre id="layout-check">(.*?)</pre>',
               open(sys.argv[1]).read(), re.S)
print(html.unescape(m[-1]) if m else "not ok layout-check: no report")
PY
	for name in outcome-first heatmap-darkest-strongest \
		unclipped-topology-0 unclipped-migrations-0 \
		labels-clear-migrations-0 round-ticks-migrations-0; do
		line=$(grep -E "^(not )?ok $name(:|\$)" "$T/checks-$job")
		[ "$line" = "ok $name" ] || echo "# ${line:-$name: no line}"
		ok "job $job in Chromium: $name" test "$line" = "ok $name"
	done
done

# The pages an admin browses: the job list sorted, the applications, two
# runs compared side by side (the 64-thread and the one-core job).
layout() {	# layout URL NAME: $T/checks-NAME from layout-check.js
	curl -s -o "$T/page-$2.html" "$url$1"
	python3 - "$T/page-$2.html" \
		"$top_srcdir/tests/service/layout-check.js" <<'PY'
import sys
page, js = sys.argv[1], open(sys.argv[2]).read()
html = open(page).read()
open(page, "w").write(html.replace("</body>",
                                   "<script>" + js + "</script></body>"))
PY
	browse --window-size=1200,1600 --dump-dom "file://$T/page-$2.html" \
		>"$T/layout-$2.html"
	python3 - "$T/layout-$2.html" >"$T/checks-$2" <<'PY'
import html, re, sys
m = re.findall(r'<pre id="layout-check">(.*?)</pre>',
               open(sys.argv[1]).read(), re.S)
print(html.unescape(m[-1]) if m else "not ok layout-check: no report")
PY
}
layout_ok() {	# layout_ok NAME CHECK...
	local page=$1 name line
	shift
	for name in "$@"; do
		line=$(grep -E "^(not )?ok $name(:|\$)" "$T/checks-$page")
		[ "$line" = "ok $name" ] || echo "# ${line:-$name: no line}"
		ok "$page in Chromium: $name" test "$line" = "ok $name"
	done
}
layout "/jobs?sort=-threads" jobs
ok "the sorted job list in Chromium: the 64-thread job first" python3 -c '
import re, sys
rows = re.findall(r"<tr><td><a href=\"/jobs/(\d+)\"", open(sys.argv[1]).read())
sys.exit(rows != ["3001", "3002"])' "$T/layout-jobs.html"
layout_ok jobs list-fits
layout /apps apps
ok "the applications in Chromium: stencil linked" \
	grep -q 'href="/apps/stencil"' "$T/layout-apps.html"
layout_ok apps list-fits
layout "/compare?a=3001&b=3002" compare
ok "two runs compared in Chromium: both heatmaps and placements" \
	$check svgs "$T/layout-compare.html" heatmap-0 heatmap-1 topology-0 \
	topology-1
layout_ok compare compare-columns-apart unclipped-topology-0 \
	unclipped-topology-1

# the one-core page, for a person to look at (legends, clipping, overlaps)
if [ -n "${COMMAP_KEEP_SCREENSHOT:-}" ]; then
	browse --screenshot="$T/shot-3002.png" --window-size=1200,2600 \
		"$url/jobs/3002" >/dev/null
	cp "$T/shot-3002.png" "${COMMAP_KEEP_SCREENSHOT%.png}-3002.png"
	for p in "jobs?sort=-threads" apps "compare?a=3001&b=3002" \
		jobs/3001; do
		browse --screenshot="$T/shot.png" --window-size=1200,1800 \
			"$url/$p" >/dev/null
		cp "$T/shot.png" "${COMMAP_KEEP_SCREENSHOT%.png}-$(printf %s "$p" |
			tr -c 'a-z0-9' -).png"
	done
fi

ok "the service stops cleanly" stop_service

# A browser logging in with a one-time link (`commap web`; docs/service.md,
# "Web identity"): the same database, now behind web_auth = munge.
A=commap-test-a
ok "a test user" make_user $A
commap_for_users
sed -i 's/^web_auth = none$/web_auth = munge/' "$T/svc.conf"
ok "the service starts again (web_auth = munge)" start_service "$T/svc.conf"
make_result "$T/a.json" 3101 "$(id -u $A)" $A
req root POST /v1/results --data-binary @"$T/a.json"
is "a result of the test user is uploaded" "$code" 201
link=$(runuser -u $A -- "$commap" web --service "$url" |
	sed -n 's/^open in a browser on this machine: \(http[^ ]*\) .*/\1/p')
ok "commap web prints a login link" test -n "$link"
browse --dump-dom "$link" >"$T/login.html"
ok "Chromium following the link lands on the job list" \
	grep -q '<form method="get" action="/jobs"' "$T/login.html"
ok "  with the user's job" grep -q 'href="/jobs/3101"' "$T/login.html"
ok "  and not root's" sh -c "! grep -q 'href=\"/jobs/3001\"' '$T/login.html'"
browse --dump-dom "$link" >"$T/login2.html"
ok "the same link in a fresh browser: refused" \
	grep -q 'unknown, used or expired' "$T/login2.html"
ok "the service stops cleanly" stop_service
done_testing
