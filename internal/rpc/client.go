package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// ErrClosed is returned by calls on a client whose connection has ended.
var ErrClosed = errors.New("connection closed")

// DialError is a socket that could not be connected to at all: no socket,
// or nobody listening. It names no program: the protocol on top (pkg/wire
// for agentd, pkg/session for its workers) says what the user should do.
type DialError struct {
	Socket string
	Err    error
}

func (e *DialError) Error() string {
	return fmt.Sprintf("cannot connect to %s: %v", e.Socket, e.Err)
}

func (e *DialError) Unwrap() error { return e.Err }

// ClientOptions tune the calling end made by NewClient and Dial.
type ClientOptions struct {
	// OnNotification receives every notification, in arrival order, on the
	// client's reading goroutine. It must not block for long and must not
	// wait for a Call on the same client (its response could not be read);
	// hand work to another goroutine instead. Nil drops notifications.
	OnNotification func(Notification)
}

// Dial connects to the socket at path and returns the calling end of the
// connection (NewClient). A missing socket or refused connection is a
// *DialError.
func Dial(ctx context.Context, path string, opts ClientOptions) (*Conn, error) {
	conn, err := dialUnix(ctx, path)
	if err != nil {
		return nil, err
	}
	return NewClient(conn, opts), nil
}

// NewClient runs the calling end of a connection over an established
// connection and takes ownership of it: its reading loop (Serve with no
// handler) starts at once and ends with the connection.
func NewClient(conn net.Conn, opts ClientOptions) *Conn {
	c := newConn(conn, ServeOptions{}, opts.OnNotification)
	c.ownLoop = true
	go c.Serve(context.Background(), nil)
	return c
}

// Call sends method with params (marshalled to a JSON object; nil sends
// none) and waits for the response, decoding its result into result when
// result is non-nil. An error response is returned as *Error, so
// errors.Is(err, wire.ErrAgentNotFound) works. When ctx ends first, Call returns
// ctx.Err() and the response, if it comes, is discarded.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	raw, err := c.CallRaw(ctx, method, params)
	return decodeInto(method, raw, err, result)
}

// decodeInto ends a call: its error, or its result decoded into result
// when result is non-nil.
func decodeInto(method string, raw json.RawMessage, err error, result any) error {
	if err != nil {
		return err
	}
	if result != nil {
		if err := json.Unmarshal(raw, result); err != nil {
			return fmt.Errorf("decode result of %s: %w", method, err)
		}
	}
	return nil
}

// CallRaw is Call returning the undecoded result.
func (c *Conn) CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	body, err := marshalRequest(id, method, params)
	if err != nil {
		return nil, err
	}
	ch := make(chan *Response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.pending[id] = ch
	c.mu.Unlock()

	if err := c.send(ctx, method, body); err != nil {
		c.forget(id)
		return nil, c.peerReason(ctx, err)
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, c.Err()
		}
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	}
}

// peerReason returns why the peer closed the connection when a write found
// it closed: a daemon that turns a connection away (busy, permission
// denied) answers first and closes, and that answer, which the reader is
// about to record, says more than a broken pipe.
func (c *Conn) peerReason(ctx context.Context, sendErr error) error {
	if !errors.Is(sendErr, ErrClosed) {
		return sendErr
	}
	t := time.NewTimer(peerReasonWait)
	defer t.Stop()
	select {
	case <-c.done:
		if err := c.Err(); errors.As(err, new(*Error)) {
			return err
		}
	case <-ctx.Done():
	case <-t.C:
	}
	return sendErr
}

// peerReasonWait bounds the wait for the reader after a failed write; the
// peer has closed, so the reader sees the end of the stream at once.
const peerReasonWait = 2 * time.Second

func (c *Conn) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// marshalRequest encodes a request with params marshalled from p (nil for none).
func marshalRequest(id uint64, method string, p any) ([]byte, error) {
	var raw json.RawMessage
	if p != nil {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode params of %s: %w", method, err)
		}
		raw = b
	}
	return json.Marshal(Request{ID: id, Method: method, Params: raw})
}

// send writes one request. A daemon that stops reading blocks the write;
// ctx ends the wait, and since a frame cut short leaves the stream unusable,
// the connection is closed then.
func (c *Conn) send(ctx context.Context, method string, body []byte) error {
	err := c.w.writeCtx(ctx, body)
	var fe *FrameError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return fmt.Errorf("%s: %w", method, err)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%w: %v", ErrClosed, err)
}

