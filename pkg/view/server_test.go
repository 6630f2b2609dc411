package view

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/pkg/wire"
)

// fakeSessions stands in for the daemon's sessions: the server's checks
// and streams are what these tests look at; test/view_test.go runs the
// page against real sessions in Chromium.
type fakeSessions struct {
	mu      sync.Mutex
	rows    []wire.SessionRow
	details map[string]*wire.StateDetail
	sizes   map[string][2]int // a session's size when not 80x24
	watch   func(ctx context.Context, name string, w io.Writer) error
	typed   map[string][]byte // keys that reached each session
	leases  map[string]fakeLease
	ended   []string // the hand-backs, "name: why"
	approve func(name string, deny bool, promptID, lease string) (*wire.ApproveResult, error)
}

type fakeLease struct{ id, holder string }

func (f *fakeSessions) List(context.Context) ([]wire.SessionRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wire.SessionRow(nil), f.rows...), nil
}

func (f *fakeSessions) Detail(_ context.Context, name string) (*wire.StateDetail, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.details[name], nil
}

func (f *fakeSessions) Size(_ context.Context, name string) (int, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rows {
		if r.Name == name {
			if sz, ok := f.sizes[name]; ok {
				return sz[0], sz[1], nil
			}
			return 80, 24, nil
		}
	}
	return 0, 0, fmt.Errorf("session %q does not exist", name)
}

func (f *fakeSessions) Watch(ctx context.Context, name string, w io.Writer, keys <-chan []byte) error {
	go func() {
		for {
			select {
			case k := <-keys:
				f.mu.Lock()
				if f.typed == nil {
					f.typed = map[string][]byte{}
				}
				f.typed[name] = append(f.typed[name], k...)
				f.mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	}()
	if f.watch != nil {
		return f.watch(ctx, name, w)
	}
	<-ctx.Done()
	return ctx.Err()
}

func (f *fakeSessions) TakeOver(_ context.Context, name, holder string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l, ok := f.leases[name]; ok {
		return "", wire.Errorf(wire.CodeBusy, "session %q is already taken over by %s", name, l.holder)
	}
	if f.leases == nil {
		f.leases = map[string]fakeLease{}
	}
	id := fmt.Sprintf("lease-%s-%d", name, len(f.ended))
	f.leases[name] = fakeLease{id: id, holder: holder}
	return id, nil
}

func (f *fakeSessions) HandBack(name, id, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leases[name].id == id {
		delete(f.leases, name)
		f.ended = append(f.ended, name+": "+why)
	}
}

func (f *fakeSessions) Approve(_ context.Context, name string, deny bool, promptID, lease string) (*wire.ApproveResult, error) {
	f.mu.Lock()
	fn := f.approve
	f.mu.Unlock()
	return fn(name, deny, promptID, lease)
}

// typedInto is what reached name's program.
func (f *fakeSessions) typedInto(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.typed[name])
}

func start(t *testing.T, f *fakeSessions, opts Options) *Server {
	t.Helper()
	opts.Sessions = f
	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, rawURL string, mod func(*http.Request)) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(req)
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// login trades a fresh token and returns the cookie.
func login(t *testing.T, s *Server) *http.Cookie {
	t.Helper()
	res := get(t, mustURL(t, s, ""), nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("token trade: %s", res.Status)
	}
	for _, c := range res.Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	t.Fatal("token trade set no cookie")
	return nil
}

func mustURL(t *testing.T, s *Server, name string) string {
	t.Helper()
	u, err := s.URL(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func base(s *Server) string { return fmt.Sprintf("http://127.0.0.1:%d", s.Port()) }

func TestListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	s := start(t, &fakeSessions{}, Options{})
	addr := s.ln.Addr().(*net.TCPAddr)
	if !addr.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("listening on %s, want 127.0.0.1 only", addr)
	}
	// Nothing answers on the port at another of the machine's addresses.
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() {
			continue
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ipn.IP.String(), fmt.Sprint(s.Port())), time.Second)
		if err == nil {
			c.Close()
			t.Errorf("the view answers on %s", ipn.IP)
		}
	}
}

