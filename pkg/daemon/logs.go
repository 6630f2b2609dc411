package daemon

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// plainEventBytes is about the most text one plain output event gathers.
const plainEventBytes = 64 << 10

// errPageFull stops a page of agent.logs at its limit of events or bytes.
var errPageFull = errors.New("page full")

// logs serves agent.logs: a page built under MaxLogPageBytes, or a stream
// of notifications whose memory is one event (the socket's back-pressure
// paces it).
func (d *Daemon) logs(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.LogsParams](call)
	if err != nil {
		return nil, err
	}
	streaming := p.Follow || p.Stream
	if streaming {
		ctx = call.Long(ctx) // a follow or stream lasts until its client or a stop ends it
	}
	switch {
	case p.Limit < 0:
		return nil, wire.Errorf(wire.CodeInvalidParams, "limit %d is negative; give the most events wanted, or 0 for the default", p.Limit)
	case !streaming && p.Limit > wire.MaxLogEvents:
		return nil, wire.Errorf(wire.CodeInvalidParams, "limit %d is over the %d events of one page; page on with from_seq = next_seq, or set stream", p.Limit, wire.MaxLogEvents)
	case p.Tail < 0:
		return nil, wire.Errorf(wire.CodeInvalidParams, "tail %d is negative; give how many of the last events to read", p.Tail)
	}
	req := session.LogsRequest{Name: p.Name, FromSeq: p.FromSeq, Tail: p.Tail, Follow: p.Follow, WholeRunes: true}
	if p.Since != "" {
		seq, t, err := parseSince(p.Since, time.Now())
		if err != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "%v", err)
		}
		req.FromSeq, req.Since = max(req.FromSeq, seq), t
	}
	limit := p.Limit
	if limit == 0 && !streaming {
		limit = wire.MaxLogEvents
	}
	out := &logOutput{limit: limit, res: &wire.LogsResult{Name: p.Name, Events: []wire.LogEvent{}, NextSeq: p.FromSeq}}
	if !streaming {
		// A page's events count in the memory budget as they are
		// gathered; the lease becomes the answer's (rpc.WithLease).
		out.ctx = ctx
		out.lease, _ = rpc.Reserve(ctx, 0)
		defer func() { out.lease.Release() }()
	}
	if streaming {
		out.emit = func(le wire.LogEvent) error {
			le.Name = p.Name
			// Bounded by the call's context: a stop (which ends long
			// calls at once) or a cancel must not wait for a follower
			// that never reads (issue 21, D11).
			return call.Conn.NotifyContext(ctx, wire.NotifyLogEvent, le)
		}
	} else {
		out.emit = out.addToPage
	}
	if p.Plain {
		info, err := d.sessions.Status(ctx, p.Name)
		if err != nil {
			return nil, err
		}
		out.plain = session.NewPlainText(info.Cols, info.Rows)
		defer out.plain.Close()
	}
	// Caught up with the log: a page or stream ends here (the screen as it
	// stands is the rest of the text); a follow hands out the lines the
	// program is done with.
	req.CaughtUp = func() error { return out.flushPlain(p.Follow) }
	err = d.sessions.Logs(ctx, req, out.event)
	switch {
	case errors.Is(err, errPageFull):
		out.res.More = true
		err = out.flushPlain(false)
	case err == nil && p.Follow:
		err = out.flushPlain(false) // the session ended: the screen it left
	}
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	if out.lease != nil {
		lease := out.lease
		out.lease = nil // the answer's now
		return rpc.WithLease(out.res, lease), nil
	}
	return out.res, nil
}

// logOutput turns the session's events into agent.logs' events: a page or
// a stream, raw or plain.
type logOutput struct {
	res   *wire.LogsResult
	emit  func(wire.LogEvent) error
	limit int // events; 0 is no limit
	sent  int
	bytes int // the page's size so far, as JSON
	// lease holds the page's bytes in the memory budget (nil: a stream,
	// or no budget); ctx bounds its waits.
	lease *rpc.Lease
	ctx   context.Context

	// plain renders output; pending is the output event its text goes to
	// until another kind of event comes.
	plain   *session.PlainText
	pending *wire.LogEvent
	force   bool // the page takes the last text even when full
}

func (o *logOutput) event(ev session.Event) error {
	if o.limit > 0 && o.sent >= o.limit {
		return errPageFull
	}
	if o.plain != nil {
		return o.plainEvent(ev)
	}
	if err := o.send(logEvent(ev)); err != nil {
		return err
	}
	o.res.NextSeq = ev.Seq + 1
	return nil
}

// send emits one event, counting it.
func (o *logOutput) send(le wire.LogEvent) error {
	if err := o.emit(le); err != nil {
		return err
	}
	o.sent++
	return nil
}

