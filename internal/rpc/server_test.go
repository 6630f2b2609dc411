package rpc

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// serveOne serves h on one end of a socket pair with opts and ctx, and
// returns a client on the other end and Serve's result.
func serveOne(t *testing.T, ctx context.Context, opts ServeOptions, h Handler) (*Client, <-chan error) {
	t.Helper()
	pair, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	sc := NewServerConn(pair[0], opts)
	go func() { done <- sc.Serve(ctx, h) }()
	c := NewClient(pair[1], ClientOptions{})
	t.Cleanup(func() { c.Close() })
	return c, done
}

func echo(ctx context.Context, req *Request) (any, error) { return req.Params, nil }

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	const idle = 200 * time.Millisecond
	t.Run("idle connection closes", func(t *testing.T) {
		t.Parallel()
		c, done := serveOne(t, context.Background(), ServeOptions{IdleTimeout: idle}, echo)
		if err := c.Call(context.Background(), "x.echo", nil, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, ErrIdle) {
				t.Errorf("Serve of an idle connection = %v, want ErrIdle", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("idle connection still served after 30 s")
		}
		<-c.Done()
	})
	t.Run("a call in flight keeps it", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		c, done := serveOne(t, context.Background(), ServeOptions{IdleTimeout: idle}, func(ctx context.Context, req *Request) (any, error) {
			<-release
			return "late", nil
		})
		// A long call that outlives several idle timeouts, measured by a
		// second, idle connection expiring twice.
		res := make(chan error, 1)
		go func() { res <- c.Call(context.Background(), "x.slow", nil, nil) }()
		for range 2 {
			_, other := serveOne(t, context.Background(), ServeOptions{IdleTimeout: idle}, echo)
			if err := <-other; !errors.Is(err, ErrIdle) {
				t.Fatalf("the idle connection beside: %v, want ErrIdle", err)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("connection with a call in flight closed: %v", err)
		default:
		}
		close(release)
		if err := <-res; err != nil {
			t.Errorf("the long call: %v", err)
		}
	})
	t.Run("KeepAlive keeps it", func(t *testing.T) {
		t.Parallel()
		var asked atomic.Int32
		var keep atomic.Bool
		keep.Store(true)
		_, done := serveOne(t, context.Background(), ServeOptions{IdleTimeout: idle, KeepAlive: func() bool {
			asked.Add(1)
			return keep.Load()
		}}, echo)
		await(t, 30*time.Second, "KeepAlive asked twice", func() bool { return asked.Load() >= 2 })
		select {
		case err := <-done:
			t.Fatalf("connection kept alive closed: %v", err)
		default:
		}
		keep.Store(false)
		if err := <-done; !errors.Is(err, ErrIdle) {
			t.Errorf("Serve once KeepAlive says no = %v, want ErrIdle", err)
		}
	})
}

// TestGoodbyeFromCause: a Serve context cancelled with an *Error cause
// sends it to the peer (id 0) before closing, so the client knows why.
func TestGoodbyeFromCause(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	c, done := serveOne(t, ctx, ServeOptions{}, echo)
	if err := c.Call(context.Background(), "x.echo", nil, nil); err != nil {
		t.Fatal(err)
	}
	bye := Errorf("shutting_down", "stopping")
	cancel(bye)
	if err := <-done; err != nil {
		t.Errorf("Serve after cancellation = %v, want nil", err)
	}
	<-c.Done()
	var e *Error
	if err := c.Err(); !errors.As(err, &e) || e.Code != "shutting_down" {
		t.Errorf("client's end = %v, want the shutting_down goodbye", err)
	}
}

// TestWriteFailureIsATimeout: a peer that stops reading is cut off by the
// write timeout, and WriteFailure says it was a timeout.
func TestWriteFailureIsATimeout(t *testing.T) {
	t.Parallel()
	pair, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer pair[1].Close() // never read
	sc := NewServerConn(pair[0], ServeOptions{WriteTimeout: 200 * time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- sc.Serve(context.Background(), echo) }()
	big := make([]byte, 1<<20)
	var werr error
	for i := 0; i < 64 && werr == nil; i++ {
		werr = sc.Notify("x.note", big)
	}
	var ne net.Error
	if !errors.As(werr, &ne) || !ne.Timeout() {
		t.Fatalf("notifying a peer that does not read: %v, want a timeout", werr)
	}
	if f := sc.WriteFailure(); !errors.As(f, &ne) || !ne.Timeout() {
		t.Errorf("WriteFailure = %v, want the timeout", f)
	}
	<-done
}
