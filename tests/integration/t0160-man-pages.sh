#!/bin/bash
# The manual pages (docs/man/) format without a warning and do not drift
# from the programs: every command of 'commap --help' is in commap(1),
# every key of the service's configuration in commap-service(8), every
# plugstack setting in commap_spank(8), the agent's main options and
# --check in commap-agent(8).
. "$top_srcdir/tests/integration/tap.sh"
man=$top_srcdir/docs/man

if command -v groff >/dev/null; then
	for page in commap.1 commap-agent.8 commap-service.8 commap_spank.8; do
		run env LC_ALL=C.UTF-8 groff -man -ww -z -t "$man/$page"
		is "$page formats without warnings" "$status:$err" "0:"
	done
else
	for page in commap.1 commap-agent.8 commap-service.8 commap_spank.8; do
		echo "ok $((tap_count + 1)) # SKIP groff is not installed"
		tap_count=$((tap_count + 1))
	done
fi

# in PAGE WORD...: every WORD appears as a bold word (.B / .BR / \fB) of PAGE.
in_page() {
	local page=$1 missing= w
	shift
	for w in "$@"; do
		grep -Eq "^\.(B|BR|BI|RB|TP) .*${w//-/\\\\-}|\\\\fB${w//-/\\\\-}" \
			"$man/$page" || missing="$missing $w"
	done
	is "$page names: $*" "${missing# }" ""
}

cmds=$("$commap" --help | sed -n 's/^  \([a-z]*\)  .*/\1/p')
ok "commap --help lists commands" [ -n "$cmds" ]
in_page commap.1 $cmds

keys=$(sed -n '/^static const char \*const config_keys\[\] = {/,/^};/p' \
	"$top_srcdir/service/svc_config.c" | grep -o '"[a-z_]*"' | tr -d '"')
ok "the service's configuration keys are found" [ -n "$keys" ]
in_page commap-service.8 $keys

in_page commap_spank.8 default= allow= agent= service= spool= conf=

opts=$(sed -n '/^static const struct option/,/^};/p' \
	"$top_srcdir/nodeagent/agent_opts.c" | grep -o '{ "[a-z-]*"' |
	sed 's/{ "//; s/"//' | grep -E '^(mode|pid|tasks-from-stdin|backend|period-us|output|topology|topology-xml)$')
in_page commap-agent.8 $(for o in $opts; do printf -- '--%s ' "$o"; done) --check
done_testing
