package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Lease is a person's hold on a session's keyboard ("take over"): while
// it is held, Send, Ask and Approve from anyone but its holder are ErrBusy,
// naming it. They do not wait: an agent told busy can wait itself, and a
// call that waited behind a person at a login prompt would type into it the
// moment they hand back, which is what the person took over to prevent.
// Keys typed at an attached terminal (agentctl attach) are a person's and
// are not held back.
//
// Leases live in the Manager's memory only: a restart of agentd ends them
// all, as it ends the pages that held them.
type Lease struct {
	// ID is the holder's proof (WithLease); it is never shown.
	ID string `json:"-"`
	// Holder names who holds it, for people: "the person in the view
	// page (page 3)".
	Holder string    `json:"holder"`
	Since  time.Time `json:"since"`
}

// leaseTable is the Manager's leases by session, and the asks running on
// each session, which a take-over ends. Its mutex is a leaf: no other lock
// is taken, and no call made, while it is held.
type leaseTable struct {
	mu   sync.Mutex
	by   map[string]*Lease
	asks map[string]map[*runningAsk]bool
}

// runningAsk is an ask in progress: a take-over cancels it with the
// busy error that names the new holder.
type runningAsk struct{ cancel context.CancelCauseFunc }

// leaseKey carries a lease id in a context: the holder's own calls.
type leaseKey struct{}

// WithLease marks ctx as the calls of the holder of lease id: Send, Ask and
// Approve made with it pass a lease of that id.
func WithLease(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, leaseKey{}, id)
}

// TakeOver gives the keyboard of the running session name to holder: a
// new lease, recorded in the session's event log and the daemon's log. A
// session held by someone else is ErrBusy naming them; one that does not
// run is ErrNotFound or ErrInvalidStatus.
func (m *Manager) TakeOver(ctx context.Context, name, holder string) (*Lease, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	info, err := m.Status(ctx, name)
	if err != nil {
		return nil, err
	}
	if !info.Allows.Send {
		return nil, statusError(name, info.Status, info.Termination, "take over")
	}
	var b [16]byte
	rand.Read(b[:])
	l := &Lease{ID: hex.EncodeToString(b[:]), Holder: holder, Since: time.Now()}
	m.leases.mu.Lock()
	if cur := m.leases.by[name]; cur != nil {
		m.leases.mu.Unlock()
		return nil, errorf(ErrBusy, "session %q is already taken over by %s since %s: only one may hold its keyboard; ask them to hand back",
			name, cur.Holder, cur.Since.Format(time.TimeOnly))
	}
	if m.leases.by == nil {
		m.leases.by = map[string]*Lease{}
	}
	m.leases.by[name] = l
	running := m.leases.asks[name]
	delete(m.leases.asks, name)
	m.leases.mu.Unlock()
	// An ask already running would type into what the person took over
	// (it may still be waiting for the prompt): it ends, busy.
	for a := range running {
		a.cancel(errorf(ErrBusy, "session %q was taken over by %s during this ask, which was cancelled; wait, or ask them to hand back", name, holder))
	}
	m.log.Info().Str("session", name).Str("holder", holder).Msg("session taken over: its asks and sends are refused until it is handed back")
	m.markLease(name, "taken over by "+holder, "take_over")
	c := *l
	return &c, nil
}

// HandBack ends the lease id on name, if it is still the one held, and
// records it with why ("handed back", "the page closed"). It reports
// whether it ended one.
func (m *Manager) HandBack(name, id, why string) bool {
	m.leases.mu.Lock()
	l := m.leases.by[name]
	if l == nil || l.ID != id {
		m.leases.mu.Unlock()
		return false
	}
	delete(m.leases.by, name)
	m.leases.mu.Unlock()
	held := time.Since(l.Since).Round(time.Millisecond)
	m.log.Info().Str("session", name).Str("holder", l.Holder).Dur("held", held).Str("why", why).Msg("session handed back")
	m.markLease(name, fmt.Sprintf("handed back by %s after %s: %s", l.Holder, held, why), "hand_back")
	return true
}

// LeaseOf returns the lease held on name, without its id, or nil.
func (m *Manager) LeaseOf(name string) *Lease {
	m.leases.mu.Lock()
	defer m.leases.mu.Unlock()
	l := m.leases.by[name]
	if l == nil {
		return nil
	}
	return &Lease{Holder: l.Holder, Since: l.Since}
}

// beginAsk refuses an ask while someone other than the caller holds
// name's keyboard, and otherwise records it as running until end is
// called: a take-over meanwhile cancels ctx with a busy cause.
func (m *Manager) beginAsk(ctx context.Context, name string) (_ context.Context, end func(), err error) {
	if err := m.checkLease(ctx, name, "ask"); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	a := &runningAsk{cancel: cancel}
	m.leases.mu.Lock()
	if l := m.leases.by[name]; l != nil {
		// Taken over between the check and now.
		if id, _ := ctx.Value(leaseKey{}).(string); id != l.ID {
			m.leases.mu.Unlock()
			cancel(nil)
			return nil, nil, m.checkLease(ctx, name, "ask")
		}
	}
	if m.leases.asks == nil {
		m.leases.asks = map[string]map[*runningAsk]bool{}
	}
	if m.leases.asks[name] == nil {
		m.leases.asks[name] = map[*runningAsk]bool{}
	}
	m.leases.asks[name][a] = true
	m.leases.mu.Unlock()
	return ctx, func() {
		m.leases.mu.Lock()
		if set := m.leases.asks[name]; set != nil {
			delete(set, a)
			if len(set) == 0 {
				delete(m.leases.asks, name)
			}
		}
		m.leases.mu.Unlock()
		cancel(nil)
	}, nil
}

// leaseCause is the busy error a take-over cancelled ctx with, or nil.
func leaseCause(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, ErrBusy) {
		return cause
	}
	return nil
}

// checkLease refuses a call typing into name while someone other than the
// caller (WithLease) holds its keyboard.
func (m *Manager) checkLease(ctx context.Context, name, op string) error {
	m.leases.mu.Lock()
	l := m.leases.by[name]
	var held Lease
	if l != nil {
		held = *l
	}
	m.leases.mu.Unlock()
	if l == nil {
		return nil
	}
	if id, _ := ctx.Value(leaseKey{}).(string); id == held.ID {
		return nil
	}
	return errorf(ErrBusy, "session %q is taken over by %s since %s, so this %s was not typed; wait, or ask them to hand back",
		name, held.Holder, held.Since.Format(time.TimeOnly), op)
}

// markLeaseTimeout bounds recording a lease's change in the event log.
const markLeaseTimeout = 2 * time.Second

// markLease records a lease's change in the session's event log, a marker
// with reason: a worker that cannot take it (gone, or of an older agentd)
// leaves the daemon's log line the only record.
func (m *Manager) markLease(name, text, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), markLeaseTimeout)
	defer cancel()
	if err := m.call(ctx, name, callSpec{method: mMark, op: "record a take-over", timeout: inputCallTimeout},
		markParams{Text: text, Reason: reason}, nil); err != nil {
		m.log.Debug().Str("session", name).Err(err).Msg("take-over not recorded in the session's event log")
	}
}
