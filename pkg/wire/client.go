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

// Client is a connection to agentd. Many calls may be in flight at once;
// responses are matched by id. A Client is safe for concurrent use. The
// connection itself (framing, ids, deadlines) is the engine in internal/rpc;
// this type adds the typed methods of the contract.
type Client struct {
	c *rpc.Conn
	// socket is where a one-shot client (NewOneShot, c nil) connects for
	// each call.
	socket string
}

// NewOneShot returns a Client that holds no connection: each call opens one
// of its own, reads the answer on the calling goroutine and closes it
// (rpc.CallOnce). A process that makes a call or two and exits (agentctl) saves
// the reading goroutine of a dialled Client and the wake-up of the caller
// it costs. Calls may run at once, each on its own connection. It gets no
// notifications; Done never closes and Err is nil. An unreachable daemon
// is found by the first call (*UnreachableError).
func NewOneShot(socket string) *Client { return &Client{socket: socket} }

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
	return &Client{c: c}, nil
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

// oneShot makes a one-shot client's call (rpc.CallOnce), naming an
// unreachable daemon as Dial does.
func (c *Client) oneShot(ctx context.Context, method string, params, result any) error {
	if err := CheckSocketDir(c.socket); err != nil {
		return &UnreachableError{Socket: c.socket, Err: err}
	}
	return dialError(rpc.CallOnce(ctx, c.socket, method, params, result))
}

// NewClient runs the client protocol over an established connection and
// takes ownership of it.
func NewClient(conn net.Conn, opts ClientOptions) *Client {
	return &Client{c: rpc.NewClient(conn, opts)}
}

// Close ends the connection; calls in flight return ErrClosed.
func (c *Client) Close() error {
	if c.c == nil {
		return nil // a one-shot client's calls close their own
	}
	return c.c.Close()
}

// Done is closed when the connection has ended; Err then says why.
func (c *Client) Done() <-chan struct{} {
	if c.c == nil {
		return nil
	}
	return c.c.Done()
}

// Err returns why the connection ended, or nil while it is up.
func (c *Client) Err() error {
	if c.c == nil {
		return nil
	}
	return c.c.Err()
}

// Call sends method with params (marshalled to a JSON object; nil sends
// none) and waits for the response, decoding its result into result when
// result is non-nil. An error response is returned as *Error, so
// errors.Is(err, ErrAgentNotFound) works. When ctx ends first, Call returns
// ctx.Err() and the response, if it comes, is discarded.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if c.c == nil {
		return c.oneShot(ctx, method, params, result)
	}
	return c.c.Call(ctx, method, params, result)
}

// CallRaw is Call returning the undecoded result.
func (c *Client) CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if c.c == nil {
		var raw json.RawMessage
		return raw, c.oneShot(ctx, method, params, &raw)
	}
	return c.c.CallRaw(ctx, method, params)
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
	var r HelloResult
	if err := c.Call(ctx, MethodHello, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
