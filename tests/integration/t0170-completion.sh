#!/bin/bash
# bash completion (deploy/completion/commap.bash): commands, options and
# values come from commap itself.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/deploy/completion/commap.bash"

# complete WORDS...: COMPREPLY for the command line WORDS (the last one is
# being completed), with $commap as the program.
complete_line() {
	COMP_WORDS=("$commap" "$@")
	COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
	COMPREPLY=()
	_commap
	printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}

is "commap <TAB>: every command" "$(complete_line '')" \
	"$( ("$commap" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p'; printf '%s\n' help --help --version) | sort | tr '\n' ' ')"
is "commap ch<TAB>" "$(complete_line ch)" "check "
is "commap map --al<TAB>" "$(complete_line map --al)" "--algorithm "
is "commap map --algorithm g<TAB>" "$(complete_line map --algorithm g)" "greedy "
is "commap run --mode <TAB>" "$(complete_line run --mode '')" "dynamic learned off static "
is "commap check --<TAB>: its options" "$(complete_line check --)" "--no-plugin --no-service --plugstack --service "
is "commap web --<TAB>: its options" "$(complete_line web --)" "--service "
is "commap apps f<TAB>" "$(complete_line apps f)" "forget "
is "commap matrix <TAB>" "$(complete_line matrix '')" "gen "
is "commap report --format <TAB>" "$(complete_line report --format '')" "csv html json svg text "
ok "commap run -- <TAB>: commands" sh -c 'case " $1 " in *" bash "*) exit 0;; esac; exit 1' _ "$(complete_line run -- bas)"
done_testing