// addToPage adds an event to the page, or says the page is full: the
// event's bytes would take the answer past MaxLogPageBytes.
func (o *logOutput) addToPage(le wire.LogEvent) error {
	n := eventJSONSize(&le)
	if len(o.res.Events) > 0 && o.bytes+n > wire.MaxLogPageBytes && !o.force {
		return errPageFull
	}
	if err := o.lease.Grow(o.ctx, n); err != nil {
		if len(o.res.Events) > 0 {
			return errPageFull // the page so far; the client pages on
		}
		return err
	}
	o.bytes += n
	o.res.Events = append(o.res.Events, le)
	return nil
}

func (o *logOutput) plainEvent(ev session.Event) error {
	text := o.plain.Write(ev)
	if ev.Type == session.EventOutput {
		if o.pending == nil {
			o.pending = &wire.LogEvent{Seq: ev.Seq, TS: ev.TS, Type: wire.EventType(ev.Type)}
		}
		o.pending.Data += text
		if len(o.pending.Data) >= plainEventBytes {
			if err := o.sendPending(); err != nil {
				return err
			}
		}
		o.res.NextSeq = ev.Seq + 1
		return nil
	}
	if err := o.sendPending(); err != nil {
		return err
	}
	if ev.Type == session.EventResize || ev.Type == session.EventInput {
		o.res.NextSeq = ev.Seq + 1
		return nil // drawn already; typed input is part of the output's echo
	}
	if err := o.send(logEvent(ev)); err != nil {
		return err
	}
	o.res.NextSeq = ev.Seq + 1
	return nil
}

// sendPending emits the output event being gathered, if it has text; on
// a full page it stays pending.
func (o *logOutput) sendPending() error {
	if o.pending == nil || o.pending.Data == "" {
		o.pending = nil
		return nil
	}
	if err := o.send(*o.pending); err != nil {
		return err
	}
	o.pending = nil
	return nil
}

// flushPlain hands out the rendered text not yet sent: with follow the
// lines the cursor has left, else the rest of the screen.
func (o *logOutput) flushPlain(follow bool) error {
	if o.plain == nil {
		return nil
	}
	var text string
	if follow {
		text = o.plain.Lines(true)
	} else {
		text = o.plain.End()
	}
	if text != "" {
		if o.pending == nil {
			o.pending = &wire.LogEvent{Seq: o.res.NextSeq - 1, TS: time.Now().UTC(), Type: wire.EventOutput}
		}
		o.pending.Data += text
	}
	// The rest of the text goes in even past the page's size: it belongs
	// to the events the page holds.
	o.force = true
	defer func() { o.force = false }()
	return o.sendPending()
}

func logEvent(ev session.Event) wire.LogEvent {
	return wire.LogEvent{Seq: ev.Seq, TS: ev.TS, Type: wire.EventType(ev.Type), Data: strings.ToValidUTF8(string(ev.Data), "\uFFFD"),
		Text: ev.Text, Reason: ev.Reason, Cols: ev.Cols, Rows: ev.Rows, Signal: ev.Signal, ExitCode: ev.ExitCode,
		Termination: wire.Termination(ev.Termination), Count: ev.Count, Bytes: ev.Bytes, Detail: ev.Detail}
}

// eventJSONSize is an upper bound of the bytes of le as JSON: every byte
// that JSON might escape counted at its longest (\u00XX).
func eventJSONSize(le *wire.LogEvent) int {
	return 256 + len(le.Name) + len(le.Reason) + len(le.Signal) + escapedSize(le.Data) + escapedSize(le.Text) + len(le.Detail)
}

func escapedSize(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&':
			n += 5
		case c == 0xE2:
			n += 3 // U+2028 and U+2029 are written as \u2028
		}
	}
	return n
}

// parseSince reads agent.logs' since: a seq, a duration ago, or a time.
func parseSince(s string, now time.Time) (seq uint64, t time.Time, err error) {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return n, time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, time.Time{}, fmt.Errorf("since %q is a negative duration; give how long ago, such as 5m", s)
		}
		return 0, now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		loc := time.Local
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			// A time in the future selects nothing yet, as journalctl and
			// docker logs answer it: a script polling with its last
			// timestamp must not break on clock skew.
			return 0, t, nil
		}
	}
	if !utf8.ValidString(s) || len(s) > 64 {
		s = "the value given"
	}
	return 0, time.Time{}, fmt.Errorf("since %q is not a seq, a duration or a time; give a seq such as 120, a duration ago such as 90s, 5m or 1h30m, "+
		"or a time such as 2026-11-30T20:00:00Z or \"2026-11-30 20:00\"", s)
}
