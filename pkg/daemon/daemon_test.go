package daemon

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/internal/testhome"
	"github.com/agentd/agentd/pkg/wire"
)

// testDaemon is a daemon running in this process on its own socket.
type testDaemon struct {
	*Daemon
	socket string
	cancel context.CancelFunc
	done   chan error
}

// shortTempDir returns a private directory with a short path: sun_path holds
// about 108 bytes, and paths under the private home's TMPDIR (or
// t.TempDir()) can be longer than session sockets allow.
func shortTempDir(t testing.TB) string {
	t.Helper()
	return testhome.ShortDir(t)
}

// startDaemon runs a daemon with cfg (socket and state in temp dirs unless
// set), registers extra routes, waits until it serves, and insists on a
// clean stop at the end of the test.
func startDaemon(t *testing.T, cfg Config, extra ...Route) *testDaemon {
	t.Helper()
	if cfg.SocketPath == "" {
		cfg.SocketPath = filepath.Join(shortTempDir(t), "run", "agentd.sock")
	}
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(t.TempDir(), "state")
	}
	d := New(cfg)
	// These tests bind channels to sessions that do not run; who may bind
	// is tested with real sessions (test/integrity_test.go) and in
	// TestChannelAuthority.
	d.vouch = func(context.Context, string, Peer, string) error { return nil }
	d.router.register(extra...)
	return serveDaemon(t, d, cfg.SocketPath)
}

// serveDaemon runs d, waits until it serves on socket, and insists on a
// clean stop at the end of the test.
func serveDaemon(t *testing.T, d *Daemon, socket string) *testDaemon {
	t.Helper()
	cfg := Config{SocketPath: socket}
	ctx, cancel := context.WithCancel(context.Background())
	td := &testDaemon{Daemon: d, socket: cfg.SocketPath, cancel: cancel, done: make(chan error, 1)}
	go func() { td.done <- d.Run(ctx) }()
	await(t, 5*time.Second, "daemon serving", func() bool {
		select {
		case err := <-td.done:
			t.Fatalf("daemon stopped at start: %v", err)
		default:
		}
		// A hello, not a bare dial: the socket accepts connections a
		// moment before the daemon serves them.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := wire.Dial(ctx, cfg.SocketPath, wire.ClientOptions{})
		if err != nil {
			return false
		}
		defer c.Close()
		_, err = c.Hello(ctx, wire.HelloParams{})
		return err == nil
	})
	t.Cleanup(func() { td.stop(t) })
	return td
}

func (td *testDaemon) stop(t *testing.T) {
	t.Helper()
	td.cancel()
	select {
	case err, ok := <-td.done:
		if ok && err != nil {
			t.Errorf("daemon stopped with %v, want nil", err)
		}
		close(td.done)
	case <-time.After(10 * time.Second):
		t.Errorf("daemon did not stop within 10s")
	}
}

