package channel

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingMemory is a Memory of max bytes that counts what is held.
type countingMemory struct {
	mu        sync.Mutex
	max, used int
}

type countedHold struct {
	m    *countingMemory
	n    int
	once sync.Once
}

func (h *countedHold) Release() {
	h.once.Do(func() { h.m.mu.Lock(); h.m.used -= h.n; h.m.mu.Unlock() })
}

func (m *countingMemory) Hold(n int) (Held, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used+n > m.max {
		return nil, errors.New("the budget (memory_budget) is full")
	}
	m.used += n
	return &countedHold{m: m, n: n}, nil
}

func (m *countingMemory) inUse() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// gatedListener holds every Deliver until open is closed.
type gatedListener struct {
	fakeListener
	open chan struct{}
}

func (l *gatedListener) Deliver(m *Message) error {
	<-l.open
	return l.fakeListener.Deliver(m)
}

// TestQueuedMessagesHoldMemory: every queued message holds its bytes in
// the registry's Memory until it is written or its channel ends; past the
// Memory's room a push is busy, saying why; a listener that leaves gives
// all of it back.
func TestQueuedMessagesHoldMemory(t *testing.T) {
	t.Parallel()
	mem := &countingMemory{max: 40 * (1<<10 + 256)}
	r := NewRegistry()
	r.SetMemory(mem)
	ctx := context.Background()
	body := []byte(`"` + strings.Repeat("m", 1<<10-2) + `"`)
	var ls []*gatedListener
	for i := range 4 {
		l := &gatedListener{fakeListener: fakeListener{name: "l"}, open: make(chan struct{})}
		ls = append(ls, l)
		if _, _, err := r.Register(l, Registration{ID: "c" + string(rune('0'+i))}, nil, func(string) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	queued := 0
	var busy error
	for i := 0; busy == nil && i < 1000; i++ {
		_, err := r.Push(ctx, Peer{}, PushRequest{ID: "c" + string(rune('0'+i%4)), Message: body})
		if err != nil {
			busy = err
			break
		}
		queued++
	}
	if !errors.Is(busy, ErrBusy) || !strings.Contains(busy.Error(), "memory_budget") {
		t.Fatalf("after %d pushes: %v, want busy naming the budget", queued, busy)
	}
	if queued != 40 || mem.inUse() != 40*(1<<10+256) {
		t.Errorf("%d messages queued holding %d bytes, want 40 holding the whole %d", queued, mem.inUse(), mem.max)
	}
	// One listener reads: its messages' bytes come back as they are
	// written.
	close(ls[0].open)
	ls[0].await(t, 10)
	deadline := time.Now().Add(10 * time.Second)
	for mem.inUse() != 30*(1<<10+256) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes held after 10 messages were written, want %d", mem.inUse(), 30*(1<<10+256))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The others leave without reading: what they queued comes back at
	// once, the message each writer was writing when its write ends.
	for _, l := range ls[1:] {
		r.DropListener(l)
	}
	if n := mem.inUse(); n != 3*(1<<10+256) {
		t.Errorf("%d bytes held once the listeners left, want only the 3 messages being written", n)
	}
	for _, l := range ls[1:] {
		close(l.open)
	}
	for mem.inUse() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes held after the listeners left, want 0", mem.inUse())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
