package channel

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// The reasons a channel ask ends with, as the session's event log records
// them (pkg/session spells the same words for asks typed into a terminal).
const (
	reasonReply       = "reply"
	reasonTimeout     = "timeout"
	reasonCanceled    = "canceled"
	reasonInterrupted = "interrupted"
)

// pendingAsk is an agent.ask waiting for its channel.reply.
type pendingAsk struct {
	id      string
	session string
	ch      *channel    // the channel the ask went to: only its listener replies
	reply   chan string // buffered 1: a reply never blocks
}

// Reply answers a pending ask. Only the listener l holding the channel the
// ask went to may: a reply from any other connection is ErrDenied and
// leaves the ask waiting for the real one.
func (r *Registry) Reply(l Listener, askID, text string) (*ReplyResult, error) {
	if len(text) > MaxReply {
		return nil, errorf(ErrInvalid, "reply is %d bytes, over the limit of %d", len(text), MaxReply)
	}
	r.mu.Lock()
	a := r.asks[askID]
	if a != nil && a.ch.conn != l {
		r.mu.Unlock()
		return nil, errorf(ErrDenied, "ask %.140q went to channel %q, which this connection does not hold; only that channel's listener may reply", askID, a.ch.id)
	}
	delete(r.asks, askID)
	r.mu.Unlock()
	if a == nil {
		return nil, errorf(ErrInvalid, "ask %.140q is not waiting for a reply: it was answered, timed out, or never existed", askID)
	}
	a.reply <- text
	return &ReplyResult{AskID: a.id, Session: a.session}, nil
}

// Recorder puts an ask that went through a channel into its session's
// event log (the daemon passes the session component's RecordAsk).
type Recorder func(session, question, answer, reason string)

// Ask sends an ask through the session's channel when it has one and p.Via
// allows it, and waits for the reply. routed is false when the ask should
// go to the terminal instead: no channel, via pty, or (via auto) a listener
// that left before the ask could be written. Once written, the ask is given
// to record however it ends, like an ask typed into the terminal. asker is
// who asks.
func (r *Registry) Ask(ctx context.Context, asker Peer, p AskRequest, record Recorder) (routed bool, res *Answer, err error) {
	if p.Via == ViaPTY {
		return false, nil, nil
	}
	r.mu.Lock()
	ch := r.bySession[p.Session]
	r.mu.Unlock()
	if ch == nil {
		return false, nil, nil
	}
	if len(p.Text) > MaxMessage {
		return true, nil, errorf(ErrInvalid, "ask text is %d bytes, over the limit of %d", len(p.Text), MaxMessage)
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = r.AskTimeout()
	}
	start := time.Now()
	t := time.NewTimer(timeout)
	defer t.Stop()
	a, err := r.pend(ch, p.Session)
	if err != nil {
		return true, nil, err
	}
	defer r.unpend(ch, a)

	msg, err := json.Marshal(AskMessage{Kind: AskMessageKind, AskID: a.id, Text: p.Text})
	if err != nil {
		return true, nil, err
	}
	dv, err := r.enqueue(ch, asker, msg, false)
	if err != nil {
		if p.Via != ViaChannel && errors.Is(err, ErrUnknown) {
			return false, nil, nil // the listener just left: use the terminal
		}
		return true, nil, err
	}
	outcome, answer := "", ""
	defer func() {
		if outcome != "" {
			record(p.Session, p.Text, answer, outcome)
		}
	}()
	timedOut := func() error {
		outcome = reasonTimeout
		return &AskTimeoutError{Session: p.Session, ChannelID: ch.id, Timeout: timeout}
	}
	select {
	case <-dv.done:
	case <-t.C:
		return true, nil, timedOut()
	case <-ctx.Done():
		return true, nil, ctx.Err()
	}
	if !dv.written {
		if p.Via != ViaChannel {
			return false, nil, nil
		}
		return true, nil, errorf(ErrUnknown, "channel %q of session %q ended before the ask could be written to it", ch.id, p.Session)
	}
	select {
	case answer = <-a.reply:
		outcome = reasonReply
		return true, &Answer{Session: p.Session, Text: answer, Elapsed: time.Since(start)}, nil
	case <-ch.gone:
		select {
		case answer = <-a.reply:
			outcome = reasonReply
			return true, &Answer{Session: p.Session, Text: answer, Elapsed: time.Since(start)}, nil
		default:
		}
		outcome = reasonInterrupted
		return true, nil, errorf(ErrUnknown, "channel %q of session %q ended before it replied to ask %s", ch.id, p.Session, a.id)
	case <-t.C:
		return true, nil, timedOut()
	case <-ctx.Done():
		outcome = reasonCanceled
		return true, nil, ctx.Err()
	}
}

// pend registers an ask waiting for a reply through ch.
func (r *Registry) pend(ch *channel, session string) (*pendingAsk, error) {
	a := &pendingAsk{id: randomID("ask-"), session: session, ch: ch, reply: make(chan string, 1)}
	r.mu.Lock()
	if len(r.asks) >= MaxPendingAsks {
		n := len(r.asks)
		r.mu.Unlock()
		return nil, errorf(ErrBusy, "%d asks are already waiting for replies through channels, the limit; retry later", n)
	}
	r.asks[a.id] = a
	r.mu.Unlock()
	ch.mu.Lock()
	ch.asks++
	ch.mu.Unlock()
	return a, nil
}

// unpend forgets a pending ask however it ended.
func (r *Registry) unpend(ch *channel, a *pendingAsk) {
	ch.mu.Lock()
	ch.asks--
	ch.mu.Unlock()
	r.mu.Lock()
	delete(r.asks, a.id)
	r.mu.Unlock()
}
