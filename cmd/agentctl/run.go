package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// env is what a verb runs with.
type env struct {
	socket  string
	json    bool
	timeout time.Duration
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer

	client *wire.Client
}

// dial connects once per process; a verb that needs the daemon calls it.
func (e *env) dial(ctx context.Context) (*wire.Client, error) {
	if e.client != nil {
		return e.client, nil
	}
	c, err := wire.Dial(ctx, e.socket, wire.ClientOptions{})
	if err != nil {
		return nil, err
	}
	e.client = c
	return c, nil
}

// call is one request to the daemon, decoding the result into out.
func (e *env) call(ctx context.Context, method string, params, out any) error {
	c, err := e.dial(ctx)
	if err != nil {
		return err
	}
	return c.Call(ctx, method, params, out)
}

// verb is one agentctl command. run returns the result to print (as JSON
// with --json, through human otherwise) or an error.
type verb struct {
	name    string
	args    string // usage after the verb
	summary string
	run     func(ctx context.Context, e *env, args []string) (any, error)
	// human prints the result for a person; nil prints it as indented JSON.
	human func(w io.Writer, result any) error
	// serverTimeout marks verbs that hand --timeout to the daemon as the
	// operation's deadline: the client waits a little longer, so the
	// daemon's timeout answer, with what it saw, arrives first.
	serverTimeout bool
}

// serverTimeoutSlack is how much longer the client waits than a deadline it
// handed to the daemon.
const serverTimeoutSlack = 2 * time.Second

// verbs is agentctl's command table; --help is generated from it.
func verbs() []verb {
	vs := append([]verb{versionVerb(), helloVerb()}, sessionVerbs()...)
	vs = append(vs, screenVerbs()...)
	vs = append(vs, channelVerbs()...)
	vs = append(vs, mcpVerb(), serveVerb())
	sort.Slice(vs, func(i, j int) bool { return vs[i].name < vs[j].name })
	return vs
}

