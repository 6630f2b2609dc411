package capture

import (
	"context"
	"errors"
	"fmt"
	"image"
	"sync"
	"time"

	"github.com/BurntSushi/xgb/xproto"
)

// cornerMargin is the kill switch: a pointer within this many pixels of a
// screen corner, put there by the person rather than by the batch, stops
// acting (like PyAutoGUI's fail-safe). Large enough to hit by flinging the
// mouse, small enough never to be reached by accident.
const cornerMargin = 10

// killPoll is how often a wait checks the kill switch.
const killPoll = 50 * time.Millisecond

// maxObservedCallers bounds the per-caller memory of the last observation.
const maxObservedCallers = 1024

// ActRequest is one batch.
type ActRequest struct {
	// Actions as the agent wrote them; ParseBatch validates them.
	Actions []RawAction
	// Observe (default true) ends the batch with a screenshot.
	Observe *bool
	// SettleMS is the pause before that screenshot (default 300, at most
	// 5000).
	SettleMS *float64
	// Shot sets the observation's format, region, size or path.
	Shot ScreenshotRequest
	// LockTimeout is how long to wait for the screen; zero means the
	// Screen's (SetLockTimeout), negative means not at all.
	LockTimeout time.Duration
	// Caller is who asks, for the audit log and Info.
	Caller Caller
	// CallerKey identifies the caller for "unchanged" observations (e.g.
	// the connection); empty disables the comparison.
	CallerKey string
}

// ActResult tells how a batch went. Act returns it with or without an
// error: after a stop it says how many actions ran.
type ActResult struct {
	// ActionsRun counts the request's actions that completed.
	ActionsRun int `json:"actions_run"`
	// Outcome is "ok", or why the batch ended: refused, invalid,
	// lock_timeout, busy, unavailable, timeout, canceled, error.
	Outcome string `json:"outcome"`
	// Observation is the closing screenshot, when asked for and the batch
	// completed.
	Observation *Shot         `json:"observation,omitempty"`
	Budget      time.Duration `json:"budget"`
	Duration    time.Duration `json:"duration"`
}

// Act runs a batch of input actions and observes the result. It is refused
// (ErrRefused) unless acting is allowed and while the kill switch is
// tripped; invalid batches fail with ErrInvalid naming the action; it waits
// for the screen up to req.LockTimeout (ErrLockTimeout, or ErrBusy when the
// queue is full); it stops with ErrRefused when the kill switch trips, with
// ErrTimeout past its time budget, with ErrUnavailable when the X server
// goes away, and with ctx's error when ctx ends. Whatever happens, nothing
// the batch pressed stays pressed and every temporary key binding is undone.
// Every call is recorded in the audit log.
func (s *Screen) Act(ctx context.Context, req ActRequest) (*ActResult, error) {
	start := time.Now()
	res := &ActResult{}
	rec := AuditRecord{Time: start, Caller: req.Caller, Desktop: s.desktop}
	err := s.act(ctx, req, res, &rec)
	res.Duration = time.Since(start)
	res.Outcome = outcome(err)
	rec.Ran, rec.Outcome = res.ActionsRun, res.Outcome
	if err != nil {
		rec.Message = err.Error()
	}
	rec.Duration = float64(res.Duration.Microseconds()) / 1000
	if len(rec.Actions) == 0 {
		rec.Actions = auditRaw(req.Actions)
	}
	s.keepObservation(&rec, req.CallerKey, res.Observation)
	if s.audit != nil {
		if aerr := s.audit.write(rec); aerr != nil {
			s.log.Error().Err(aerr).Msg("audit log write failed")
		}
	}
	ev := s.log.Info()
	if err != nil {
		ev = s.log.Warn().Err(err)
	}
	ev.Str("caller", req.Caller.String()).Int("actions_run", res.ActionsRun).Str("outcome", res.Outcome).
		Dur("duration", res.Duration).Msg("act batch")
	return res, err
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrRefused):
		return "refused"
	case errors.Is(err, ErrInvalid):
		return "invalid"
	case errors.Is(err, ErrLockTimeout):
		return "lock_timeout"
	case errors.Is(err, ErrBusy):
		return "busy"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	default:
		return "error"
	}
}

