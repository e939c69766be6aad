#!/bin/sh
# /metrics carries what the agents did, from the results as they are
# stored (docs/service.md, "Metrics"): placements by outcome and reason,
# warned and forced results, mappings applied, the progress guard's
# decisions.  Labels come from fixed sets: a result's own text (an odd
# not_pinned reason) never becomes a label.  A duplicate upload is not
# counted twice.  The real daemon over HTTP; results crafted to cover
# each outcome once.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/service/service-lib.sh"

service_setup

# variant FILE JOB PYTHON: make_result's document for JOB, changed by
# PYTHON (d is the document, tl its timeline entry).
variant() {
	make_result "$1" "$2" 0 root 2.5 4
	python3 - "$1" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
tl = d["timeline"][0]
exec(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"))
PY
}
upload() {
	req root POST /v1/results --data-binary @"$1"
	is "$2: stored" "$code" 201
	[ "$code" = 201 ] || diag "$body"
}

variant "$T/1.json" 5001 'd["warnings"] = ["hw backend: not available"]
d["guard"] = {"checked": 3, "undone": 1}
d["timeline"].append(dict(tl, t=1.0, reason="guard-undo", note="x"))'
upload "$T/1.json" "pinned, warned, guarded, two mappings"
variant "$T/2.json" 5002 'd["timeline"] = []; d["migrations"] = []
d["not_pinned"] = "equidistant: the step'"'"'s 4 PUs are all alike"'
upload "$T/2.json" "not pinned: equidistant"
variant "$T/3.json" 5003 'd["timeline"] = []; d["migrations"] = []
d["not_pinned"] = "little-gain: the mapping is no better"'
upload "$T/3.json" "not pinned: little gain"
variant "$T/4.json" 5004 'd["timeline"] = []; d["migrations"] = []
d["not_pinned"] = "evil\"} 1\ncommap_fake{x=\"1"'
upload "$T/4.json" "not pinned: a reason of its own"
variant "$T/5.json" 5005 'd["mode"] = "static"; tl["forced"] = True
del tl["cost"]'
upload "$T/5.json" "static, forced"
variant "$T/6.json" 5006 'd["topology"]["dry_run"] = True'
upload "$T/6.json" "dry run"
variant "$T/7.json" 5007 'd["mode"] = "off"; d["timeline"] = []
d["migrations"] = []'
upload "$T/7.json" "mode off"
variant "$T/8.json" 5008 'd["timeline"] = []; d["migrations"] = []
d["warnings"] = ["static mapping: cannot read x.json"]'
upload "$T/8.json" "no mapping, warned"
req root POST /v1/results --data-binary @"$T/1.json"
is "the first again: a duplicate (200)" "$code" 200

req - GET /metrics
is "/metrics: 200" "$code" 200
printf '%s\n' "$body" >"$T/metrics"
metric() {	# metric WHAT LINE: the exposition has this exact line
	ok "$1" grep -qxF -- "$2" "$T/metrics"
}
P=commap_results_placement_total
metric "pinned: 2 (the duplicate not counted)" "$P{placement=\"pinned\"} 2"
metric "dry_run: 1" "$P{placement=\"dry_run\"} 1"
metric "equidistant: 1" "$P{placement=\"equidistant\"} 1"
metric "little_gain: 1" "$P{placement=\"little_gain\"} 1"
metric "a reason of the agent's own: not_pinned_other" "$P{placement=\"not_pinned_other\"} 1"
metric "mode_off: 1" "$P{placement=\"mode_off\"} 1"
metric "no_mapping: 1" "$P{placement=\"no_mapping\"} 1"
is "  seven placement labels, no other" "$(grep -c "^$P{" "$T/metrics")" 7
ok "  the result's text is no label or line" sh -c '! grep -q "evil\|commap_fake" "$1"' _ "$T/metrics"
metric "by mode: dynamic 6" 'commap_results_mode_total{mode="dynamic"} 6'
metric "by mode: static 1" 'commap_results_mode_total{mode="static"} 1'
metric "by mode: off 1" 'commap_results_mode_total{mode="off"} 1'
metric "by mode: learned 0, listed" 'commap_results_mode_total{mode="learned"} 0'
metric "warned results: 2" "commap_results_warned_total 2"
metric "forced results: 1" "commap_results_forced_total 1"
metric "mappings applied: 2 + 1, not the dry run's" "commap_mappings_applied_total 3"
metric "guard checks: 3" "commap_guard_checks_total 3"
metric "guard undone: 1" "commap_guard_undone_total 1"
ok "every family has its TYPE line" sh -c '
for m in commap_results_placement_total commap_results_mode_total \
	commap_results_warned_total commap_results_forced_total \
	commap_mappings_applied_total commap_guard_checks_total \
	commap_guard_undone_total; do
	grep -qx "# TYPE $m counter" "$1" || exit 1
done' _ "$T/metrics"

ok "the service stops cleanly" stop_service
done_testing
