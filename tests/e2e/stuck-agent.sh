#!/bin/sh
# A stand-in agent that never reads its input and ignores SIGTERM: the
# step must end in its normal time anyway (the plugin never waits).  Its
# pid goes to the --spool directory, so that the test ends this process
# and no other (a "sleep 30" of a test running beside it).
spool=
prev=
for a in "$@"; do
	[ "$prev" = --spool ] && spool=$a
	prev=$a
done
[ -n "$spool" ] && echo $$ >"$spool/stuck.$$"
trap '' TERM HUP
exec sleep 30
