package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
)

// patience bounds every wait in these tests, so that a bug shows as a
// failure rather than a hung test binary. Nothing waits for it to pass.
const patience = 20 * time.Second

// tempSocket returns a socket path in a fresh, short temporary directory
// (sun_path holds about 108 bytes; t.TempDir can be longer).
func tempSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "w")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s")
}

// servedConn is what one connection's Serve returned.
type servedConn struct {
	sc  *rpc.ServerConn
	err error
}

type testServer struct {
	path   string
	served chan servedConn // one value per connection whose Serve returned
}

// startServer listens on a fresh socket and serves every connection with a
// rpc.ServerConn whose handler mk builds. Cleanup stops it and insists that every
// Serve returns.
func startServer(t *testing.T, opts rpc.ServeOptions, mk func(sc *rpc.ServerConn) rpc.Handler) *testServer {
	t.Helper()
	path := tempSocket(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{path: path, served: make(chan servedConn, 1000)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			sc := rpc.NewServerConn(c, opts)
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := sc.Serve(ctx, mk(sc))
				ts.served <- servedConn{sc, err}
			}()
		}
	}()
	t.Cleanup(func() {
		cancel()
		l.Close()
		stopped := make(chan struct{})
		go func() { wg.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(patience):
			t.Errorf("server on %s: Serve still running %s after its context was cancelled", path, patience)
		}
	})
	return ts
}

// routes is a method table for test handlers.
type routes map[string]rpc.Handler

func (r routes) handler() rpc.Handler {
	return func(ctx context.Context, req *Request) (any, error) {
		if h, ok := r[req.Method]; ok {
			return h(ctx, req)
		}
		return nil, Errorf(CodeUnknownMethod, "no method %q", req.Method)
	}
}

func (r routes) static() func(*rpc.ServerConn) rpc.Handler {
	h := r.handler()
	return func(*rpc.ServerConn) rpc.Handler { return h }
}

func ping(context.Context, *Request) (any, error) { return "pong", nil }

