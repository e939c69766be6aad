#!/bin/sh
# The web report pages end to end (docs/reports.md): real daemon on
# loopback, real munge credentials of real users, results uploaded through
# the API, pages fetched with curl; SVGs parsed with python3's xml.etree.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

# The secret the reverse proxy and the service share (trusted-header).
secret=proxy-secret-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$secret" >"$T/proxy.secret"
chmod 600 "$T/proxy.secret"
P="X-Commap-Proxy-Secret: $secret"
service_setup --users 3 --title "(web_auth = trusted-header)" \
	"admins = @commap-test-adm" "web_auth = trusted-header" \
	"web_user_header = X-Test-User" \
	"web_proxy_secret_file = $T/proxy.secret"
check="python3 $top_srcdir/tests/service/web-check.py"
page() { cp "$T/body" "$T/$1"; }
has() { grep -q -- "$1" "$T/body"; }

# --- results: A's 4-thread job with hostile strings, A's 256-thread job,
# B's job, and a job-less result of A's -------------------------------------
make_result "$T/a.json" 2001 "$uid_a" $A
python3 - "$T/a.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["identity"]["argv"] = ["<script>alert(1)</script>", "--x=\"'&"]
d["identity"]["node"] = "n<i>1</i>"
d["timeline"][0]["reason"] = "</title><script>x</script>"
json.dump(d, open(sys.argv[1], "w"))
PY
make_result "$T/big.json" 2003 "$uid_a" $A 1.0 256
python3 - "$T/big.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = 256
# 16 ranks of 16 threads; neighbours communicate, plus a far partner.
for i, t in enumerate(d["threads"]):
    t["rank"] = i // 16
d["identity"]["ranks"] = 16
d["edges"] = [[i, i + 1, 100.0 + i] for i in range(n - 1)] + \
             [[i, i + 16, 5.0] for i in range(n - 16)]
d["topology"]["synthetic"] = "pack:2 numa:2 l3:2 core:16 pu:2"
d["topology"]["cpuset"] = "0-255"
d["timeline"][0]["pu_of_thread"] = list(range(n))
d["migrations"] = [{"t": 1.0 + i, "thread": i, "from": i + 1, "to": i}
                   for i in range(0, 200, 10)]
json.dump(d, open(sys.argv[1], "w"))
PY
make_result "$T/b.json" 2002 "$uid_b" $B
make_result "$T/nojob.json" 0 "$uid_a" $A
python3 - "$T/nojob.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["identity"]["job"] = d["identity"]["step"] = None
d["topology"].pop("synthetic")
json.dump(d, open(sys.argv[1], "w"))
PY
for f in a big b; do
	req root POST /v1/results --data-binary @"$T/$f.json"
	is "upload $f.json: 201" "$code" 201
done
req root POST /v1/results --data-binary @"$T/nojob.json" \
	-H "X-Commap-Upload-Id: web-nojob-1"
is "upload a job-less result: 201" "$code" 201
id_nojob=$(jq_py 'j["id"]')

# --- pages with a munge credential ------------------------------------------------
req $A GET /jobs -D "$T/headers"
is "A's job list: 200" "$code" 200
ok "  served as HTML" grep -qi '^content-type: text/html' "$T/headers"
ok "  with a script-free Content-Security-Policy" \
	grep -qi "^content-security-policy: default-src 'none'" "$T/headers"
ok "  links A's job" has 'href="/jobs/2001"'
ok "  links A's 256-thread job" has 'href="/jobs/2003"'
ok "  links A's job-less result" has "href=\"/results/$id_nojob\""
ok "  does not list B's job" sh -c "! grep -q '/jobs/2002' '$T/body'"
ok "  has a filter form" has '<form method="get" action="/jobs"'
req $A GET /
is "/ is the job list too" "$code" 200

req $A GET /jobs/2001
page job.html
is "A's job page: 200" "$code" 200
ok "  heatmap, topology and migrations are inline SVGs that parse" \
	$check svgs "$T/job.html" heatmap-0 topology-0 migrations-0
ok "  argv is escaped" has '&lt;script&gt;alert(1)&lt;/script&gt;'
ok "  quotes and ampersands are escaped" has '--x=&quot;&#39;&amp;'
ok "  the node name is escaped" has 'n&lt;i&gt;1&lt;/i&gt;'
ok "  the timeline reason is escaped inside the SVG" \
	has '&lt;/title&gt;&lt;script&gt;x&lt;/script&gt;'
is "  no <script> element anywhere" \
	"$($check count "$T/job.html" '<script')" 0
