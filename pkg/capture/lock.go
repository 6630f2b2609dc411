package capture

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// MaxQueuedBatches bounds the batches waiting for the screen. Batches run one
// at a time and take seconds; a longer queue only means callers that will
// time out anyway, so the rest are told busy at once.
const MaxQueuedBatches = 16

// deskLock serialises batches over the whole desktop, first come first
// served: waiters queue in arrival order and the holder hands over to the
// oldest.
type deskLock struct {
	mu      sync.Mutex
	held    *Holder
	waiters []chan struct{}
}

func newDeskLock() *deskLock { return &deskLock{} }

// acquire waits up to timeout for the screen. It returns ErrBusy when the
// queue is full, ErrLockTimeout with the holder's description when the wait
// ran out, and the context's error when ctx ended. waited says whether
// another batch held or awaited the screen when it was asked for.
func (d *deskLock) acquire(ctx context.Context, c Caller, timeout time.Duration) (waited bool, err error) {
	d.mu.Lock()
	if d.held == nil && len(d.waiters) == 0 {
		d.held = &Holder{Caller: c, Since: time.Now()}
		d.mu.Unlock()
		return false, nil
	}
	if len(d.waiters) >= MaxQueuedBatches {
		d.mu.Unlock()
		return true, fmt.Errorf("%w: %d batches are already waiting for the screen; retry later", ErrBusy, MaxQueuedBatches)
	}
	ch := make(chan struct{})
	d.waiters = append(d.waiters, ch)
	d.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	var cause error
	select {
	case <-ch:
		d.mu.Lock()
		d.held = &Holder{Caller: c, Since: time.Now()}
		d.mu.Unlock()
		return true, nil
	case <-t.C:
	case <-ctx.Done():
		cause = ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, w := range d.waiters {
		if w == ch {
			d.waiters = append(d.waiters[:i], d.waiters[i+1:]...)
			if cause != nil {
				return true, cause
			}
			who := "another batch"
			if d.held != nil {
				who = d.held.Caller.String()
			}
			return true, fmt.Errorf("%w: the screen is held by %s; waited %v, retry or raise lock_timeout_ms", ErrLockTimeout, who, timeout)
		}
	}
	// We were handed the lock while giving up: take it, then pass it on.
	d.held = &Holder{Caller: c, Since: time.Now()}
	d.releaseLocked()
	if cause != nil {
		return true, cause
	}
	return true, fmt.Errorf("%w: waited %v for the screen, retry or raise lock_timeout_ms", ErrLockTimeout, timeout)
}

func (d *deskLock) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.releaseLocked()
}

func (d *deskLock) releaseLocked() {
	d.held = nil
	if len(d.waiters) > 0 {
		next := d.waiters[0]
		d.waiters = d.waiters[1:]
		// The waiter marks itself the holder; keep others out meanwhile.
		d.held = &Holder{Since: time.Now()}
		close(next)
	}
}

func (d *deskLock) holder() (*Holder, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held == nil {
		return nil, len(d.waiters)
	}
	h := *d.held
	return &h, len(d.waiters)
}
