package rpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestConnIsSymmetric: two serving ends on one socket call each other, a
// call made from inside a handler included, and notify each other.
func TestConnIsSymmetric(t *testing.T) {
	t.Parallel()
	pair, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	notes := make(chan Notification, 1)
	a := NewServerConn(pair[0], ServeOptions{OnNotification: func(n Notification) { notes <- n }})
	b := NewServerConn(pair[1], ServeOptions{})
	done := make(chan error, 2)
	go func() {
		done <- a.Serve(ctx, func(ctx context.Context, req *Request) (any, error) {
			return "a:" + req.Method, nil
		})
	}()
	go func() {
		done <- b.Serve(ctx, func(ctx context.Context, req *Request) (any, error) {
			// Call back the caller while its call is in flight.
			var back string
			if err := b.Call(ctx, "x.back", nil, &back); err != nil {
				return nil, err
			}
			return "b:" + req.Method + "+" + back, nil
		})
	}()

	var got string
	if err := a.Call(context.Background(), "x.ping", nil, &got); err != nil {
		t.Fatal(err)
	}
	if want := "b:x.ping+a:x.back"; got != want {
		t.Errorf("a's call = %q, want %q", got, want)
	}
	if err := b.Call(context.Background(), "x.pong", nil, &got); err != nil || got != "a:x.pong" {
		t.Errorf("b's call = %q, %v; want %q", got, err, "a:x.pong")
	}
	if err := b.Notify("x.note", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-notes:
		if n.Method != "x.note" || string(n.Params) != `{"n":1}` {
			t.Errorf("a's notification = %s %s, want x.note {\"n\":1}", n.Method, n.Params)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no notification after 30 s")
	}
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("Serve after cancellation = %v, want nil", err)
		}
	}
	if err := a.Call(context.Background(), "x.late", nil, nil); err == nil {
		t.Error("a call on an ended connection succeeded")
	}
}

// TestServingEndRefusesUnawaitedResponses: a response no call of the
// serving end waits for is answered as a bad request, as before both ends
// were one type.
func TestServingEndRefusesUnawaitedResponses(t *testing.T) {
	t.Parallel()
	pair, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer pair[1].Close()
	sc := NewServerConn(pair[0], ServeOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go sc.Serve(ctx, echo)
	if err := WriteFrame(pair[1], []byte(`{"id":7,"result":"stray"}`)); err != nil {
		t.Fatal(err)
	}
	body, err := ReadFrame(pair[1])
	if err != nil {
		t.Fatal(err)
	}
	in, err := DecodeIncoming(body)
	if err != nil || in.Response == nil || in.Response.ID != 7 || in.Response.Error == nil || in.Response.Error.Code != CodeMalformedFrame {
		t.Errorf("answer to a stray response = %s (%v), want malformed_frame for id 7", body, err)
	}
}

// TestServingEndCallsLongAfterAWrite: a call from a serving end is bounded
// by the write timeout from its own start, not by the deadline an earlier
// write left behind.
func TestServingEndCallsLongAfterAWrite(t *testing.T) {
	t.Parallel()
	pair, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const timeout = 500 * time.Millisecond
	a := NewServerConn(pair[0], ServeOptions{WriteTimeout: timeout})
	b := NewServerConn(pair[1], ServeOptions{OnNotification: func(Notification) {}})
	go a.Serve(ctx, echo)
	go b.Serve(ctx, echo)
	if err := a.Notify("x.note", nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * timeout) // the deadline that write set has passed
	if err := a.Call(context.Background(), "x.echo", nil, nil); err != nil {
		t.Errorf("a call %s after a write: %v, want success", 3*timeout, err)
	}
}

// TestServingEndThatCallsHearsAGoodbye: an error answer with id 0 ends a
// serving end that has called, as it ends a calling end, and its calls
// return that error.
func TestServingEndThatCallsHearsAGoodbye(t *testing.T) {
	t.Parallel()
	pair, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer pair[1].Close()
	a := NewServerConn(pair[0], ServeOptions{})
	done := make(chan error, 1)
	go func() { done <- a.Serve(context.Background(), echo) }()
	res := make(chan error, 1)
	go func() { res <- a.Call(context.Background(), "x.ping", nil, nil) }()
	if _, err := ReadFrame(pair[1]); err != nil {
		t.Fatal(err)
	}
	bye, _ := AppendResponse(nil, 0, nil, Errorf("shutting_down", "stopping"))
	if err := WriteFrame(pair[1], bye); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := <-res; !errors.As(err, &e) || e.Code != "shutting_down" {
		t.Errorf("the call = %v, want the shutting_down goodbye", err)
	}
	if err := <-done; !errors.As(err, &e) || e.Code != "shutting_down" {
		t.Errorf("Serve = %v, want the shutting_down goodbye", err)
	}
}
