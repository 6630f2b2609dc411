package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

// Handler answers one request. It returns the result (marshalled to JSON;
// a json.RawMessage is sent as is, nil as null) or an error. Handlers never
// write to the connection themselves.
type Handler func(ctx context.Context, req *Request) (any, error)

// ServeOptions tune the serving end made by NewServerConn.
type ServeOptions struct {
	// ReadTimeout bounds how long a frame may take to arrive once its first
	// byte has: a peer that sends part of a frame and stalls is dropped.
	// Idle time between frames is not limited. Zero means DefaultReadTimeout.
	ReadTimeout time.Duration
	// WriteTimeout bounds one frame write, so a peer that stops reading is
	// dropped instead of holding handlers. Zero means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxInFlight bounds the requests of one connection being handled at
	// once; past it the connection is not read until one finishes (the
	// peer's writes block: backpressure, not errors). Zero means
	// DefaultMaxInFlight.
	MaxInFlight int
	// ToError converts a handler's error into the error object sent.
	// Nil sends *Error values as they are and anything else as internal.
	ToError func(error) *Error
	// OnRequestDone, when set, is told of every answered request (for logs
	// and metrics): the request, how long it took, and the error sent, if any.
	OnRequestDone func(req *Request, took time.Duration, err *Error)
	// OnPanic, when set, is told of a handler panic before it is answered
	// as internal.
	OnPanic func(req *Request, value any, stack []byte)
	// Inline, when set, names methods whose handlers never block: they run
	// on the reading goroutine, which saves a hand-off to another goroutine
	// per request. A handler that blocks there stalls its connection.
	Inline func(method string) bool
	// MayUpgrade, when set, names the methods whose handler may return an
	// *Upgrade. Those are handled on the reading goroutine, so no frame is
	// read past them while they decide.
	MayUpgrade func(method string) bool
	// Budget, when set, bounds the bytes held in large requests and
	// answers, shared with every connection given the same Budget.
	Budget *Budget
	// IdleTimeout, when positive, closes a connection that has had no
	// request being read or handled for that long, unless KeepAlive says
	// something else holds it open (a channel it registered). Serve then
	// returns ErrIdle. An upgraded connection is never idle: its stream
	// owns it. Zero keeps idle connections open.
	IdleTimeout time.Duration
	// KeepAlive, when set, is asked when a connection has been idle for
	// IdleTimeout: true keeps it open for another IdleTimeout.
	KeepAlive func() bool
	// OnNotification, when set, receives the peer's notifications, on the
	// reading goroutine (as ClientOptions.OnNotification). Nil answers a
	// notification as a request without an id (malformed_frame).
	OnNotification func(Notification)
}

// ErrIdle is what Serve returns for a connection it closed because it was
// idle for the IdleTimeout.
var ErrIdle = errors.New("connection idle")

// goodbyeTimeout bounds writing the last frame (the reason the connection
// is closed) to a peer that may not read it.
const goodbyeTimeout = time.Second

// Upgrade is a handler result that switches the connection from frames to
// a raw byte stream (agentctl attach). The response carrying Result is
// written first; then, once every other request on the connection has been
// answered, Stream owns the connection until it returns, and the connection
// is closed. A handler that returns an error instead leaves the connection
// as it was.
type Upgrade struct {
	Result any
	Stream func(ctx context.Context, rw io.ReadWriter) error
}

// Defaults for ServeOptions.
const (
	DefaultReadTimeout  = 10 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	// DefaultMaxInFlight is generous for concurrent callers on one
	// connection while bounding the goroutines one peer can start.
	DefaultMaxInFlight = 256
)

// NewServerConn wraps conn as the serving end of a connection, with the
// bounds of opts (defaults for the zero values); Serve runs it.
func NewServerConn(conn net.Conn, opts ServeOptions) *Conn {
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	return newConn(conn, opts, opts.OnNotification)
}

// idleTimer closes a connection that has had nothing to do for the
// IdleTimeout: it runs while no request is being read or handled, and what
// it does on expiry (close) is given by Serve. A nil *idleTimer (no
// IdleTimeout) does nothing.
type idleTimer struct {
	timeout   time.Duration
	keepAlive func() bool
	close     func()

	mu      sync.Mutex
	t       *time.Timer
	busy    int  // requests being read or handled
	done    bool // fired (the connection is closing) or stopped
	expired bool
}

func (c *Conn) newIdleTimer(close func()) *idleTimer {
	if c.opts.IdleTimeout <= 0 {
		return nil
	}
	it := &idleTimer{timeout: c.opts.IdleTimeout, keepAlive: c.opts.KeepAlive, close: close}
	// Under the lock: fire reads t, and may run before AfterFunc returns.
	it.mu.Lock()
	it.t = time.AfterFunc(it.timeout, it.fire)
	it.mu.Unlock()
	return it
}