// DialUpgrade opens a new connection to socket, sends method with params as
// the only request on it and, when the answer is a success, returns the
// connection as a raw stream together with the undecoded result (see
// Upgrade for the server's side). An error answer is returned as *Error and
// the connection is closed. A missing socket or refused connection is a
// *DialError. ctx bounds the exchange, 30 s without a deadline; the stream
// itself has none.
func DialUpgrade(ctx context.Context, socket, method string, params any) (net.Conn, json.RawMessage, error) {
	conn, err := dialUnix(ctx, socket)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, upgradeTimeout)
		defer cancel()
	}
	// Unbuffered: the bytes after the answer are the stream's.
	result, err := exchange(ctx, conn, unbuffered{conn}, method, params)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, result, nil
}

// CallOnce opens a new connection to socket, makes one call on it and
// closes it, reading the answer on the calling goroutine: for a client that
// makes one call and exits (agentctl), it saves the reading goroutine of a
// Client and the wake-up of the caller it costs, about a fifth of a
// millisecond here. Notifications are dropped. The result and errors are
// Call's (a *json.RawMessage result takes it undecoded), and a missing
// socket or refused connection is a *DialError; when ctx ends first, it
// returns ctx.Err() and the connection's close tells the peer.
func CallOnce(ctx context.Context, socket, method string, params, result any) error {
	conn, err := dialUnix(ctx, socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	raw, err := exchange(ctx, conn, NewFrameReader(conn), method, params)
	return decodeInto(method, raw, err, result)
}

// dialUnix connects to the socket at path; a missing socket or refused
// connection is a *DialError, and so is a server of another uid (its Err a
// *ForeignServerError): every client end of agentd's sockets checks whom
// it reached, as every serving end checks who called.
func dialUnix(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		return nil, &DialError{Socket: path, Err: err}
	}
	if err := checkServer(conn); err != nil {
		conn.Close()
		return nil, &DialError{Socket: path, Err: err}
	}
	return conn, nil
}

// frameSource reads frame bodies: a FrameReader, or the connection itself
// where no byte past the answer may be read ahead.
type frameSource interface{ ReadFrame() ([]byte, error) }

// unbuffered reads frames straight from a connection.
type unbuffered struct{ net.Conn }

func (u unbuffered) ReadFrame() ([]byte, error) { return ReadFrame(u.Conn) }

// exchange sends method with params as request 1 on conn and reads frames
// from frames until its answer: the result, or the error answer as *Error (an
// error answer with id 0, which a peer sends before it hangs up, counts
// too). ctx ends the wait at once.
func exchange(ctx context.Context, conn net.Conn, frames frameSource, method string, params any) (json.RawMessage, error) {
	req, err := marshalRequest(1, method, params)
	if err != nil {
		return nil, err
	}
	// The context's deadline first, then its end: the other order could
	// put the deadline back over the past one an early cancel set.
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	werr := WriteFrame(conn, req)
	for {
		// A failed write is read past too: a peer that turned the
		// connection away (busy) answered before it closed.
		body, err := frames.ReadFrame()
		if err != nil {
			// As a Client says it: the connection ended under the call.
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case werr != nil:
				return nil, fmt.Errorf("%w: %v", ErrClosed, werr)
			}
			return nil, fmt.Errorf("%w: %v", ErrClosed, err)
		}
		in, err := DecodeIncoming(body)
		if err != nil {
			return nil, fmt.Errorf("%s: the peer sent a message this client cannot read: %w", method, err)
		}
		if in.Response == nil || (in.Response.ID != 1 && !(in.Response.ID == 0 && in.Response.Error != nil)) {
			continue // a notification, or an answer to nothing of ours
		}
		if in.Response.Error != nil {
			return nil, in.Response.Error
		}
		if !stop() {
			return nil, ctx.Err()
		}
		conn.SetDeadline(time.Time{})
		return in.Response.Result, nil
	}
}

// upgradeTimeout bounds DialUpgrade's exchange when ctx has no deadline:
// the answer to an upgrade is quick or the peer is stuck.
const upgradeTimeout = 30 * time.Second