// usageError is a command line agentctl cannot run; it exits ExitUsage.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("agentctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&e.socket, "socket", wire.DefaultSocketPath(), "agentd's socket")
	fs.BoolVar(&e.json, "json", false, "print one JSON envelope on stdout")
	fs.DurationVar(&e.timeout, "timeout", 0, "give up after this long (e.g. 30s); 0 waits as long as the request does")
	help := fs.Bool("help", false, "show this help")
	fs.BoolVar(help, "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "agentctl: %v; see agentctl --help\n", err)
		return wire.ExitUsage
	}
	if *help || fs.NArg() == 0 {
		printHelp(stdout, fs)
		if *help {
			return wire.ExitOK
		}
		return wire.ExitUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
		printHelp(stdout, fs)
		return wire.ExitOK
	}
	var v *verb
	for _, cand := range verbs() {
		if cand.name == name {
			v = &cand
			break
		}
	}
	if v == nil {
		return e.fail(name, usagef("unknown command %q; agentctl --help lists the commands", name))
	}
	if e.timeout > 0 {
		limit := e.timeout
		if v.serverTimeout {
			limit += serverTimeoutSlack
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	result, err := v.run(ctx, e, rest)
	if e.client != nil {
		e.client.Close()
	}
	if errors.Is(err, errPrinted) {
		return wire.ExitOK
	}
	var es exitStatus
	if errors.As(err, &es) {
		return int(es)
	}
	// Interrupted during a call: the connection is closed above, so the
	// daemon has cancelled the call; exit as a shell expects (130 for
	// Ctrl-C).
	var sig interrupted
	if err != nil && errors.As(context.Cause(ctx), &sig) {
		e.fail(name, fmt.Errorf("%s: %w; agentd cancelled the call", name, sig))
		return sig.exit()
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && e.timeout > 0 {
			err = wire.Errorf(wire.CodeTimeout, "no answer within --timeout %s", e.timeout)
		}
		return e.fail(name, err)
	}
	if e.json {
		return e.envelope(name, result, nil)
	}
	if v.human != nil {
		if err := v.human(stdout, result); err != nil {
			return e.fail(name, err)
		}
		return wire.ExitOK
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.Encode(result)
	return wire.ExitOK
}

// exitCode is the one place that turns an error into agentctl's exit status.
func exitCode(err error) int {
	var we *wire.Error
	var ue *wire.UnreachableError
	var use *usageError
	switch {
	case err == nil:
		return wire.ExitOK
	case errors.As(err, &use):
		return wire.ExitUsage
	case errors.As(err, &ue):
		return wire.ExitUnreachable
	case errors.As(err, &we):
		return wire.InfoOf(we.Code).Exit
	case errors.Is(err, wire.ErrClosed):
		// The daemon went away in the middle of the call.
		return wire.ExitUnreachable
	}
	return wire.InfoOf(wire.CodeInternal).Exit
}

// interrupted is the cause of a context ended by a signal.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return "interrupted by " + i.sig.String() }

// exit is the shell's convention for a process ended by a signal.
func (i interrupted) exit() int { return 128 + int(i.sig) }

// fail reports err (on stderr, or as a JSON envelope) and returns its exit status.
func (e *env) fail(command string, err error) int {
	if e.json {
		return e.envelope(command, nil, err)
	}
	fmt.Fprintf(e.stderr, "agentctl: %v\n", err)
	return exitCode(err)
}

// envelopeError is the error part of a --json envelope.
type envelopeError struct {
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details,omitempty"`
}

// envelope prints {ok, command, timestamp, result|error} and returns the exit status.
func (e *env) envelope(command string, result any, err error) int {
	out := struct {
		OK        bool           `json:"ok"`
		Command   string         `json:"command"`
		Timestamp string         `json:"timestamp"`
		Result    any            `json:"result,omitempty"`
		Error     *envelopeError `json:"error,omitempty"`
	}{OK: err == nil, Command: command, Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Result: result}
	if err != nil {
		ee := &envelopeError{Message: err.Error()}
		var we *wire.Error
		var ue *wire.UnreachableError
		var use *usageError
		switch {
		case errors.As(err, &we):
			ee.Code, ee.Retryable, ee.Details = string(we.Code), we.Retryable, we.Details
		case errors.As(err, &ue), errors.Is(err, wire.ErrClosed):
			ee.Code, ee.Retryable = "unreachable", true
		case errors.As(err, &use):
			ee.Code = "usage"
		default:
			ee.Code = string(wire.CodeInternal)
		}
		out.Error = ee
	}
	b, _ := json.Marshal(out)
	fmt.Fprintf(e.stdout, "%s\n", b)
	return exitCode(err)
}

func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "agentctl — talk to agentd, the daemon for agent sessions and the X11 screen\n\n")
	fmt.Fprint(w, "Usage:\n  agentctl [--socket PATH] [--json] [--timeout DURATION] COMMAND [ARGS...]\n\nCommands:\n")
	// Usage on one line, what it does indented below: argument lists are
	// too long for a table.
	for _, v := range verbs() {
		fmt.Fprintf(w, "  %s %s\n      %s\n", v.name, v.args, v.summary)
	}
	fmt.Fprint(w, "\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "h" {
			return
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0s" {
			def = " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "  --%-10s %s%s\n", f.Name, f.Usage, def)
	})
	fmt.Fprint(w, "\nExit status:\n")
	fmt.Fprint(w, exitTable())
}

// exitTable renders the exit-status table from wire.Codes, the same source
// the README's table is checked against.
func exitTable() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  %d\tsuccess\n", wire.ExitOK)
	for _, ci := range wire.Codes {
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", ci.Exit, ci.Code, ci.Meaning)
	}
	fmt.Fprintf(tw, "  %d\tusage\tthe command line is wrong\n", wire.ExitUsage)
	fmt.Fprintf(tw, "  %d\tunreachable\tagentd is not running or its socket is missing\n", wire.ExitUnreachable)
	tw.Flush()
	return b.String()
}

// stdinText returns arg, or all of stdin when arg is "-".
func (e *env) stdinText(arg string) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	b, err := io.ReadAll(io.LimitReader(e.stdin, wire.MaxFrameSize+1))
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	return string(b), nil
}
