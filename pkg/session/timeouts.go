package session

import "time"

// Timeouts are what an ask or a wait that names none of its own gets. They
// are applied in one place, Manager.Ask and Manager.Wait, so a worker always
// receives a request whole; the daemon sets them from its config at start
// and on each reload (SetTimeouts).
type Timeouts struct {
	// Ask is an ask's deadline.
	Ask time.Duration
	// AskIdle is the quiet that ends an ask on a program whose prompt
	// could not be learned.
	AskIdle time.Duration
	// Lock is how long an ask waits for an ask in progress on the same
	// session, and then for the program's prompt to come back.
	Lock time.Duration
	// Wait is a wait's deadline.
	Wait time.Duration
}

// DefaultTimeouts are a new Manager's.
func DefaultTimeouts() Timeouts {
	return Timeouts{Ask: DefaultAskTimeout, AskIdle: DefaultAskIdle, Lock: DefaultLockTimeout, Wait: DefaultWaitTimeout}
}

// SetTimeouts replaces the Manager's timeouts; a field that is not
// positive keeps its default. Requests already running keep the ones they
// started with.
func (m *Manager) SetTimeouts(t Timeouts) {
	d := DefaultTimeouts()
	for _, f := range []struct{ v, def *time.Duration }{{&t.Ask, &d.Ask}, {&t.AskIdle, &d.AskIdle}, {&t.Lock, &d.Lock}, {&t.Wait, &d.Wait}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	m.timeouts.Store(&t)
}

// Timeouts returns the timeouts in force.
func (m *Manager) Timeouts() Timeouts { return *m.timeouts.Load() }

// fillAsk gives req the timeouts it left zero. A negative LockTimeout
// (do not wait) is kept.
func (t Timeouts) fillAsk(req *AskRequest) {
	if req.Timeout == 0 {
		req.Timeout = t.Ask
	}
	if req.FallbackIdle == 0 {
		req.FallbackIdle = t.AskIdle
	}
	if req.LockTimeout == 0 {
		req.LockTimeout = t.Lock
	}
}