ok "  detection statistics" has '<table class="stats">'
ok "  overhead" has 'agent CPU time: '
ok "  the threads on their PUs" has '>r0.t3</text>'
ok "  links to the application page" has 'href="/apps/stencil"'

req $A GET /jobs/2003
page big.html
is "the 256-thread job page: 200" "$code" 200
ok "  its SVGs parse" $check svgs "$T/big.html" heatmap-0 topology-0 \
	migrations-0
is "  heatmap row labels thinned to 32" \
	"$($check count "$T/big.html" 'class="row"')" 32
ok "  labels are rank.thread" has '>r15.t8</text>'
ok "  a colour-scale legend" has 'class="legend"'
is "  256 PUs drawn in the topology" \
	"$($check count "$T/big.html" '<g class="pu')" 256
ok "  NUMA nodes and L3 caches drawn" sh -c \
	"grep -q 'class=\"obj NUMA' '$T/body' && grep -q 'class=\"obj L3' '$T/body'"
is "  20 migration marks" \
	"$($check count "$T/big.html" 'class="migration"')" 20

req $A GET /results/$id_nojob
page nojob.html
is "A's job-less result page: 200" "$code" 200
ok "  without a synthetic topology: the PU grid" has 'no topology description'
ok "  its SVGs parse" $check svgs "$T/nojob.html" heatmap-0 topology-0

req $A GET /apps/stencil
is "A's application page: 200" "$code" 200
ok "  lists A's runs" has 'href="/jobs/2001"'
ok "  not B's" sh -c "! grep -q '/jobs/2002' '$T/body'"
req $C GET /apps/stencil
ok "an admin's application page lists B's run too" has 'href="/jobs/2002"'
req $A GET /apps/sten%63il
is "a percent-encoded application name is decoded" "$code" 200

# --- authorization and errors ------------------------------------------------------
req $A GET /jobs/2002
is "A reads B's job page: 403" "$code" 403
ok "  an HTML error page" has '<h1>403</h1>'
req $C GET /jobs/2002
is "an admin reads B's job page: 200" "$code" 200
req $A GET /jobs/999999
is "an unknown job: 404" "$code" 404
req $A GET /jobs/12x
is "a malformed job id: 400" "$code" 400
req $A GET '/jobs?bogus=1'
is "an unknown filter: 400" "$code" 400
ok "  naming it" has 'bogus'
req $A GET '/jobs?user=&app=stencil&since=&until=&limit='
is "a submitted form with empty fields: 200" "$code" 200
ok "  filtered by application" has 'href="/jobs/2001"'
ok "  the form keeps the value" has 'name="app" value="stencil"'
req $A GET '/jobs?app=%22%3E%3Cscript%3E'
ok "a hostile filter value is escaped back into the form" \
	has 'value="&quot;&gt;&lt;script&gt;"'
req $A POST /jobs
is "POST to a page: 405" "$code" 405
req $A GET /apps/nosuchapp
is "an application without visible runs: 404" "$code" 404

# --- web_auth = trusted-header (requests from loopback) ---------------------
req - GET /jobs -H "X-Test-User: $A" -H "$P"
is "trusted header with the proxy's secret: 200" "$code" 200
ok "  acts as A (A's job listed)" has 'href="/jobs/2001"'
ok "  and only as A" sh -c "! grep -q '/jobs/2002' '$T/body'"
req - GET /jobs/2002 -H "X-Test-User: $A" -H "$P"
is "  B's job through the header as A: 403" "$code" 403
req - GET /jobs/2002 -H "X-Test-User: $C" -H "$P"
is "  an admin through the header: 200" "$code" 200
req - GET /jobs -H "X-Test-User: no-such-user-xyz" -H "$P"
is "  an unknown user: 403" "$code" 403
req - GET /jobs -H "$P"
is "  no user header and no credential: 401" "$code" 401
req - GET /v1/jobs -H "X-Test-User: $A" -H "$P"
is "  the JSON API ignores the header: 401" "$code" 401
# A local user forging the proxy: the user header alone, or a guess.
forged=$(runuser -u $B -- curl -s -o /dev/null -w '%{http_code}' \
	-H "X-Test-User: $C" "$url/jobs/2001")
is "a local user sending the user header without the secret: 403" \
	"$forged" 403
