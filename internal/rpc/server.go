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

// ServeOptions tune a ServerConn.
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

// ServerConn serves requests arriving on one connection and can send
// notifications on it. It is safe for concurrent use.
type ServerConn struct {
	conn net.Conn
	opts ServeOptions

	// w writes the frames; it refuses them once the connection is
	// upgraded to a raw stream, where they would corrupt it.
	w frameWriter
}

// NewServerConn wraps conn; Serve runs it.
func NewServerConn(conn net.Conn, opts ServeOptions) *ServerConn {
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	return &ServerConn{conn: conn, opts: opts, w: frameWriter{conn: conn, timeout: opts.WriteTimeout}}
}

// Conn returns the underlying connection.
func (s *ServerConn) Conn() net.Conn { return s.conn }

// Serve reads requests and answers each on its own goroutine until the peer
// hangs up, a frame is broken, ctx ends, or the connection is idle for the
// IdleTimeout. Each request's context derives from ctx and is cancelled
// when the connection ends, so a client that hangs up stops its work. Serve
// returns after every handler has returned; it returns nil on a clean close
// by the peer or when ctx ends, ErrIdle for an idle connection, else why
// the connection ended. It closes the connection.
//
// When ctx ends with a cause (context.WithCancelCause) that is an *Error,
// that error is sent to the peer as a response with id 0 once the handlers
// have answered, just before the connection closes: the peer learns why
// (agentd sends shutting_down when it stops).
func (s *ServerConn) Serve(ctx context.Context, h Handler) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	upgraded := false
	defer func() {
		// Handlers see their contexts end, finish and write their answers
		// (a request that completes as the daemon stops still gets its
		// response); only then does the connection close.
		cancel()
		wg.Wait()
		var why *Error
		if !upgraded && errors.As(context.Cause(parent), &why) {
			if body, err := AppendResponse(nil, 0, nil, why); err == nil {
				s.w.writeWithin(body, goodbyeTimeout)
			}
		}
		s.conn.Close()
	}()
	// Cancellation interrupts a blocked read with a past deadline. The loop
	// also sets deadlines, so both go through one setter that keeps the
	// past deadline once ctx has ended; otherwise a cancel landing between
	// frames would be undone and Serve would wait for the peer.
	var dmu sync.Mutex
	setReadDeadline := func(t time.Time) {
		dmu.Lock()
		defer dmu.Unlock()
		if ctx.Err() != nil {
			t = time.Unix(1, 0)
		}
		s.conn.SetReadDeadline(t)
	}
	stop := context.AfterFunc(ctx, func() { setReadDeadline(time.Unix(1, 0)) })
	defer stop()
	idle := s.newIdleTimer(func() { setReadDeadline(time.Unix(1, 0)) })
	defer idle.stop()

	slots := make(chan struct{}, s.opts.MaxInFlight)
	work := make(chan func()) // unbuffered: a send succeeds only to an idle handler
	fr := NewFrameReader(s.conn)
	armed := false // a read deadline is set
	for {
		// Wait for a frame to begin without a deadline: idle is fine.
		if armed {
			setReadDeadline(time.Time{})
			armed = false
		}
		if err := fr.waitStart(); err != nil {
			if idle.fired() {
				return ErrIdle
			}
			return s.ended(ctx, err)
		}
		// A frame has begun: the connection is not idle until it is
		// answered (or refused).
		if !idle.begin() {
			return ErrIdle
		}
		// A frame that arrived whole with its first bytes (the usual
		// case) cannot stall; only one still arriving gets a deadline.
		// Each deadline costs two timer updates in the runtime.
		if !fr.buffered() {
			setReadDeadline(time.Now().Add(s.opts.ReadTimeout))
			armed = true
		}
		body, held, err := s.readFrame(ctx, fr)
		if err == errRefused {
			idle.end()
			continue
		}
		if err != nil {
			var fe *FrameError
			if errors.As(err, &fe) {
				s.reply(0, nil, Errorf(CodeMalformedFrame, "%s; closing the connection", fe.Error()))
			} else if isTimeout(err) && ctx.Err() == nil {
				s.reply(0, nil, Errorf(CodeMalformedFrame, "frame not completed within %s; closing the connection", s.opts.ReadTimeout))
			}
			return s.ended(ctx, err)
		}
		req, derr := DecodeRequest(body)
		if derr != nil {
			s.opts.Budget.release(held)
			var id uint64
			if req != nil {
				id = req.ID
			}
			s.reply(id, nil, derr.(*Error))
			if s.opts.OnRequestDone != nil {
				s.opts.OnRequestDone(orEmpty(req), 0, derr.(*Error))
			}
			idle.end()
			continue
		}
		if s.opts.MayUpgrade != nil && s.opts.MayUpgrade(req.Method) {
			s.opts.Budget.release(held)
			if up := s.handleUpgrade(ctx, h, req); up != nil {
				idle.stop() // the stream owns the connection now
				wg.Wait()
				s.w.stop()
				upgraded = true
				setReadDeadline(time.Time{})
				return up.Stream(ctx, streamRW{r: fr.r, w: s.conn})
			}
			idle.end()
			continue
		}
		if s.opts.Inline != nil && s.opts.Inline(req.Method) {
			s.handle(ctx, h, req, held)
			idle.end()
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			s.opts.Budget.release(held)
			return s.ended(ctx, ctx.Err())
		}
		if ctx.Err() != nil {
			s.opts.Budget.release(held)
			return nil
		}
		wg.Add(1)
		job := func() {
			defer func() { idle.end(); <-slots; wg.Done() }()
			s.handle(ctx, h, req, held)
		}
		// Hand the request to an idle handler goroutine if there is one:
		// a fresh goroutine would grow its stack again for every request.
		select {
		case work <- job:
		default:
			go handlerLoop(ctx, work, job)
		}
	}
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

