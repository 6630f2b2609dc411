package rpc

import (
	"context"
	"errors"
	"sync"
	"time"
)

// serving is one run of Serve: the read loop's state and what it shares
// with the handlers it starts. The loop (run) reads a frame, classifies it
// and hands it off (golang/tools' jsonrpc2_v2 conn.go reads the same way);
// everything else is a method here.
type serving struct {
	c *Conn
	h Handler
	// parent is Serve's context, whose cause may say why the connection is
	// closed (the goodbye); ctx is the one the handlers get, ended when the
	// connection ends.
	parent, ctx context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup // the handlers on pooled goroutines
	fr          *FrameReader
	idle        *idleTimer
	stopCancel  func() bool

	// slots bounds the requests in flight (MaxInFlight); work hands a
	// request to an idle handler goroutine (unbuffered: a send succeeds
	// only when one waits). Both are nil on a calling end.
	slots chan struct{}
	work  chan *job

	dmu      sync.Mutex // the read deadline: the loop and the cancel both set it
	armed    bool       // a read deadline is set (the loop's own)
	upgraded bool       // the connection is a raw stream now: no goodbye

	// ret and why are what run returns once the loop stops: what Serve
	// returns, and why the connection ended as the calling side reports it.
	ret, why error
}

// frame is one frame read from the peer and the bytes it holds in the
// budget. It has one owner at a time: the read loop, then (take) the
// handler it is given to. free gives its bytes back and done also tells
// the idle clock its request is over; each does so once however often it
// is called, so the owner's last word can be an unconditional done.
type frame struct {
	body []byte
	b    *Budget
	n    int64 // bytes held in b; 0 once given back
	idle *idleTimer
	busy bool // counted by idle (begin) and not yet done
}

// free gives the frame's bytes back to the budget, once.
func (f *frame) free() {
	if f.n > 0 {
		f.b.give(f.n)
		f.n = 0
	}
}

// done frees the frame and ends its request for the idle clock, once.
func (f *frame) done() {
	f.free()
	if f.busy {
		f.busy = false
		f.idle.end()
	}
}

// take moves the frame to a new owner: f holds nothing after.
func (f *frame) take() frame {
	g := *f
	*f = frame{}
	return g
}

// job is a request handed to a pooled handler goroutine, with its frame.
type job struct {
	req *Request
	f   frame
}

// run is the read loop. It returns what Serve returns, and why the
// connection ended as the calling side reports it (Err).
func (c *Conn) run(ctx context.Context, h Handler) (ret, why error) {
	s := c.newServing(ctx, h)
	defer s.close()
	for {
		var f frame
		got, err := s.read(&f)
		more := err == nil && (!got || s.dispatch(&f))
		f.done() // whatever the path, unless a handler has taken it
		if err != nil {
			return s.failed(err)
		}
		if !more {
			return s.ret, s.why
		}
	}
}

func (c *Conn) newServing(ctx context.Context, h Handler) *serving {
	s := &serving{c: c, h: h, parent: ctx, fr: NewFrameReader(c.conn)}
	if c.opts.Budget != nil {
		// Handlers reach the budget through their contexts (Reserve).
		ctx = context.WithValue(ctx, budgetKey{}, c.opts.Budget)
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	// Cancellation interrupts a blocked read with a past deadline.
	s.stopCancel = context.AfterFunc(s.ctx, s.interrupt)
	s.idle = c.newIdleTimer(s.interrupt)
	if h != nil {
		s.slots = make(chan struct{}, c.opts.MaxInFlight)
		s.work = make(chan *job)
	}
	return s
}

// close ends a Serve: handlers see their contexts end, finish and write
// their answers (a request that completes as the daemon stops still gets
// its response); then the goodbye, if Serve's context gave one, and only
// then does the connection close.
func (s *serving) close() {
	s.stopCancel()
	s.idle.stop()
	s.cancel()
	s.wg.Wait()
	var bye *Error
	if !s.upgraded && errors.As(context.Cause(s.parent), &bye) {
		if body, err := AppendResponse(nil, 0, nil, bye); err == nil {
			s.c.w.writeWithin(body, goodbyeTimeout)
		}
	}
	s.c.conn.Close()
}

// setReadDeadline is the one setter of the read deadline. It keeps the
// past deadline once the connection's context has ended: otherwise a
// cancel landing between frames would be undone by the loop, and Serve
// would wait for the peer.
func (s *serving) setReadDeadline(t time.Time) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if s.ctx.Err() != nil {
		t = time.Unix(1, 0)
	}
	s.c.conn.SetReadDeadline(t)
}