req - GET /jobs/2001 -H "X-Test-User: $C"
ok "  the page says the secret is missing" has 'X-Commap-Proxy-Secret'
req - GET /jobs/2001 -H "X-Test-User: $C" -H "X-Commap-Proxy-Secret: ${secret%?}x"
is "  a wrong secret (one character off): 403" "$code" 403
req - GET /jobs/2001 -H "X-Test-User: $C" -H "X-Commap-Proxy-Secret: ${secret}x"
is "  the secret and more: 403" "$code" 403
req - GET /jobs/2001 -H "X-Test-User: $C" -H "X-Commap-Proxy-Secret: "
is "  an empty secret: 403" "$code" 403

# From a non-loopback address the header is not trusted.
ip=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -v '^127\.' |
	grep -E '^[0-9.]+$' | head -1)
if [ -n "$ip" ]; then
	"$service" --config "$T/svc.conf" --listen "$ip:0" --foreground \
		>"$T/svc2.log" 2>&1 &
	pid2=$!
	for _ in $(seq 100); do
		p2=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\),.*/\1/p' \
			"$T/svc2.log")
		[ -n "$p2" ] && break
		sleep 0.05
	done
	c2=$(curl -s -o "$T/body" -w '%{http_code}' -H "X-Test-User: $A" \
		-H "$P" "http://$ip:$p2/jobs")
	is "trusted header from $ip (not loopback): 403" "$c2" 403
	ok "  says why" has 'only requests from this host'
	kill -TERM $pid2
	wait $pid2
else
	tap_result 0 "# SKIP no non-loopback address to test from"
fi

# --- the secret's file is checked at start ----------------------------------
sed '/^web_proxy_secret_file/d' "$T/svc.conf" >"$T/nosecret.conf"
run "$service" --config "$T/nosecret.conf" --foreground
is "trusted-header without web_proxy_secret_file: exit 2" "$status" 2
ok "  the message names the missing setting" \
	sh -c "printf '%s' \"\$1\" | grep -q 'needs web_proxy_secret_file'" - "$err"
cp "$T/proxy.secret" "$T/open.secret"
chmod 644 "$T/open.secret"
sed "s|^web_proxy_secret_file.*|web_proxy_secret_file = $T/open.secret|" \
	"$T/svc.conf" >"$T/open.conf"
run "$service" --config "$T/open.conf" --foreground
is "a secret file others can read: exit 2" "$status" 2
ok "  the message names the file and says chmod 600" \
	sh -c "printf '%s' \"\$1\" | grep -q 'open.secret: must be a regular file only its owner can read'" - "$err"
printf 'short\n' >"$T/short.secret"
chmod 600 "$T/short.secret"
sed "s|^web_proxy_secret_file.*|web_proxy_secret_file = $T/short.secret|" \
	"$T/svc.conf" >"$T/short.conf"
run "$service" --config "$T/short.conf" --foreground
is "a secret of 5 characters: exit 2" "$status" 2

# --- web_auth = munge (the default) and none -------------------------------
ok "the service stops" stop_service
sed -i '/^web_auth/d; /^web_user_header/d; /^web_proxy_secret_file/d' \
	"$T/svc.conf"
ok "the service restarts with the default web_auth" \
	start_service "$T/svc.conf"
req - GET /jobs -H "X-Remote-User: $A"
is "web_auth = munge: no credential is 401 whatever the headers" "$code" 401
ok "  the page explains web_auth" has 'web_auth'
ok "  and points to a doc that is installed (share/doc/commap, dist_doc_DATA)" \
	python3 - "$body" "$top_srcdir/deploy/local.mk" <<'PY'
import re, sys
m = re.search(r"share/doc/commap/([\w.-]+\.md)", sys.argv[1])
mk = open(sys.argv[2]).read().replace("\\\n", " ")
inst = re.search(r"dist_doc_DATA\s*=([^\n]*)", mk).group(1).split()
sys.exit(not (m and "docs/" + m.group(1) in inst))
PY
req $A GET /jobs/2001
is "  with a credential: 200" "$code" 200
ok "the service stops" stop_service
echo "web_auth = none" >>"$T/svc.conf"
ok "the service restarts with web_auth = none" start_service "$T/svc.conf"
req - GET /jobs
is "web_auth = none: no credential needed" "$code" 200
ok "  reads every job" has 'href="/jobs/2002"'
req - GET /v1/jobs
is "  the JSON API still needs munge: 401" "$code" 401
echo "web_auth = maybe" >"$T/bad.conf"
run "$service" --config "$T/bad.conf" --foreground
is "a bad web_auth value: exit 2" "$status" 2
ok "  the message names the key and the choices" \
	sh -c "printf '%s' \"\$1\" | grep -q \"web_auth: 'maybe' is not 'munge', 'trusted-header' or 'none'\"" \
	- "$err"

done_testing