// dial connects a Client and closes it at the end of the test.
func dial(t *testing.T, path string, opts ClientOptions) *Client {
	t.Helper()
	c, err := Dial(testCtx(t), path, opts)
	if err != nil {
		t.Fatalf("Dial(%s): %v", path, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawDial connects a plain socket, with a deadline so no test hangs on it.
func rawDial(t *testing.T, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	c.SetDeadline(time.Now().Add(patience))
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	t.Cleanup(cancel)
	return ctx
}

// recv waits for a value on ch, failing the test if none comes in time.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("timed out after %s waiting for %s", patience, what)
	}
	panic("unreachable")
}

func callPing(t *testing.T, c *Client) {
	t.Helper()
	var got string
	if err := c.Call(testCtx(t), "test.ping", nil, &got); err != nil || got != "pong" {
		t.Fatalf("Call(test.ping) = %q, %v; want \"pong\", nil", got, err)
	}
}

func sendRaw(t *testing.T, w io.Writer, body string) {
	t.Helper()
	if err := rpc.WriteFrame(w, []byte(body)); err != nil {
		t.Fatalf("rpc.WriteFrame(%q): %v", body, err)
	}
}

func recvRaw(t *testing.T, fr *rpc.FrameReader) rpc.Incoming {
	t.Helper()
	body, err := fr.ReadFrame()
	if err != nil {
		t.Fatalf("reading the server's frame: %v", err)
	}
	in, err := rpc.DecodeIncoming(body)
	if err != nil {
		t.Fatalf("rpc.DecodeIncoming(%s): %v", body, err)
	}
	return in
}

// wantErrorResponse checks that in is an error response with id and code.
func wantErrorResponse(t *testing.T, sent string, in rpc.Incoming, id uint64, code Code, msg string) {
	t.Helper()
	if in.Response == nil || in.Response.Error == nil {
		t.Fatalf("after sending %q: got %s, want an error response %s", sent, describeIncoming(in), code)
	}
	r := in.Response
	if r.ID != id || r.Error.Code != code || !strings.Contains(r.Error.Message, msg) {
		t.Errorf("after sending %q: got id %d code %s message %q; want id %d code %s, message containing %q", sent, r.ID, r.Error.Code, r.Error.Message, id, code, msg)
	}
}

func TestClientServerConcurrentCalls(t *testing.T) {
	t.Parallel()
	const n = 200 // under rpc.DefaultMaxInFlight, so all are in flight at once
	arrived := make(chan int, n)
	gates := make([]chan struct{}, n)
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	var mu sync.Mutex
	seenIDs := map[uint64]int{}
	ts := startServer(t, rpc.ServeOptions{}, routes{
		"test.echo": func(ctx context.Context, req *Request) (any, error) {
			var p struct{ N int }
			if err := json.Unmarshal(req.Params, &p); err != nil || p.N < 0 || p.N >= n {
				return nil, Errorf(CodeInvalidParams, "bad params %s", req.Params)
			}
			mu.Lock()
			if prev, dup := seenIDs[req.ID]; dup {
				mu.Unlock()
				return nil, Errorf(CodeInvalidParams, "id %d used by calls %d and %d", req.ID, prev, p.N)
			}
			seenIDs[req.ID] = p.N
			mu.Unlock()
			arrived <- p.N
			select {
			case <-gates[p.N]:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return map[string]any{"n": p.N, "id": req.ID}, nil
		},
	}.static())
	c := dial(t, ts.path, ClientOptions{})

	type result struct {
		N   int
		ID  uint64
		err error
	}
	results := make([]result, n)
	done := make([]chan struct{}, n)
	for i := range n {
		done[i] = make(chan struct{})
		go func() {
			defer close(done[i])
			var r result
			r.err = c.Call(testCtx(t), "test.echo", map[string]int{"n": i}, &r)
			results[i] = r
		}()
	}
	for range n {
		recv(t, arrived, "all calls to reach the handler")
	}
	// Answer in reverse order, one at a time: each response overtakes every
	// earlier request, so only matching by id gets them right.
	for i := n - 1; i >= 0; i-- {
		close(gates[i])
		recv(t, done[i], fmt.Sprintf("call %d to return", i))
		if r := results[i]; r.err != nil || r.N != i {
			t.Errorf("call with n=%d: got n=%d, err %v; want n=%d, nil", i, r.N, r.err, i)
		}
	}
	ids := map[uint64]bool{}
	for i, r := range results {
		if ids[r.ID] {
			t.Errorf("call %d: id %d was also answered to another call", i, r.ID)
		}
		ids[r.ID] = true
	}
}

func TestClientNotificationsInOrder(t *testing.T) {
	t.Parallel()
	const n = 1000
	ts := startServer(t, rpc.ServeOptions{}, func(sc *rpc.ServerConn) rpc.Handler {
		return routes{
			"test.stream": func(ctx context.Context, req *Request) (any, error) {
				for i := range n {
					if err := sc.Notify("test.tick", map[string]int{"seq": i}); err != nil {
						return nil, err
					}
				}
				if err := sc.Notify("test.end", nil); err != nil {
					return nil, err
				}
				return "streamed", nil
			},
		}.handler()
	})
	var mu sync.Mutex
	var got []Notification
	c := dial(t, ts.path, ClientOptions{OnNotification: func(n Notification) {
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
	}})
	var res string
	if err := c.Call(testCtx(t), "test.stream", nil, &res); err != nil || res != "streamed" {
		t.Fatalf("Call(test.stream) = %q, %v; want \"streamed\"", res, err)
	}
	// The notifications were written before the response, on one
	// connection: all of them have been handed over by now, in order.
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n+1 {
		t.Fatalf("got %d notifications, want %d", len(got), n+1)
	}
	for i := range n {
		var p struct{ Seq int }
		if err := json.Unmarshal(got[i].Params, &p); err != nil || got[i].Method != "test.tick" || p.Seq != i {
			t.Fatalf("notification %d: got %s (%v), want test.tick with seq %d", i, describe(got[i]), err, i)
		}
	}
	if last := got[n]; last.Method != "test.end" || last.Params != nil {
		t.Errorf("last notification: got %s, want test.end without params", describe(last))
	}
}

func TestClientCallCancel(t *testing.T) {
	t.Parallel()
	started := make(chan uint64, 2)
	cancelled := make(chan error, 2)
	ts := startServer(t, rpc.ServeOptions{}, routes{
		"test.ping": ping,
		"test.block": func(ctx context.Context, req *Request) (any, error) {
			started <- req.ID
			<-ctx.Done()
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		},
	}.static())
	c := dial(t, ts.path, ClientOptions{})

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx, "test.block", nil, nil) }()
	recv(t, started, "test.block to start")
	cancel()
	if err := recv(t, errc, "the cancelled call to return"); !errors.Is(err, context.Canceled) {
		t.Errorf("Call with a cancelled context: got %v, want context.Canceled", err)
	}

	// A deadline that has passed: the call returns at once.
	past, cancelPast := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancelPast()
	if err := c.Call(past, "test.block", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call with an expired context: got %v, want context.DeadlineExceeded", err)
	}
	recv(t, started, "the second test.block to start")

	// The connection is still good.
	callPing(t, c)

	// Hanging up cancels the work of both calls on the server.
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for i := range 2 {
		if err := recv(t, cancelled, "the server-side context to be cancelled after the client hung up"); !errors.Is(err, context.Canceled) {
			t.Errorf("handler %d's context ended with %v, want context.Canceled", i, err)
		}
	}
	if sc := recv(t, ts.served, "Serve to return"); sc.err != nil {
		t.Errorf("Serve after the peer hung up: got %v, want nil", sc.err)
	}
	if err := c.Call(testCtx(t), "test.ping", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close: got %v, want ErrClosed", err)
	}
	select {
	case <-c.Done():
	default:
		t.Errorf("Done() is open after Close, want closed")
	}
	if err := c.Err(); !errors.Is(err, ErrClosed) {
		t.Errorf("Err() after Close: got %v, want ErrClosed", err)
	}
}

func TestServeStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	srv, cli := unixPair(t)
	started := make(chan struct{}, 1)
	handlerErr := make(chan error, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sc := rpc.NewServerConn(srv, rpc.ServeOptions{})
	served := make(chan error, 1)
	go func() {
		served <- sc.Serve(ctx, func(ctx context.Context, req *Request) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			handlerErr <- ctx.Err()
			return nil, ctx.Err()
		})
	}()
	sendRaw(t, cli, `{"id":1,"method":"test.block"}`)
	recv(t, started, "the handler to start")
	cancel()
	if err := recv(t, handlerErr, "the handler's context to end"); !errors.Is(err, context.Canceled) {
		t.Errorf("handler context: got %v, want context.Canceled", err)
	}
	if err := recv(t, served, "Serve to return after its context ended"); err != nil {
		t.Errorf("Serve after its context was cancelled: got %v, want nil", err)
	}
	// Serve closed the connection.
	cli.SetReadDeadline(time.Now().Add(patience))
	fr := rpc.NewFrameReader(cli)
	for {
		_, err := fr.ReadFrame()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading after Serve returned: got %v, want frames then io.EOF", err)
		}
	}
}

// unixPair returns the two ends of a Unix socket connection.
func unixPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	path := tempSocket(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	client, err = net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	server = recv(t, accepted, "accept")
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

// deadlineConn reports when a read deadline that has already passed is set:
// that is how Serve's context watcher interrupts a blocked read.
type deadlineConn struct {
	net.Conn
	once sync.Once
	past chan struct{}
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	err := c.Conn.SetReadDeadline(t)
	if !t.IsZero() && !t.After(time.Now()) {
		c.once.Do(func() { close(c.past) })
	}
	return err
}

// TestServeStopsWhenContextEndsBetweenFrames cancels Serve's context while
// the read loop is between two frames and the peer is idle. OnRequestDone
// runs on the read loop for an undecodable frame, so it holds the loop in
// that window until the cancellation has interrupted reads; Serve must still
// notice that its context ended.
func TestServeStopsWhenContextEndsBetweenFrames(t *testing.T) {
	t.Parallel()
	srv, cli := unixPair(t)
	dc := &deadlineConn{Conn: srv, past: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	sc := rpc.NewServerConn(dc, rpc.ServeOptions{
		OnRequestDone: func(_ *Request, _ time.Duration, e *Error) {
			if e != nil && e.Code == CodeMalformedFrame {
				once.Do(func() {
					cancel()
					<-dc.past
				})
			}
		},
	})
	served := make(chan error, 1)
	go func() { served <- sc.Serve(ctx, routes{"test.ping": ping}.handler()) }()
	sendRaw(t, cli, `not json`)
	cli.SetReadDeadline(time.Now().Add(patience))
	wantErrorResponse(t, "not json", recvRaw(t, rpc.NewFrameReader(cli)), 0, CodeMalformedFrame, "JSON")
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after its context was cancelled: got %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("Serve did not return within 5s after its context was cancelled between frames (peer idle): " +
			"the read loop's SetReadDeadline(time.Time{}) cleared the deadline set by the context watcher")
		cli.Close() // let Serve return
		<-served
	}
}

func TestServerHandlerPanic(t *testing.T) {
	t.Parallel()
	type panicReport struct {
		method string
		value  any
		stack  []byte
	}
	panics := make(chan panicReport, 1)
	done := make(chan *Error, 10)
	ts := startServer(t, rpc.ServeOptions{
		OnPanic: func(req *Request, v any, stack []byte) { panics <- panicReport{req.Method, v, stack} },
		OnRequestDone: func(req *Request, _ time.Duration, e *Error) {
			if req.Method == "test.panic" {
				done <- e
			}
		},
	}, routes{
		"test.ping":  ping,
		"test.panic": func(context.Context, *Request) (any, error) { panic("boom") },
	}.static())
	c := dial(t, ts.path, ClientOptions{})
	err := c.Call(testCtx(t), "test.panic", nil, nil)
	var werr *Error
	if !errors.As(err, &werr) || werr.Code != CodeInternal || !errors.Is(err, ErrInternal) {
		t.Fatalf("Call(test.panic): got %v, want an internal *Error", err)
	}
	if !strings.Contains(werr.Message, "test.panic") || strings.Contains(werr.Message, "boom") {
		t.Errorf("Call(test.panic): message %q, want it to name the method and not leak the panic value", werr.Message)
	}
	p := recv(t, panics, "OnPanic")
	if p.method != "test.panic" || p.value != "boom" || !strings.Contains(string(p.stack), "panic") {
		t.Errorf("OnPanic got method %q value %v and a %d-byte stack; want test.panic, boom, a stack", p.method, p.value, len(p.stack))
	}
	if e := recv(t, done, "OnRequestDone"); e == nil || e.Code != CodeInternal {
		t.Errorf("OnRequestDone for the panic: got %v, want internal", e)
	}
	// The connection keeps serving.
	callPing(t, c)
}

func TestServerErrorResults(t *testing.T) {
	t.Parallel()
	errNoSession := errors.New("no such session")
	ts := startServer(t, rpc.ServeOptions{
		ToError: func(err error) *Error {
			if errors.Is(err, errNoSession) {
				return Errorf(CodeAgentNotFound, "session does not exist; `agentctl list` shows the sessions")
			}
			return nil
		},
	}, routes{
		"test.ping":     ping,
		"test.notfound": func(context.Context, *Request) (any, error) { return nil, fmt.Errorf("stop w1: %w", errNoSession) },
		"test.plain":    func(context.Context, *Request) (any, error) { return nil, errors.New("disk on fire") },
		"test.wrapped": func(context.Context, *Request) (any, error) {
			return nil, fmt.Errorf("x: %w", Errorf(CodeBusy, "queue full"))
		},
		"test.unencodable": func(context.Context, *Request) (any, error) { return make(chan int), nil },
		"test.nil":         func(context.Context, *Request) (any, error) { return nil, nil },
		"test.raw":         func(context.Context, *Request) (any, error) { return json.RawMessage(`{"a":[1,2]}`), nil },
		"test.big": func(context.Context, *Request) (any, error) {
			return json.RawMessage(maxBody()), nil // a valid result, but with the envelope over the cap
		},
	}.static())
	c := dial(t, ts.path, ClientOptions{})
	tests := []struct {
		method     string
		wantCode   Code
		wantMsg    string
		wantResult string
	}{
		{method: "test.notfound", wantCode: CodeAgentNotFound, wantMsg: "agentctl list"},
		{method: "test.plain", wantCode: CodeInternal, wantMsg: "disk on fire"},
		{method: "test.wrapped", wantCode: CodeBusy, wantMsg: "queue full"},
		{method: "test.unencodable", wantCode: CodeInternal, wantMsg: "encode result"},
		{method: "test.big", wantCode: CodeInternal, wantMsg: "frame limit"},
		{method: "test.missing", wantCode: CodeUnknownMethod, wantMsg: "test.missing"},
		{method: "test.nil", wantResult: "null"},
		{method: "test.raw", wantResult: `{"a":[1,2]}`},
	}
	for _, tt := range tests {
		raw, err := c.CallRaw(testCtx(t), tt.method, nil)
		if tt.wantCode == "" {
			if err != nil || string(raw) != tt.wantResult {
				t.Errorf("CallRaw(%s) = %s, %v; want %s", tt.method, raw, err, tt.wantResult)
			}
			continue
		}
		var werr *Error
		if !errors.As(err, &werr) || werr.Code != tt.wantCode || !strings.Contains(werr.Message, tt.wantMsg) {
			t.Errorf("CallRaw(%s): got %v (%#v), want a %s error mentioning %q", tt.method, err, werr, tt.wantCode, tt.wantMsg)
		}
		if !errors.Is(err, sentinels[tt.wantCode]) {
			t.Errorf("CallRaw(%s): errors.Is(err, sentinel %s) = false, want true", tt.method, tt.wantCode)
		}
		if werr != nil && werr.Retryable != InfoOf(tt.wantCode).Retryable {
			t.Errorf("CallRaw(%s): retryable %v, want %v", tt.method, werr.Retryable, InfoOf(tt.wantCode).Retryable)
		}
	}
	// After all that, including an oversized answer, the connection serves.
	callPing(t, c)
}

func TestClientParams(t *testing.T) {
	t.Parallel()
	ts := startServer(t, rpc.ServeOptions{}, routes{
		"test.ping": ping,
		"test.echo": func(_ context.Context, req *Request) (any, error) { return req.Params, nil },
	}.static())
	c := dial(t, ts.path, ClientOptions{})

	var got map[string]string
	if err := c.Call(testCtx(t), "test.echo", map[string]string{"name": "w1"}, &got); err != nil || got["name"] != "w1" {
		t.Errorf("Call(test.echo, {name: w1}) = %v, %v; want the params back", got, err)
	}
	// Params that are not an object: the server says invalid_params.
	if err := c.Call(testCtx(t), "test.echo", []int{1, 2}, nil); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("Call(test.echo, [1 2]): got %v, want invalid_params", err)
	}
	// Params that cannot be encoded never leave the client.
	if err := c.Call(testCtx(t), "test.echo", make(chan int), nil); err == nil || !strings.Contains(err.Error(), "test.echo") {
		t.Errorf("Call(test.echo, chan): got %v, want an encoding error naming the method", err)
	}
	// Params over the cap are refused by the client, and the connection
	// survives: nothing was written.
	huge := strings.Repeat("a", MaxFrameSize)
	if err := c.Call(testCtx(t), "test.echo", map[string]string{"text": huge}, nil); !errors.Is(err, rpc.ErrFrameTooLarge) {
		t.Errorf("Call(test.echo, %d-byte params): got %v, want rpc.ErrFrameTooLarge", len(huge), err)
	}
	callPing(t, c)
	// A result that does not fit the caller's type.
	var n int
	if err := c.Call(testCtx(t), "test.ping", nil, &n); err == nil || !strings.Contains(err.Error(), "test.ping") {
		t.Errorf("Call(test.ping) into an int: got %v, want a decode error naming the method", err)
	}
}

