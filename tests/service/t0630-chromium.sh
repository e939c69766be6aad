#!/bin/sh
# A job page in a real browser: headless Chromium (Debian's `chromium`)
# loads it, the DOM it built has the heatmap and the topology, and a
# screenshot of it is not blank (docs/reports.md).  The service runs with
# web_auth = none (loopback only) so the browser needs no credential.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

chromium=${COMMAP_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || skip_all "$chromium is missing (apt-get install chromium)"
need_root_and_munge
command -v python3 >/dev/null || skip_all "python3 is not installed"
check="python3 $top_srcdir/tests/service/web-check.py"

cat >"$T/svc.conf" <<CONF
database = $T/svc.db
threads = 2
web_auth = none
CONF
ok "the service starts (web_auth = none)" start_service "$T/svc.conf"
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

# Flags that work on this VM: no sandbox (root), no GPU, nothing fetched
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

ok "the service stops cleanly" stop_service
done_testing
