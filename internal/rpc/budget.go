package rpc

import (
	"context"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

// Budget bounds the bytes a server holds at once in large requests being
// read and large answers being written, across every connection that shares
// it (the daemon has one). Without it, two hundred connections each
// announcing a 16 MiB frame, or a few dozen pipelined calls with big
// answers, take a daemon to gigabytes. A large frame takes its size from
// the budget before its body is allocated; past the budget it waits a
// moment and is then answered busy (its body is read and dropped, so the
// connection stays usable). Frames up to SmallFrame never wait: small
// requests always pass. After a burst the memory is handed back to the
// operating system. A Budget is safe for concurrent use.
type Budget struct {
	max int64

	mu       sync.Mutex
	used     int64
	changed  chan struct{} // closed and replaced when bytes are returned
	freed    int64         // bytes returned since memory was last handed back
	lastFree time.Time
}

// SmallFrame is the largest frame or answer that needs nothing from a
// Budget.
const SmallFrame = 256 << 10

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
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// acquire takes n bytes, waiting up to wait for room; it reports whether
// it took them. A nil Budget always grants.
func (b *Budget) acquire(ctx context.Context, n int64, wait time.Duration) bool {
	if b == nil || n <= SmallFrame {
		return true
	}
	var deadline <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return true
		}
		changed := b.changed
		b.mu.Unlock()
		if deadline == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// release returns n bytes taken by acquire. When the budget falls idle
// after a burst, the memory goes back to the operating system.
func (b *Budget) release(n int64) {
	if b == nil || n <= SmallFrame {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.freed += n
	close(b.changed)
	b.changed = make(chan struct{})
	handBack := b.used == 0 && b.freed >= freeOSAfter && time.Since(b.lastFree) >= freeOSEvery
	if handBack {
		b.freed = 0
		b.lastFree = time.Now()
	}
	b.mu.Unlock()
	if handBack {
		go debug.FreeOSMemory()
	}
}

// busyError is the answer to a frame or an answer that found no room.
func (b *Budget) busyError(what string, n int) *Error {
	return Errorf(codeBusy, "agentd is holding its whole memory budget (%s) in large requests and answers; %s of %d bytes was refused: retry shortly, or raise memory_budget",
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
