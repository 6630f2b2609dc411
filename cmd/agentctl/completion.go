package main

// Dynamic completion: `agentctl completion bash|zsh|fish` prints cobra's
// script, which runs `agentctl __complete ARGS...` at each Tab; for a verb
// whose argument names a session or a channel, that asks the daemon. A
// daemon that is not running, or slow, yields no candidates rather than an
// error or a hang: completion must never get in the way of typing.

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/pkg/wire"
)

// completeKind is what a positional argument or flag names.
type completeKind int

const (
	completeNone    completeKind = iota // nothing the daemon knows: no candidates, no files
	completeSession                     // a session name
	completeChannel                     // a channel id
	completeFiles                       // a file: the shell's own completion
	completeStatus                      // session statuses, comma-separated (list --status)
	completeDirs                        // a directory (--cwd)
	completeKeys                        // key names, comma-separated (send --keys)
	completeSignals                     // signal names (stop --signal)
	completeCommand                     // spawn's and run's: nothing before --, a command after it, then files
	completeRestart                     // restart policies (spawn --restart)
)

// keyNames are send --keys' names (the daemon's pkg/session/keys.go, and
// the ctrl+ and alt+ forms people reach for most).
var keyNames = []string{"enter", "esc", "tab", "up", "down", "left", "right", "home", "end", "pageup", "pagedown",
	"insert", "backspace", "delete", "space", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10", "f11", "f12",
	"ctrl+c", "ctrl+d", "ctrl+z", "ctrl+l", "ctrl+a", "ctrl+e", "ctrl+r", "ctrl+u", "ctrl+w", "ctrl+]", "alt+b", "alt+f"}

// signalNames are the signals stop --signal is given most (any name or
// number is taken).
var signalNames = []string{"TERM", "INT", "HUP", "KILL", "QUIT", "USR1", "USR2", "STOP", "CONT", "WINCH"}

// listed completes the last item of a comma-separated list from names.
func listed(names []string, prefix string) []cobra.Completion {
	head, last := "", prefix
	if i := strings.LastIndexByte(prefix, ','); i >= 0 {
		head, last = prefix[:i+1], prefix[i+1:]
	}
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, strings.ToLower(last)) || strings.HasPrefix(n, strings.ToUpper(last)) {
			out = append(out, head+n)
		}
	}
	return out
}

// wordsAfterDash counts the finished words after "--" on the line being
// completed (argv of `agentctl __complete WORDS... PARTIAL`), or -1 with
// no "--". Cobra's completion does not keep where the dash was
// (ArgsLenAtDash is not set there), so the line is read as the shell gave it.
func wordsAfterDash(argv []string) int {
	i := slices.Index(argv, "__complete")
	if i < 0 || len(argv) < i+2 {
		return -1
	}
	words := argv[i+1 : len(argv)-1] // the last is the word being completed
	j := slices.Index(words, "--")
	if j < 0 {
		return -1
	}
	return len(words) - j - 1
}

// pathCommands are the executables on $PATH that start with prefix (a
// path is left to the shell's own completion of files), as a shell
// completes a command word.
func pathCommands(prefix string) []cobra.Completion {
	if strings.Contains(prefix, "/") {
		return nil
	}
	seen := map[string]bool{}
	var out []cobra.Completion
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, _ := os.ReadDir(dir)
		for _, ent := range entries {
			n := ent.Name()
			if seen[n] || !strings.HasPrefix(n, prefix) {
				continue
			}
			if info, err := os.Stat(filepath.Join(dir, n)); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// completionTimeout bounds the daemon's answer to a Tab.
const completionTimeout = 2 * time.Second

// completer completes the first positional argument with what kind
// names; later ones are free text.
func (e *env) completer(kind completeKind) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if kind == completeCommand {
			switch after := wordsAfterDash(os.Args); {
			case after < 0:
				return nil, cobra.ShellCompDirectiveNoFileComp // NAME: a new one
			case after == 0:
				return pathCommands(toComplete), cobra.ShellCompDirectiveNoFileComp
			default:
				return nil, cobra.ShellCompDirectiveDefault // the command's arguments: files
			}
		}
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return e.candidates(c.Context(), kind, toComplete)
	}
}