func TestClientHello(t *testing.T) {
	t.Parallel()
	ts := startServer(t, rpc.ServeOptions{}, routes{
		MethodHello: func(_ context.Context, req *Request) (any, error) {
			var p HelloParams
			if err := json.Unmarshal(req.Params, &p); err != nil {
				return nil, Errorf(CodeInvalidParams, "bad hello: %v", err)
			}
			if p.Version != 0 && p.Version != ProtocolVersion {
				return nil, Errorf(CodeUnsupportedVersion, "version %d; this daemon speaks %v", p.Version, SupportedVersions)
			}
			return HelloResult{Protocol: ProtocolVersion, SupportedVersions: SupportedVersions, Version: p.Client,
				Limits: Limits{MaxFrameBytes: MaxFrameSize}, Methods: []string{MethodHello}}, nil
		},
	}.static())
	c := dial(t, ts.path, ClientOptions{})
	r, err := c.Hello(testCtx(t), HelloParams{Version: ProtocolVersion, Client: "test 1"})
	if err != nil || r.Protocol != ProtocolVersion || r.Version != "test 1" || r.Limits.MaxFrameBytes != MaxFrameSize || len(r.Methods) != 1 {
		t.Errorf("Hello = %+v, %v; want protocol %d, the client echoed, the limits, one method", r, err, ProtocolVersion)
	}
	if _, err := c.Hello(testCtx(t), HelloParams{Version: 99}); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("Hello(version 99): got %v, want unsupported_version", err)
	}
}

