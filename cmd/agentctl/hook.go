package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

// agentctl hook EVENT is the command an agent CLI's hooks run inside a
// session (Claude Code's and Gemini CLI's hook commands, Codex's notify
// program): it reads the hook's JSON from stdin (Codex: its last
// argument) and reports it to agentd for the session it runs in, proven by
// the session's secret.
//
// Decision: it never fails in the CLI's eyes. A hook's exit status and
// stdout mean things to the CLIs: Claude Code blocks a tool on exit 2 and
// reads stdout as a decision (and adds UserPromptSubmit's and
// SessionStart's stdout to the model's context); Gemini CLI reads stdout
// as JSON, else stderr as text that becomes a message and a decision. So
// it exits 0 whatever happens (agentd down, a refusal, bad input), says
// what went wrong on stderr, prints nothing on stdout, and for Gemini CLI
// prints "{}" (no decision), which keeps its stderr from being read as
// one. The whole run is bounded (hookBudget), so a stuck agentd never holds
// up the CLI's turn. It bypasses the command tree (runEnv), whose usage
// errors exit 2.

// hookBudget bounds agentctl hook from start to end: reading stdin and the
// call to agentd.
const hookBudget = 2 * time.Second

// hookVerb is hook's row in the command tree: its help, man page and
// completion. Runs go through runHook (runEnv), never through this run.
func hookVerb() command {
	return verb[*wire.HookResult]{
		use:     "hook [--agent claude|codex|gemini] EVENT [PAYLOAD]",
		summary: "report an agent CLI's hook to agentd (run by the CLI's hooks inside a session)",
		long: "Report one hook call of an agent CLI (Claude Code, Codex, Gemini CLI) to agentd, for the session\n" +
			"it runs in ($AGENTD_SESSION, proven by $AGENTD_SESSION_TOKEN): the hook's JSON from stdin, or\n" +
			"PAYLOAD (Codex's notify program gets it as its last argument). agentd wires it into the agent\n" +
			"CLIs it spawns; see the README (Agent hooks) to add it by hand. It always exits 0 and prints\n" +
			"nothing on stdout (\"{}\" with --agent gemini): a hook's status and output are decisions to\n" +
			"the CLI. What went wrong goes to stderr, and agentd logs refusals.",
		example: "  # in ~/.claude/settings.json, hooks.Stop[0].hooks[0].command:\n  agentctl hook --agent claude Stop",
		args:    cobra.ArbitraryArgs,
		flags: func(fs *pflag.FlagSet) {
			fs.String("agent", "", "the CLI that runs the hook: claude, codex or gemini (gemini: print {} on stdout)")
		},
		run: func(ctx context.Context, e *env, args []string) (*wire.HookResult, error) {
			return nil, errors.New("agentctl hook runs outside the command tree")
		},
	}
}

// hookWanted says whether args run agentctl hook (and not its help).
func hookWanted(args []string) bool {
	if verbName(args) != "hook" {
		return false
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" {
			return false
		}
	}
	return true
}

// runHook is agentctl hook: it always returns 0.
func runHook(ctx context.Context, e *env, args []string) int {
	ctx, cancel := context.WithTimeout(ctx, hookBudget)
	defer cancel()
	h, err := parseHookArgs(args)
	if h.agent == "gemini" {
		fmt.Fprintln(e.stdout, "{}")
	}
	if err == nil {
		err = h.report(ctx, e)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", strings.TrimSpace("agentctl hook "+h.event), err)
	}
	return wire.ExitOK
}

// hookCall is one hook call as the command line gives it.
type hookCall struct {
	socket, agent, event string
	payload              *string // the payload argument, when given
}

// parseHookArgs reads [global flags] hook [--agent A] EVENT [PAYLOAD].
func parseHookArgs(args []string) (hookCall, error) {
	h := hookCall{socket: wire.DefaultSocketPath()}
	var pos []string
	seenVerb := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() (string, error) {
			if _, v, ok := strings.Cut(a, "="); ok {
				return v, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return args[i], nil
		}
		var err error
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case a == "--socket" || strings.HasPrefix(a, "--socket="):
			h.socket, err = val()
		case a == "--agent" || strings.HasPrefix(a, "--agent="):
			h.agent, err = val()
		case a == "--timeout" || strings.HasPrefix(a, "--timeout="):
			_, err = val() // bounded by hookBudget anyway
		case a == "--json" || strings.HasPrefix(a, "--json="):
		case !seenVerb && a == "hook":
			seenVerb = true
		case strings.HasPrefix(a, "-") && len(pos) == 0:
			err = fmt.Errorf("unknown flag %s; the hook command is agentctl hook [--agent claude|codex|gemini] EVENT", a)
		default:
			pos = append(pos, a)
		}
		if err != nil {
			return h, err
		}
	}
	switch len(pos) {
	case 0:
		return h, errors.New("no event: the hook command is agentctl hook [--agent claude|codex|gemini] EVENT, registered for EVENT")
	case 1:
		h.event = pos[0]
	default:
		// Codex's notify program gets the event's JSON as its last
		// argument.
		h.event, h.payload = pos[0], &pos[len(pos)-1]
	}
	switch h.agent {
	case "", "claude", "codex", "gemini":
	default:
		return h, fmt.Errorf("--agent %q is not an agent CLI; give claude, codex or gemini", h.agent)
	}
	return h, nil
}