func (s *ServerConn) newIdleTimer(close func()) *idleTimer {
	if s.opts.IdleTimeout <= 0 {
		return nil
	}
	it := &idleTimer{timeout: s.opts.IdleTimeout, keepAlive: s.opts.KeepAlive, close: close}
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

// handlerIdle is how long a handler goroutine waits for more work before it
// exits, so a burst's goroutines do not outlive it for long.
const handlerIdle = 2 * time.Second

func handlerLoop(ctx context.Context, work <-chan func(), job func()) {
	job()
	t := time.NewTimer(handlerIdle)
	defer t.Stop()
	for {
		select {
		case job := <-work:
			job()
			t.Reset(handlerIdle)
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func orEmpty(r *Request) *Request {
	if r == nil {
		return &Request{}
	}
	return r
}

func (s *ServerConn) ended(ctx context.Context, err error) error {
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

// errRefused tells Serve that readFrame answered a frame itself.
var errRefused = errors.New("frame refused")

// idPrefix is how much of a refused frame is kept to find its id.
const idPrefix = 256

// readFrame reads the next frame, taking a large one's size from the
// budget first (held says how much). A frame that finds no room is read
// and dropped and answered busy under its id; errRefused says so.
func (s *ServerConn) readFrame(ctx context.Context, fr *FrameReader) (body []byte, held int64, err error) {
	size, err := fr.header()
	if err != nil {
		return nil, 0, err
	}
	if !s.opts.Budget.acquire(ctx, int64(size), budgetWait) {
		prefix, err := fr.skip(size, idPrefix)
		if err != nil {
			return nil, 0, err
		}
		id := leadingID(prefix)
		e := s.opts.Budget.busyError("a request", int(size))
		s.reply(id, nil, e)
		if s.opts.OnRequestDone != nil {
			s.opts.OnRequestDone(&Request{ID: id}, 0, e)
		}
		return nil, 0, errRefused
	}
	if size > SmallFrame && s.opts.Budget != nil {
		held = int64(size)
	}
	body, err = fr.body(size)
	if err != nil {
		s.opts.Budget.release(held)
		return nil, 0, err
	}
	return body, held, nil
}

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
func (s *ServerConn) handleUpgrade(ctx context.Context, h Handler, req *Request) *Upgrade {
	start := time.Now()
	result, err := s.call(ctx, h, req)
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
		werr = s.toWire(err)
		up = nil
	}
	s.reply(req.ID, raw, werr)
	if s.opts.OnRequestDone != nil {
		s.opts.OnRequestDone(req, time.Since(start), werr)
	}
	return up
}

// JSONAppender is a handler result that writes its own JSON (one valid
// value) straight into the response, so a hot answer needs no buffer of
// its own per request: agent.hello's answer is most of what a hello
// allocates otherwise, and allocation drives the collector.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// handle runs a request and answers it; held is what its frame took from
// the budget, returned once the handler is done with the params.
func (s *ServerConn) handle(ctx context.Context, h Handler, req *Request, held int64) {
	start := time.Now()
	result, err := s.call(ctx, h, req)
	s.opts.Budget.release(held)
	var werr *Error
	var raw json.RawMessage
	if app, ok := result.(JSONAppender); ok && err == nil {
		s.replyAppended(req.ID, app)
		if s.opts.OnRequestDone != nil {
			s.opts.OnRequestDone(req, time.Since(start), nil)
		}
		return
	}
	if err == nil {
		raw, err = marshalResult(result)
	}
	if err != nil {
		werr = s.toWire(err)
	}
	s.reply(req.ID, raw, werr)
	if s.opts.OnRequestDone != nil {
		s.opts.OnRequestDone(req, time.Since(start), werr)
	}
}

func (s *ServerConn) call(ctx context.Context, h Handler, req *Request) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			if s.opts.OnPanic != nil {
				s.opts.OnPanic(req, v, debug.Stack())
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

func (s *ServerConn) toWire(err error) *Error {
	if s.opts.ToError != nil {
		if e := s.opts.ToError(err); e != nil {
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

// reply writes a response; a result too large for a frame becomes an error
// response instead, so the caller always hears back.
func (s *ServerConn) reply(id uint64, result json.RawMessage, e *Error) {
	bp := replyBufs.Get().(*[]byte)
	body, err := AppendResponse((*bp)[:0], id, result, e)
	if err == nil && len(body) > MaxFrameSize {
		body, err = AppendResponse(body[:0], id, nil, Errorf(CodeInternal,
			"the answer is %d bytes, over the %d-byte frame limit; ask for less (a path for images, a smaller range for logs)", len(body), MaxFrameSize))
	}
	if err != nil {
		body, _ = AppendResponse(body[:0], id, nil, Errorf(CodeInternal, "internal error: encode response: %v", err))
	}
	body = s.writeBudgeted(id, body)
	if cap(body) <= maxPooledReply {
		*bp = body
		replyBufs.Put(bp)
	}
}

// replyAppended writes a success whose result app appends itself; like
// reply, an answer too large for a frame becomes an error response.
func (s *ServerConn) replyAppended(id uint64, app JSONAppender) {
	bp := replyBufs.Get().(*[]byte)
	body := append((*bp)[:0], `{"id":`...)
	body = strconv.AppendUint(body, id, 10)
	body = append(body, `,"result":`...)
	body = append(app.AppendJSON(body), '}')
	if len(body) > MaxFrameSize {
		body, _ = AppendResponse(body[:0], id, nil, Errorf(CodeInternal,
			"the answer is %d bytes, over the %d-byte frame limit; ask for less (a path for images, a smaller range for logs)", len(body), MaxFrameSize))
	}
	body = s.writeBudgeted(id, body)
	if cap(body) <= maxPooledReply {
		*bp = body
		replyBufs.Put(bp)
	}
}

// writeBudgeted writes a response, holding a large one's size in the budget
// while it is written (a slow reader keeps it in memory that long); one
// that finds no room is answered busy instead. It returns the buffer used.
func (s *ServerConn) writeBudgeted(id uint64, body []byte) []byte {
	n := int64(len(body))
	if s.opts.Budget == nil || n <= SmallFrame {
		s.write(body)
		return body
	}
	if !s.opts.Budget.acquire(context.Background(), n, budgetWait) {
		body, _ = AppendResponse(body[:0], id, nil, s.opts.Budget.busyError("an answer", int(n)))
		s.write(body)
		return body
	}
	s.write(body)
	s.opts.Budget.release(n)
	return body
}

// Notify sends a notification to the peer. It blocks while the peer is slow
// to read, up to the write timeout, and returns the write's error.
func (s *ServerConn) Notify(method string, params any) error {
	p, err := marshalResult(params)
	if err != nil {
		return err
	}
	body, err := json.Marshal(Notification{Method: method, Params: p})
	if err != nil {
		return err
	}
	return s.write(body)
}

func (s *ServerConn) write(body []byte) error { return s.w.write(body) }

// WriteFailure returns the error of the write that closed the connection,
// or nil. A timeout (net.Error's Timeout) means the peer stopped reading
// for the WriteTimeout and was dropped.
func (s *ServerConn) WriteFailure() error { return s.w.failure() }
