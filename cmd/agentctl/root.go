package main

// The command tree. agentctl uses github.com/spf13/cobra, the framework of
// kubectl, gh and docker's CLI, so that it behaves as people expect from
// those: help per verb (`agentctl spawn --help`, `agentctl help spawn`),
// global flags before or after the verb, `--version`, and completion
// scripts for bash, zsh and fish generated from the same tree. Cobra only
// parses and dispatches here: each verb's RunE records what its run
// returned, and run prints it and picks the exit status exactly as before,
// through the one exitCode.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/pkg/wire"
)

// command is a row of the command tree: a verb, whatever its result's
// type, or a group of verbs.
type command interface {
	// cobra turns the command into a cobra command bound to e.
	cobra(e *env) *cobra.Command
}

// verb is one agentctl command whose result is an R: run returns it, human
// prints it for a person (nil prints it as indented JSON), and with --json
// it is the envelope's result.
type verb[R any] struct {
	// use is the verb and its arguments, as in the usage line:
	// "stop NAME [--signal SIG] [--grace DURATION]".
	use     string
	summary string
	// long is the help's text when it says more than summary.
	long    string
	example string
	// args checks the positional arguments before run; nil accepts none.
	args cobra.PositionalArgs
	// flags defines the verb's own flags, bound to variables run reads.
	flags func(fs *pflag.FlagSet)
	run   func(ctx context.Context, e *env, args []string) (R, error)
	human func(w io.Writer, r R) error
	// serverTimeout marks verbs that hand --timeout to the daemon as the
	// operation's deadline: the client waits a little longer, so the
	// daemon's timeout answer, with what it saw, arrives first.
	serverTimeout bool
	// quick marks verbs that answer at once (one short request, nothing
	// waited for). They run without a signal handler: installing one
	// (os/signal starts a goroutine locked to a thread of its own) costs
	// about 0.3 ms, a quarter of a hello-world binary's whole run, and
	// agentctl runs once per shell command. Ctrl-C then ends them the
	// default way, which a shell reports as status 130 too, and the kernel
	// closes the connection, so the daemon cancels the call all the same.
	quick bool
	// complete says what the first positional argument names, for the
	// shell's completion from the daemon.
	complete completeKind
	// flagComplete says what flags name, likewise: {"session": completeSession}.
	flagComplete map[string]completeKind
	// hidden keeps a verb out of help, completion and man pages.
	hidden bool
	// interactive marks verbs that put the terminal's bytes on stdout
	// (attach, watch): they have no JSON to give, so --json is refused
	// rather than mixing raw output with an envelope. It says what to
	// run instead.
	interactive string
}

// selfPrinted is the result of a verb that writes its own output (attach,
// watch, serve, the MCP servers, the completion scripts): its run returns
// nil with errPrinted, or a failure, never a result to print.
type selfPrinted struct{}

// group is a command whose sub-commands are verbs: channel, desktop,
// completion.
type group struct {
	use, summary, long string
	subs               []command
}

// output is what a verb returned, ready to print.
type output interface {
	// value is the result of the --json envelope.
	value() any
	// human prints it for a person.
	human(w io.Writer) error
}

// result is an output: a verb's result and its printer.
type result[R any] struct {
	r     R
	print func(io.Writer, R) error
}

func (o result[R]) value() any { return o.r }

func (o result[R]) human(w io.Writer) error {
	if o.print == nil {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(o.r)
		return nil
	}
	return o.print(w, o.r)
}

