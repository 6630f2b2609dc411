package rpc

import (
	"context"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Budget bounds the bytes a server holds for its clients at once, across
// every connection that shares it (the daemon has one): requests being
// read and handled, answers being built (a handler may take a Lease for
// what it gathers) and answers waiting to be written. Without it, two
// hundred connections each announcing a 16 MiB frame, or sixteen
// connections each pipelining 256 calls with 200 KiB answers and reading
// none, take a daemon to gigabytes.
//
// Every byte counts, and each holder is a Lease that gives its bytes back
// itself, once. A request frame takes its size before its body is
// allocated and, past the budget, waits a moment and is then answered busy
// (its body is read and dropped, so the connection stays usable). An
// answer, once built, waits for room the same way and past it is answered
// busy instead (a short error in place of its bytes); since its bytes
// exist while it waits, the answers waiting at once may hold at most a
// quarter of the budget more, and one that would pass that is refused at
// once. Frames and answers up to Tiny are counted but never wait: a
// hello, an error, an acknowledgement always pass. After a burst the
// memory is handed back to the operating system. A Budget is safe for
// concurrent use.
type Budget struct {
	max int64
	// used is the bytes held; taken and given with atomics, so a request
	// that fits costs no lock.
	used    atomic.Int64
	waiters atomic.Int32 // takes waiting for room
	freed   atomic.Int64 // bytes returned since memory was last handed back

	mu       sync.Mutex
	waiting  int64         // bytes of built answers waiting for room
	changed  chan struct{} // closed and replaced when bytes are returned to waiters
	lastFree time.Time
}

// Tiny is the largest frame or answer that never waits for the Budget: a
// hello, an error, an acknowledgement. Refusing those would answer busy
// with a frame of the same size. What they can hold past the budget is
// bounded by the connections and their MaxInFlight.
const Tiny = 4 << 10

// budgetWait is how long a large frame or answer waits for room before it
// is answered busy.
const budgetWait = time.Second

// freeOSAfter is how many bytes must have gone through the budget since
// memory was last handed back before an idle budget hands it back again;
// freeOSEvery spaces those hand-backs (each is a full collection).
const (
	freeOSAfter = 16 << 20
	freeOSEvery = 2 * time.Second
)

// NewBudget returns a budget of max bytes; it must hold at least one frame
// of MaxFrameSize, or the largest frames could never pass.
func NewBudget(max int64) *Budget {
	return &Budget{max: max, changed: make(chan struct{})}
}

// Max returns the budget's size.
func (b *Budget) Max() int64 { return b.max }

// InUse returns the bytes held now.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// tryTake takes n bytes if they fit (or force says to), without waiting.
func (b *Budget) tryTake(n int64, force bool) bool {
	if force {
		b.used.Add(n)
		return true
	}
	for {
		cur := b.used.Load()
		if cur+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// take takes n bytes: at once when force is set or they fit, else waiting
// up to wait for room. built says the bytes exist already (an answer):
// those wait only while the waiting room (a quarter of the budget) has
// room for them too. It reports whether it took them. A nil Budget always
// grants.
func (b *Budget) take(ctx context.Context, n int64, wait time.Duration, force, built bool) bool {
	if b == nil || n <= 0 {
		return true
	}
	if b.tryTake(n, force) {
		return true
	}
	if wait <= 0 {
		return false
	}
	b.mu.Lock()
	if built && b.waiting+n > b.max/4 {
		b.mu.Unlock()
		return false
	}
	if built {
		b.waiting += n
	}
	// Counted before the next try: a give either sees the waiter and
	// wakes it, or gave its bytes before the try, which then sees them.
	b.waiters.Add(1)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.waiters.Add(-1)
		if built {
			b.waiting -= n
		}
		b.mu.Unlock()
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		b.mu.Lock()
		changed := b.changed
		b.mu.Unlock()
		if b.tryTake(n, false) {
			return true
		}
		select {
		case <-changed:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// give returns n bytes. When the budget falls idle after a burst, the
// memory goes back to the operating system.
func (b *Budget) give(n int64) {
	if b == nil || n <= 0 {
		return
	}
	left := b.used.Add(-n)
	freed := b.freed.Add(n)
	if b.waiters.Load() > 0 {
		b.mu.Lock()
		close(b.changed)
		b.changed = make(chan struct{})
		b.mu.Unlock()
	}
	if left != 0 || freed < freeOSAfter {
		return
	}
	b.mu.Lock()
	handBack := b.freed.Load() >= freeOSAfter && time.Since(b.lastFree) >= freeOSEvery
	if handBack {
		b.freed.Store(0)
		b.lastFree = time.Now()
	}
	b.mu.Unlock()
	if handBack {
		go debug.FreeOSMemory()
	}
}

// Lease is bytes held in a Budget by one value (an answer being built or
// written, a queued channel message): the value owns them, and its Release
// gives them back, exactly once, however many times it is called. Grow and
// resize change what it holds. A nil *Lease, and one of a nil Budget, hold
// nothing and need no release. A Lease is safe for concurrent use.
type Lease struct {
	h   *leaseHold // a handler's lease (Reserve): apart, for its cleanup
	own leaseHold  // the engine's: no second allocation
}

func (l *Lease) hold() *leaseHold {
	if l.h != nil {
		return l.h
	}
	return &l.own
}

// leaseHold is a Lease's count, apart from it so a lease dropped unreleased
// can still give its bytes back (Reserve).
type leaseHold struct {
	b *Budget
	n atomic.Int64 // bytes held; -1 once released
}

// Reserve takes n bytes of the budget of the connection serving ctx (a
// handler's context) for a value a handler builds, waiting up to a second
// for room; past it the error is busy, naming memory_budget. The handler
// returns the value with the lease (WithLease) or releases it itself. On
// a connection without a budget it holds nothing.
func Reserve(ctx context.Context, n int) (*Lease, error) {
	b := budgetOf(ctx)
	if b == nil {
		return nil, nil
	}
	l := &Lease{h: &leaseHold{b: b}}
	// A lease a handler drops on some path without releasing it (its
	// result replaced by an error on the way out) must not shrink the
	// budget for good: once unreachable, what it still holds goes back.
	runtime.AddCleanup(l, func(h *leaseHold) { h.release() }, l.h)
	if err := l.Grow(ctx, n); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// Grow takes n more bytes for the lease, waiting up to a second for room;
// past it the error is busy (and the lease holds what it held).
func (l *Lease) Grow(ctx context.Context, n int) error {
	if l == nil || n <= 0 {
		return nil
	}
	h := l.hold()
	if !h.b.take(ctx, int64(n), budgetWait, false, false) {
		return h.b.busyError("an answer being built", n)
	}
	for {
		cur := h.n.Load()
		if cur < 0 {
			// Released meanwhile: the bytes go straight back.
			h.b.give(int64(n))
			return nil
		}
		if h.n.CompareAndSwap(cur, cur+int64(n)) {
			return nil
		}
	}
}

// Held returns the bytes the lease holds.
func (l *Lease) Held() int64 {
	if l == nil {
		return 0
	}
	return max(l.hold().n.Load(), 0)
}

// resize makes the lease hold n bytes: less gives the rest back, more is
// taken at once (the bytes already exist: an answer built from what the
// lease held).
func (l *Lease) resize(n int64) {
	if l == nil {
		return
	}
	h := l.hold()
	for {
		cur := h.n.Load()
		if cur < 0 {
			return
		}
		if h.n.CompareAndSwap(cur, n) {
			switch {
			case n > cur:
				h.b.take(context.Background(), n-cur, 0, true, true)
			case n < cur:
				h.b.give(cur - n)
			}
			return
		}
	}
}

// Release gives back what the lease holds; later calls do nothing.
func (l *Lease) Release() {
	if l != nil {
		l.hold().release()
	}
}

func (h *leaseHold) release() {
	if n := h.n.Swap(-1); n > 0 {
		h.b.give(n)
	}
}

// newLease takes n bytes for a new lease: at once when force is set, else
// waiting up to wait (built: see take); nil when there was no room, or
// with no budget.
func (b *Budget) newLease(ctx context.Context, n int64, wait time.Duration, force, built bool) *Lease {
	if b == nil {
		return nil
	}
	if !b.take(ctx, n, wait, force, built) {
		return nil
	}
	l := &Lease{own: leaseHold{b: b}}
	l.own.n.Store(n)
	return l
}

// Hold takes n bytes at once, without waiting, for a value the server
// keeps for a client outside any request (a channel's queued message); the
// error, when there is no room, names the budget. The value releases the
// lease when it is done.
func (b *Budget) Hold(n int) (*Lease, error) {
	if b == nil {
		return nil, nil
	}
	l := b.newLease(context.Background(), int64(n), 0, false, true)
	if l == nil {
		return nil, Errorf(codeBusy, "agentd is holding its whole memory budget (%s, memory_budget) for its clients; retry later, or raise memory_budget", sizeText(b.max))
	}
	return l, nil
}

// WithLease is a handler result that owns budget: v is sent as the answer
// (as the handler would have returned it) and l, which holds what v's
// building took, becomes the answer's own lease, released once the answer
// is written or refused.
func WithLease(v any, l *Lease) any { return leased{v: v, l: l} }

type leased struct {
	v any
	l *Lease
}

// budgetKey is the context key of a serving connection's Budget.
type budgetKey struct{}

func budgetOf(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}

// busyError is the answer to a frame or an answer that found no room.
func (b *Budget) busyError(what string, n int) *Error {
	return Errorf(codeBusy, "agentd is holding its whole memory budget (%s) for its clients; %s of %d bytes was refused: retry shortly, or raise memory_budget",
		sizeText(b.max), what, n)
}

// codeBusy is agentd's busy code (pkg/wire's table): retry later.
const codeBusy Code = "busy"

func sizeText(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
