#!/bin/sh
# Browser login for the web pages (docs/service.md, "Web identity"): a
# one-time link asked for with munge (`commap web`), opened without any
# credential, gives a session cookie that is the user on the pages only.
# Real daemon on loopback, real munge credentials of real users.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup --users 3 --cli \
	--title "(web_auth = munge, the default)" "admins = @commap-test-adm"
has() { grep -q -- "$1" "$T/body"; }
header() { sed -n "s/^$1: *//Ip" "$T/headers" | tr -d '\r'; }
# open LINK [curl args]: GET without credential; $code, $T/headers, $body.
open_link() {
	local link=$1
	shift
	code=$(curl -s -o "$T/body" -D "$T/headers" -w '%{http_code}' "$@" \
		"$link")
	body=$(cat "$T/body")
}
# link_of USER: the URL `commap web` prints, in $link; its text in $out.
link_of() {
	run runuser -u "$1" -- "$commap" web --service "$url"
	link=$(printf '%s\n' "$out" | sed -n 's/^open in a browser on this machine: \(http[^ ]*\) (valid .*, once)$/\1/p')
}
make_result "$T/a.json" 2101 "$uid_a" $A
make_result "$T/b.json" 2102 "$uid_b" $B
for f in a b; do
	req root POST /v1/results --data-binary @"$T/$f.json"
	is "upload $f.json: 201" "$code" 201
done

# --- a link -----------------------------------------------------------------
link_of $A
is "commap web as A: exit 0" "$status" 0
ok "  prints a login URL on this service" \
	sh -c "printf '%s' '$link' | grep -Eq '^http://127\\.0\\.0\\.1:$port/login\\?token=[0-9a-f]{64}\$'"
ok "  says for how long and how often" \
	sh -c "printf '%s\n' \"\$1\" | grep -q ' (valid 10 minutes, once)\$'" \
	sh "$out"
req $A POST /v1/web-login
is "POST /v1/web-login: 200" "$code" 200
is "  expires_in is web_login_ttl (600 by default)" "$(jq_py 'j["expires_in"]')" 600
ok "  path is /login?token=" sh -c "printf '%s' '$(jq_py 'j["path"]')' | grep -q '^/login?token='"
req - POST /v1/web-login
is "without a credential: 401" "$code" 401
req $A GET /v1/web-login
is "GET /v1/web-login: 405" "$code" 405

# --- opening it ---------------------------------------------------------------
open_link "$link" -I
is "HEAD on the link: 405 (a preview does not spend it)" "$code" 405
open_link "$link"
is "opening A's link: 303" "$code" 303
is "  to /jobs" "$(header Location)" /jobs
cookie=$(header Set-Cookie)
sid=$(printf '%s' "$cookie" | sed -n 's/^commap_session=\([0-9a-f]\{64\}\);.*/\1/p')
ok "  sets a 64-hex-digit session cookie" test -n "$sid"
is "  HttpOnly, SameSite=Strict, for 8 hours" \
	"${cookie#*;}" " HttpOnly; SameSite=Strict; Path=/; Max-Age=28800"
is "  not cached" "$(header Cache-Control)" no-store
ok "  the session id is not the token" \
	sh -c "case '$link' in *$sid*) exit 1;; esac"
C_A="Cookie: commap_session=$sid"

req - GET /jobs -H "$C_A"
is "with the cookie, /jobs: 200" "$code" 200
ok "  lists A's job" has 'href="/jobs/2101"'
ok "  not B's job" sh -c "! grep -q '/jobs/2102' '$T/body'"
req - GET /jobs/2101 -H "$C_A"
is "  A's job page: 200" "$code" 200
ok "  is the job's report" has 'agent CPU time: '
req - GET /jobs/2102 -H "$C_A"
is "  B's job page: 403" "$code" 403
req - GET /jobs/2101 -H "Cookie: theme=dark; commap_session=$sid; x=1"
is "  the cookie among others: 200" "$code" 200
req - GET /v1/jobs -H "$C_A"
is "the cookie does not authenticate the API (/v1/jobs): 401" "$code" 401
req - POST /v1/web-login -H "$C_A"
is "  nor /v1/web-login: 401" "$code" 401

