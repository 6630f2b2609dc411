package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// subscribe serves agent.subscribe: the session's changes as
// NotifyStateChange notifications, written one at a time with the
// socket's back-pressure pacing the reading of the logs, so a subscriber
// costs the daemon one change of memory; one that stops reading is
// dropped after the connection's write timeout.
func (d *Daemon) subscribe(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.SubscribeParams](call)
	if err != nil {
		return nil, err
	}
	if len(p.Names) > maxSubscribeNames {
		return nil, wire.Errorf(wire.CodeInvalidParams, "names lists %d sessions, over the %d one subscription takes; give none to follow every session", len(p.Names), maxSubscribeNames)
	}
	if p.Follow {
		ctx = call.Long(ctx)
	}
	req := session.SubscribeRequest{Names: p.Names, Current: p.Current, Follow: p.Follow}
	if p.Cursor != nil {
		if len(p.Cursor.Seqs) > maxSubscribeNames {
			return nil, wire.Errorf(wire.CodeInvalidParams, "the cursor holds %d sessions, over %d; subscribe without it to begin from now", len(p.Cursor.Seqs), maxSubscribeNames)
		}
		req.Cursor = session.Cursor{Time: p.Cursor.After, Seqs: p.Cursor.Seqs}
	}
	var cur wire.Cursor
	if p.Cursor != nil {
		cur = *p.Cursor
	}
	err = d.sessions.Subscribe(ctx, req, func(c session.StateChange) error {
		wc := stateChange(c)
		if err := call.Conn.NotifyContext(ctx, wire.NotifyStateChange, wc); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// The connection is closed with it; the log says why.
				return fmt.Errorf("the subscriber did not read its state changes within write_timeout and was dropped (it subscribes again with its cursor): %w", err)
			}
			return err
		}
		cur.Add(wc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &wire.SubscribeResult{Cursor: cur}, nil
}

// maxSubscribeNames bounds the sessions one subscription names: more
// than a daemon runs (session.DefaultMaxSessions is far less).
const maxSubscribeNames = 4096

// stateChange is a change on the wire.
func stateChange(c session.StateChange) wire.StateChange {
	return wire.StateChange{Name: c.Session, Kind: string(c.Kind), Seq: c.Seq, TS: c.TS, State: c.State, Since: c.Since,
		Source: c.Source, Detail: stateDetail(c.Detail), Prev: c.Prev, PrevSince: c.PrevSince, TurnMS: c.Turn.Milliseconds(),
		Status: wire.Status(c.Status), Termination: wire.Termination(c.Termination), ExitCode: c.ExitCode, Signal: c.Signal, Reason: c.Reason}
}