func TestTokenCookieAndHeaders(t *testing.T) {
	t.Parallel()
	s := start(t, &fakeSessions{}, Options{})
	// No token, no cookie: refused, and the answer says what to run.
	if res := get(t, base(s)+"/", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("page without a token: %s, want 401", res.Status)
	}
	if res := get(t, base(s)+"/static/view.js", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("script without a cookie: %s, want 401", res.Status)
	}
	if res := get(t, base(s)+"/?t=wrong", nil); res.StatusCode != http.StatusForbidden {
		t.Errorf("page with a wrong token: %s, want 403", res.Status)
	}
	u := mustURL(t, s, "w1")
	res, err := noRedirect.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	// A refresh, not a redirect: see index.
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `http-equiv="refresh" content="0;url=/#w1"`) {
		t.Fatalf("token trade: %s %q, want a page that refreshes to /#w1", res.Status, body)
	}
	var c *http.Cookie
	for _, rc := range res.Cookies() {
		if rc.Name == cookieName {
			c = rc
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Domain != "" || c.MaxAge != 0 {
		t.Fatalf("cookie %+v, want HttpOnly, SameSite=Strict, Path=/, host-only, for the session", c)
	}
	// The token works once.
	if res := get(t, u, nil); res.StatusCode != http.StatusForbidden {
		t.Errorf("a spent token: %s, want 403", res.Status)
	}
	withCookie := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: cookieName, Value: c.Value}) }
	res = get(t, base(s)+"/", withCookie)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("page with the cookie: %s", res.Status)
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self';", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "style-src 'self' 'nonce-"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	res = get(t, base(s)+"/static/xterm/xterm.js", withCookie)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("xterm.js with the cookie: %s %s", res.Status, res.Header.Get("Content-Type"))
	}
	if res := get(t, base(s)+"/static/xterm/", withCookie); res.StatusCode != http.StatusNotFound {
		t.Errorf("a directory of the page's files: %s, want 404 (no listings)", res.Status)
	}
	// localhost:PORT is the same server; any other Host is refused, even
	// with the cookie (DNS rebinding sends the attacker's name).
	if res := get(t, base(s)+"/", func(r *http.Request) { withCookie(r); r.Host = fmt.Sprintf("localhost:%d", s.Port()) }); res.StatusCode != http.StatusOK {
		t.Errorf("Host localhost:PORT: %s, want 200", res.Status)
	}
	for _, host := range []string{fmt.Sprintf("evil.example:%d", s.Port()), "127.0.0.1", fmt.Sprintf("127.0.0.1:%d", s.Port()+1), fmt.Sprintf("[::1]:%d", s.Port())} {
		if res := get(t, base(s)+"/", func(r *http.Request) { withCookie(r); r.Host = host }); res.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("Host %q: %s, want 421", host, res.Status)
		}
	}
}

func dialWS(ctx context.Context, s *Server, path string, c *http.Cookie, origin string) (*websocket.Conn, *http.Response, error) {
	h := http.Header{}
	if c != nil {
		h.Set("Cookie", cookieName+"="+c.Value)
	}
	if origin != "" {
		h.Set("Origin", origin)
	}
	return websocket.Dial(ctx, "ws://127.0.0.1:"+fmt.Sprint(s.Port())+path, &websocket.DialOptions{HTTPHeader: h})
}

func TestWebSocketOrigin(t *testing.T) {
	t.Parallel()
	s := start(t, &fakeSessions{}, Options{})
	c := login(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, origin := range []string{"http://evil.example", "null", fmt.Sprintf("http://localhost:%d", s.Port()), "https://127.0.0.1:" + fmt.Sprint(s.Port())} {
		_, res, err := dialWS(ctx, s, "/ws/list", c, origin)
		if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
			t.Errorf("WebSocket with Origin %q: %v %v, want 403", origin, err, res)
		}
	}
	if _, res, err := dialWS(ctx, s, "/ws/list", nil, base(s)); err == nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("WebSocket without the cookie: %v, want 401", err)
	}
	conn, _, err := dialWS(ctx, s, "/ws/list", c, base(s))
	if err != nil {
		t.Fatalf("WebSocket from the page's origin: %v", err)
	}
	conn.Close(websocket.StatusNormalClosure, "")
}

