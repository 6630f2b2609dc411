package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"

	"github.com/agentd/agentd/internal/rpc"
)

// ErrClosed is returned by calls on a client whose connection has ended.
var ErrClosed = rpc.ErrClosed

// UnreachableError is a daemon that could not be reached at all: no socket,
// or nobody listening. agentctl exits ExitUnreachable on it.
type UnreachableError struct {
	Socket string
	Err    error
}

func (e *UnreachableError) Error() string {
	var ut *UntrustedSocketError
	if errors.As(e.Err, &ut) {
		return ut.Error()
	}
	return fmt.Sprintf("cannot reach agentd at %s: %v (is agentd running? start it with `agentd`, or `systemctl --user start agentd.socket`)", e.Socket, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// ClientOptions tune a Client. OnNotification receives every notification,
// in arrival order, on the client's reading goroutine. It must not block for
// long and must not wait for a Call on the same client (its response could
// not be read); hand work to another goroutine instead. Nil drops
// notifications.
type ClientOptions = rpc.ClientOptions

// Client is agentd's client: the typed methods of the contract over a
// transport, one of two kinds, chosen when it is made. Dial and NewClient
// hold one connection on which many calls may be in flight at once
// (responses are matched by id) and notifications arrive; NewOneShot holds
// none and opens one per call. A Client is safe for concurrent use either
// way. The connection itself (framing, ids, deadlines) is the engine in
// internal/rpc.
type Client struct{ t transport }

// transport is what a Client's calls go over: the engine's *rpc.Conn, or
// oneShot.
type transport interface {
	Call(ctx context.Context, method string, params, result any) error
	CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error)
	Close() error
	Done() <-chan struct{}
	Err() error
}

// NewOneShot returns a Client that holds no connection: each call opens one
// of its own, reads the answer on the calling goroutine and closes it
// (rpc.CallOnce). A process that makes a call or two and exits (agentctl) saves
// the reading goroutine of a dialled Client and the wake-up of the caller
// it costs. Calls may run at once, each on its own connection. It gets no
// notifications; Done never closes and Err is nil. An unreachable daemon
// is found by the first call (*UnreachableError).
func NewOneShot(socket string) *Client { return &Client{t: oneShot(socket)} }

// Dial connects to the socket at path. A missing socket or refused
// connection is an *UnreachableError.
func Dial(ctx context.Context, path string, opts ClientOptions) (*Client, error) {
	if err := CheckSocketDir(path); err != nil {
		return nil, &UnreachableError{Socket: path, Err: err}
	}
	c, err := rpc.Dial(ctx, path, opts)
	if err != nil {
		return nil, dialError(err)
	}
	return &Client{t: c}, nil
}

// dialError names a connection that could not be made, or was refused by
// the client itself (a server of another uid), as an *UnreachableError.
func dialError(err error) error {
	var de *rpc.DialError
	if !errors.As(err, &de) {
		return err
	}
	var fe *rpc.ForeignServerError
	if errors.As(de.Err, &fe) {
		return &UnreachableError{Socket: de.Socket, Err: &UntrustedSocketError{Socket: de.Socket, Found: fe.Error(),
			Fix: "another user's program listens where agentd's socket should be; do not use it, and start your own agentd on a directory of your own (XDG_RUNTIME_DIR or " + SocketEnv + ")"}}
	}
	return &UnreachableError{Socket: de.Socket, Err: de.Err}
}

// oneShot is the transport of NewOneShot: the socket each call connects to
// (rpc.CallOnce), naming an unreachable daemon as Dial does.
type oneShot string

func (s oneShot) Call(ctx context.Context, method string, params, result any) error {
	if err := CheckSocketDir(string(s)); err != nil {
		return &UnreachableError{Socket: string(s), Err: err}
	}
	return dialError(rpc.CallOnce(ctx, string(s), method, params, result))
}

func (s oneShot) CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := s.Call(ctx, method, params, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// Close, Done and Err: each call closes its own connection, and there is no
// connection between calls to end.
func (oneShot) Close() error          { return nil }
func (oneShot) Done() <-chan struct{} { return nil }
func (oneShot) Err() error            { return nil }

// NewClient runs the client protocol over an established connection and
// takes ownership of it.
func NewClient(conn net.Conn, opts ClientOptions) *Client {
	return &Client{t: rpc.NewClient(conn, opts)}
}

// Close ends the connection; calls in flight return ErrClosed.
func (c *Client) Close() error { return c.t.Close() }

// Done is closed when the connection has ended; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.t.Done() }

// Err returns why the connection ended, or nil while it is up.
func (c *Client) Err() error { return c.t.Err() }

// Call sends method with params (marshalled to a JSON object; nil sends
// none) and waits for the response, decoding its result into result when
// result is non-nil. An error response is returned as *Error, so
// errors.Is(err, ErrAgentNotFound) works. When ctx ends first, Call returns
// ctx.Err() and the response, if it comes, is discarded.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.t.Call(ctx, method, params, result)
}

// CallRaw is Call returning the undecoded result.
func (c *Client) CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.t.CallRaw(ctx, method, params)
}

// call is one typed call: the result, or nil and the error, never both.
func call[R any](ctx context.Context, c *Client, method string, params any) (*R, error) {
	var r R
	if err := c.t.Call(ctx, method, params, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// decodeResult decodes a result into v.
func decodeResult(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	return nil
}

// Hello performs the handshake.
func (c *Client) Hello(ctx context.Context, p HelloParams) (*HelloResult, error) {
	return call[HelloResult](ctx, c, MethodHello, p)
}