func TestServerRawFrames(t *testing.T) {
	t.Parallel()
	ts := startServer(t, rpc.ServeOptions{}, routes{"test.ping": ping}.static())
	conn := rawDial(t, ts.path)
	fr := rpc.NewFrameReader(conn)
	// Each of these is answered and the connection goes on.
	steps := []struct {
		send   string
		id     uint64
		code   Code // "" for a success
		msg    string
		result string
	}{
		{send: `not json`, id: 0, code: CodeMalformedFrame, msg: "JSON"},
		{send: `{"id":5,"method":"test.ping"}`, id: 5, result: `"pong"`},
		{send: `[1,2,3]`, id: 0, code: CodeMalformedFrame, msg: "JSON object"},
		{send: `{"id":6,"method":"test.ping","params":[1]}`, id: 6, code: CodeInvalidParams, msg: "object"},
		{send: `{"id":0,"method":"test.ping"}`, id: 0, code: CodeMalformedFrame, msg: "id 0"},
		{send: `{"method":"test.ping"}`, id: 0, code: CodeMalformedFrame, msg: `"id"`},
		{send: `{"id":7}`, id: 7, code: CodeMalformedFrame, msg: "method"},
		{send: "{\"id\":8,\"method\":\"test.ping\xff\"}", id: 0, code: CodeMalformedFrame, msg: "UTF-8"},
		{send: `{"id":9,"method":"test.ping","params":null}`, id: 9, result: `"pong"`},
	}
	for _, s := range steps {
		sendRaw(t, conn, s.send)
		in := recvRaw(t, fr)
		if s.code != "" {
			wantErrorResponse(t, s.send, in, s.id, s.code, s.msg)
			continue
		}
		if in.Response == nil || in.Response.ID != s.id || string(in.Response.Result) != s.result {
			t.Errorf("after sending %q: got %s, want id %d result %s", s.send, describeIncoming(in), s.id, s.result)
		}
	}
}

