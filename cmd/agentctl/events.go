package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

// eventsOptions are the events verb's flags.
type eventsOptions struct {
	follow bool
	jsonl  bool
}

// eventsEnd is the last envelope of `events --json`: where the stream
// ended, for a later subscribe to go on from.
type eventsEnd struct {
	Changes int         `json:"changes"`
	Cursor  wire.Cursor `json:"cursor"`
}

// reconnectFor is how long events -f waits for a daemon that stopped to
// answer again (a restart) before it gives up.
const reconnectFor = 30 * time.Second

func eventsVerb() command {
	var o eventsOptions
	return verb[*eventsEnd]{
		use:     "events [-f] [NAME...]",
		summary: "print the state of every agent session, or of those named (-f follows their changes)",
		long: "Print each session's state now — an agent CLI's working, waiting, needs_approval or\n" +
			"needs_attention, with what it asks — and exit; -f then prints every change as it happens: the\n" +
			"agent's states, and each session's life (spawned, exited, restarted, removed), sessions spawned\n" +
			"later included, until Ctrl-C. Programs that are not agent CLIs show only their life: their\n" +
			"ready and busy change on every keystroke (agentctl wait --state ready waits for one).\n\n" +
			"On a terminal the changes are a table; into a pipe or a file (or with --jsonl) each is one JSON\n" +
			"line; --json prints envelopes of type \"event\" and a last one of type \"result\" with the cursor.\n" +
			"When the daemon restarts, -f connects again and goes on where it left off: nothing recorded\n" +
			"meanwhile is lost.",
		example: "  agentctl events                 # every session's state now\n" +
			"  agentctl events -f fix review   # follow two sessions\n" +
			"  agentctl events -f | jq -r 'select(.state==\"needs_approval\") | .name'",
		args:     rangeArgs(0, 256),
		complete: completeSession,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVarP(&o.follow, "follow", "f", false, "follow the changes until Ctrl-C")
			fs.BoolVar(&o.jsonl, "jsonl", false, "print JSON lines even on a terminal")
		},
		run: func(ctx context.Context, e *env, args []string) (*eventsEnd, error) {
			return e.events(ctx, o, args)
		},
	}
}

// events prints the states and, with follow, the changes.
func (e *env) events(ctx context.Context, o eventsOptions, names []string) (*eventsEnd, error) {
	end := &eventsEnd{}
	table := !e.json && !o.jsonl
	if f, ok := e.stdout.(*os.File); !ok || !isTerminal(f) {
		table = false
	}
	var mu sync.Mutex // the client's reader prints; the end reads end
	var tw *changeTable
	if table {
		tw = &changeTable{w: e.stdout}
	}
	print := func(c wire.StateChange) {
		mu.Lock()
		defer mu.Unlock()
		end.Changes++
		end.Cursor.Add(c)
		switch {
		case e.json:
			e.emit(typeEvent, c)
		case table:
			tw.row(c)
		default:
			enc := json.NewEncoder(e.stdout)
			enc.SetEscapeHTML(false)
			enc.Encode(c)
		}
	}
	p := wire.SubscribeParams{Names: names, Current: true, Follow: o.follow}
	for {
		err := e.subscribeOnce(ctx, p, print)
		switch {
		case err == nil:
		case o.follow && errors.Is(err, context.Canceled):
			err = nil
		case o.follow && (errors.Is(err, wire.ErrShuttingDown) || isUnreachable(err)):
			// The daemon stops: wait for it to come back, then go on
			// from the cursor.
			if err = e.awaitDaemon(ctx); err == nil {
				mu.Lock()
				cur := end.Cursor
				mu.Unlock()
				p.Cursor, p.Current = &cur, false
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		break
	}
	if e.json {
		return end, nil
	}
	return nil, errPrinted
}

// subscribeOnce runs one agent.subscribe call on a connection of its own.
func (e *env) subscribeOnce(ctx context.Context, p wire.SubscribeParams, print func(wire.StateChange)) error {
	c, err := wire.Dial(ctx, e.socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
		if n.Method != wire.NotifyStateChange {
			return
		}
		var sc wire.StateChange
		if json.Unmarshal(n.Params, &sc) == nil {
			print(sc)
		}
	}})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Subscribe(ctx, p)
	return err
}

// isUnreachable says whether err is a daemon that does not answer: a
// stream cut by the daemon's end, or a dial that found no daemon.
func isUnreachable(err error) bool {
	var ue *wire.UnreachableError
	return errors.As(err, &ue) || errors.Is(err, wire.ErrClosed)
}

// awaitDaemon waits up to reconnectFor for the daemon to answer hello.
func (e *env) awaitDaemon(ctx context.Context) error {
	deadline := time.Now().Add(reconnectFor)
	var last error
	for time.Now().Before(deadline) {
		c, err := wire.Dial(ctx, e.socket, wire.ClientOptions{})
		if err == nil {
			c.Close()
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return last
}

// changeTable prints changes as rows of fixed columns, for a person.
type changeTable struct {
	w      io.Writer
	header bool
}

func (t *changeTable) row(c wire.StateChange) {
	if !t.header {
		fmt.Fprintf(t.w, "%-12s  %-16s  %-9s  %-15s  %s\n", "TIME", "NAME", "CHANGE", "STATE", "DETAIL")
		t.header = true
	}
	at := c.TS.Local().Format("15:04:05.000")
	state := c.State
	if state == "" {
		state = string(c.Status)
	}
	if state == "" {
		state = "-"
	}
	var detail []string
	if c.Detail != nil {
		if s := stateAsks(c.Detail); s != "" {
			detail = append(detail, s)
		}
		if c.Detail.PromptID != "" {
			detail = append(detail, "prompt "+c.Detail.PromptID)
		}
	}
	if c.Prev != "" && c.Kind == wire.ChangeState {
		detail = append(detail, "was "+c.Prev)
	}
	if c.TurnMS > 0 {
		detail = append(detail, "turn "+(time.Duration(c.TurnMS)*time.Millisecond).Round(100*time.Millisecond).String())
	}
	if c.Termination != "" {
		detail = append(detail, string(c.Termination))
	}
	if c.ExitCode != nil {
		detail = append(detail, fmt.Sprintf("exit %d", *c.ExitCode))
	}
	if c.Signal != "" {
		detail = append(detail, "signal "+c.Signal)
	}
	fmt.Fprintf(t.w, "%-12s  %-16s  %-9s  %-15s  %s\n", at, safeText(c.Name), c.Kind, safeText(state), safeText(strings.Join(detail, "; ")))
}