// verbTable is agentctl's command table, by name; help and completion come
// from it. Each verb is made on demand: see verbsFor.
func verbTable() []namedVerb {
	return append([]namedVerb{
		{"version", versionVerb}, {"hello", helloVerb},
		{"spawn", spawnVerb}, {"run", runVerb}, {"ask", askVerb}, {"list", listVerb}, {"status", statusVerb}, {"stop", stopVerb},
		{"rm", rmVerb}, {"reconcile", reconcileVerb}, {"logs", logsVerb}, {"send", sendVerb},
		{"snapshot", snapshotVerb}, {"wait", waitVerb}, {"resize", resizeVerb}, {"attach", attachVerb},
		{"screenshot", screenshotVerb}, {"act", actVerb}, {"screen", screenVerb}, {"desktop", desktopVerb},
		{"channel", channelVerb}, {"mcp", mcpVerb}, {"serve", serveVerb}, {"completion", completionVerb},
		{"doctor", doctorVerb}, {"record", recordVerb}, {"watch", watchVerb}, {"diff", diffVerb}, {"restart", restartVerb},
		{"approve", approveVerb(false)}, {"deny", approveVerb(true)},
		{"view", viewVerb},
		{"hook", hookVerb},
		{"events", eventsVerb},
	}, extraVerbs()...)
}

// namedVerb is a row of verbTable.
type namedVerb struct {
	name string
	make func() command
}

// verbsFor returns the verbs to build for args: only the one args name when
// they name one, else all (help, completion, an unknown verb that cobra
// suggests a near name for). Building one cobra command instead of thirty
// took 0.15 ms off each agentctl run (BENCHMARKS.md, issue 15), and
// agentctl runs once per shell command.
func verbsFor(args []string) []command {
	table := verbTable()
	if name := verbName(args); name != "" {
		for _, nv := range table {
			if nv.name == name {
				return []command{nv.make()}
			}
		}
	}
	vs := make([]command, len(table))
	for i, nv := range table {
		vs[i] = nv.make()
	}
	return vs
}

// verbName is the first word of args that is not a global flag or its
// value: the verb, or "" when there is none before "--".
func verbName(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return ""
		case a == "--socket" || a == "--timeout":
			i++ // the value
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// newRoot builds the command tree for one run of args, bound to e. It is
// built per run, not kept in package variables, so tests can run agentctl
// many times in one process.
func newRoot(e *env, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentctl",
		Short: "talk to agentd, the daemon for agent sessions and the X11 screen",
		Long: "agentctl — talk to agentd, the daemon for agent sessions and the X11 screen\n\n" +
			"Global flags (--socket, --json, --timeout) go before or after the command.",
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
		// agentctl's own completion verb adds what a plain bash lacks.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		// No command: the help, and the usage exit status, for a
		// script that forgot its verb.
		RunE: func(c *cobra.Command, args []string) error {
			if v, _ := c.Flags().GetBool("version"); v {
				if e.json {
					// The version verb's shape, without asking the daemon.
					e.ran, e.command, e.result = true, "version", result[*versionResult]{r: &versionResult{Client: buildinfo.Version}}
					return nil
				}
				fmt.Fprintf(c.OutOrStdout(), "agentctl %s\n", buildinfo.Version)
				return nil
			}
			if e.json {
				// A script gets an envelope, not the help.
				e.ran, e.command, e.err = true, "agentctl", usagef("agentctl needs a command; see agentctl --help")
				return nil
			}
			c.Help()
			e.ran, e.command, e.err = true, "agentctl", exitStatus(wire.ExitUsage)
			return nil
		},
	}
	// --version is agentctl's own flag rather than cobra's Version field:
	// cobra prints that through a text/template, and linking text/template
	// makes the linker keep every exported method of every type (its
	// MethodByName), which costs each run of agentctl start-up time.
	root.Flags().BoolP("version", "v", false, "version for agentctl")
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&e.socket, "socket", wire.DefaultSocketPath(), "agentd's socket")
	pf.BoolVar(&e.json, "json", false, "print JSON envelopes on stdout: one, or one per line for a stream (indented on a terminal)")
	durationVar(pf, &e.timeout, "timeout", "give up after this long (e.g. 30s); 0 waits as long as the request does")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if c == root {
			// fail prefixes "agentctl: " already.
			return usagef("%v; see agentctl --help", err)
		}
		return usagef("%s: %v; see %s --help", commandName(c), err, c.CommandPath())
	})
	// The exit table ends the top-level help, as a man page's EXIT STATUS.
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		defaultHelp(c, args)
		if !c.HasParent() {
			fmt.Fprint(c.OutOrStdout(), "\nExit status:\n"+exitTable())
		}
	})
	for _, v := range verbsFor(args) {
		root.AddCommand(v.cobra(e))
	}
	root.SetHelpCommand(helpCommand(e))
	return root
}

