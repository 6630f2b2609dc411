package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// attach answers agent.attach: the connection becomes the session's
// terminal (see "Raw streaming" in pkg/wire), piped to the worker's own
// raw stream. An attach that gives its window's size has the session sized
// before the first repaint; one with framed input keeps sizing it from
// the frames, in order with the keys.
func (d *Daemon) attach(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.AttachParams](call)
	if err != nil {
		return nil, err
	}
	sized := p.Cols != 0 || p.Rows != 0
	switch {
	case sized && p.ReadOnly:
		return nil, wire.Errorf(wire.CodeInvalidParams, "a read-only attach does not size the session; leave out cols and rows, or attach without read_only")
	case sized && (p.Cols == 0 || p.Rows == 0):
		return nil, wire.Errorf(wire.CodeInvalidParams, "cols %d and rows %d: give both or neither", p.Cols, p.Rows)
	}
	info, err := d.sessions.Status(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	if !info.Allows.Attach {
		return nil, &session.Error{Kind: session.ErrInvalidStatus,
			Msg: fmt.Sprintf("session %q is %s and cannot be attached; only a running session can", p.Name, info.Status)}
	}
	res := &wire.AttachResult{Name: p.Name, Cols: info.Cols, Rows: info.Rows}
	if sized && (p.Cols != info.Cols || p.Rows != info.Rows) {
		if err := d.sessions.Resize(ctx, p.Name, p.Cols, p.Rows); err != nil {
			return nil, err
		}
		res.Cols, res.Rows = p.Cols, p.Rows
	}
	return &rpc.Upgrade{
		Result: res,
		Stream: func(ctx context.Context, rw io.ReadWriter) error {
			switch {
			case p.ReadOnly:
				rw = readOnlyStream{rw}
			case p.FramedInput:
				rw = &framedInput{ReadWriter: rw, frames: wire.NewAttachFrameReader(rw),
					resize: func(cols, rows int) error { return d.sessions.Resize(ctx, p.Name, cols, rows) }}
			}
			err := d.sessions.Attach(ctx, p.Name, rw)
			if fi, ok := rw.(*framedInput); ok {
				if refused := fi.refusal(); refused != nil {
					d.log.Warn().Str("session", p.Name).Int("peer_pid", call.Conn.Peer.PID).Err(refused).Msg("attach ended: input the daemon could not take")
				}
			}
			return err
		},
	}, nil
}

// readOnlyStream drops a watcher's keystrokes but still notices when it
// hangs up.
type readOnlyStream struct{ io.ReadWriter }

func (r readOnlyStream) Read(p []byte) (int, error) {
	var buf [512]byte
	for {
		if _, err := r.ReadWriter.Read(buf[:]); err != nil {
			return 0, err
		}
	}
}

// framedInput is an attacher's stream whose input is attach frames: Read
// returns the keyboard bytes and resizes the session at each window size,
// so a resize lands between the keys typed before and after it, as in a
// terminal. Input the daemon cannot take ends the stream, after a line on
// the attacher's terminal that names the problem.
type framedInput struct {
	io.ReadWriter
	frames  *wire.AttachFrameReader
	resize  func(cols, rows int) error
	pending []byte

	mu      sync.Mutex
	refused error
}

func (f *framedInput) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		kind, payload, err := f.frames.Next()
		if err != nil {
			// A hang-up, even in the middle of a frame, is the
			// attacher's to make; only a frame that breaks the rules
			// is refused.
			if fe := (*wire.AttachFrameError)(nil); errors.As(err, &fe) {
				return 0, f.refuse(err)
			}
			return 0, err
		}
		switch kind {
		case wire.AttachFrameInput:
			f.pending = payload
		case wire.AttachFrameWindow:
			size, err := wire.DecodeWindowSize(payload)
			if err == nil {
				err = f.resize(size.Cols, size.Rows)
			}
			if err != nil {
				return 0, f.refuse(err)
			}
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// refuse tells the attacher why its attach ends and returns err, which
// ends the input side of the stream.
func (f *framedInput) refuse(err error) error {
	f.mu.Lock()
	f.refused = err
	f.mu.Unlock()
	fmt.Fprintf(f.ReadWriter, "\r\n[agentd: attach ended: %v]\r\n", err)
	return err
}

// refusal is the error that ended the input, if one did.
func (f *framedInput) refusal() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}