func (td *testDaemon) client(t *testing.T) *wire.Client {
	t.Helper()
	c, err := wire.Dial(context.Background(), td.socket, wire.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// await polls cond until it holds or the deadline passes.
func await(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHelloListsTheRouteTable(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{}, Route{Method: "agent.test_echo", Handle: func(ctx context.Context, c *Call) (any, error) {
		return c.Params, nil
	}})
	c := td.client(t)
	h, err := c.Hello(context.Background(), wire.HelloParams{Version: wire.ProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for m := range td.router.routes {
		want = append(want, m)
	}
	if len(h.Methods) != len(want) {
		t.Fatalf("hello lists %v, route table has %v", h.Methods, want)
	}
	for _, m := range h.Methods {
		if _, ok := td.router.routes[m]; !ok {
			t.Errorf("hello lists %q, which the route table does not serve", m)
		}
		// Every advertised method answers something other than unknown_method.
		err := c.Call(context.Background(), m, map[string]any{}, nil)
		if errors.Is(err, wire.ErrUnknownMethod) {
			t.Errorf("advertised method %q answers unknown_method", m)
		}
	}
	if h.PID != os.Getpid() || h.Socket != td.socket || h.Build == "" || h.Limits.MaxFrameBytes != wire.MaxFrameSize {
		t.Errorf("hello = %+v: want pid %d, socket %s, a build and the frame limit", h, os.Getpid(), td.socket)
	}
	_, err = c.Hello(context.Background(), wire.HelloParams{Version: 99})
	if !errors.Is(err, wire.ErrUnsupportedVersion) || !strings.Contains(err.Error(), "[1]") {
		t.Errorf("hello version 99: got %v, want unsupported_version naming [1]", err)
	}
}

func TestRegisterDuplicatePanics(t *testing.T) {
	r := newRouter()
	h := func(context.Context, *Call) (any, error) { return nil, nil }
	r.register(Route{Method: "agent.x", Handle: h})
	for _, bad := range []Route{{Method: "agent.x", Handle: h}, {Method: "other.x", Handle: h}, {Method: "agent.", Handle: h}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("register(%q) did not panic", bad.Method)
				}
			}()
			r.register(bad)
		}()
	}
}

// rawConn is a connection on which the test writes bytes by hand.
type rawConn struct {
	t *testing.T
	net.Conn
	fr *rpc.FrameReader
}

func dialRaw(t *testing.T, socket string) *rawConn {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, Conn: c, fr: rpc.NewFrameReader(c)}
}

func frame(body []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

func header(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }

// response reads one response frame within 5 s.
func (r *rawConn) response() *wire.Response {
	r.t.Helper()
	// Generous: a 16 MiB frame under -race on a busy 2-core machine took
	// 14 s; the deadline only turns a hang into a failure.
	r.SetReadDeadline(time.Now().Add(60 * time.Second))
	body, err := r.fr.ReadFrame()
	if err != nil {
		r.t.Fatalf("read response: %v", err)
	}
	in, err := rpc.DecodeIncoming(body)
	if err != nil || in.Response == nil {
		r.t.Fatalf("decode response %q: %v", body, err)
	}
	return in.Response
}

// closedByPeer reports whether the daemon closed the connection.
func (r *rawConn) closedByPeer() bool {
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := r.fr.ReadFrame()
	return err != nil && !isTimeoutErr(err)
}

func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{})
	bystander := td.client(t)

	deep := append(bytes.Repeat([]byte("["), 100000), bytes.Repeat([]byte("]"), 100000)...)
	nested := []byte(`{"id":5,"method":"agent.hello","params":` + string(deep) + `}`)
	cases := []struct {
		name      string
		send      []byte
		wantCode  wire.Code
		wantID    uint64
		keepsOpen bool
	}{
		{"not json", frame([]byte("hello?")), wire.CodeMalformedFrame, 0, true},
		{"array", frame([]byte(`[1,2,3]`)), wire.CodeMalformedFrame, 0, true},
		{"string", frame([]byte(`"agent.hello"`)), wire.CodeMalformedFrame, 0, true},
		{"missing id", frame([]byte(`{"method":"agent.hello"}`)), wire.CodeMalformedFrame, 0, true},
		{"string id", frame([]byte(`{"id":"1","method":"agent.hello"}`)), wire.CodeMalformedFrame, 0, true},
		{"negative id", frame([]byte(`{"id":-1,"method":"agent.hello"}`)), wire.CodeMalformedFrame, 0, true},
		{"fractional id", frame([]byte(`{"id":1.5,"method":"agent.hello"}`)), wire.CodeMalformedFrame, 0, true},
		{"unknown method", frame([]byte(`{"id":7,"method":"agent.nope"}`)), wire.CodeUnknownMethod, 7, true},
		{"unknown namespace", frame([]byte(`{"id":8,"method":"system.reboot"}`)), wire.CodeUnknownMethod, 8, true},
		{"params array", frame([]byte(`{"id":9,"method":"agent.hello","params":[1]}`)), wire.CodeInvalidParams, 9, true},
		{"params unknown field", frame([]byte(`{"id":10,"method":"agent.hello","params":{"verzion":1}}`)), wire.CodeInvalidParams, 10, true},
		{"100000 nested arrays", frame(nested), wire.CodeMalformedFrame, 0, true},
		{"invalid utf-8", frame([]byte("{\"id\":11,\"method\":\"agent.hello\xff\"}")), wire.CodeMalformedFrame, 0, true},
		{"zero length", header(0), wire.CodeMalformedFrame, 0, false},
		{"over the cap", header(wire.MaxFrameSize + 1), wire.CodeMalformedFrame, 0, false},
		{"0xFFFFFFFF", header(0xFFFFFFFF), wire.CodeMalformedFrame, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := dialRaw(t, td.socket)
			if _, err := rc.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			resp := rc.response()
			if resp.Error == nil || resp.Error.Code != tc.wantCode || resp.ID != tc.wantID {
				t.Fatalf("got %+v (error %+v), want code %s id %d", resp, resp.Error, tc.wantCode, tc.wantID)
			}
			if resp.Error.Message == "" {
				t.Errorf("error has no message")
			}
			if tc.keepsOpen {
				rc.Write(frame([]byte(`{"id":99,"method":"agent.hello"}`)))
				if r := rc.response(); r.ID != 99 || r.Error != nil {
					t.Errorf("after bad input the connection answered %+v, want hello 99", r)
				}
			} else if !rc.closedByPeer() {
				t.Errorf("connection left open after a broken frame")
			}
			if _, err := bystander.Hello(context.Background(), wire.HelloParams{}); err != nil {
				t.Errorf("well-behaved client not served: %v", err)
			}
		})
	}
}

