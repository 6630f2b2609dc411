package rpc

import (
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
}

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

	wmu    sync.Mutex
	wbuf   []byte
	wdlSet time.Time // when the write deadline was last moved
	// streaming is set once the connection is upgraded to a raw stream:
	// frames written after that would corrupt it.
	streaming bool
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
	return &ServerConn{conn: conn, opts: opts}
}

// Conn returns the underlying connection.
func (s *ServerConn) Conn() net.Conn { return s.conn }

// Serve reads requests and answers each on its own goroutine until the peer
// hangs up, a frame is broken, or ctx ends. Each request's context derives
// from ctx and is cancelled when the connection ends, so a client that hangs
// up stops its work. Serve returns after every handler has returned; it
// returns nil on a clean close by the peer, else why the connection ended.
// It closes the connection.
func (s *ServerConn) Serve(ctx context.Context, h Handler) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		// Handlers see their contexts end, finish and write their answers
		// (a request that completes as the daemon stops still gets its
		// response); only then does the connection close.
		cancel()
		wg.Wait()
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
			return s.ended(ctx, err)
		}
		// A frame that arrived whole with its first bytes (the usual
		// case) cannot stall; only one still arriving gets a deadline.
		// Each deadline costs two timer updates in the runtime.
		if !fr.buffered() {
			setReadDeadline(time.Now().Add(s.opts.ReadTimeout))
			armed = true
		}
		body, err := fr.ReadFrame()
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
			var id uint64
			if req != nil {
				id = req.ID
			}
			s.reply(id, nil, derr.(*Error))
			if s.opts.OnRequestDone != nil {
				s.opts.OnRequestDone(orEmpty(req), 0, derr.(*Error))
			}
			continue
		}
		if s.opts.MayUpgrade != nil && s.opts.MayUpgrade(req.Method) {
			if up := s.handleUpgrade(ctx, h, req); up != nil {
				wg.Wait()
				s.wmu.Lock()
				s.streaming = true
				s.wmu.Unlock()
				setReadDeadline(time.Time{})
				s.conn.SetWriteDeadline(time.Time{})
				return up.Stream(ctx, streamRW{r: fr.r, w: s.conn})
			}
			continue
		}
		if s.opts.Inline != nil && s.opts.Inline(req.Method) {
			s.handle(ctx, h, req)
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return s.ended(ctx, ctx.Err())
		}
		if ctx.Err() != nil {
			return nil
		}
		wg.Add(1)
		job := func() {
			defer func() { <-slots; wg.Done() }()
			s.handle(ctx, h, req)
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

func (s *ServerConn) handle(ctx context.Context, h Handler, req *Request) {
	start := time.Now()
	result, err := s.call(ctx, h, req)
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
	s.write(body)
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
	s.write(body)
	if cap(body) <= maxPooledReply {
		*bp = body
		replyBufs.Put(bp)
	}
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

func (s *ServerConn) write(body []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.streaming {
		return ErrClosed
	}
	var err error
	s.wbuf, err = AppendFrame(s.wbuf[:0], body)
	if err != nil {
		return err
	}
	// The deadline is moved only when it has come closer than
	// WriteTimeout by a sixteenth, which bounds each write to between
	// 15/16 and all of WriteTimeout and saves a timer update per write.
	if now := time.Now(); now.Sub(s.wdlSet) > s.opts.WriteTimeout/16 {
		s.conn.SetWriteDeadline(now.Add(s.opts.WriteTimeout))
		s.wdlSet = now
	}
	_, err = s.conn.Write(s.wbuf)
	if cap(s.wbuf) > 1<<20 {
		s.wbuf = nil
	}
	if err != nil {
		// A peer that cannot take our frames is gone for our purposes.
		s.conn.Close()
	}
	return err
}
