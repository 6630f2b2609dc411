package capture

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A lease gives a desktop's input to a person (the view page's Take over):
// while it is held, agents' batches on that Screen are refused with
// ErrBusy naming it, and those running or waiting for the screen when it
// is taken are stopped with it, as the kill switch stops a batch: the
// person's hand wins at once, and an agent never types into a login the
// person is filling in. Screenshots go on: agents may still look.
//
// Lock order: leaseState.mu alone; it is never held while a batch's
// cancel function runs I/O (cancel functions only signal).
type leaseState struct {
	mu      sync.Mutex
	holder  string
	since   time.Time
	batches map[*batchCancel]struct{} // batches running or waiting
}

// batchCancel is one in-flight batch's end.
type batchCancel struct{ cancel context.CancelCauseFunc }

// takenOver is the cause a batch is stopped with when a lease is taken.
type takenOver struct {
	holder string
	since  time.Time
}

func (t *takenOver) Error() string { return "taken over by " + t.holder }

// TakeOver gives the Screen's input to holder (who, for the messages and
// the log: "a person in agentd's view page"): until release is called,
// Act answers ErrBusy naming holder, and batches running or waiting now
// are stopped with ErrBusy. It fails with ErrBusy naming the holder when
// another lease is held. release may be called more than once.
func (s *Screen) TakeOver(holder string) (release func(), err error) {
	l := &s.lease
	l.mu.Lock()
	if l.holder != "" {
		who, since := l.holder, l.since
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: %s already took over %s at %s; wait for it to hand back", ErrBusy, who, s.targetName(), since.Format(time.TimeOnly))
	}
	now := time.Now()
	l.holder, l.since = holder, now
	cause := &takenOver{holder: holder, since: now}
	var stopped []*batchCancel
	for b := range l.batches {
		stopped = append(stopped, b)
	}
	l.mu.Unlock()
	for _, b := range stopped {
		b.cancel(cause)
	}
	s.log.Info().Str("holder", holder).Int("batches_stopped", len(stopped)).Msg("input taken over: agents' batches get busy until hand back")
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.holder, l.since = "", time.Time{}
			l.mu.Unlock()
			s.log.Info().Str("holder", holder).Dur("held", time.Since(now)).Msg("input handed back to agents")
		})
	}, nil
}

// LeaseHolder names who holds the Screen's input, "" for nobody.
func (s *Screen) LeaseHolder() string {
	s.lease.mu.Lock()
	defer s.lease.mu.Unlock()
	return s.lease.holder
}

// targetName is the Screen's name in messages.
func (s *Screen) targetName() string {
	if s.desktop != "" {
		return "desktop " + s.desktop
	}
	return "the screen"
}

// leaseRefusal is ErrBusy naming the lease, or nil when none is held.
func (s *Screen) leaseRefusal() error {
	s.lease.mu.Lock()
	defer s.lease.mu.Unlock()
	if s.lease.holder == "" {
		return nil
	}
	return s.takenOverError(&takenOver{holder: s.lease.holder, since: s.lease.since}, "")
}

func (s *Screen) takenOverError(t *takenOver, during string) error {
	return fmt.Errorf("%w: %s took over %s at %s%s; agents' batches get busy until it hands back", ErrBusy, t.holder, s.targetName(), t.since.Format(time.TimeOnly), during)
}

// trackBatch registers an in-flight batch, so that a lease taken while it
// runs or waits stops it; a lease already held stops it at once. The
// returned function unregisters it.
func (s *Screen) trackBatch(cancel context.CancelCauseFunc) func() {
	b := &batchCancel{cancel: cancel}
	l := &s.lease
	l.mu.Lock()
	if l.batches == nil {
		l.batches = map[*batchCancel]struct{}{}
	}
	l.batches[b] = struct{}{}
	holder, since := l.holder, l.since
	l.mu.Unlock()
	if holder != "" {
		cancel(&takenOver{holder: holder, since: since})
	}
	return func() {
		l.mu.Lock()
		delete(l.batches, b)
		l.mu.Unlock()
	}
}

// takenOverCause is the lease that stopped a batch, or nil.
func takenOverCause(ctx context.Context) *takenOver {
	var t *takenOver
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &t) {
		return t
	}
	return nil
}
