# bash completion for ferry (and its pasta/passt links).
# The option names come from the binary's own --help, so they never drift
# from what it accepts; the mode words and a few option arguments are
# completed here.
_ferry() {
	local cur prev mode words_opts
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	case ${COMP_WORDS[0]##*/} in
	pasta*) mode=ns ;;
	passt*) mode=vm ;;
	*)	if [ "$COMP_CWORD" = 1 ]; then
			mapfile -t COMPREPLY < <(compgen -W "ns vm --help --version" -- "$cur")
			return
		fi
		mode=${COMP_WORDS[1]} ;;
	esac
	case $prev in
	-s|--socket|--socket-path|-l|--log-file|-P|--pid|-p|--pcap|--netns|--userns)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
	--sandbox)
		mapfile -t COMPREPLY < <(compgen -W "off on strict" -- "$cur"); return ;;
	esac
	if [[ $cur == -* ]]; then
		words_opts=$("${COMP_WORDS[0]}" "$mode" --help 2>&1 |
			grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u)
		mapfile -t COMPREPLY < <(compgen -W "$words_opts" -- "$cur")
	fi
}
complete -F _ferry ferry pasta passt pasta.ferry passt.ferry