func TestTruncatedFrames(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{})
	for name, send := range map[string][]byte{
		"truncated header": {3, 0},
		"truncated body":   append(header(50), []byte(`{"id":1,`)...),
	} {
		rc := dialRaw(t, td.socket)
		rc.Write(send)
		rc.Conn.(*net.UnixConn).CloseWrite()
		resp := rc.response()
		if resp.Error == nil || resp.Error.Code != wire.CodeMalformedFrame || !strings.Contains(resp.Error.Message, "ended inside") {
			t.Errorf("%s: got %+v, want malformed_frame naming the truncation", name, resp.Error)
		}
	}
	if _, err := td.client(t).Hello(context.Background(), wire.HelloParams{}); err != nil {
		t.Errorf("daemon not serving after truncated frames: %v", err)
	}
}

func TestFrameOfExactlyTheCap(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{}, Route{Method: "agent.test_len", Handle: func(ctx context.Context, c *Call) (any, error) {
		return len(c.Params), nil
	}})
	prefix := []byte(`{"id":1,"method":"agent.test_len","params":{"pad":"`)
	suffix := []byte(`"}}`)
	body := make([]byte, 0, wire.MaxFrameSize)
	body = append(body, prefix...)
	body = append(body, bytes.Repeat([]byte("x"), wire.MaxFrameSize-len(prefix)-len(suffix))...)
	body = append(body, suffix...)
	if len(body) != wire.MaxFrameSize {
		t.Fatalf("built %d bytes", len(body))
	}
	rc := dialRaw(t, td.socket)
	go rc.Write(frame(body))
	resp := rc.response()
	var n int
	// The handler sees the params object: the body without the envelope.
	want := len(body) - len(`{"id":1,"method":"agent.test_len","params":`) - len(`}`)
	if resp.Error != nil || json.Unmarshal(resp.Result, &n) != nil || n != want {
		t.Fatalf("got %s (error %v), want params of %d bytes", resp.Result, resp.Error, want)
	}
}