open_link "$link"
is "the link a second time: 403" "$code" 403
ok "  an HTML page naming the problem" has 'unknown, used or expired'
ok "  and no cookie" sh -c "! grep -qi '^set-cookie' '$T/headers'"
open_link "$url/login?token=$(printf '%064d' 0)"
is "a made-up token: 403" "$code" 403
open_link "$url/login?token=%3Cscript%3E"
is "a garbage token: 403" "$code" 403
ok "  not echoed" sh -c "! grep -q '<script' '$T/body'"
open_link "$url/login"
is "no token: 403" "$code" 403

forged=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
req - GET /jobs -H "Cookie: commap_session=$forged"
is "a forged cookie: as without one (401 under web_auth = munge)" "$code" 401
ok "  the 401 page says how to log in" has 'commap web'
req - GET /jobs -H "Cookie: commap_session=not-hex"
is "a malformed cookie: 401" "$code" 401
req - GET /jobs
is "no cookie: 401" "$code" 401

# --- a browser's way: follow the redirect, keep the cookie --------------------
link_of $A
code=$(curl -s -L -c "$T/jar" -b "$T/jar" -o "$T/body" \
	-w '%{http_code} %{url_effective}' "$link")
is "following the link lands on /jobs" "$code" "200 $url/jobs"
ok "  with A's jobs" has 'href="/jobs/2101"'
ok "  the jar keeps the cookie for this host" \
	grep -q 'commap_session' "$T/jar"

# --- an admin ---------------------------------------------------------------
link_of $C
open_link "$link"
is "an admin's link: 303" "$code" 303
sid_c=$(header Set-Cookie | sed -n 's/^commap_session=\([0-9a-f]*\);.*/\1/p')
req - GET /jobs -H "Cookie: commap_session=$sid_c"
ok "  the admin's session lists A's job" has 'href="/jobs/2101"'
ok "  and B's" has 'href="/jobs/2102"'
req - GET /jobs/2102 -H "Cookie: commap_session=$sid_c"
is "  B's job page: 200" "$code" 200

# --- bounds: 300 links in a table of 256 --------------------------------------
link_of $B
first=$link
: >"$T/many.curl"
for i in $(seq 300); do
	[ "$i" -eq 1 ] || echo next >>"$T/many.curl"
	printf 'url = "%s/v1/web-login"\nrequest = POST\nheader = "X-Munge-Credential: %s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
		"$url" "$(munge -n)" >>"$T/many.curl"
done
is "300 more links: all 200" \
	"$(curl -s -K "$T/many.curl" | sort | uniq -c | tr -s ' ')" " 300 200"
link_of $B
open_link "$first"
is "  the oldest unused link was dropped: 403" "$code" 403
open_link "$link"
is "  the newest works: 303" "$code" 303
ok "the service is still up" kill -0 "$svc_pid"
req - GET /jobs -H "$C_A"
is "  and A's session still works" "$code" 200

# --- expiry and restarts ------------------------------------------------------
ok "the service stops" stop_service
printf 'web_login_ttl = 1\n' >>"$T/svc.conf"
ok "it starts again with web_login_ttl = 1" start_service "$T/svc.conf"
req - GET /jobs -H "$C_A"
is "a restart forgets sessions: 401" "$code" 401
link_of $A
ok "  commap web says so" \
	sh -c "printf '%s\n' \"\$1\" | grep -q ' (valid 1 second, once)\$'" \
	sh "$out"
sleep 2.2
open_link "$link"
is "an expired link: 403" "$code" 403
ok "  an HTML page naming the problem" has 'unknown, used or expired'
ok "the service stops" stop_service
done_testing
