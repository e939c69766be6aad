#!/bin/sh
# A stand-in node agent for testing the SPANK plugin's side of the
# contract before and apart from the real agent: it records its arguments
# and every line slurmstepd sends, then (like the real agent) exits at end
# of file.  $COMMAP_E2E_RECORD is not passed through Slurm, so the record
# directory comes from the --spool argument.
spool=
prev=
for a in "$@"; do
	[ "$prev" = --spool ] && spool=$a
	prev=$a
done
rec="$spool/record.$$"
echo "$@" >"$rec.args"
echo "pid $$ ppid $PPID" >>"$rec.args"
while IFS= read -r line; do
	echo "$line" >>"$rec.lines"
done
echo eof >>"$rec.lines"