// interrupt cuts a blocked read short (a cancel, an idle connection).
func (s *serving) interrupt() { s.setReadDeadline(time.Unix(1, 0)) }

// stop ends the loop with what run returns; it returns false, for
// dispatch to return.
func (s *serving) stop(ret, why error) bool {
	s.ret, s.why = ret, why
	return false
}

// read reads the next frame into f, taking its size from the budget first
// (a tiny frame's at once, a larger one's may wait). A frame that finds no
// room is read and dropped and answered busy under its id: got is false.
// An error ends the loop.
func (s *serving) read(f *frame) (got bool, err error) {
	// Wait for a frame to begin without a deadline: idle is fine.
	if s.armed {
		s.setReadDeadline(time.Time{})
		s.armed = false
	}
	if err := s.fr.waitStart(); err != nil {
		return false, err
	}
	// A frame has begun: the connection is not idle until it is answered
	// (or refused).
	if !s.idle.begin() {
		return false, ErrIdle
	}
	f.idle, f.busy = s.idle, true
	// A frame that arrived whole with its first bytes (the usual case)
	// cannot stall; only one still arriving gets a deadline. Each deadline
	// costs two timer updates in the runtime.
	if t := s.c.opts.ReadTimeout; t > 0 && !s.fr.buffered() {
		s.setReadDeadline(time.Now().Add(t))
		s.armed = true
	}
	size, err := s.fr.header()
	if err != nil {
		return false, err
	}
	if b := s.c.opts.Budget; b != nil {
		if !b.take(s.ctx, int64(size), budgetWait, size <= Tiny, false) {
			return false, s.refuse(size)
		}
		f.b, f.n = b, int64(size)
	}
	f.body, err = s.fr.body(size)
	return err == nil, err
}

// idPrefix is how much of a refused frame is kept to find its id.
const idPrefix = 256

// refuse reads and drops a frame of size bytes that found no room in the
// budget, and answers it busy under its id.
func (s *serving) refuse(size uint32) error {
	prefix, err := s.fr.skip(size, idPrefix)
	if err != nil {
		return err
	}
	id := leadingID(prefix)
	e := s.c.opts.Budget.busyError("a request", int(size))
	s.c.reply(id, nil, e, nil)
	s.c.requestDone(&Request{ID: id}, 0, e)
	return nil
}

// failed is how run ends on a read error: a serving end tells its caller
// why it hangs up (a broken or stalled frame); a calling end just ends.
func (s *serving) failed(err error) (ret, why error) {
	if s.idle.fired() || err == ErrIdle {
		return ErrIdle, ErrIdle
	}
	c := s.c
	var fe *FrameError
	if s.h != nil && errors.As(err, &fe) {
		c.reply(0, nil, Errorf(CodeMalformedFrame, "%s; closing the connection", fe.Error()), nil)
	} else if s.h != nil && isTimeout(err) && s.ctx.Err() == nil {
		c.reply(0, nil, Errorf(CodeMalformedFrame, "frame not completed within %s; closing the connection", c.opts.ReadTimeout), nil)
	}
	return c.ended(s.ctx, err), err
}

