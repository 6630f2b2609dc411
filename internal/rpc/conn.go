package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// Conn is one end of a connection, the same type at both ends (jsonrpc2's
// Connection): one reading loop that dispatches every incoming frame
// (requests to the handler, if this end serves; responses to the pending
// calls; notifications to the notification handler), one write path, one
// set of deadlines and one end. It can Call and Notify whether or not it
// serves. A Conn is safe for concurrent use.
//
// NewServerConn makes the serving end, with the server's bounds (in-flight
// limit, budget, idle, read and write timeouts), run by Serve; NewClient
// and Dial make the calling end, whose reading loop they start themselves,
// with no deadline of its own (a call is bounded by its context).
type Conn struct {
	conn net.Conn
	// opts are the serving bounds: NewServerConn fills in the defaults; a
	// calling end has none (zero: no read or write timeout, no budget).
	opts   ServeOptions
	onNote func(Notification)

	// w writes the frames; it refuses them once the connection is
	// upgraded to a raw stream, where they would corrupt it.
	w frameWriter

	nextID  atomic.Uint64
	ownLoop bool // the reading loop runs on its own goroutine: Close waits for it

	mu      sync.Mutex
	pending map[uint64]chan *Response
	err     error // why the connection ended; set once
	done    chan struct{}
}

// ServerConn is the serving end's name from before both ends were one
// Conn; NewServerConn returns one.
type ServerConn = Conn

// Client is the calling end's name from before both ends were one Conn;
// NewClient and Dial return one.
type Client = Conn

func newConn(conn net.Conn, opts ServeOptions, onNote func(Notification)) *Conn {
	return &Conn{
		conn:    conn,
		opts:    opts,
		onNote:  onNote,
		w:       frameWriter{conn: conn, timeout: opts.WriteTimeout},
		pending: map[uint64]chan *Response{},
		done:    make(chan struct{}),
	}
}

// Conn returns the underlying connection.
func (c *Conn) Conn() net.Conn { return c.conn }

// Close ends the connection; calls in flight return ErrClosed. On a
// calling end (NewClient, Dial) it waits for the reading loop to finish; on
// a connection run by Serve it does not (Serve returns once its handlers
// have, so a handler may Close its own connection).
func (c *Conn) Close() error {
	err := c.conn.Close()
	if c.ownLoop {
		<-c.done
	}
	return err
}

// Done is closed when the connection has ended; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, or nil while it is up.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// WriteFailure returns the error of the write that closed the connection,
// or nil. A timeout (net.Error's Timeout) means the peer stopped reading
// for the WriteTimeout and was dropped.
func (c *Conn) WriteFailure() error { return c.w.failure() }

// Notify sends a notification to the peer. It blocks while the peer is slow
// to read, up to the write timeout, and returns the write's error.
func (c *Conn) Notify(method string, params any) error {
	p, err := marshalResult(params)
	if err != nil {
		return err
	}
	if _, given := params.(json.RawMessage); given && len(p) > 0 && !json.Valid(p) {
		return fmt.Errorf("notification %s: params are not valid JSON", method)
	}
	return c.write(appendNotification(make([]byte, 0, len(p)+len(method)+24), method, p))
}

// appendNotification appends the JSON of a notification to dst, as
// encoding/json writes a Notification, with params (valid, compact JSON:
// what json.Marshal made) copied in as they are. Marshalling the
// Notification instead would scan params once more to compact them, a
// pass over every byte of a stream of log events.
func appendNotification(dst []byte, method string, params json.RawMessage) []byte {
	m, _ := json.Marshal(method) // a string always encodes
	dst = append(append(dst, `{"method":`...), m...)
	if len(params) > 0 {
		dst = append(append(dst, `,"params":`...), params...)
	}
	return append(dst, '}')
}

