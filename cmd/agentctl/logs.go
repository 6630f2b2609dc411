package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

// logsEnd is the last envelope of `logs --json`: the stream ended here,
// and where to read on from.
type logsEnd struct {
	Name    string `json:"name"`
	Events  int    `json:"events"`
	NextSeq uint64 `json:"next_seq,omitempty"`
	More    bool   `json:"more,omitempty"`
}

// logsOptions are the logs verb's flags.
type logsOptions struct {
	p      wire.LogsParams
	tail   int
	events bool
}

func logsVerb() command {
	var o logsOptions
	return verb[*logsEnd]{
		use:     "logs NAME [-f] [--since WHEN] [--tail N] [--limit N] [--plain] [--events]",
		summary: "print a session's recorded output (-f follows; --plain as text; --tail N last lines)",
		long: "Print a session's recorded output, whole however long, as it streams from the daemon; -f then\n" +
			"follows it until the session ends.\n\n" +
			"--plain prints the text a person saw instead of the raw bytes: escape sequences and in-place\n" +
			"edits applied, the lines as they scrolled off the screen, then the screen as it was left.\n" +
			"--since starts at a seq (120), a duration ago (90s, 5m, 1h30m) or a time (2026-11-30T20:00:00Z,\n" +
			"\"2026-11-30 20:00\"; a time to come prints nothing, and exits 0). --tail N prints the last N lines (with --events or --json, the last N\n" +
			"events). --limit N stops after N events.\n\n" +
			"--events prints every event of the log (output, input, ask, answer, resize, signal, exit) as a\n" +
			"JSON line. With --json each event is an envelope of type \"event\", one per line, and a last\n" +
			"envelope of type \"result\" ends the stream.",
		args: exactArgs(1), complete: completeSession,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVarP(&o.p.Follow, "follow", "f", false, "follow new events until the session ends")
			fs.Uint64Var(&o.p.FromSeq, "from", 0, "first event seq")
			fs.StringVar(&o.p.Since, "since", "", "start at a seq, a duration ago (5m) or a time")
			fs.IntVar(&o.tail, "tail", 0, "print the last N lines (events with --events or --json)")
			fs.IntVar(&o.p.Limit, "limit", 0, "stop after N events")
			fs.BoolVar(&o.p.Plain, "plain", false, "print the text a person saw, escape sequences applied")
			fs.BoolVar(&o.events, "events", false, "print events as JSON lines, not just the output")
		},
		run: func(ctx context.Context, e *env, args []string) (*logsEnd, error) {
			o.p.Name = args[0]
			return e.logs(ctx, o)
		},
	}
}

// logs streams a session's log to stdout.
func (e *env) logs(ctx context.Context, o logsOptions) (*logsEnd, error) {
	switch {
	case o.tail < 0:
		return nil, usagef("--tail %d is negative; give how many of the last lines to print", o.tail)
	case o.p.Limit < 0:
		return nil, usagef("--limit %d is negative; give the most events to print", o.p.Limit)
	case o.p.Since != "" && o.p.FromSeq != 0:
		return nil, usagef("--since and --from both say where to start; give one")
	}
	end := &logsEnd{Name: o.p.Name}
	// Without --plain the output is the program's bytes as it wrote them,
	// by design (for a pipe, a file, a replay: safe.go); --plain is text
	// for a person, escaped.
	out := e.stdout
	if o.p.Plain && !e.json && !o.events {
		sw := newSafeWriter(e.stdout)
		defer sw.Flush()
		out = sw
	}
	print := func(ev wire.LogEvent) {
		end.Events++
		switch {
		case e.json:
			e.emit(typeEvent, ev)
		case o.events:
			// One line an event, "<" as it is (no HTML escaping).
			enc := json.NewEncoder(e.stdout)
			enc.SetEscapeHTML(false)
			enc.Encode(ev)
		case ev.Type == wire.EventOutput:
			io.WriteString(out, ev.Data)
		}
	}
	p := o.p
	if o.tail > 0 {
		if e.json || o.events {
			p.Tail = o.tail
		} else {
			// Lines, not events: find a window of the log that holds them.
			next, err := e.tailLines(ctx, p, o.tail, out)
			if err != nil {
				return nil, err
			}
			if !p.Follow {
				return nil, errPrinted
			}
			p.FromSeq, p.Since = next, ""
		}
	}
	p.Stream = !p.Follow
	res, err := e.streamLogs(ctx, p, print)
	if err != nil {
		return nil, err
	}
	end.NextSeq, end.More = res.NextSeq, res.More
	if e.json {
		return end, nil
	}
	return nil, errPrinted
}

// streamLogs runs one streaming agent.logs call, handing each event to
// print as it arrives (in order, on the connection's reader).
func (e *env) streamLogs(ctx context.Context, p wire.LogsParams, print func(wire.LogEvent)) (*wire.LogsResult, error) {
	next := p.FromSeq
	c, err := wire.Dial(ctx, e.socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
		if n.Method != wire.NotifyLogEvent {
			return
		}
		var ev wire.LogEvent
		if json.Unmarshal(n.Params, &ev) == nil {
			print(ev)
			next = ev.Seq + 1
		}
	}})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res, err := c.Logs(ctx, p)
	if err != nil {
		if p.Follow && errors.Is(err, context.Canceled) {
			return &wire.LogsResult{Name: p.Name, NextSeq: next}, nil
		}
		return nil, err
	}
	return res, nil
}

// tailLines prints the last n lines of a session's output: it reads the
// last k events for k = n, 4n, 16n … until they hold more than n lines or
// are the whole log, keeping only the last n+1 lines. It returns where the
// log goes on.
func (e *env) tailLines(ctx context.Context, p wire.LogsParams, n int, out io.Writer) (uint64, error) {
	for k := n; ; k *= 4 {
		var lines tailBuffer
		lines.max = n
		q := p
		q.Tail, q.Stream, q.Follow, q.Limit = k, true, false, 0
		res, err := e.streamLogs(ctx, q, func(ev wire.LogEvent) {
			if ev.Type == wire.EventOutput {
				lines.write(ev.Data)
			}
		})
		if err != nil {
			return 0, err
		}
		// The window was the whole log when it ends before seq k.
		if lines.complete() || res.NextSeq <= uint64(k) || k > 1<<24 {
			io.WriteString(out, lines.last())
			return res.NextSeq, nil
		}
	}
}

// tailBuffer keeps the last max lines of a text (and one more, which shows
// the first of them is whole).
type tailBuffer struct {
	max     int
	lines   []string // whole lines, newline included, oldest first
	partial strings.Builder
	seen    int // whole lines seen
}

func (t *tailBuffer) write(s string) {
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			t.partial.WriteString(s)
			return
		}
		t.partial.WriteString(s[:i+1])
		t.lines = append(t.lines, t.partial.String())
		t.partial.Reset()
		t.seen++
		if len(t.lines) > t.max+1 {
			t.lines = append(t.lines[:0], t.lines[len(t.lines)-t.max-1:]...)
		}
		s = s[i+1:]
	}
}

// complete reports whether the buffer has more lines than it keeps, so the
// first of the last max is not cut by the window's start.
func (t *tailBuffer) complete() bool {
	whole := t.seen
	if t.partial.Len() > 0 {
		whole++
	}
	return whole > t.max
}

// last is the last max lines, an unfinished last line counted as one.
func (t *tailBuffer) last() string {
	all := t.lines
	want := t.max
	if t.partial.Len() > 0 {
		want--
	}
	if len(all) > want {
		all = all[len(all)-want:]
	}
	return strings.Join(all, "") + t.partial.String()
}
