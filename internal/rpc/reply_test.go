package rpc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAnswerOverTheFrameCapIsReported: an answer too large for a frame is
// replaced by an internal error, and OnRequestDone is told that error (so
// the daemon logs it), not a success.
func TestAnswerOverTheFrameCapIsReported(t *testing.T) {
	t.Parallel()
	pair, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *Error, 1)
	sc := NewServerConn(pair[0], ServeOptions{
		Budget:        NewBudget(4 * MaxFrameSize),
		OnRequestDone: func(req *Request, took time.Duration, e *Error) { done <- e },
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go sc.Serve(ctx, func(ctx context.Context, req *Request) (any, error) {
		return strings.Repeat("x", MaxFrameSize+1), nil
	})
	c := NewClient(pair[1], ClientOptions{})
	defer c.Close()
	err = c.Call(ctx, "huge", nil, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInternal || !strings.Contains(e.Message, "frame limit") {
		t.Fatalf("a 16 MiB answer: %v, want internal naming the frame limit", err)
	}
	select {
	case got := <-done:
		if got == nil || got.Code != CodeInternal {
			t.Errorf("OnRequestDone was told %v, want the internal error sent", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnRequestDone not called")
	}
}