func (s *Screen) act(ctx context.Context, req ActRequest, res *ActResult, rec *AuditRecord) error {
	if !s.AllowAct() {
		if s.refusal != "" {
			return fmt.Errorf("%w: %s", ErrRefused, s.refusal)
		}
		return fmt.Errorf("%w: acting is disabled; start agentd with --allow-act or set allow_act = true in config.toml", ErrRefused)
	}
	if err := s.leaseRefusal(); err != nil {
		return err
	}
	x, err := s.conn()
	if err != nil {
		return err
	}
	if err := x.enter(); err != nil {
		return err
	}
	defer x.leave()
	if !x.xtestOK {
		return fmt.Errorf("%w: %s", ErrUnavailable, x.xtestWhy)
	}
	// The kill switch's first look goes out with the request for the
	// screen's size: a batch that finds the screen free waits for one
	// round trip before its first action, not two. (On a desktop the
	// switch is the person's screen's.)
	var early *xproto.QueryPointerCookie
	if s.person == nil {
		c := xproto.QueryPointer(x.c, x.root)
		early = &c
	}
	screen, err := x.screenRect()
	if err != nil {
		if errors.Is(x.sock.Err(), errXHung) {
			return fmt.Errorf("%w: the X server at DISPLAY %s stopped answering before the batch began; the connection is replaced", ErrTimeout, x.display)
		}
		return err
	}
	batch, err := ParseBatch(req.Actions, req.Observe, req.SettleMS, screen)
	if err != nil {
		return err
	}
	rec.Actions = auditActions(batch.Actions)
	res.Budget = batch.Budget()
	timeout := req.LockTimeout
	if timeout == 0 {
		timeout = s.lockWait()
	}
	// The batch (and its wait for the lock) ends when the Screen closes.
	lctx, endLocked := context.WithCancelCause(ctx)
	defer endLocked(nil)
	stopWatch := context.AfterFunc(s.life, func() { endLocked(errScreenClosed) })
	defer stopWatch()
	// A lease taken while the batch waits or runs stops it (lease.go).
	defer s.trackBatch(endLocked)()
	waited, err := s.desk.acquire(lctx, req.Caller, max(timeout, 0))
	if err != nil {
		if errors.Is(context.Cause(lctx), errScreenClosed) {
			return fmt.Errorf("%w: %s while the batch waited for it", ErrUnavailable, s.closedWhy())
		}
		if t := takenOverCause(lctx); t != nil {
			return s.takenOverError(t, " while the batch waited for the screen")
		}
		return err
	}
	defer s.desk.release()

	bctx, cancel := context.WithTimeoutCause(lctx, res.Budget, errBudget)
	defer cancel()
	defer x.guard(bctx, hungGrace)()
	r := &batchRun{s: s, x: x, screen: screen, ctx: bctx, in: newInputRun(x)}
	if !waited {
		// Nothing ran between the look and now: it is the check before
		// action 1. After a wait, another batch may have moved the
		// pointer since, and the check looks again.
		r.early = early
	}
	err = r.run(batch, res)
	x.sock.flush() // a motion held for a query the batch stopped before
	r.in.releaseAll()
	if cerr := r.in.resumeCapsLock(); err == nil {
		err = cerr
	}
	after := func() string { return fmt.Sprintf("after action %d", r.number) }
	if err == nil && batch.Observe {
		// No screenshot after a look that saw the pointer in a corner.
		err = r.settleLooks(0, after)
		if err == nil {
			err = r.sleep(time.Duration(batch.SettleMS)*time.Millisecond, 0)
		}
	}
	// Bindings go last: the settle time also lets clients catch up with
	// the keys typed through them.
	if uerr := r.in.unbindAll(); err == nil {
		err = uerr
	}
	if err == nil {
		err = x.sync()
	}
	if err == nil {
		// The looks still in flight were answered before the sync was:
		// reading them waits for nothing, where reading them before the
		// sync cost a round trip of its own.
		err = r.settleLooks(0, after)
	}
	if err != nil {
		return r.explain(err)
	}
	if !batch.Observe {
		return nil
	}
	shot, err := s.observe(x, req)
	if err != nil {
		return err
	}
	res.Observation = shot
	return nil
}

