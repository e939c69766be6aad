#!/bin/bash
# 'commap check' and 'commap-agent --check': the node's probes run for
# real on this machine (topology, decoder, the sample backend's perf
# event, the hw probe's clean refusal in a VM); a missing agent and an
# unreachable service are failures that say so; bad options are usage
# errors.  The service half against a real service: tests/service/t0650.
. "$top_srcdir/tests/integration/tap.sh"
export COMMAP_AGENT="$top_builddir/nodeagent/commap-agent"

run "$COMMAP_AGENT" --check
is "commap-agent --check: exit 0 here" "$status" 0
ok "  the topology of this machine" grep -Eq "^  ok +topology +[0-9]+ PUs allowed" "$T/out"
ok "  the decoder turns a load into its address" grep -Eq "^  ok +decoder " "$T/out"
ok "  the sample backend opens its perf event" grep -Eq "^  ok +sample backend " "$T/out"
ok "  the hw backend is reported either way, with its reason" \
	grep -Eq "^  (ok|no) +hw backend +[^ ]" "$T/out"
ok "  the kernel knobs are read" grep -Eq "^  info +numa balancing +kernel.numa_balancing = [0-9]" "$T/out"
ok "  and the verdict names the backend" grep -Eq "^the agent can detect and place here \(backend (sample|hw)\)$" "$T/out"

run "$commap" check --no-service --no-plugin
is "commap check --no-service --no-plugin: exit 0" "$status" 0
ok "  shows the agent's probes" grep -Eq "^  ok +sample backend " "$T/out"

run env COMMAP_AGENT="$T/no-agent" "$commap" check --no-service
is "no agent: exit 1" "$status" 1
ok "  says so" grep -q "no commap-agent found" "$T/out"

run "$commap" check --service http://127.0.0.1:1
is "an unreachable service: exit 1" "$status" 1
ok "  names it" grep -Eq "FAIL +reachable +http://127.0.0.1:1 does not answer" "$T/out"
ok "  after the node's probes" grep -Eq "^  ok +sample backend " "$T/out"

run "$commap" check --service http://x --no-service
is "--service with --no-service: usage error" "$status" 2
run "$commap" check extra
is "an operand: usage error" "$status" 2
run "$commap" check --help
ok "--help describes it" sh -c '[ "$1" -eq 0 ] && grep -q "usage: commap check" "$2"' _ "$status" "$T/out"
done_testing