// dispatch hands a frame on by what it is: to a waiting call or the
// notification handler, to the handler (inline, as an upgrade, or on a
// pooled goroutine, which then owns it), or answers it as a bad request.
// It returns false when the loop must stop (s.ret and s.why say why).
func (s *serving) dispatch(f *frame) bool {
	c := s.c
	if s.h == nil {
		// A calling end reads only responses and notifications.
		f.free()
		if err := c.deliver(f.body); err != nil {
			return s.stop(err, err)
		}
		return true
	}
	req, derr := DecodeRequest(f.body)
	if derr != nil {
		return s.notRequest(f, req, derr)
	}
	switch {
	case c.opts.MayUpgrade != nil && c.opts.MayUpgrade(req.Method):
		f.free()
		if up := c.handleUpgrade(s.ctx, s.h, req); up != nil {
			return s.stream(up)
		}
	case c.opts.Inline != nil && c.opts.Inline(req.Method):
		c.handle(s.ctx, s.h, req, f)
	default:
		return s.hand(req, f)
	}
	return true
}

// notRequest takes a frame that is not a request: a response to one of
// this end's calls or a notification it listens for, else a bad request,
// answered with derr.
func (s *serving) notRequest(f *frame, req *Request, derr error) bool {
	c := s.c
	f.free()
	taken, err := c.deliverIfAwaited(f.body)
	if err != nil {
		return s.stop(err, err)
	}
	if taken {
		return true
	}
	e, ok := derr.(*Error)
	if !ok {
		e = Errorf(CodeInternal, "internal error: %v", derr)
	}
	req = orEmpty(req)
	c.reply(req.ID, nil, e, nil)
	c.requestDone(req, 0, e)
	return true
}

// stream gives the connection to an upgrade's stream once every other
// request on it has been answered; the loop ends with it.
func (s *serving) stream(up *Upgrade) bool {
	s.idle.stop() // the stream owns the connection now
	s.wg.Wait()
	s.c.w.stop()
	s.upgraded = true
	s.setReadDeadline(time.Time{})
	err := up.Stream(s.ctx, streamRW{r: s.fr.r, w: s.c.conn})
	return s.stop(err, err)
}

// hand gives a request to a pooled handler goroutine once a slot is free
// (MaxInFlight), with its frame: the goroutine owns the frame from then.
func (s *serving) hand(req *Request, f *frame) bool {
	select {
	case s.slots <- struct{}{}:
	case <-s.ctx.Done():
		return s.stop(s.c.ended(s.ctx, s.ctx.Err()), s.ctx.Err())
	}
	if s.ctx.Err() != nil {
		<-s.slots
		return s.stop(nil, s.ctx.Err())
	}
	s.wg.Add(1)
	j := &job{req: req, f: f.take()}
	// Hand the request to an idle handler goroutine if there is one: a
	// fresh goroutine would grow its stack again for every request.
	select {
	case s.work <- j:
	default:
		go s.handlerLoop(j)
	}
	return true
}

// handlerIdle is how long a handler goroutine waits for more work before it
// exits, so a burst's goroutines do not outlive it for long.
const handlerIdle = 2 * time.Second

func (s *serving) handlerLoop(j *job) {
	s.runJob(j)
	t := time.NewTimer(handlerIdle)
	defer t.Stop()
	for {
		select {
		case j := <-s.work:
			s.runJob(j)
			t.Reset(handlerIdle)
		case <-t.C:
			return
		case <-s.ctx.Done():
			return
		}
	}
}

func (s *serving) runJob(j *job) {
	defer func() { j.f.done(); <-s.slots; s.wg.Done() }()
	s.c.handle(s.ctx, s.h, j.req, &j.f)
}

// requestDone tells OnRequestDone, when set, of an answered request.
func (c *Conn) requestDone(req *Request, took time.Duration, e *Error) {
	if c.opts.OnRequestDone != nil {
		c.opts.OnRequestDone(req, took, e)
	}
}
