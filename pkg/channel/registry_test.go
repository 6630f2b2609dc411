package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeListener records what it is sent; the registry is pure logic over
// it, so the daemon's real sockets are not needed here (pkg/daemon's tests
// drive the same paths over them).
type fakeListener struct {
	name string
	mu   sync.Mutex
	got  []Message
}

func (l *fakeListener) Deliver(m *Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, *m)
	return nil
}

// await returns the first n messages once they have arrived.
func (l *fakeListener) await(t *testing.T, n int) []Message {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		got := append([]Message(nil), l.got...)
		l.mu.Unlock()
		if len(got) >= n {
			return got[:n]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages arrived in 10s", len(got), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (l *fakeListener) ChannelPeer() Peer { return Peer{PID: 1} }
func (l *fakeListener) String() string    { return l.name }

func TestPushesArriveInOrderAndAcksRelease(t *testing.T) {
	r := NewRegistry()
	l := &fakeListener{name: "l1"}
	reg, first, err := r.Register(l, Registration{ID: "c1", Session: "w1"}, func() string { return "" }, func(string) error { return nil })
	if err != nil || !first || reg.ID != "c1" || reg.Session != "w1" {
		t.Fatalf("Register = %+v, %v, %v; want c1 bound to w1, first", reg, first, err)
	}
	for i := range 10 {
		res, err := r.Push(context.Background(), Peer{}, PushRequest{Session: "w1", Message: json.RawMessage(fmt.Sprint(i))})
		if err != nil || !res.Queued || res.Seq != uint64(i+1) {
			t.Fatalf("push %d = %+v, %v; want queued as seq %d", i, res, err, i+1)
		}
	}
	// Delivery is asynchronous (a push answers once queued): wait for it.
	got := l.await(t, 10)
	for i, m := range got {
		if m.Seq != uint64(i+1) || string(m.Body) != fmt.Sprint(i) {
			t.Errorf("message %d = seq %d %s, want seq %d %d", i, m.Seq, m.Body, i+1, i)
		}
	}
	if _, err := r.Ack(&fakeListener{name: "other"}, "c1", 1); !errors.Is(err, ErrDenied) {
		t.Errorf("ack by another listener: %v, want ErrDenied", err)
	}
	if _, err := r.Ack(l, "c1", 99); !errors.Is(err, ErrInvalid) {
		t.Errorf("ack of a seq not yet sent: %v, want ErrInvalid", err)
	}
	if _, _, err := r.Register(&fakeListener{name: "l2"}, Registration{ID: "c2", Session: "w1"}, nil, func(string) error { return nil }); !errors.Is(err, ErrBusy) {
		t.Errorf("a second channel for w1: %v, want ErrBusy", err)
	}
	r.DropListener(l)
	if _, err := r.Push(context.Background(), Peer{}, PushRequest{ID: "c1", Message: json.RawMessage("1")}); !errors.Is(err, ErrUnknown) {
		t.Errorf("push after the listener left: %v, want ErrUnknown", err)
	}
}