// TestServerBrokenFrames sends frames the server cannot find its place
// after: it answers malformed_frame with id 0 and closes the connection.
func TestServerBrokenFrames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		send    []byte
		msg     string
		wantErr error
	}{
		{"zero length", header(0), "zero", rpc.ErrEmptyFrame},
		{"zero length after garbage", cat(header(3), []byte("abc"), header(0)), "zero", rpc.ErrEmptyFrame},
		{"cap+1", header(MaxFrameSize + 1), "16777217", rpc.ErrFrameTooLarge},
		{"0xFFFFFFFF", cat(header(0xFFFFFFFF), []byte(`{"id":1}`)), "4294967295", rpc.ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, rpc.ServeOptions{}, routes{"test.ping": ping}.static())
			conn := rawDial(t, ts.path)
			if _, err := conn.Write(tt.send); err != nil {
				t.Fatal(err)
			}
			fr := rpc.NewFrameReader(conn)
			if bytes.HasPrefix(tt.send, header(3)) {
				// "abc" is answered first, and the connection goes on.
				wantErrorResponse(t, "abc", recvRaw(t, fr), 0, CodeMalformedFrame, "not a JSON object")
			}
			in := recvRaw(t, fr)
			wantErrorResponse(t, fmt.Sprintf("%x", tt.send), in, 0, CodeMalformedFrame, tt.msg)
			if !strings.Contains(in.Response.Error.Message, "closing the connection") {
				t.Errorf("message %q, want it to say the connection is closed", in.Response.Error.Message)
			}
			if _, err := fr.ReadFrame(); err != io.EOF {
				t.Errorf("after the error frame: got %v, want io.EOF (the connection closed)", err)
			}
			if sc := recv(t, ts.served, "Serve to return"); !errors.Is(sc.err, tt.wantErr) {
				t.Errorf("Serve returned %v, want %v", sc.err, tt.wantErr)
			}
		})
	}
}

func TestServerReadTimeout(t *testing.T) {
	t.Parallel()
	const readTimeout = 200 * time.Millisecond
	ts := startServer(t, rpc.ServeOptions{ReadTimeout: readTimeout}, routes{"test.ping": ping}.static())
	idle := dial(t, ts.path, ClientOptions{}) // connected, then idle for longer than the timeout
	callPing(t, idle)

	// Two peers start a frame and stall: one in the body, one in the header.
	start := time.Now()
	stalledBody := rawDial(t, ts.path)
	if _, err := stalledBody.Write(cat(header(30), []byte(`{"id":1,"met`))); err != nil {
		t.Fatal(err)
	}
	stalledHeader := rawDial(t, ts.path)
	if _, err := stalledHeader.Write([]byte{30, 0}); err != nil {
		t.Fatal(err)
	}

	// Meanwhile, another connection is served.
	busy := dial(t, ts.path, ClientOptions{})
	for range 20 {
		callPing(t, busy)
	}

	for name, conn := range map[string]net.Conn{"body": stalledBody, "header": stalledHeader} {
		fr := rpc.NewFrameReader(conn)
		in := recvRaw(t, fr)
		took := time.Since(start)
		wantErrorResponse(t, "a partial frame ("+name+")", in, 0, CodeMalformedFrame, readTimeout.String())
		if took < readTimeout {
			t.Errorf("stalled in the %s: dropped after %s, want no sooner than the read timeout %s", name, took, readTimeout)
		}
		if _, err := fr.ReadFrame(); err != io.EOF {
			t.Errorf("stalled in the %s: after the error frame got %v, want io.EOF", name, err)
		}
	}
	for range 2 {
		sc := recv(t, ts.served, "the stalled connections' Serve to return")
		var ne net.Error
		if !errors.As(sc.err, &ne) || !ne.Timeout() {
			t.Errorf("Serve of a stalled connection returned %v, want a timeout", sc.err)
		}
	}
	// Idle time between frames is not limited.
	callPing(t, idle)
	callPing(t, busy)
}

func TestServerMaxInFlight(t *testing.T) {
	t.Parallel()
	const limit, calls = 2, 20
	var inFlight, peak atomic.Int32
	proceed := make(chan struct{})
	ts := startServer(t, rpc.ServeOptions{MaxInFlight: limit}, routes{
		"test.work": func(ctx context.Context, _ *Request) (any, error) {
			n := inFlight.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			defer inFlight.Add(-1)
			select {
			case <-proceed:
			case <-ctx.Done():
			}
			return nil, nil
		},
	}.static())
	c := dial(t, ts.path, ClientOptions{})
	errs := make(chan error, calls)
	for range calls {
		go func() { errs <- c.Call(testCtx(t), "test.work", nil, nil) }()
	}
	for range calls {
		select {
		case proceed <- struct{}{}:
		case <-time.After(patience):
			t.Fatalf("no handler took its turn within %s", patience)
		}
	}
	for range calls {
		if err := recv(t, errs, "calls to return"); err != nil {
			t.Errorf("Call(test.work): %v", err)
		}
	}
	if p := peak.Load(); p > limit {
		t.Errorf("%d handlers ran at once with MaxInFlight %d", p, limit)
	}
}