// cobra turns the verb into a cobra command bound to e: its RunE runs the
// verb and records its result for runEnv to print.
func (v verb[R]) cobra(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:                   v.use,
		Short:                 v.summary,
		Long:                  cmp.Or(v.long, v.summary),
		Example:               v.example,
		DisableFlagsInUseLine: true,
		ValidArgsFunction:     e.completer(v.complete),
		Hidden:                v.hidden,
		Args:                  noArgs,
	}
	if v.args != nil {
		c.Args = v.args
	}
	if v.flags != nil {
		v.flags(c.Flags())
	}
	for name, kind := range v.flagComplete {
		c.RegisterFlagCompletionFunc(name, e.flagCompleter(kind))
	}
	c.RunE = func(c *cobra.Command, args []string) error {
		e.ran, e.command, e.cmd = true, commandName(c), c
		if v.interactive != "" && e.json {
			e.err = usagef("%s is interactive: it writes a terminal's bytes, not JSON; leave out --json (%s)", e.command, v.interactive)
			return nil
		}
		if !v.quick && e.catchSignals != nil {
			e.catchSignals()
		}
		ctx := c.Context()
		if e.timeout > 0 {
			limit := e.timeout
			if v.serverTimeout {
				limit += serverTimeoutSlack
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, limit)
			defer cancel()
		}
		r, err := v.run(ctx, e, args)
		e.result, e.err = result[R]{r: r, print: v.human}, err
		return nil
	}
	return c
}

// cobra turns the group into a cobra command bound to e. Run alone, or
// with a sub-command it does not have, it is a usage error naming the
// sub-commands, not its help on stdout.
func (g group) cobra(e *env) *cobra.Command {
	name, _, _ := strings.Cut(g.use, " ")
	c := &cobra.Command{
		Use:                   g.use,
		Short:                 g.summary,
		Long:                  cmp.Or(g.long, g.summary),
		DisableFlagsInUseLine: true,
		ValidArgsFunction:     e.completer(completeNone),
		Args:                  cobra.ArbitraryArgs,
	}
	for _, s := range g.subs {
		c.AddCommand(s.cobra(e))
	}
	c.RunE = func(c *cobra.Command, args []string) error {
		var names []string
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				names = append(names, s.Name())
			}
		}
		if len(args) == 0 {
			return usagef("%s needs a command: %s; see %s --help", name, strings.Join(names, ", "), c.CommandPath())
		}
		return usagef("unknown %s command %q; the commands are %s; see %s --help", name, args[0], strings.Join(names, ", "), c.CommandPath())
	}
	return c
}

// helpCommand is `agentctl help [COMMAND...]`: cobra's, except that an
// unknown topic is a usage error like an unknown command, not the help
// with exit status 0.
func helpCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "help about any command",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, _, _ := c.Root().Find(args)
			var out []cobra.Completion
			for _, s := range target.Commands() {
				if s.IsAvailableCommand() && strings.HasPrefix(s.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(s.Name(), s.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return usagef("no help for %q: no such command; agentctl --help lists the commands", strings.Join(args, " "))
			}
			e.ran, e.command, e.err = true, "help", errPrinted
			return target.Help()
		},
	}
}

// usageLine is "agentctl VERB ARGS" for c.
func usageLine(c *cobra.Command) string { return c.UseLine() }

// noArgs refuses positional arguments.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments; see %s --help", commandName(c), c.CommandPath())
	}
	return nil
}

// exactArgs wants n positional arguments.
func exactArgs(n int) cobra.PositionalArgs { return rangeArgs(n, n) }

// rangeArgs wants between lo and hi positional arguments.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usagef("usage: %s; see %s --help", usageLine(c), c.CommandPath())
		}
		return nil
	}
}