// TestBadPassesBlock: past the free bad passes each bad one is answered
// 429 after a delay, the block doubling each time; a right token or
// cookie passes at once all the while (everyone local shares 127.0.0.1: a
// block must not lock the person out).
func TestBadPassesBlock(t *testing.T) {
	t.Parallel()
	s := start(t, &fakeSessions{}, Options{})
	now := time.Now()
	var mu sync.Mutex
	s.guard.mu.Lock()
	s.guard.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	// A second's tarpit against right passes answered in well under
	// half of it: a margin the machine's load does not eat (two CPU hogs
	// made two right requests take 143 ms against a 100 ms tarpit).
	s.guard.tarpitMax = time.Second
	s.guard.mu.Unlock()
	cookie := login(t, s)
	for i := range freeFailures {
		if res := get(t, base(s)+"/?t=bad", nil); res.StatusCode != http.StatusForbidden {
			t.Fatalf("bad token %d of the free ones: %s, want 403", i+1, res.Status)
		}
	}
	// Each further failure blocks for a second, then two, then four; its
	// answer waits in the tarpit.
	for _, block := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		t0 := time.Now()
		res := get(t, base(s)+"/", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: cookieName, Value: "forged"}) })
		took := time.Since(t0)
		want := fmt.Sprint(int(block/time.Second) + 1)
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != want {
			t.Fatalf("a bad cookie past the free ones: %s, Retry-After %q; want 429, %s", res.Status, res.Header.Get("Retry-After"), want)
		}
		if took < 900*time.Millisecond {
			t.Errorf("a bad pass during a %s block was answered in %s, want the tarpit's second", block, took)
		}
		// A right token and a right cookie pass, at once.
		t0 = time.Now()
		if res := get(t, mustURL(t, s, ""), nil); res.StatusCode != http.StatusOK {
			t.Fatalf("a right token during a %s block: %s, want 200", block, res.Status)
		}
		if res := get(t, base(s)+"/static/view.js", func(r *http.Request) { r.AddCookie(cookie) }); res.StatusCode != http.StatusOK {
			t.Fatalf("a right cookie during a %s block: %s, want 200", block, res.Status)
		}
		if took := time.Since(t0); took > 500*time.Millisecond {
			t.Errorf("right passes during a block took %s: they waited in the tarpit", took)
		}
		mu.Lock()
		now = now.Add(block + time.Millisecond)
		mu.Unlock()
	}
}

func readMsg(t *testing.T, ctx context.Context, c *websocket.Conn) (websocket.MessageType, Message, []byte) {
	t.Helper()
	typ, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("reading from the view: %v", err)
	}
	var m Message
	if typ == websocket.MessageText {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("message %q: %v", b, err)
		}
	}
	return typ, m, b
}

