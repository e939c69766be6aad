#!/bin/bash
# 'commap check': the Slurm part (docs/cli.md, "commap check").  Real
# plugstack.conf files in a scratch directory, found as slurmd finds them
# (SLURM_CONF's PlugStackConfig, includes) or named with --plugstack; the
# plugin built here loaded beside Slurm's own library; agents and spools
# made with the owners and modes an admin gets wrong.  One line per
# check, exit 1 on any FAIL.
. "$top_srcdir/tests/integration/tap.sh"

[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (root-owned agent and spool)"; exit 0; }

# The node part's own verdict: the exit status is compared against it.
run "$commap" check --no-service --no-plugin
node=$status

S=$T/slurm
mkdir -p "$S/plugstack.conf.d" "$T/lib" "$T/spool"
chmod 755 "$T" "$T/lib"
chmod 700 "$T/spool"
install -m 755 /bin/true "$T/agent"
slurmlib=
for d in /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib/aarch64-linux-gnu/slurm-wlm \
	/usr/lib64/slurm /usr/lib/slurm /usr/local/lib/slurm; do
	[ -e "$d/libslurmfull.so" ] && { slurmlib=$d; break; }
done
plugin=$top_builddir/spank/.libs/commap_spank.so
[ -f "$plugin" ] && install -m 755 "$plugin" "$T/lib/commap_spank.so"
cat >"$S/slurm.conf" <<EOF
ClusterName=t
PluginDir=${slurmlib:-$T/nowhere}
PlugStackConfig=$S/plugstack.conf
EOF
export SLURM_CONF=$S/slurm.conf
good="agent=$T/agent spool=$T/spool service=http://127.0.0.1:7733"
echo "include $S/plugstack.conf.d/*.conf" >"$S/plugstack.conf"
echo "optional $T/lib/commap_spank.so $good  # commap" \
	>"$S/plugstack.conf.d/commap.conf"
line() {	# line WHAT STATUS NAME TEXT: a line "  STATUS NAME ...TEXT..."
	ok "$1" grep -Eq "^  $2 +$3 +.*$4" "$T/out"
}

run "$commap" check --no-service
is "a good setup: the node's verdict" "$status" "$node"
ok "  the part is headed by the plugstack file found through SLURM_CONF" \
	grep -qxF "slurm plugin ($S/plugstack.conf):" "$T/out"
line "  the plugin's line, found through an include" ok plugstack \
	"$S/plugstack.conf.d/commap.conf:1: optional $T/lib/commap_spank.so"
line "  the settings, read by the plugin's parser" ok settings \
	"default=off service=http://127.0.0.1:7733 agent=$T/agent spool=$T/spool"
line "  the agent" ok agent "$T/agent: root's, executable"
line "  the spool" ok spool "$T/spool: root's, mode 0700"
if [ -f "$plugin" ] && [ -n "$slurmlib" ]; then
	line "  the plugin loads beside libslurmfull.so" ok plugin \
		"$T/lib/commap_spank.so loads: SPANK plugin 'commap'"
else
	why="Slurm's libslurmfull.so is not installed"
	[ -n "$slurmlib" ] && why="the plugin was not built (libslurm-dev)"
	echo "ok $((tap_count + 1)) # SKIP $why"
	tap_count=$((tap_count + 1))
fi
ok "  nothing failed" sh -c '! grep -q "^  FAIL" "$1"' _ "$T/out"

# A relative path is taken from PluginDir, as slurmstepd does.
echo "required commap_spank.so $good" >"$T/rel.conf"
mkdir "$T/empty"
sed -i "s|^PluginDir=.*|PluginDir=$T/empty|" "$S/slurm.conf"
run "$commap" check --no-service --plugstack "$T/rel.conf"
line "a relative plugin path not in PluginDir: FAIL" FAIL plugin \
	"commap_spank.so is a relative path and not in slurm.conf's PluginDir \\($T/empty\\)"
if [ -f "$plugin" ] && [ -n "$slurmlib" ]; then
	sed -i "s|^PluginDir=.*|PluginDir=$T/empty:$T/lib|" "$S/slurm.conf"
	run "$commap" check --no-service --plugstack "$T/rel.conf"
	line "  in PluginDir's second directory: loads" ok plugin \
		"$T/lib/commap_spank.so loads"
fi
sed -i "s|^PluginDir=.*|PluginDir=${slurmlib:-$T/nowhere}|" "$S/slurm.conf"

echo "optional /opt/other/other_spank.so" >"$T/other.conf"
run "$commap" check --no-service --plugstack "$T/other.conf"
is "a plugstack.conf without commap: exit 1" "$status" 1
line "  says so" FAIL plugstack "$T/other.conf \\(and its includes\\) does not name commap_spank.so: srun has no --commap here"

printf 'optional %s defualt=dynamic\n' "$T/lib/commap_spank.so" >"$T/key.conf"
run "$commap" check --no-service --plugstack "$T/key.conf"
is "a misspelt setting: exit 1" "$status" 1
line "  the plugin's parser names the key" FAIL settings "$T/key.conf:1: .*defualt"

printf '# commap\nrequird %s\n' "$T/lib/commap_spank.so" >"$T/word.conf"
run "$commap" check --no-service --plugstack "$T/word.conf"
is "a line Slurm refuses: exit 1" "$status" 1
line "  naming the file, line and word" FAIL plugstack "$T/word.conf:2: 'requird': not required, optional or include"

cat "$S/plugstack.conf.d/commap.conf" "$S/plugstack.conf.d/commap.conf" >"$T/twice.conf"
run "$commap" check --no-service --plugstack "$T/twice.conf"
line "the plugin named twice: FAIL" FAIL plugstack "$T/twice.conf:2 names commap_spank.so again \\(first at $T/twice.conf:1\\)"

run "$commap" check --no-service
line "the files that name the plugin are root's" ok config \
	"$S/plugstack.conf.d/commap.conf: root's, not writable by others"
chmod 666 "$S/plugstack.conf.d/commap.conf"
run "$commap" check --no-service
is "a world-writable plugstack file: exit 1" "$status" 1
line "  others could choose the agent root runs" FAIL config \
	"$S/plugstack.conf.d/commap.conf is owned by uid 0, mode 0666: root acts on it"
chmod 644 "$S/plugstack.conf.d/commap.conf"
echo "agent=$T/agent" >"$T/commap.conf"
chmod 664 "$T/commap.conf"
echo "optional $T/lib/commap_spank.so conf=$T/commap.conf spool=$T/spool" >"$T/conf.conf"
run "$commap" check --no-service --plugstack "$T/conf.conf"
line "a group-writable conf= file: FAIL" FAIL config "$T/commap.conf is owned by uid 0, mode 0664"
line "  its settings are still read" ok settings "agent=$T/agent"

chmod 775 "$T/agent"
run "$commap" check --no-service
is "a group-writable agent: exit 1" "$status" 1
line "  root runs it, so only root may change it" FAIL agent "$T/agent is owned by uid 0, mode 0775"
rm "$T/agent"
run "$commap" check --no-service
line "a missing agent: FAIL" FAIL agent "$T/agent: No such file or directory"
install -m 755 /bin/true "$T/agent"

chmod 777 "$T/spool"
run "$commap" check --no-service
is "a world-writable spool: exit 1" "$status" 1
line "  the plugin would refuse it" FAIL spool "$T/spool: writable by group or others"
rmdir "$T/spool"
run "$commap" check --no-service
is "no spool yet: the node's verdict" "$status" "$node"
line "  the first step makes it" ok spool "$T/spool does not exist yet: the first step makes it"
mkdir -m 700 "$T/spool"

# Files that are not the plugin, under its name.
mkdir -p "$T/bad"
echo "not a library" >"$T/bad/commap_spank.so"
echo "optional $T/bad/commap_spank.so $good" >"$T/bad.conf"
run "$commap" check --no-service --plugstack "$T/bad.conf"
if [ -n "$slurmlib" ]; then
	is "a text file as the plugin: exit 1" "$status" 1
	line "  does not load, with the loader's reason" FAIL plugin "$T/bad/commap_spank.so does not load: "
	libm=$(ldconfig -p | sed -n 's/^[[:space:]]*libm\.so\.6 .*=> //p' | head -1)
	cp "$libm" "$T/bad/commap_spank.so"
	run "$commap" check --no-service --plugstack "$T/bad.conf"
	line "another library as the plugin: loads, not a SPANK plugin" FAIL plugin \
		"$T/bad/commap_spank.so loads but is not a SPANK plugin"
else
	line "without Slurm's library: not loaded, and said why" no plugin \
		"not loaded: Slurm's libslurmfull.so is not in PluginDir"
fi

run env SLURM_CONF="$T/none/slurm.conf" "$commap" check --no-service
is "no Slurm configuration here: the node's verdict" "$status" "$node"
line "  said as information" info plugstack "$T/none/plugstack.conf does not exist: Slurm is not set up here"
run "$commap" check --no-service --plugstack "$T/none.conf"
is "a --plugstack file that does not exist: exit 1" "$status" 1
line "  names it" FAIL plugstack "cannot read $T/none.conf: No such file or directory"
run "$commap" check --no-service --no-plugin
ok "--no-plugin: no plugin part" sh -c '! grep -q "^slurm plugin" "$1"' _ "$T/out"
run "$commap" check --plugstack x --no-plugin
is "--plugstack with --no-plugin: usage error" "$status" 2
done_testing
