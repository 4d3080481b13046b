package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/cordon-run/cordon/spec"
)

func init() {
	register(command{name: "completion", summary: "print a shell completion script: cordon completion bash|zsh|fish", run: completionMain})
}

// The scripts complete the commands from this binary's list and each
// command's flags from its own -h output, so they never go stale; --profile
// with the profile names, `session` with its subcommands, and the session
// names (of `cordon session list`) where one is wanted; after `--` they
// complete the sandboxed command.
const bashCompletion = `# bash completion for cordon (cordon completion bash)
_cordon() {
	local cur=${COMP_WORDS[COMP_CWORD]} i
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "%[1]s --version" -- "$cur"))
		return
	fi
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [ "${COMP_WORDS[i]}" = "--" ]; then
			COMPREPLY=($(compgen -c -- "$cur"))
			return
		fi
	done
	case "${COMP_WORDS[1]}" in
	help | completion)
		COMPREPLY=($(compgen -W "%[1]s bash zsh fish" -- "$cur"))
		return ;;
	esac
	if [ "${COMP_WORDS[COMP_CWORD-1]}" = "--profile" ]; then
		COMPREPLY=($(compgen -W "%[2]s" -- "$cur"))
		return
	fi
	local sessions='cordon session list 2>/dev/null | sed 1d | cut -d" " -f1'
	case "${COMP_WORDS[1]} $COMP_CWORD" in
	"session 2")
		COMPREPLY=($(compgen -W "%[3]s" -- "$cur"))
		return ;;
	"session 3")
		case "${COMP_WORDS[2]}" in
		stop | ps | kill)
			COMPREPLY=($(compgen -W "$(eval "$sessions")" -- "$cur"))
			return ;;
		esac ;;
	"exec 2")
		if [[ $cur != -* ]]; then
			COMPREPLY=($(compgen -W "$(eval "$sessions")" -- "$cur"))
			return
		fi ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(cordon "${COMP_WORDS[1]}" -h 2>&1 | sed -n 's/^  --\{0,1\}\([a-z][a-z-]*\).*/--\1/p')" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _cordon cordon
`

const zshCompletion = `#compdef cordon
# zsh completion for cordon (cordon completion zsh): the bash function,
# through zsh's bash completion layer.
autoload -U +X bashcompinit && bashcompinit
`

const fishCompletion = `# fish completion for cordon (cordon completion fish)
function __cordon_flags
	set -l cmd (commandline -opc)
	cordon $cmd[2] -h 2>&1 | string match -r '^  --?[a-z][a-z-]*' | string replace -r '^  --?' ''
end
complete -c cordon -f -n '__fish_use_subcommand' -a '%[1]s'
complete -c cordon -f -n '__fish_seen_subcommand_from help completion' -a '%[1]s bash zsh fish'
complete -c cordon -n 'not __fish_use_subcommand' -a '(__cordon_flags | string replace -r "^" "--")'
complete -c cordon -f -l profile -xa '%[2]s'
complete -c cordon -f -n '__fish_seen_subcommand_from session; and __fish_is_nth_token 2' -a '%[3]s'
complete -c cordon -f -n '__fish_seen_subcommand_from stop ps kill exec' -a '(cordon session list 2>/dev/null | tail -n +2 | string replace -r " .*" "")'
`

func completionMain(args []string) int {
	fs := newFlagSet("completion", "bash|zsh|fish")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	names := visibleCommands()
	words := strings.Join(names, " ")
	profiles := strings.Join(spec.ProfileNames(), " ")
	const sessionCmds = "start stop list ps kill"
	switch fs.Arg(0) {
	case "bash":
		fmt.Printf(bashCompletion, words, profiles, sessionCmds)
	case "zsh":
		fmt.Print(zshCompletion)
		fmt.Printf(bashCompletion, words, profiles, sessionCmds)
	case "fish":
		fmt.Printf(fishCompletion, words, profiles, sessionCmds)
	default:
		fmt.Fprintln(os.Stderr, "cordon completion: want bash, zsh or fish; fix: source <(cordon completion bash), or see the README")
		return exitConfig
	}
	return exitOK
}
