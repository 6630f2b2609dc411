package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/pkg/wire"
)

// env is what a verb runs with: the global flags, the process's stdio and
// the one connection to the daemon.
type env struct {
	socket  string
	json    bool
	timeout time.Duration
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer

	oneShot *wire.Client // see client

	// catchSignals turns SIGINT and SIGTERM into the cause of the run's
	// context (interrupted) from then on; nil in tests that run agentctl
	// in-process. See verb.quick for why it is not done at start.
	catchSignals func()

	// outMu keeps the lines of a stream whole: notifications are printed
	// from the connection's reader while the verb may print too.
	outMu sync.Mutex

	// What the command line ran, filled by the verb's RunE: cobra only
	// parses and dispatches; printing and the exit status stay here.
	ran     bool
	command string // the full verb, "channel push"
	cmd     *cobra.Command
	result  output
	err     error
	// status is the exit status after a result was printed: doctor's 1
	// when a check failed. Errors have theirs from exitCode.
	status int
}

// client is the verb's client of the daemon. Each call goes on its own
// connection, read by the calling goroutine: a verb makes one call or a
// few, and a dialled Client's reading goroutine would cost every one of
// them a wake-up (wire.NewOneShot). A daemon that cannot be reached is
// found by the first call.
func (e *env) client() *wire.Client {
	if e.oneShot == nil {
		e.oneShot = wire.NewOneShot(e.socket)
	}
	return e.oneShot
}

// serverTimeoutSlack is how much longer the client waits than a deadline it
// handed to the daemon.
const serverTimeoutSlack = 2 * time.Second

// usageError is a command line agentctl cannot run; it exits ExitUsage.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// run is agentctl: it parses args, runs one verb and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr}, args)
}

// runEnv is run with e's stdio and signal catcher.
func runEnv(ctx context.Context, e *env, args []string) int {
	if hookWanted(args) {
		return runHook(ctx, e, args) // always 0: see hook.go
	}
	root := newRoot(e, args)
	root.SetArgs(args)
	found, err := root.ExecuteContextC(ctx)
	if !e.ran {
		// Cobra refused the command line (an unknown verb or flag, a
		// wrong count of arguments) or printed help or the version itself.
		if err == nil {
			return wire.ExitOK
		}
		// Cobra stops at the first flag it does not know, so a --json
		// after it was never parsed; the script asked for an envelope
		// all the same.
		e.json = e.json || jsonWanted(args)
		if e.command == "" {
			e.command = commandName(found)
		}
		var use *usageError
		if !errors.As(err, &use) {
			err = usagef("%v", oneLine(err.Error()))
		}
		if !strings.Contains(err.Error(), "--help") {
			err = usagef("%v; see %s --help", err, helpPath(found))
		}
		return e.fail(e.command, err)
	}
	return e.finish(ctx)
}

// jsonWanted says whether --json is on the command line before "--"
// (after it come a command's words, never flags).
func jsonWanted(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--json":
			return true
		case strings.HasPrefix(a, "--json="):
			// Every spelling of true the flag itself takes (1, t, True...).
			on, err := strconv.ParseBool(strings.TrimPrefix(a, "--json="))
			return err == nil && on
		}
	}
	return false
}

// oneLine folds cobra's multi-line messages ("unknown command ...\n\nDid
// you mean this?\n\tspawn") into agentctl's one line per error.
func oneLine(msg string) string {
	head, tail, ok := strings.Cut(strings.TrimSpace(msg), "\n\nDid you mean this?\n")
	if !ok {
		return strings.Join(strings.Fields(msg), " ")
	}
	return head + "; did you mean " + strings.Join(strings.Fields(tail), " or ") + "?"
}

// finish prints what the verb returned and turns it into the exit status.
func (e *env) finish(ctx context.Context) int {
	result, err := e.result, e.err
	if errors.Is(err, errPrinted) {
		return wire.ExitOK
	}
	var es exitStatus
	if errors.As(err, &es) {
		return int(es)
	}
	// Interrupted during a call: the connection is closed, so the daemon
	// has cancelled the call; exit as a shell expects (130 for Ctrl-C).
	var sig interrupted
	if err != nil && errors.As(context.Cause(ctx), &sig) {
		msg := "agentd cancelled the call"
		if e.command == "ask" {
			// The ask is cancelled, not what the program does with it.
			msg = "agentd stopped waiting for the answer, but the program may still be working on the question (agentctl send NAME --keys ctrl+c interrupts it)"
		}
		return e.fail(e.command, fmt.Errorf("%s: %w; %s", e.command, sig, msg))
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && e.timeout > 0 {
			err = wire.Errorf(wire.CodeTimeout, "no answer within --timeout %s", e.timeout)
		}
		return e.fail(e.command, err)
	}
	if e.json {
		// ok is false when the verb printed a result but exits non-zero
		// (doctor with a failed check): a script reading only ok must
		// not take a failure for a pass.
		e.writeEnvelope(e.command, typeResult, e.status == wire.ExitOK, result.value(), nil)
		return e.status
	}
	// A person's output, escaped on its way (safe.go): a verb's human
	// printer is given a safeWriter, never the terminal itself.
	out := newSafeWriter(e.stdout)
	defer out.Flush()
	if err := result.human(out); err != nil {
		return e.fail(e.command, err)
	}
	return e.status
}