// NotifyContext is Notify bounded by ctx too: when ctx ends while the
// write is blocked on a peer that does not read, the write is cut short
// and the connection closed (a frame half written cannot be taken back).
// A stream of notifications to one peer (a log follow) uses it, so that
// cancelling the stream, at a daemon's stop say, does not wait for the
// write timeout.
func (c *Conn) NotifyContext(ctx context.Context, method string, params any) error {
	p, err := marshalResult(params)
	if err != nil {
		return err
	}
	if _, given := params.(json.RawMessage); given && len(p) > 0 && !json.Valid(p) {
		return fmt.Errorf("notification %s: params are not valid JSON", method)
	}
	return c.w.writeCtx(ctx, appendNotification(make([]byte, 0, len(p)+len(method)+24), method, p))
}

func (c *Conn) write(body []byte) error { return c.w.write(body) }

// Serve reads the connection until the peer hangs up, a frame is broken,
// ctx ends, or the connection is idle for the IdleTimeout, dispatching each
// frame: a request to h (inline, or on a pooled goroutine, at most
// MaxInFlight at once), a response to the call waiting for it, a
// notification to the notification handler. With a nil h the connection
// serves nothing: it only calls (NewClient runs it so), and a request from
// the peer is a message it cannot read, which ends the connection. Serve
// runs once per connection, and never on one from NewClient or Dial, whose
// loop already runs.
//
// Each request's context derives from ctx and is cancelled when the
// connection ends, so a client that hangs up stops its work. Serve returns
// after every handler has returned; it returns nil on a clean close by the
// peer or when ctx ends, ErrIdle for an idle connection, else why the
// connection ended. It closes the connection, and calls still waiting
// return Err.
//
// When ctx ends with a cause (context.WithCancelCause) that is an *Error,
// that error is sent to the peer as a response with id 0 once the handlers
// have answered, just before the connection closes: the peer learns why
// (agentd sends shutting_down when it stops).
func (c *Conn) Serve(ctx context.Context, h Handler) error {
	ret, why := c.run(ctx, h)
	c.end(why)
	return ret
}

// deliver hands a frame from the peer to whoever waits for it: a response
// to its call, a notification to the notification handler. It returns an
// error, which ends the connection, for a frame that is neither, and for
// an error answer with id 0: the peer could not read a frame of ours well
// enough to answer it, and closes the connection next.
func (c *Conn) deliver(body []byte) error {
	in, err := DecodeIncoming(body)
	if err != nil {
		return fmt.Errorf("the peer sent a message this client cannot read: %w", err)
	}
	if n := in.Notification; n != nil {
		if c.onNote != nil {
			c.onNote(*n)
		}
		return nil
	}
	if !c.resolve(in.Response) && in.Response.ID == 0 && in.Response.Error != nil {
		return in.Response.Error
	}
	return nil
}

// deliverIfAwaited is deliver for a serving end, which reads requests
// first. A frame that is not a request is taken when it is a response to
// one of this end's own calls or a notification it listens for; an error
// answer with id 0 to an end that has called ends the connection, as on a
// calling end. Otherwise (false, nil) leaves the frame to be answered as a
// bad request, as it is on an end that never calls.
func (c *Conn) deliverIfAwaited(body []byte) (taken bool, end error) {
	if c.nextID.Load() == 0 && c.onNote == nil {
		return false, nil
	}
	in, err := DecodeIncoming(body)
	switch {
	case err != nil:
		return false, nil
	case in.Notification != nil:
		if c.onNote == nil {
			return false, nil
		}
		c.onNote(*in.Notification)
		return true, nil
	case c.resolve(in.Response):
		return true, nil
	case in.Response.ID == 0 && in.Response.Error != nil && c.nextID.Load() > 0:
		return true, in.Response.Error
	}
	return false, nil
}

// resolve gives resp to the call waiting for it; false when none is.
func (c *Conn) resolve(resp *Response) bool {
	c.mu.Lock()
	ch := c.pending[resp.ID]
	delete(c.pending, resp.ID)
	c.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- resp
	return true
}

// end records why the connection ended and releases the calls still
// waiting; the reading loop has closed the connection.
func (c *Conn) end(why error) {
	c.mu.Lock()
	if why == nil || errors.Is(why, net.ErrClosed) {
		why = ErrClosed
	} else if !errors.As(why, new(*Error)) {
		why = fmt.Errorf("%w: %v", ErrClosed, why)
	}
	c.err = why
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}