var errBudget = errors.New("time budget exceeded")

// closedWhy says why a closed Screen stopped a batch.
func (s *Screen) closedWhy() string {
	if s.desktop != "" {
		return fmt.Sprintf("desktop %s was removed", s.desktop)
	}
	return "the screen was closed"
}

// hungGrace is how long past its budget a batch waits for an X server that
// does not answer before the connection is killed (see xconn.guard); the
// connection's watchdog usually finds a hung server sooner.
const hungGrace = 500 * time.Millisecond

// batchRun is the state of one running batch.
type batchRun struct {
	s      *Screen
	x      *xconn
	screen image.Rectangle
	ctx    context.Context
	in     *inputRun
	number int // action being run
	// looks are the kill switch's pointer queries sent after moves whose
	// answers are not read yet, oldest first (see lookWindow).
	looks []pointerLook
	// early, when set, is a look sent with the batch's first request,
	// before it took a screen that was free: the check before action 1.
	early *xproto.QueryPointerCookie
	// at is where the batch last put the pointer; released and
	// releasedAt are when and where it last let go of a button (pressGap).
	at, releasedAt image.Point
	released       time.Time
}

// pressGap is the least time between a button's release and the next
// press at the same place in a batch, so a double or triple click reaches
// the X server as a person's would, a few milliseconds apart, not in the
// same millisecond. A window manager that focuses on click (openbox's
// default: it grabs every press in a window and replays it) lost presses
// sent back to back: xdotool's triple click with no delay lost one or two
// of its presses 51 times in 160 into an openbox-managed xterm, quiet and
// beside two CPU hogs; 5 ms apart and more, none in 360. Three clicks at
// three places, a move between each, lost none in 100, so presses
// elsewhere do not wait: a batch of clicks around the screen stays as
// fast as before. 15 ms is well inside every double-click time (xterm
// 250 ms, GTK and Qt 400 ms).
const pressGap = 15 * time.Millisecond

// press presses button b, once pressGap has passed since the batch's last
// release when that was at the same place.
func (r *batchRun) press(b int) error {
	if wait := pressGap - time.Since(r.released); wait > 0 && r.at == r.releasedAt {
		t := time.NewTimer(wait)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return r.ctx.Err()
		case <-t.C:
		}
	}
	return r.in.buttonDown(b)
}

// release lets go of button b and notes when.
func (r *batchRun) release(b int) error {
	err := r.in.buttonUp(b)
	r.released, r.releasedAt = time.Now(), r.at
	return err
}

// lookWindow is how many kill-switch looks a run of moves may leave
// unanswered. Each move is followed by a look at the pointer, as every
// action is; a move does not wait for the answers to the looks before it
// until lookWindow of them are in flight, while any other action (a click,
// a key, typing, a wait) waits for every answer first, and so does a move
// while a button or key is held: a drag's motions reach the application
// one round trip apart, as before (openbox, handed a drag's motions in
// one burst, missed title-bar drags beside two CPU hogs). So a pointer pushed
// into a corner stops the batch before anything is pressed, and at most
// lookWindow moves after the look that saw it: a few microseconds of
// moves, where waiting for every answer cost a round trip to the X server
// per move (one wake of the server and one of this process, each costly
// on a machine that halts idle CPUs). No look is skipped, so nothing the
// person did between a move and its look is missed; what the person does
// between a look and the next move could be undone by that move whether
// the look's answer was awaited or not.
const lookWindow = 8

// pointerLook is a kill-switch query in flight: the pointer was put at
// placed just before it.
type pointerLook struct {
	cookie xproto.QueryPointerCookie
	placed image.Point
}