func TestClientPeerHangsUp(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	ts := startServer(t, rpc.ServeOptions{}, func(sc *rpc.ServerConn) rpc.Handler {
		return routes{
			"test.hangup": func(ctx context.Context, _ *Request) (any, error) {
				started <- struct{}{}
				sc.Conn().Close()
				<-ctx.Done()
				return nil, ctx.Err()
			},
		}.handler()
	})
	c := dial(t, ts.path, ClientOptions{})
	err := c.Call(testCtx(t), "test.hangup", nil, nil)
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Call when the server hangs up: got %v, want ErrClosed", err)
	}
	recv(t, started, "the handler")
	recv(t, c.Done(), "Done to close")
	if err := c.Err(); !errors.Is(err, ErrClosed) {
		t.Errorf("Err() after the server hung up: got %v, want ErrClosed", err)
	}
	if err := c.Call(testCtx(t), "test.hangup", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after the connection ended: got %v, want ErrClosed", err)
	}
}

// fakeDaemon accepts one connection, reads one request and answers it with
// the bodies given, then closes.
func fakeDaemon(t *testing.T, answer func(req *Request) []string) string {
	t.Helper()
	path := tempSocket(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(patience))
		body, err := rpc.ReadFrame(conn)
		if err != nil {
			return
		}
		req, err := rpc.DecodeRequest(body)
		if err != nil {
			return
		}
		for _, b := range answer(req) {
			if rpc.WriteFrame(conn, []byte(b)) != nil {
				return
			}
		}
		// Wait for the client to hang up.
		io.Copy(io.Discard, conn)
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return path
}

func TestClientMalformedFrameFromDaemon(t *testing.T) {
	t.Parallel()
	path := fakeDaemon(t, func(*Request) []string {
		return []string{`{"id":0,"error":{"code":"malformed_frame","message":"frame length is zero; closing the connection"}}`}
	})
	c := dial(t, path, ClientOptions{})
	err := c.Call(testCtx(t), "test.ping", nil, nil)
	if !errors.Is(err, ErrMalformedFrame) {
		t.Errorf("Call answered by an id-0 malformed_frame: got %v, want malformed_frame", err)
	}
	recv(t, c.Done(), "Done to close")
	if err := c.Err(); !errors.Is(err, ErrMalformedFrame) {
		t.Errorf("Err(): got %v, want the daemon's malformed_frame", err)
	}
}

func TestClientUnreadableMessage(t *testing.T) {
	t.Parallel()
	var sawNotification atomic.Bool
	path := fakeDaemon(t, func(req *Request) []string {
		return []string{
			`{"method":"test.note"}`,
			`{"id":999,"result":"for nobody"}`, // an answer to no call: dropped
			fmt.Sprintf(`{"id":%d}`, req.ID),   // neither result nor error
		}
	})
	c := dial(t, path, ClientOptions{OnNotification: func(Notification) { sawNotification.Store(true) }})
	err := c.Call(testCtx(t), "test.ping", nil, nil)
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "neither result nor error") {
		t.Errorf("Call answered by an unreadable message: got %v, want ErrClosed naming the problem", err)
	}
	if !sawNotification.Load() {
		t.Errorf("the notification before the unreadable message was not delivered")
	}
}

func TestDialUnreachable(t *testing.T) {
	t.Parallel()
	t.Run("missing socket", func(t *testing.T) {
		t.Parallel()
		path := tempSocket(t)
		c, err := Dial(testCtx(t), path, ClientOptions{})
		var ue *UnreachableError
		if !errors.As(err, &ue) {
			if c != nil {
				c.Close()
			}
			t.Fatalf("Dial(%s): got %v, want *UnreachableError", path, err)
		}
		if ue.Socket != path || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Dial(%s): got Socket %q, error %v; want the path and ENOENT", path, ue.Socket, ue.Err)
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "is agentd running") {
			t.Errorf("Dial(%s): message %q, want the path and the hint", path, msg)
		}
	})
	t.Run("nobody listening", func(t *testing.T) {
		t.Parallel()
		path := tempSocket(t)
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		l.Close()
		c, err := Dial(testCtx(t), path, ClientOptions{})
		var ue *UnreachableError
		if !errors.As(err, &ue) || !errors.Is(err, syscall.ECONNREFUSED) {
			if c != nil {
				c.Close()
			}
			t.Errorf("Dial(%s) with a stale socket file: got %v, want *UnreachableError wrapping ECONNREFUSED", path, err)
		}
	})
}