func TestStalledClientIsDroppedWithoutSlowingOthers(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{ReadTimeout: 2 * time.Second})
	rc := dialRaw(t, td.socket)
	rc.Write(append(header(100), []byte(`{"id":1`)...)) // then nothing
	c := td.client(t)
	for i := 0; i < 20; i++ {
		if _, err := c.Hello(context.Background(), wire.HelloParams{}); err != nil {
			t.Fatal(err)
		}
	}
	// Others were served while the stalled client still waited for its
	// deadline: it has not been answered yet.
	rc.SetReadDeadline(time.Now())
	if _, err := rc.fr.ReadFrame(); !isTimeoutErr(err) {
		t.Fatalf("stalled client already answered (%v) before the others were served", err)
	}
	resp := rc.response()
	if resp.Error == nil || resp.Error.Code != wire.CodeMalformedFrame || !strings.Contains(resp.Error.Message, "not completed") {
		t.Errorf("stalled client got %+v, want malformed_frame about the read deadline", resp.Error)
	}
	if !rc.closedByPeer() {
		t.Error("stalled client was not disconnected")
	}
}

func TestIdleConnectionIsKept(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{ReadTimeout: 100 * time.Millisecond})
	c := td.client(t)
	if _, err := c.Hello(context.Background(), wire.HelloParams{}); err != nil {
		t.Fatal(err)
	}
	// Idle for three read timeouts: only a frame that has begun is timed.
	timer := time.NewTimer(300 * time.Millisecond)
	select {
	case <-c.Done():
		t.Fatalf("idle connection was closed: %v", c.Err())
	case <-timer.C:
	}
	if _, err := c.Hello(context.Background(), wire.HelloParams{}); err != nil {
		t.Errorf("idle connection unusable: %v", err)
	}
}

func TestManyConcurrentRequestsAndPanics(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	td := startDaemon(t, Config{},
		Route{Method: "agent.test_wait", Handle: func(ctx context.Context, c *Call) (any, error) {
			p, err := decodeParams[struct{ N int }](c)
			if err != nil {
				return nil, err
			}
			<-release
			return p.N, nil
		}},
		Route{Method: "agent.test_panic", Handle: func(ctx context.Context, c *Call) (any, error) {
			panic("boom")
		}},
	)
	c := td.client(t)
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got int
			if err := c.Call(context.Background(), "agent.test_wait", map[string]int{"n": i}, &got); err != nil {
				errs <- err
			} else if got != i {
				errs <- errors.New("response matched to the wrong request")
			}
		}()
	}
	// All 200 are in flight at once: none can finish before release.
	err := c.Call(context.Background(), "agent.test_panic", nil, nil)
	if !errors.Is(err, wire.ErrInternal) {
		t.Errorf("panicking handler: got %v, want internal", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := c.Hello(context.Background(), wire.HelloParams{}); err != nil {
		t.Errorf("connection unusable after a panic: %v", err)
	}
}

func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	const limit = 50
	td := startDaemon(t, Config{MaxConnections: limit})
	var conns []*wire.Client
	var busy int
	for i := 0; i < 1000; i++ {
		c, err := wire.Dial(context.Background(), td.socket, wire.ClientOptions{})
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.Hello(ctx, wire.HelloParams{})
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, wire.ErrBusy):
			busy++
		default:
			t.Fatalf("hello: %v, want success or busy", err)
		}
	}
	if busy < 1000-limit {
		t.Errorf("%d of 1000 connections were answered busy, want at least %d", busy, 1000-limit)
	}
	for _, c := range conns {
		c.Close()
	}
	await(t, 5*time.Second, "slots freed", func() bool {
		c, err := wire.Dial(context.Background(), td.socket, wire.ClientOptions{})
		if err != nil {
			return false
		}
		defer c.Close()
		_, err = c.Hello(context.Background(), wire.HelloParams{})
		return err == nil
	})
}