func (it *idleTimer) fire() {
	it.mu.Lock()
	if it.done || it.busy > 0 {
		it.mu.Unlock()
		return
	}
	it.mu.Unlock()
	// Asked outside the lock: KeepAlive takes the daemon's locks.
	if it.keepAlive != nil && it.keepAlive() {
		it.mu.Lock()
		if !it.done && it.busy == 0 {
			it.t.Reset(it.timeout)
		}
		it.mu.Unlock()
		return
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.done || it.busy > 0 {
		return // a request began meanwhile
	}
	it.done, it.expired = true, true
	it.close()
}

// begin marks a request as started; false when the connection has just
// been closed as idle.
func (it *idleTimer) begin() bool {
	if it == nil {
		return true
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.expired {
		return false
	}
	if it.busy == 0 {
		it.t.Stop()
	}
	it.busy++
	return true
}

// end marks a request as answered; the last one starts the idle clock.
func (it *idleTimer) end() {
	if it == nil {
		return
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	it.busy--
	if it.busy == 0 && !it.done {
		it.t.Reset(it.timeout)
	}
}

// fired says whether the connection was closed as idle.
func (it *idleTimer) fired() bool {
	if it == nil {
		return false
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.expired
}

// stop ends the timer for good.
func (it *idleTimer) stop() {
	if it == nil {
		return
	}
	it.mu.Lock()
	it.done = true
	it.t.Stop()
	it.mu.Unlock()
}

func orEmpty(r *Request) *Request {
	if r == nil {
		return &Request{}
	}
	return r
}

func (c *Conn) ended(ctx context.Context, err error) error {
	if err == io.EOF || errors.Is(err, net.ErrClosed) || (ctx.Err() != nil && isTimeout(err)) {
		return nil
	}
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// streamRW is the raw stream of an upgraded connection: reads start with
// whatever the frame reader had buffered.
type streamRW struct {
	r io.Reader
	w io.Writer
}

func (s streamRW) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s streamRW) Write(p []byte) (int, error) { return s.w.Write(p) }

// leadingID finds the id of a request from the start of its frame, where
// agentd's clients put it ({"id":N,...}); 0 when it is not there.
func leadingID(prefix []byte) uint64 {
	i := bytes.Index(prefix, []byte(`"id"`))
	if i < 0 {
		return 0
	}
	i = skipSpace(prefix, i+4)
	if i >= len(prefix) || prefix[i] != ':' {
		return 0
	}
	id, _, ok := plainUint(prefix, skipSpace(prefix, i+1))
	if !ok {
		return 0
	}
	return id
}

// handleUpgrade runs a request that may upgrade the connection and answers
// it; it returns the upgrade when the handler asked for one.
func (c *Conn) handleUpgrade(ctx context.Context, h Handler, req *Request) *Upgrade {
	start := time.Now()
	result, err := c.call(ctx, h, req)
	result, lease := unlease(result)
	up, _ := result.(*Upgrade)
	if up != nil {
		result = up.Result
	}
	var werr *Error
	var raw json.RawMessage
	if err == nil {
		raw, err = marshalResult(result)
	}
	if err != nil {
		werr = c.toWire(err)
		up = nil
	}
	werr = c.reply(req.ID, raw, werr, lease)
	c.requestDone(req, time.Since(start), werr)
	return up
}

// unlease takes a result apart from the lease it owns (WithLease).
func unlease(result any) (any, *Lease) {
	if l, ok := result.(leased); ok {
		return l.v, l.l
	}
	return result, nil
}

// JSONAppender is a handler result that writes its own JSON (one valid
// value) straight into the response, so a hot answer needs no buffer of
// its own per request: agent.hello's answer is most of what a hello
// allocates otherwise, and allocation drives the collector.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// handle runs a request and answers it; f is its frame, whose bytes go
// back to the budget once the handler is done with the params.
func (c *Conn) handle(ctx context.Context, h Handler, req *Request, f *frame) {
	start := time.Now()
	result, err := c.call(ctx, h, req)
	f.free()
	result, lease := unlease(result)
	var werr *Error
	var raw json.RawMessage
	if app, ok := result.(JSONAppender); ok && err == nil {
		werr = c.replyAppended(req.ID, app, lease)
		if c.opts.OnRequestDone != nil {
			c.opts.OnRequestDone(req, time.Since(start), werr)
		}
		return
	}
	if err == nil {
		raw, err = marshalResult(result)
	}
	if err != nil {
		werr = c.toWire(err)
	}
	werr = c.reply(req.ID, raw, werr, lease)
	c.requestDone(req, time.Since(start), werr)
}

func (c *Conn) call(ctx context.Context, h Handler, req *Request) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			if c.opts.OnPanic != nil {
				c.opts.OnPanic(req, v, debug.Stack())
			}
			err = Errorf(CodeInternal, "internal error while handling %s; the daemon is still running, see its log", req.Method)
		}
	}()
	return h(ctx, req)
}

func marshalResult(v any) (json.RawMessage, error) {
	switch r := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return r, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return b, nil
}

func (c *Conn) toWire(err error) *Error {
	if c.opts.ToError != nil {
		if e := c.opts.ToError(err); e != nil {
			return e
		}
	}
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e
	}
	return Errorf(CodeInternal, "internal error: %v", err)
}