// flagCompleter completes a flag's value with what kind names.
func (e *env) flagCompleter(kind completeKind) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return e.candidates(c.Context(), kind, toComplete)
	}
}

// candidates asks the daemon for the names of kind that start with prefix.
func (e *env) candidates(ctx context.Context, kind completeKind, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch kind {
	case completeFiles:
		return nil, cobra.ShellCompDirectiveDefault
	case completeDirs:
		return nil, cobra.ShellCompDirectiveFilterDirs
	case completeNone:
		return nil, cobra.ShellCompDirectiveNoFileComp
	case completeKeys:
		return listed(keyNames, prefix), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	case completeSignals:
		return listed(signalNames, prefix), cobra.ShellCompDirectiveNoFileComp
	case completeRestart:
		var names []string
		for _, p := range wire.RestartPolicies {
			names = append(names, string(p))
		}
		return listed(names, prefix), cobra.ShellCompDirectiveNoFileComp
	case completeStatus:
		// The list is the client's own: no daemon needed. After a comma,
		// the next status of the list.
		head, last := "", prefix
		if i := strings.LastIndexByte(prefix, ','); i >= 0 {
			head, last = prefix[:i+1], prefix[i+1:]
		}
		var out []cobra.Completion
		for _, st := range wire.Statuses {
			if strings.HasPrefix(string(st), last) {
				out = append(out, head+string(st))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	var out []cobra.Completion
	switch kind {
	case completeSession:
		r, err := e.client().List(ctx, wire.ListParams{})
		if err != nil {
			break
		}
		for _, s := range naturalSorted(r.Sessions) {
			if strings.HasPrefix(s.Name, prefix) {
				out = append(out, cobra.CompletionWithDesc(s.Name, string(s.Status)+" "+shorten(shellJoin(s.Command), 40)))
			}
		}
	case completeChannel:
		r, err := e.client().ListChannels(ctx)
		if err != nil {
			break
		}
		for _, ch := range r.Channels {
			if strings.HasPrefix(ch.ChannelID, prefix) {
				desc := "channel"
				if ch.Session != "" {
					desc = "bound to session " + ch.Session
				}
				out = append(out, cobra.CompletionWithDesc(ch.ChannelID, desc))
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// bashFallback lets the bash script work in a bash without the
// bash-completion package: cobra's script needs its
// _get_comp_words_by_ref, and a plain bash (a container, a minimal
// install) has none, which left Tab doing nothing. This one takes the words
// as bash split them; bash-completion's, when loaded, is used instead.
const bashFallback = `# Without the bash-completion package: the words as bash split them.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref() {
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
}
fi
`

func completionVerb() command {
	shell := func(name, how string, gen func(root *cobra.Command, e *env) error) command {
		return verb[*selfPrinted]{
			use:     name,
			summary: "print the " + name + " completion script",
			long:    "Print the " + name + " completion script: Tab completes commands, flags, and session names and channel ids\nfrom the running agentd.\n\n" + how,
			run: func(ctx context.Context, e *env, args []string) (*selfPrinted, error) {
				if err := gen(e.cmd.Root(), e); err != nil {
					return nil, err
				}
				return nil, errPrinted
			},
		}
	}
	return group{
		use:     "completion SHELL",
		summary: "print a shell completion script (bash, zsh, fish)",
		long:    "Print a completion script for bash, zsh or fish; see agentctl completion SHELL --help for where it goes.",
		subs: []command{
			shell("bash", "  source <(agentctl completion bash)    # now; add the line to ~/.bashrc for every shell",
				func(root *cobra.Command, e *env) error {
					if _, err := io.WriteString(e.stdout, bashFallback); err != nil {
						return err
					}
					return root.GenBashCompletionV2(e.stdout, true)
				}),
			shell("zsh", "  agentctl completion zsh > \"${fpath[1]}/_agentctl\"    # then start a new shell",
				func(root *cobra.Command, e *env) error { return root.GenZshCompletion(e.stdout) }),
			shell("fish", "  agentctl completion fish > ~/.config/fish/completions/agentctl.fish",
				func(root *cobra.Command, e *env) error { return root.GenFishCompletion(e.stdout, true) }),
		},
	}
}