// report reads the payload and sends it to agentd.
func (h hookCall) report(ctx context.Context, e *env) error {
	name, token := os.Getenv("AGENTD_SESSION"), os.Getenv(wire.SessionTokenEnv)
	if name == "" {
		// A hook a person added to a CLI's own settings runs in every
		// run of that CLI, inside agentd or not: outside, it has nobody
		// to report to, and agentd's log is not troubled with it.
		return errors.New("not inside an agentd session (AGENTD_SESSION is not set): nothing reported; agentctl hook reports only from a session's program")
	}
	var payload []byte
	if h.payload != nil {
		payload = []byte(*h.payload)
	} else {
		var err error
		if payload, err = readHookInput(ctx, e.stdin); err != nil {
			return err
		}
	}
	if len(payload) > wire.MaxHookPayload {
		return fmt.Errorf("hook payload too large: over %d bytes; nothing reported, the session's state is untouched", wire.MaxHookPayload)
	}
	c := wire.NewOneShot(h.socket)
	_, err := c.Hook(ctx, wire.HookParams{Session: name, Token: token, Event: h.event, Payload: string(payload)})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("agentd did not answer within %s; the hook was not reported", hookBudget)
	}
	return err
}

// readHookInput reads stdin whole, up to one byte past the cap, giving up
// when ctx ends (a CLI that never closes the hook's stdin).
func readHookInput(ctx context.Context, r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, errors.New("no payload: the hook's JSON is read from stdin")
	}
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		var buf bytes.Buffer
		_, err := io.Copy(&buf, io.LimitReader(r, wire.MaxHookPayload+1))
		done <- read{buf.Bytes(), err}
	}()
	select {
	case rd := <-done:
		if rd.err != nil {
			return nil, fmt.Errorf("read the hook's JSON from stdin: %w", rd.err)
		}
		return rd.b, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("stdin was not closed within %s: the hook's JSON is read from stdin to its end", hookBudget)
	}
}

// hookText says in words whether a session reports through its hooks
// (status, doctor), "" for a program that is no agent CLI.
func hookText(s *wire.SessionStatus) string {
	h := s.Hooks
	switch {
	case h == nil || !h.Wired && h.Why == "" && h.Count == 0:
		return ""
	case h.Count > 0:
		how := h.How
		if !h.Wired {
			how = "added by hand"
		}
		return fmt.Sprintf("reporting (%s); %d calls, the last %s ago", how, h.Count, ago(time.Since(h.Last)))
	case !h.Wired:
		t := "not wired: " + h.Why
		if s.Agent == "gemini" {
			t += "; Gemini CLI runs hooks only in a trusted folder"
			if d := s.StateDetail; d != nil && d.Kind == "trust" {
				t += ", and this one is not trusted yet"
			}
		}
		return t
	}
	return "wired (" + h.How + "); no hook came yet"
}

// doctorHookSessions bounds the sessions doctor asks about their hooks
// (one status each).
const doctorHookSessions = 64

// checkHooks lists which running agent CLI sessions report through their
// hooks and which do not, and why. It never fails: a session with its
// hooks off still has its state from the screen.
func (e *env) checkHooks(ctx context.Context, reachable bool) doctorCheck {
	c := doctorCheck{Name: "agent hooks", Status: checkSkipped}
	if !reachable {
		c.Detail = "agentd is not reachable"
		return c
	}
	list, err := e.client().List(ctx, wire.ListParams{Status: []wire.Status{wire.StatusRunning}})
	if err != nil {
		c.Detail = "cannot list the sessions: " + err.Error()
		return c
	}
	var report, silent []string
	n := 0
	for _, row := range list.Sessions {
		if row.Agent == "" {
			continue
		}
		if n++; n > doctorHookSessions {
			silent = append(silent, fmt.Sprintf("(%d more agent sessions not asked)", len(list.Sessions)-doctorHookSessions))
			break
		}
		st, err := e.client().Status(ctx, row.Name)
		if err != nil {
			continue // ended meanwhile
		}
		switch h := st.Hooks; {
		case h != nil && h.Count > 0:
			report = append(report, fmt.Sprintf("%s (%s, %d calls)", row.Name, row.Agent, h.Count))
		default:
			silent = append(silent, fmt.Sprintf("%s (%s): %s", row.Name, row.Agent, cmp.Or(hookText(st), "no hooks")))
		}
	}
	if n == 0 {
		c.Detail = "no agent CLI session runs"
		return c
	}
	c.Status = checkPass
	var parts []string
	if len(report) > 0 {
		parts = append(parts, "report through hooks: "+strings.Join(report, ", "))
	}
	if len(silent) > 0 {
		parts = append(parts, "screen only: "+strings.Join(silent, "; "))
	}
	c.Detail = strings.Join(parts, "; ")
	return c
}