// sendLook asks where the pointer is, after the move that put it at placed,
// without waiting for the answer.
func (r *batchRun) sendLook(placed image.Point) {
	r.looks = append(r.looks, pointerLook{cookie: xproto.QueryPointer(r.x.c, r.x.root), placed: placed})
}

// settleLooks reads the answers to the looks in flight, oldest first,
// until at most keep remain, and stops the batch if one shows the pointer
// in a corner where no move of this batch put it.
func (r *batchRun) settleLooks(keep int, where func() string) error {
	for len(r.looks) > keep {
		l := r.looks[0]
		r.looks = r.looks[1:]
		p, _, err := r.x.pointerAnswer(l.cookie)
		if err != nil {
			r.looks = nil
			return err
		}
		if p != l.placed && inCorner(p, r.screen) {
			r.looks = nil
			return cornerRefusal(where(), p)
		}
	}
	return nil
}

// pointerMark remembers where the last batch left the pointer, so that a
// batch that clicked into a corner does not trip the kill switch for itself
// or the next batch.
type pointerMark struct {
	mu    sync.Mutex
	at    image.Point
	valid bool
}

func (m *pointerMark) set(p image.Point) {
	m.mu.Lock()
	m.at, m.valid = p, true
	m.mu.Unlock()
}

func (m *pointerMark) is(p image.Point) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.valid && m.at == p
}

// cornered reports whether the person pushed the pointer into a corner of
// this (the person's) screen: the kill switch, as the desktops' batches
// check it. It does not connect; without a connection it is false.
func (s *Screen) cornered() bool {
	x, _ := s.current()
	if x == nil || x.enter() != nil {
		return false
	}
	defer x.leave()
	r, err := x.screenRect()
	if err != nil {
		return false
	}
	p, _, err := x.pointer()
	return err == nil && inCorner(p, r) && !s.placed.is(p)
}

// inCorner reports whether p is within cornerMargin of a corner of r.
func inCorner(p image.Point, r image.Rectangle) bool {
	nearX := p.X-r.Min.X <= cornerMargin || r.Max.X-1-p.X <= cornerMargin
	nearY := p.Y-r.Min.Y <= cornerMargin || r.Max.Y-1-p.Y <= cornerMargin
	return nearX && nearY
}

// killSwitch returns ErrRefused when the person pushed the pointer into a
// corner.
// where says when the switch was checked (before which action), for the
// refusal only: it is worded only when the switch stops the batch.
func (r *batchRun) killSwitch(where func() string) error {
	if r.s.person != nil {
		// An agent's desktop has no person's hand on it: the switch is
		// the person's screen's.
		if r.s.person.cornered() {
			return fmt.Errorf("%w: the kill switch stopped the batch on desktop %s %s: the pointer was pushed into a corner of the person's screen; move it away from the corners to act again",
				ErrRefused, r.s.desktop, where())
		}
		return nil
	}
	p, err := r.pointerNow()
	if err != nil {
		return err
	}
	if inCorner(p, r.screen) && !r.s.placed.is(p) {
		return cornerRefusal(where(), p)
	}
	return nil
}

// pointerNow is where the pointer is: the answer to the early look while
// it has not been used, else the answer to a query sent now.
func (r *batchRun) pointerNow() (image.Point, error) {
	c := r.early
	if c == nil {
		p, _, err := r.x.pointer()
		return p, err
	}
	r.early = nil
	p, _, err := r.x.pointerAnswer(*c)
	return p, err
}

// cornerRefusal is the kill switch's refusal, when the pointer was found
// at p in a corner of this screen before the action where names.
func cornerRefusal(where string, p image.Point) error {
	return fmt.Errorf("%w: the kill switch stopped the batch %s: the pointer was pushed into a screen corner (%d,%d); move it away from the corners to act again",
		ErrRefused, where, p.X, p.Y)
}

// stop is checked before every action and often during long ones.
func (r *batchRun) stop(where func() string) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	return r.killSwitch(where)
}

