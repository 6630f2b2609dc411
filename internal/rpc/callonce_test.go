package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// listenOnce serves each connection to a fresh socket with handle, which
// is given the connection's serving end (to notify on it).
func listenOnce(t *testing.T, handle func(sc *Conn, ctx context.Context, req *Request) (any, error)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "co") // short: the path must fit in sun_path
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); os.RemoveAll(dir) })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			sc := NewServerConn(conn, ServeOptions{})
			go sc.Serve(context.Background(), func(ctx context.Context, req *Request) (any, error) { return handle(sc, ctx, req) })
		}
	}()
	return sock
}

func TestCallOnceAnswersAndErrors(t *testing.T) {
	t.Parallel()
	sock := listenOnce(t, func(sc *Conn, ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "echo":
			// A notification before the answer is read past.
			sc.Notify("note", map[string]int{"n": 1})
			return req.Params, nil
		default:
			return nil, Errorf(CodeInvalidParams, "no method %s", req.Method)
		}
	})
	var raw json.RawMessage
	err := CallOnce(context.Background(), sock, "echo", map[string]string{"k": "v"}, &raw)
	if err != nil || string(raw) != `{"k":"v"}` {
		t.Errorf("echo: %s, %v; want the params back", raw, err)
	}
	var decoded struct{ K string }
	if err := CallOnce(context.Background(), sock, "echo", map[string]string{"k": "v"}, &decoded); err != nil || decoded.K != "v" {
		t.Errorf("echo decoded: %+v, %v; want k v", decoded, err)
	}
	err = CallOnce(context.Background(), sock, "nothing", nil, nil)
	var we *Error
	if !errors.As(err, &we) || we.Code != CodeInvalidParams {
		t.Errorf("an error answer: %v, want *Error invalid_params", err)
	}
	err = CallOnce(context.Background(), filepath.Join(t.TempDir(), "none"), "echo", nil, nil)
	var de *DialError
	if !errors.As(err, &de) {
		t.Errorf("no socket: %v, want *DialError", err)
	}
}

// TestCallOnceCancelClosesTheCall: a cancelled context ends the wait at
// once, and the connection's close ends the call on the serving side.
func TestCallOnceCancelClosesTheCall(t *testing.T) {
	t.Parallel()
	started, ended := make(chan struct{}), make(chan struct{})
	sock := listenOnce(t, func(sc *Conn, ctx context.Context, req *Request) (any, error) {
		close(started)
		<-ctx.Done()
		close(ended)
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- CallOnce(ctx, sock, "long", nil, nil) }()
	<-started
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled CallOnce did not return")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the serving end's call did not end with the connection")
	}
}

// TestCallOnceHearsAGoodbye: a peer that turns the connection away answers
// with id 0 and hangs up, maybe before it reads the request; that answer
// is the call's error, not a broken pipe.
func TestCallOnceHearsAGoodbye(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "co")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		body, _ := AppendResponse(nil, 0, nil, Errorf("busy", "too many connections; retry"))
		WriteFrame(conn, body)
		conn.Close()
	}()
	err = CallOnce(context.Background(), sock, "echo", json.RawMessage(`{}`), nil)
	var we *Error
	if !errors.As(err, &we) || we.Code != "busy" {
		t.Errorf("turned away: %v, want the peer's busy answer", err)
	}
}