func TestListIsLive(t *testing.T) {
	t.Parallel()
	f := &fakeSessions{rows: []wire.SessionRow{{Name: "a", Status: "running", Input: wire.InputBusy}}}
	s := start(t, f, Options{Poll: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := dialWS(ctx, s, "/ws/list", login(t, s), base(s))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	_, m, _ := readMsg(t, ctx, conn)
	if m.Type != "list" || len(m.Sessions) != 1 || m.Sessions[0].Input != wire.InputBusy {
		t.Fatalf("first message %+v, want the list with a busy", m)
	}
	f.mu.Lock()
	f.rows = append(f.rows, wire.SessionRow{Name: "b", Status: "running", Input: wire.InputReady})
	f.mu.Unlock()
	_, m, _ = readMsg(t, ctx, conn)
	if len(m.Sessions) != 2 || m.Sessions[1].Name != "b" {
		t.Fatalf("after a spawn: %+v, want a and b", m)
	}
}

func TestTerminal(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{})
	f := &fakeSessions{rows: []wire.SessionRow{{Name: "w", Status: "running"}, {Name: "flood", Status: "running"}, {Name: "short", Status: "running"}, {Name: "r", Status: "running"}}}
	released := make(chan string, 16)
	f.watch = func(ctx context.Context, name string, w io.Writer) error {
		defer func() { released <- name }()
		switch name {
		case "short":
			w.Write([]byte("bye\r\n"))
			<-ended
			return errors.New("session exited with code 0")
		case "flood":
			chunk := []byte(strings.Repeat("x", 32<<10))
			for ctx.Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return err
				}
			}
			return ctx.Err()
		}
		w.Write([]byte("hello\r\n"))
		<-ctx.Done()
		return ctx.Err()
	}
	s := start(t, f, Options{WriteTimeout: 300 * time.Millisecond, Poll: 20 * time.Millisecond})
	c := login(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func(name string) *websocket.Conn {
		conn, _, err := dialWS(ctx, s, "/ws/term?name="+url.QueryEscape(name), c, base(s))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.CloseNow() })
		return conn
	}

	t.Run("missing session", func(t *testing.T) {
		_, m, _ := readMsg(t, ctx, open("nosuch"))
		if m.Type != "error" || m.Code != "not_found" || !strings.Contains(m.Message, `"nosuch" does not exist`) {
			t.Errorf("a session that does not exist: %+v", m)
		}
	})
	t.Run("ends mid-view", func(t *testing.T) {
		conn := open("short")
		if _, m, _ := readMsg(t, ctx, conn); m.Type != "start" || m.Cols != 80 || m.Rows != 24 {
			t.Fatalf("first message %+v, want start 80x24", m)
		}
		if typ, _, b := readMsg(t, ctx, conn); typ != websocket.MessageBinary || string(b) != "bye\r\n" {
			t.Fatalf("output %q", b)
		}
		close(ended)
		if _, m, _ := readMsg(t, ctx, conn); m.Type != "end" || !strings.Contains(m.Message, "exited with code 0") {
			t.Errorf("a session ending mid-view: %+v", m)
		}
	})
	t.Run("resized", func(t *testing.T) {
		conn := open("r")
		readMsg(t, ctx, conn) // start
		readMsg(t, ctx, conn) // hello
		f.mu.Lock()
		f.sizes = map[string][2]int{"r": {132, 40}}
		f.mu.Unlock()
		if _, m, _ := readMsg(t, ctx, conn); m.Type != "resize" || m.Cols != 132 || m.Rows != 40 {
			t.Errorf("after a resize: %+v, want resize 132x40", m)
		}
	})
	t.Run("eight viewers", func(t *testing.T) {
		var conns []*websocket.Conn
		for range MaxViewers {
			conn := open("w")
			if _, m, _ := readMsg(t, ctx, conn); m.Type != "start" {
				t.Fatalf("viewer: %+v", m)
			}
			conns = append(conns, conn)
		}
		_, m, _ := readMsg(t, ctx, open("w"))
		if m.Type != "error" || m.Code != "busy" || !strings.Contains(m.Message, "8 viewers") {
			t.Errorf("a ninth viewer: %+v, want busy", m)
		}
		conns[0].Close(websocket.StatusNormalClosure, "")
		// The slot comes back once the server saw the close.
		deadline := time.Now().Add(5 * time.Second)
		for {
			conn := open("w")
			_, m, _ := readMsg(t, ctx, conn)
			if m.Type == "start" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a viewer after one left: %+v", m)
			}
			conn.CloseNow()
			time.Sleep(20 * time.Millisecond) // polling for the server to see the close
		}
	})
	t.Run("viewer that never reads", func(t *testing.T) {
		conn := open("flood")
		_ = conn // never read
		deadline := time.After(10 * time.Second)
		for {
			select {
			case n := <-released:
				if n == "flood" {
					return // dropped: the watch ended
				}
				continue
			case <-deadline:
				t.Fatal("a viewer that never reads still holds its watch after 10 s (write timeout 300 ms)")
			}
		}
	})
}

func TestIdleStop(t *testing.T) {
	t.Parallel()
	s := start(t, &fakeSessions{}, Options{Idle: 300 * time.Millisecond, Poll: time.Hour})
	c := login(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := dialWS(ctx, s, "/ws/list", c, base(s))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
		t.Fatal("the view stopped with a page connected")
	case <-time.After(time.Second):
	}
	conn.Close(websocket.StatusNormalClosure, "")
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the view still listens 5 s after its last page left (idle 300 ms)")
	}
	if _, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port()), time.Second); err == nil {
		t.Error("the port still accepts connections after the idle stop")
	}
	if _, err := s.URL(""); !errors.Is(err, ErrClosed) {
		t.Errorf("URL of a stopped view: %v, want ErrClosed", err)
	}
}

// TestEmbeddedXtermMatchesLock: the xterm.js shipped in the binary is the
// version package-lock.json pins, byte for byte what VERSION records.
func TestEmbeddedXtermMatchesLock(t *testing.T) {
	t.Parallel()
	lockData, err := os.ReadFile("assets/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	if err := json.Unmarshal(lockData, &lock); err != nil {
		t.Fatal(err)
	}
	want := lock.Packages["node_modules/@xterm/xterm"].Version
	ver, err := static.ReadFile("static/xterm/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(ver)))
	sc.Scan()
	if got := sc.Text(); got != "@xterm/xterm "+want {
		t.Fatalf("embedded %q, the lock pins %s: run go generate ./pkg/view", got, want)
	}
	n := 0
	for sc.Scan() {
		sum, name, _ := strings.Cut(sc.Text(), "  ")
		b, err := static.ReadFile("static/xterm/" + name)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("static/xterm/%s differs from the release VERSION records: run go generate ./pkg/view", name)
		}
		n++
	}
	if n < 2 {
		t.Errorf("VERSION lists %d files, want xterm.js and xterm.css at least", n)
	}
}