// explain turns a context error into the batch's error.
func (r *batchRun) explain(err error) error {
	if errors.Is(r.x.sock.Err(), errXHung) {
		return fmt.Errorf("%w: the X server at DISPLAY %s stopped answering during action %d; the connection is replaced", ErrTimeout, r.x.display, r.number)
	}
	if r.ctx.Err() != nil && errors.Is(context.Cause(r.ctx), errScreenClosed) {
		return fmt.Errorf("%w: %s during action %d", ErrUnavailable, r.s.closedWhy(), r.number)
	}
	if t := takenOverCause(r.ctx); t != nil {
		return r.s.takenOverError(t, fmt.Sprintf(" during action %d, which stopped the batch", r.number))
	}
	if r.ctx.Err() != nil && errors.Is(context.Cause(r.ctx), errBudget) {
		return fmt.Errorf("%w: the batch ran past its time budget at action %d; split it into smaller batches", ErrTimeout, r.number)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("batch stopped at action %d: %w", r.number, err)
	}
	return err
}

func (r *batchRun) run(b *Batch, res *ActResult) error {
	r.number = 1
	if err := r.stop(func() string { return "before action 1" }); err != nil {
		return err
	}
	for i, a := range b.Actions {
		r.number = a.Number
		if i > 0 {
			where := func() string { return fmt.Sprintf("before action %d (%s)", a.Number, a.Kind) }
			if len(r.looks) > 0 {
				// The look sent with the move before is this action's
				// check; a move need not wait for its answer yet.
				keep := 0
				if a.Kind == KindMove && len(r.in.pressed) == 0 {
					keep = lookWindow - 1
				}
				if err := r.ctx.Err(); err != nil {
					return err
				}
				if err := r.settleLooks(keep, where); err != nil {
					return err
				}
			} else if err := r.stop(where); err != nil {
				return err
			}
		}
		look := a.Kind == KindMove && i+1 < len(b.Actions) && r.s.person == nil
		if look {
			// The look before the next action goes out with this
			// motion (xsock.hold). On a desktop the kill switch is the
			// person's screen's, so no look follows on this connection.
			r.x.sock.hold()
		}
		if err := r.do(a); err != nil {
			if errors.Is(err, ErrRefused) || errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return fmt.Errorf("action %d (%s): %w", a.Number, a.Kind, err)
		}
		if look {
			if r.s.testAfterMove != nil {
				r.x.sock.flush()
				r.s.testAfterMove(a.Number)
			}
			r.sendLook(a.At)
		}
		if i+1 == len(b.Actions) || b.Actions[i+1].Number != a.Number {
			res.ActionsRun = a.Number
		}
	}
	// Looks still in flight were sent before the last action, a move,
	// which has run: a corner one saw still refuses the batch. Act reads
	// them after its closing sync.
	return nil
}

func (r *batchRun) moveTo(p image.Point) error {
	if err := r.in.move(p.X, p.Y); err != nil {
		return err
	}
	r.s.placed.set(p)
	r.at = p
	return nil
}

func (r *batchRun) do(a Action) error {
	in := r.in
	switch a.Kind {
	case KindClick:
		if err := r.moveTo(a.At); err != nil {
			return err
		}
		return r.withModifiers(a, func() error {
			if err := r.press(a.Button); err != nil {
				return err
			}
			return r.release(a.Button)
		})
	case KindMove:
		return r.moveTo(a.At)
	case KindDown, KindUp:
		if a.HasAt {
			if err := r.moveTo(a.At); err != nil {
				return err
			}
		}
		return r.withModifiers(a, func() error {
			if a.Kind == KindDown {
				return r.press(a.Button)
			}
			return r.release(a.Button)
		})
	case KindType:
		if err := in.suspendCapsLock(); err != nil {
			return err
		}
		where := fmt.Sprintf("during action %d (type)", a.Number)
		return in.typeText(a.Text, func() error { return r.stop(func() string { return where }) })
	case KindKey:
		if err := in.suspendCapsLock(); err != nil {
			return err
		}
		return in.key(a)
	case KindScroll:
		if a.HasAt {
			if err := r.moveTo(a.At); err != nil {
				return err
			}
		}
		button := map[string]int{"up": 4, "down": 5, "left": 6, "right": 7}[a.Direction]
		return r.withModifiers(a, func() error {
			for range a.Amount {
				if err := in.buttonDown(button); err != nil {
					return err
				}
				if err := in.buttonUp(button); err != nil {
					return err
				}
			}
			return r.x.sync()
		})
	case KindKeyDown:
		if err := in.suspendCapsLock(); err != nil {
			return err
		}
		return in.keyDown(a)
	case KindKeyUp:
		return in.keyUp(a)
	case KindWait:
		return r.sleep(time.Duration(a.MS)*time.Millisecond, a.Number)
	case KindFocus:
		return r.focus(a)
	}
	return fmt.Errorf("unknown kind %q", a.Kind)
}