// commandName is a command's full verb without "agentctl": "channel push".
func commandName(c *cobra.Command) string {
	if c == nil || !c.HasParent() {
		return "agentctl"
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// helpPath is what to run --help on for c.
func helpPath(c *cobra.Command) string {
	if c == nil {
		return "agentctl"
	}
	return c.CommandPath()
}

// exitCode is the one place that turns an error into agentctl's exit status.
func exitCode(err error) int {
	var we *wire.Error
	var ue *wire.UnreachableError
	var use *usageError
	var sig interrupted
	switch {
	case err == nil:
		return wire.ExitOK
	case errors.As(err, &sig):
		return sig.exit()
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

func (i interrupted) Error() string {
	name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT (Ctrl-C)", syscall.SIGTERM: "SIGTERM"}[i.sig]
	if name == "" {
		name = i.sig.String()
	}
	return "interrupted by " + name
}

// exit is the shell's convention for a process ended by a signal.
func (i interrupted) exit() int { return 128 + int(i.sig) }

// The codes of a --json error that agentctl itself decides, beside the
// daemon's (wire.Codes): each has its row in the exit table.
const (
	codeUsage       = "usage"
	codeUnreachable = "unreachable"
	// codeInterrupted is a call ended by SIGINT or SIGTERM: not the
	// daemon's fault (internal), and a script may want to tell it apart.
	codeInterrupted = "interrupted"
)

// detailedError gives an error agentctl made the details of its --json
// envelope: what the verb could still say (version's client version when
// the daemon is not reachable).
type detailedError struct {
	err     error
	details any
}

func (d *detailedError) Error() string { return d.err.Error() }
func (d *detailedError) Unwrap() error { return d.err }

// fail reports err (on stderr, or as a JSON envelope) and returns its exit status.
func (e *env) fail(command string, err error) int {
	err = explainSocket(err)
	if e.json {
		return e.envelope(command, typeError, nil, err)
	}
	// A message may quote what a session controls (its cwd, its screen):
	// escaped, as all human output (safe.go).
	if !printTimeout(e.stderr, err) {
		fmt.Fprintf(e.stderr, "agentctl: %s\n", safeText(flagWords(command, err.Error())))
	}
	return exitCode(err)
}

// wireWords are the daemon's parameter names that reach a person in its
// messages, and the flags a person gave instead, per verb: "from_seq 999
// is past the end" reads "--from 999 is past the end" in a terminal.
// --json keeps the daemon's words, which a script may match.
var wireWords = map[string]*strings.Replacer{
	"logs":       strings.NewReplacer("from_seq ", "--from "),
	"ask":        strings.NewReplacer("via \"", "--via \""),
	"screenshot": strings.NewReplacer("pass overwrite (agentctl screenshot --force)", "pass --force"),
}

// flagWords is msg in the flags of command rather than the wire's names.
func flagWords(command, msg string) string {
	if r := wireWords[command]; r != nil {
		return r.Replace(msg)
	}
	return msg
}

// maxSocketPath is the longest path a Unix socket address holds: sun_path
// is 108 bytes with its terminating NUL.
const maxSocketPath = 107

// explainSocket turns a dial that failed because the socket's path cannot
// fit in a Unix socket address (the kernel says only "invalid argument",
// which reads as a daemon problem) into a usage error that names the limit
// and where the path came from. No agentd can ever be reached there.
func explainSocket(err error) error {
	var ue *wire.UnreachableError
	if !errors.As(err, &ue) || len(ue.Socket) <= maxSocketPath {
		return err
	}
	from, fix := "--socket", "give a shorter path with --socket or $"+wire.SocketEnv
	switch {
	case ue.Socket == os.Getenv(wire.SocketEnv):
		from = "$" + wire.SocketEnv
	case ue.Socket == wire.DefaultSocketPath():
		from, fix = "$XDG_RUNTIME_DIR", "set a shorter $XDG_RUNTIME_DIR, or "+fix
	}
	return usagef("socket path %s (from %s) is %d bytes, over the %d a Unix socket path holds (108 with its NUL); %s",
		ue.Socket, from, len(ue.Socket), maxSocketPath, fix)
}

// timeoutScreenLines is how much of the screen a timeout shows a person:
// the bottom of it, where the program was waiting.
const timeoutScreenLines = 10

// printTimeout prints an ask's or wait's timeout for a person, from the
// details the daemon attached, and says whether it did (false: print err as
// it is). The daemon's message carries the screen's last rows escaped on one
// line, for logs and JSON; here they are shown once, as rows: the message
// short, the partial answer when an ask has one, then the last rows of the
// screen that are not blank.
func printTimeout(w io.Writer, err error) bool {
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeTimeout || len(we.Details) == 0 {
		return false
	}
	var d wire.TimeoutDetails
	if json.Unmarshal(we.Details, &d) != nil || d.Op == "" || (d.Partial == "" && len(d.Screen) == 0) {
		return false
	}
	w = newSafeWriter(w)
	fmt.Fprintf(w, "agentctl: %s on session %q ran past its %s deadline; raise --timeout or check the program\n",
		d.Op, d.Name, time.Duration(d.TimeoutMS)*time.Millisecond)
	if d.Hint != "" {
		fmt.Fprintf(w, "hint: %s\n", d.Hint)
	}
	if p := strings.TrimRight(d.Partial, "\n"); p != "" && d.Op == "ask" {
		fmt.Fprintf(w, "partial answer:\n%s\n", indent(p))
	}
	screen := d.Screen
	for len(screen) > 0 && strings.TrimSpace(screen[len(screen)-1]) == "" {
		screen = screen[:len(screen)-1]
	}
	if len(screen) > timeoutScreenLines {
		screen = screen[len(screen)-timeoutScreenLines:]
	}
	if len(screen) > 0 {
		fmt.Fprintf(w, "last lines of the screen:\n%s\n", indent(strings.Join(screen, "\n")))
	}
	return true
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// envelopeError is the error part of a --json envelope.
type envelopeError struct {
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details,omitempty"`
}

// The envelope's types. A command prints one envelope of type result or
// error; a stream (logs, channel listen) prints its items first, one
// envelope per line of their own type, and ends with result or error, so
// a script reads every line the same way and knows when the stream ended.
const (
	typeResult    = "result"
	typeError     = "error"
	typeEvent     = "event"     // logs: one event of the session's log
	typeMessage   = "message"   // channel listen: one message
	typeListening = "listening" // channel listen: the channel is registered
	typeProgress  = "progress"  // wait --progress: still waiting, and what the screen shows
)

// envelopeLine is one --json envelope.
type envelopeLine struct {
	OK        bool           `json:"ok"`
	Command   string         `json:"command"`
	Type      string         `json:"type"`
	Timestamp string         `json:"timestamp"`
	Result    any            `json:"result,omitempty"`
	Error     *envelopeError `json:"error,omitempty"`
}

// envelope prints {ok, command, type, timestamp, result|error} and returns
// the exit status.
func (e *env) envelope(command, typ string, result any, err error) int {
	return e.writeEnvelope(command, typ, err == nil, result, err)
}

// writeEnvelope is envelope with ok given: a result can say not ok.
func (e *env) writeEnvelope(command, typ string, ok bool, result any, err error) int {
	out := envelopeLine{OK: ok && err == nil, Command: command, Type: typ, Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Result: result}
	if err != nil {
		ee := &envelopeError{Message: err.Error()}
		var we *wire.Error
		var ue *wire.UnreachableError
		var use *usageError
		var sig interrupted
		switch {
		case errors.As(err, &we):
			ee.Code, ee.Retryable, ee.Details = string(we.Code), we.Retryable, we.Details
		case errors.As(err, &sig):
			ee.Code = codeInterrupted
		case errors.As(err, &ue), errors.Is(err, wire.ErrClosed):
			// A socket refused as not the user's stays refused until
			// someone fixes it.
			ee.Code, ee.Retryable = codeUnreachable, !errors.As(err, new(*wire.UntrustedSocketError))
		case errors.As(err, &use):
			ee.Code = codeUsage
		default:
			ee.Code = string(wire.CodeInternal)
		}
		var de *detailedError
		if errors.As(err, &de) && ee.Details == nil {
			ee.Details, _ = json.Marshal(de.details)
		}
		out.Error = ee
	}
	e.outMu.Lock()
	e.jsonOut().Encode(out)
	e.outMu.Unlock()
	return exitCode(err)
}

// jsonOut is the encoder of --json envelopes: without encoding/json's
// HTML escaping (a terminal or jq wants "<", not "\u003c"), and indented
// when stdout is a terminal, as gh and kubectl print for a person; a pipe
// gets one envelope per line, which a stream needs.
func (e *env) jsonOut() *json.Encoder {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	if f, ok := e.stdout.(*os.File); ok && isTerminal(f) {
		enc.SetIndent("", "  ")
	}
	return enc
}

// emit prints one item of a stream as an envelope line of type typ.
func (e *env) emit(typ string, item any) { e.envelope(e.command, typ, item, nil) }

// exitTable renders the exit-status table from wire.Codes, the same source
// the README's table is checked against.
func exitTable() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  %d\tsuccess\n", wire.ExitOK)
	for _, ci := range wire.Codes {
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", ci.Exit, ci.Code, ci.Meaning)
	}
	fmt.Fprintf(tw, "  %d\t%s\tthe command line is wrong\n", wire.ExitUsage, codeUsage)
	fmt.Fprintf(tw, "  %d\t%s\tagentd is not running, or its socket is missing or not yours\n", wire.ExitUnreachable, codeUnreachable)
	fmt.Fprintf(tw, "  %d\t%s\tCtrl-C (SIGINT) ended the call, which agentd cancelled; SIGTERM exits %d\n",
		interrupted{syscall.SIGINT}.exit(), codeInterrupted, interrupted{syscall.SIGTERM}.exit())
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
