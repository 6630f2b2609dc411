package rpc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// budgetServer serves handlers on socket pairs sharing one budget and
// returns a function that connects a new client.
func budgetServer(t *testing.T, b *Budget, h Handler) func() *Client {
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() *Client {
		pair, err := socketpair()
		if err != nil {
			t.Fatal(err)
		}
		sc := NewServerConn(pair[0], ServeOptions{Budget: b})
		wg.Add(1)
		go func() { defer wg.Done(); sc.Serve(ctx, h) }()
		c := NewClient(pair[1], ClientOptions{})
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// pad returns params of about n bytes.
func pad(n int) map[string]string { return map[string]string{"pad": strings.Repeat("x", n)} }

func TestBudgetBoundsLargeRequests(t *testing.T) {
	t.Parallel()
	b := NewBudget(2 * MaxFrameSize)
	hold := make(chan struct{})
	entered := make(chan struct{}, 4)
	connect := budgetServer(t, b, func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "hold":
			entered <- struct{}{}
			<-hold
		case "big_answer":
			return strings.Repeat("y", 2<<20), nil
		}
		return len(req.Params), nil
	})
	ctx := context.Background()
	large := MaxFrameSize - 1024
	// Two large requests held by their handlers fill the budget.
	var wg sync.WaitGroup
	for range 2 {
		c := connect()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Call(ctx, "hold", pad(large), nil); err != nil {
				t.Errorf("held request: %v", err)
			}
		}()
		<-entered
	}
	if used := b.InUse(); used < 2*int64(large) {
		t.Fatalf("budget in use %d with two large requests held, want about %d", used, 2*large)
	}
	// A third is answered busy under its own id after a moment, and its
	// connection stays usable.
	c := connect()
	start := time.Now()
	err := c.Call(ctx, "len", pad(large), nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != codeBusy || !strings.Contains(e.Message, "memory_budget") {
		t.Fatalf("third large request: %v, want busy naming memory_budget", err)
	}
	if waited := time.Since(start); waited < budgetWait/2 {
		t.Errorf("refused after %v, want a wait of about %v first", waited, budgetWait)
	}
	var n int
	if err := c.Call(ctx, "len", pad(100), &n); err != nil || n == 0 {
		t.Errorf("small request on the same connection: %d %v", n, err)
	}
	// A large answer finds no room either.
	if err := c.Call(ctx, "big_answer", nil, nil); !errors.As(err, &e) || e.Code != codeBusy {
		t.Errorf("large answer with the budget full: %v, want busy", err)
	}
	// Once the handlers finish, large requests pass again.
	close(hold)
	wg.Wait()
	if err := c.Call(ctx, "len", pad(large), &n); err != nil || n < large {
		t.Errorf("large request after the budget freed: %d %v", n, err)
	}
	var s string
	if err := c.Call(ctx, "big_answer", nil, &s); err != nil || len(s) != 2<<20 {
		t.Errorf("large answer after the budget freed: %d bytes, %v", len(s), err)
	}
	await(t, 5*time.Second, "the budget back to zero", func() bool { return b.InUse() == 0 })
}

// TestLeadingID finds the id a refused frame is answered under.
func TestLeadingID(t *testing.T) {
	for body, want := range map[string]uint64{
		`{"id":42,"method":"x","params":{}}`: 42,
		`{ "id" : 7 , "method":"x"}`:         7,
		`{"method":"x","id":9}`:              9,
		`{"method":"x"}`:                     0,
		`{"id":"7"}`:                         0,
		`{"id":`:                             0,
	} {
		if got := leadingID([]byte(body)); got != want {
			t.Errorf("leadingID(%s) = %d, want %d", body, got, want)
		}
	}
}

func await(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