func TestGracefulStop(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	td := startDaemon(t, Config{}, Route{Method: "agent.test_slow", Handle: func(ctx context.Context, c *Call) (any, error) {
		close(entered)
		<-release
		return "finished", nil
	}})
	c := td.client(t)
	slow := make(chan error, 1)
	go func() {
		var s string
		err := c.Call(context.Background(), "agent.test_slow", nil, &s)
		if err == nil && s != "finished" {
			err = errors.New("wrong result " + s)
		}
		slow <- err
	}()
	<-entered
	td.cancel()
	// New requests are refused while the slow one finishes.
	await(t, 5*time.Second, "shutting_down answers", func() bool {
		_, err := c.Hello(context.Background(), wire.HelloParams{})
		return errors.Is(err, wire.ErrShuttingDown)
	})
	// No new connection is served while stopping. A dial may still
	// succeed for a moment, into a backlog nobody accepts from: a child
	// that another test in this process is spawning holds a copy of every
	// descriptor, the closed listener's too, until it execs (once seen in a
	// run with two CPU hogs).
	if conn, err := net.Dial("unix", td.socket); err == nil {
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		conn.Write(helloFrame)
		if body, err := rpc.NewFrameReader(conn).ReadFrame(); err == nil {
			t.Errorf("daemon served a new connection while stopping: %s", body)
		}
		conn.Close()
	}
	close(release)
	if err := <-slow; err != nil {
		t.Errorf("in-flight request: %v, want it to finish", err)
	}
}

func TestSocketDirectoryChecks(t *testing.T) {
	t.Parallel()
	base := shortTempDir(t)
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o700)
	link := filepath.Join(base, "link")
	os.Symlink(real, link)
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o755)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	cases := map[string]struct{ dir, want string }{
		"symlink":       {link, "symbolic link"},
		"open":          {open, "chmod 700"},
		"not directory": {file, "not a directory"},
	}
	if os.Getuid() == 0 {
		foreign := filepath.Join(base, "foreign")
		os.Mkdir(foreign, 0o700)
		os.Chown(foreign, 65534, 65534)
		cases["foreign"] = struct{ dir, want string }{foreign, "owned by uid 65534"}
	}
	for name, tc := range cases {
		err := New(Config{SocketPath: filepath.Join(tc.dir, "s.sock"), StateDir: filepath.Join(t.TempDir(), "state")}).Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
}

func TestOneDaemonPerSocketAndStaleSocket(t *testing.T) {
	t.Parallel()
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "agentd.sock")
	// A stale socket, as a killed daemon leaves it.
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	td := startDaemon(t, Config{SocketPath: sock})
	if _, err := td.client(t).Hello(context.Background(), wire.HelloParams{}); err != nil {
		t.Fatalf("daemon did not replace the stale socket: %v", err)
	}
	err = New(Config{SocketPath: sock, StateDir: filepath.Join(t.TempDir(), "state")}).Run(context.Background())
	if !errors.Is(err, ErrAlreadyRunning) || !strings.Contains(err.Error(), "pid ") {
		t.Errorf("second daemon: got %v, want ErrAlreadyRunning naming the pid", err)
	}
	st, err := os.Stat(sock)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode: %v %v, want 0600", st.Mode(), err)
	}
}

// TestOneDaemonPerStateDir: a second daemon on a socket of its own but the
// first one's state directory is refused, naming the first one's pid and
// the way out; it must not take the first one's live sessions for its own.
func TestOneDaemonPerStateDir(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	td := startDaemon(t, Config{StateDir: state})
	if _, err := td.client(t).Hello(context.Background(), wire.HelloParams{}); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(shortTempDir(t), "other.sock")
	err := New(Config{SocketPath: second, StateDir: state}).Run(context.Background())
	if !errors.Is(err, ErrAlreadyRunning) || !strings.Contains(err.Error(), "pid ") || !strings.Contains(err.Error(), "state directory "+state) {
		t.Errorf("a second daemon on the same state directory: got %v, want ErrAlreadyRunning naming the directory and the pid", err)
	}
	if _, err := os.Stat(second); err == nil {
		t.Errorf("the refused daemon left its socket %s behind", second)
	}
}

func TestSocketPathTooLong(t *testing.T) {
	t.Parallel()
	dir := shortTempDir(t)
	long := filepath.Join(dir, strings.Repeat("s", 120)+".sock")
	err := New(Config{SocketPath: long, StateDir: filepath.Join(t.TempDir(), "state")}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "shorter path") {
		t.Errorf("got %v, want an error asking for a shorter path", err)
	}
}