// replyBufs recycles response buffers: every request needs one, and most
// answers are small.
var replyBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledReply is the largest buffer put back in replyBufs, so one big
// answer does not stay pinned.
const maxPooledReply = 64 << 10

// reply writes a response (none for Canceled); a result too large for a frame becomes an error
// response instead, so the caller always hears back. lease, when the
// result owned one, becomes the answer's. It returns the error sent, if
// any (e, or the one that replaced the answer), for OnRequestDone.
func (c *Conn) reply(id uint64, result json.RawMessage, e *Error, lease *Lease) *Error {
	if e == Canceled {
		lease.Release() // nobody is left to read an answer
		return e
	}
	bp := replyBufs.Get().(*[]byte)
	body, err := AppendResponse((*bp)[:0], id, result, e)
	if err == nil && len(body) > MaxFrameSize {
		e = tooLarge(len(body))
		body, err = AppendResponse(body[:0], id, nil, e)
	}
	if err != nil {
		e = Errorf(CodeInternal, "internal error: encode response: %v", err)
		body, _ = AppendResponse(body[:0], id, nil, e)
	}
	body, e = c.writeBudgeted(id, body, e, lease)
	if cap(body) <= maxPooledReply {
		*bp = body
		replyBufs.Put(bp)
	}
	return e
}

// tooLarge is the error that replaces an answer over the frame cap.
func tooLarge(n int) *Error {
	return Errorf(CodeInternal,
		"the answer is %d bytes, over the %d-byte frame limit; ask for less (a path for images, a smaller range for logs)", n, MaxFrameSize)
}

// replyAppended writes a success whose result app appends itself; like
// reply, an answer too large for a frame becomes an error response.
func (c *Conn) replyAppended(id uint64, app JSONAppender, lease *Lease) *Error {
	bp := replyBufs.Get().(*[]byte)
	body := append((*bp)[:0], `{"id":`...)
	body = strconv.AppendUint(body, id, 10)
	body = append(body, `,"result":`...)
	body = append(app.AppendJSON(body), '}')
	var e *Error
	if len(body) > MaxFrameSize {
		e = tooLarge(len(body))
		body, _ = AppendResponse(body[:0], id, nil, e)
	}
	body, e = c.writeBudgeted(id, body, e, lease)
	if cap(body) <= maxPooledReply {
		*bp = body
		replyBufs.Put(bp)
	}
	return e
}

// writeBudgeted writes a response, holding its size in the budget until it
// is written (a slow reader keeps it in memory that long): in the lease
// its result owned, when it had one, else in one of its own. An answer up
// to Tiny takes its room at once; a larger one waits for it and,
// finding none, is answered busy instead, its bytes dropped. It returns
// the buffer used and the error sent, if any.
func (c *Conn) writeBudgeted(id uint64, body []byte, e *Error, lease *Lease) ([]byte, *Error) {
	n := int64(len(body))
	if c.opts.Budget == nil {
		lease.Release()
		c.write(body)
		return body, e
	}
	if lease != nil {
		lease.resize(n)
		c.write(body)
		lease.Release()
		return body, e
	}
	// The answer's own hold, taken and given back here (no Lease to
	// allocate on the hot path).
	b := c.opts.Budget
	if !b.take(context.Background(), n, budgetWait, n <= Tiny, true) {
		// A buffer of its own: the answer's bytes are dropped now, not
		// kept while the refusal waits to be written.
		e = b.busyError("an answer", int(n))
		body, _ = AppendResponse(nil, id, nil, e)
		n = int64(len(body))
		b.take(context.Background(), n, 0, true, true)
	}
	c.write(body)
	b.give(n)
	return body, e
}
