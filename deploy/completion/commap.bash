# bash completion for commap (installed as
# $(datadir)/bash-completion/completions/commap).  Commands and options are
# read from commap's own help texts, so they never drift from the program.
_commap()
{
	local cur prev cmd words
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	cmd=${COMP_WORDS[1]}

	if [ "$COMP_CWORD" -eq 1 ]; then
		words=$("${COMP_WORDS[0]}" --help 2>/dev/null |
			sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
		COMPREPLY=($(compgen -W "$words help --help --version" -- "$cur"))
		return
	fi
	case $prev in
	--matrix | --topology-xml | --output | --static)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--format)
		COMPREPLY=($(compgen -W "text json csv svg html" -- "$cur"))
		return ;;
	--algorithm)
		COMPREPLY=($(compgen -W "auto greedy matching exact compact scatter roundrobin random" -- "$cur"))
		return ;;
	--mode)
		COMPREPLY=($(compgen -W "dynamic learned static off" -- "$cur"))
		return ;;
	--backend)
		COMPREPLY=($(compgen -W "auto sample hw fault sample+fault hw+fault" -- "$cur"))
		return ;;
	--color)
		COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
		return ;;
	--pattern)
		COMPREPLY=($(compgen -W "stencil2d stencil3d ring pairs clusters: all2all random" -- "$cur"))
		return ;;
	esac
	case $cmd in
	help)
		words=$("${COMP_WORDS[0]}" --help 2>/dev/null |
			sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
		return ;;
	matrix)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "gen" -- "$cur"))
			return
		fi ;;
	apps)
		if [ "$COMP_CWORD" -eq 2 ] && [[ $cur != -* ]]; then
			COMPREPLY=($(compgen -W "forget" -- "$cur"))
			return
		fi ;;
	run)
		# After --, complete the program and its arguments.
		local i
		for ((i = 2; i < COMP_CWORD; i++)); do
			if [ "${COMP_WORDS[i]}" = -- ]; then
				COMPREPLY=($(compgen -c -- "$cur"))
				[ "$i" -lt $((COMP_CWORD - 1)) ] &&
					COMPREPLY=($(compgen -f -- "$cur"))
				return
			fi
		done ;;
	esac
	if [[ $cur == -* ]]; then
		words=$("${COMP_WORDS[0]}" help "$cmd" 2>/dev/null |
			grep -o -- '--[a-z][a-z-]*' | sort -u)
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
	fi
}
complete -F _commap commap