// TestTypedCallsReturnNilWithTheirError: every typed method gives its
// result or its error, never a result beside an error (a caller that
// checks only the result cannot take a refusal for an answer), whichever
// transport the client has. The table must name every typed method.
func TestTypedCallsReturnNilWithTheirError(t *testing.T) {
	t.Parallel()
	ts := startServer(t, rpc.ServeOptions{}, func(*rpc.ServerConn) rpc.Handler {
		return func(context.Context, *Request) (any, error) {
			return nil, Errorf(CodeAgentNotFound, "no session")
		}
	})
	ctx := testCtx(t)
	calls := map[string]func(c *Client) (bool, error){
		"Hello":             func(c *Client) (bool, error) { return isNil(c.Hello(ctx, HelloParams{})) },
		"Spawn":             func(c *Client) (bool, error) { return isNil(c.Spawn(ctx, SpawnParams{})) },
		"Restart":           func(c *Client) (bool, error) { return isNil(c.Restart(ctx, RestartParams{})) },
		"Hook":              func(c *Client) (bool, error) { return isNil(c.Hook(ctx, HookParams{})) },
		"Ask":               func(c *Client) (bool, error) { return isNil(c.Ask(ctx, AskParams{})) },
		"List":              func(c *Client) (bool, error) { return isNil(c.List(ctx, ListParams{})) },
		"Status":            func(c *Client) (bool, error) { return isNil(c.Status(ctx, "x")) },
		"Stop":              func(c *Client) (bool, error) { return isNil(c.Stop(ctx, StopParams{})) },
		"Rm":                func(c *Client) (bool, error) { return isNil(c.Rm(ctx, RmParams{})) },
		"Reconcile":         func(c *Client) (bool, error) { return isNil(c.Reconcile(ctx)) },
		"Logs":              func(c *Client) (bool, error) { return isNil(c.Logs(ctx, LogsParams{})) },
		"Snapshot":          func(c *Client) (bool, error) { return isNil(c.Snapshot(ctx, "x")) },
		"Wait":              func(c *Client) (bool, error) { return isNil(c.Wait(ctx, WaitParams{})) },
		"Screenshot":        func(c *Client) (bool, error) { return isNil(c.Screenshot(ctx, ScreenshotParams{})) },
		"Act":               func(c *Client) (bool, error) { return isNil(c.Act(ctx, ActParams{})) },
		"RecordScreen":      func(c *Client) (bool, error) { return isNil(c.RecordScreen(ctx, RecordScreenParams{})) },
		"Screen":            func(c *Client) (bool, error) { return isNil(c.Screen(ctx)) },
		"ScreenOf":          func(c *Client) (bool, error) { return isNil(c.ScreenOf(ctx, ScreenParams{})) },
		"RegisterChannel":   func(c *Client) (bool, error) { return isNil(c.RegisterChannel(ctx, RegisterChannelParams{})) },
		"UnregisterChannel": func(c *Client) (bool, error) { return isNil(c.UnregisterChannel(ctx, "x")) },
		"PushToChannel":     func(c *Client) (bool, error) { return isNil(c.PushToChannel(ctx, PushParams{})) },
		"AckChannel":        func(c *Client) (bool, error) { return isNil(c.AckChannel(ctx, "x", 1)) },
		"ListChannels":      func(c *Client) (bool, error) { return isNil(c.ListChannels(ctx)) },
		"ReplyChannel":      func(c *Client) (bool, error) { return isNil(c.ReplyChannel(ctx, ChannelReplyParams{})) },
		"DesktopNew":        func(c *Client) (bool, error) { return isNil(c.DesktopNew(ctx, DesktopNewParams{})) },
		"DesktopList":       func(c *Client) (bool, error) { return isNil(c.DesktopList(ctx)) },
		"DesktopResize":     func(c *Client) (bool, error) { return isNil(c.DesktopResize(ctx, DesktopResizeParams{})) },
		"DesktopClip":       func(c *Client) (bool, error) { return isNil(c.DesktopClip(ctx, DesktopClipParams{})) },
		"Diff":              func(c *Client) (bool, error) { return isNil(c.Diff(ctx, "x")) },
		"Approve":           func(c *Client) (bool, error) { return isNil(c.Approve(ctx, ApproveParams{Name: "x"})) },
		"Subscribe":         func(c *Client) (bool, error) { return isNil(c.Subscribe(ctx, SubscribeParams{})) },
		"View":              func(c *Client) (bool, error) { return isNil(c.View(ctx, ViewParams{})) },
	}
	// Every method of *Client that answers a pointer and an error.
	errType := reflect.TypeFor[error]()
	ct := reflect.TypeFor[*Client]()
	for i := range ct.NumMethod() {
		m := ct.Method(i)
		if out := m.Type; out.NumOut() == 2 && out.Out(0).Kind() == reflect.Pointer && out.Out(1) == errType {
			if _, ok := calls[m.Name]; !ok {
				t.Errorf("(*Client).%s answers a result and an error but is not in this test's table; add it", m.Name)
			}
		}
	}
	for kind, c := range map[string]*Client{"dialled": dial(t, ts.path, ClientOptions{}), "one-shot": NewOneShot(ts.path)} {
		for name, call := range calls {
			if isNil, err := call(c); !isNil || !errors.Is(err, ErrAgentNotFound) {
				t.Errorf("%s client: %s refused with agent_not_found: got a nil result %v, error %v; want a nil result and the error", kind, name, isNil, err)
			}
		}
	}
}

// isNil says whether a typed call's result is nil, beside its error.
func isNil[R any](r *R, err error) (bool, error) { return r == nil, err }