// withModifiers runs a click, scroll, down or up with its modifiers held,
// pressed before it and released after it (by releaseAll if it fails).
func (r *batchRun) withModifiers(a Action, do func() error) error {
	let, err := r.in.holdModifiers(a.Modifiers)
	if err != nil {
		return err
	}
	if err := do(); err != nil {
		return err
	}
	if err := let(); err != nil {
		return err
	}
	if len(a.Modifiers) > 0 {
		return r.x.sync()
	}
	return nil
}

// sleep waits d, checking the kill switch and the budget as it goes. number
// is the action waiting, 0 for the settle time.
func (r *batchRun) sleep(d time.Duration, number int) error {
	where := "while settling before the observation"
	if number > 0 {
		where = fmt.Sprintf("during action %d (wait)", number)
	}
	end := time.Now().Add(d)
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		t.Reset(min(left, killPoll))
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-t.C:
		}
		if err := r.killSwitch(func() string { return where }); err != nil {
			return err
		}
	}
}

// observe takes the closing screenshot, marking it Unchanged when the caller
// already received the same picture.
func (s *Screen) observe(x *xconn, req ActRequest) (*Shot, error) {
	if req.CallerKey == "" {
		shot, _, err := s.shoot(x, req.Shot, nil)
		return shot, err
	}
	s.obsMu.Lock()
	last, seen := s.lastObs[req.CallerKey]
	s.obsMu.Unlock()
	shot, sum, err := s.shoot(x, req.Shot, func(sum uint64) bool { return seen && sum == last })
	if err != nil {
		return nil, err
	}
	s.obsMu.Lock()
	if _, ok := s.lastObs[req.CallerKey]; !ok && len(s.lastObs) >= maxObservedCallers {
		for k := range s.lastObs {
			delete(s.lastObs, k)
			break
		}
	}
	s.lastObs[req.CallerKey] = sum
	s.obsMu.Unlock()
	return shot, nil
}

// ForgetCaller drops what the Screen remembers about a caller key (the last
// observation it received); call it when the connection ends.
func (s *Screen) ForgetCaller(key string) {
	s.obsMu.Lock()
	delete(s.lastObs, key)
	s.obsMu.Unlock()
}

func auditActions(acts []Action) []AuditAction {
	out := make([]AuditAction, 0, len(acts))
	for _, a := range acts {
		aa := AuditAction{Kind: a.Kind, Key: a.Key, Modifiers: a.Modifiers, Direction: a.Direction, Amount: a.Amount, MS: a.MS, Application: a.Application}
		if a.HasAt {
			x, y := a.At.X, a.At.Y
			aa.X, aa.Y = &x, &y
		}
		switch a.Kind {
		case KindClick, KindDown, KindUp:
			aa.Button = [...]string{"", "left", "middle", "right"}[a.Button]
		case KindType:
			aa.Chars = len([]rune(a.Text))
		}
		out = append(out, aa)
	}
	return out
}

// auditRaw records a batch that did not validate: kinds only.
func auditRaw(raw []RawAction) []AuditAction {
	out := make([]AuditAction, 0, len(raw))
	for _, r := range raw {
		out = append(out, AuditAction{Kind: r.Kind})
	}
	return out
}
