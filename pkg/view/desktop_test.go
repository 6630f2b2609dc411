package view

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fakeDesktops serves one desktop, "d1", whose RFB server is a script on
// a real Unix socket: the handshake, then as many bytes as the viewer
// will take. test/desktop_view_test.go runs the page against Xvnc.
type fakeDesktops struct {
	path     string
	mu       sync.Mutex
	held     string
	watching int           // pages watching (Watch)
	closed   chan struct{} // closed when the server's side of a stream fails
}

func (f *fakeDesktops) RFB(_ context.Context, name string) (string, error) {
	if name != "d1" {
		return "", fmt.Errorf("desktop %q does not exist", name)
	}
	return f.path, nil
}

func (f *fakeDesktops) TakeOver(_ context.Context, name, holder string) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held != "" {
		return nil, fmt.Errorf("%s already took over %s", f.held, name)
	}
	f.held = holder
	return func() { f.mu.Lock(); f.held = ""; f.mu.Unlock() }, nil
}

func (f *fakeDesktops) Watch(name string) func() {
	f.mu.Lock()
	f.watching++
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.watching--
		f.mu.Unlock()
	}
}

func (f *fakeDesktops) List(context.Context) ([]DeskRow, error) {
	return []DeskRow{{Name: "d1", Status: "running", Server: "xvnc", Width: 800, Height: 600, Watchable: true}}, nil
}

func (f *fakeDesktops) holder() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

// serveRFB is a 3.8 server offering None that, after ServerInit, writes
// until the write fails.
func serveRFB(t *testing.T, f *fakeDesktops) {
	ln, err := net.Listen("unix", f.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte("RFB 003.008\n"))
				io.ReadFull(c, make([]byte, 12))
				c.Write([]byte{1, 1})
				io.ReadFull(c, make([]byte, 1))
				c.Write([]byte{0, 0, 0, 0})
				io.ReadFull(c, make([]byte, 1))
				si := make([]byte, 24)
				binary.BigEndian.PutUint16(si, 640)
				binary.BigEndian.PutUint16(si[2:], 480)
				c.Write(si)
				buf := make([]byte, 1<<16)
				for {
					c.SetWriteDeadline(time.Now().Add(30 * time.Second))
					if _, err := c.Write(buf); err != nil {
						close(f.closed)
						return
					}
				}
			}()
		}
	}()
}

func wsDial(t *testing.T, s *Server, c *http.Cookie, path string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	host := fmt.Sprintf("127.0.0.1:%d", s.Port())
	conn, _, err := websocket.Dial(ctx, "ws://"+host+path, &websocket.DialOptions{
		HTTPHeader: http.Header{"Cookie": {c.Name + "=" + c.Value}, "Origin": {"http://" + host}}})
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

func deskMessage(t *testing.T, c *websocket.Conn) DeskMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m DeskMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDesktopPageNeedsThePass(t *testing.T) {
	t.Parallel()
	f := &fakeDesktops{path: filepath.Join(t.TempDir(), "rfb"), closed: make(chan struct{})}
	s := start(t, &fakeSessions{}, Options{Desktops: f})
	base := fmt.Sprintf("http://127.0.0.1:%d", s.Port())
	if res := get(t, base+"/desktop", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the desktop page without a pass: %s", res.Status)
	}
	u, err := s.DesktopURL("d1")
	if err != nil {
		t.Fatal(err)
	}
	if res := get(t, u, nil); res.StatusCode != http.StatusOK || len(res.Cookies()) != 1 {
		t.Fatalf("the desktop page's token: %s %v", res.Status, res.Cookies())
	}
	if res := get(t, u, nil); res.StatusCode != http.StatusForbidden {
		t.Errorf("the token a second time: %s", res.Status)
	}
	c := login(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, path := range []string{"/ws/desktop?name=d1", "/ws/rfb?name=d1&viewer=x"} {
		_, res, err := websocket.Dial(ctx, "ws://127.0.0.1:"+fmt.Sprint(s.Port())+path, &websocket.DialOptions{
			HTTPHeader: http.Header{"Cookie": {c.Name + "=" + c.Value}, "Origin": {"http://attacker.example"}}})
		if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
			t.Errorf("%s from a foreign origin: %v", path, err)
		}
	}
	// An RFB stream needs a viewer of the page's.
	rfb := wsDial(t, s, c, "/ws/rfb?name=d1&viewer="+url.QueryEscape("forged"))
	if _, _, err := rfb.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("an RFB stream without a viewer: %v, want closed as a policy violation", err)
	}
	// No such desktop.
	if m := deskMessage(t, wsDial(t, s, c, "/ws/desktop?name=nosuch")); m.Code != "not_found" || !strings.Contains(m.Message, "nosuch") {
		t.Errorf("a desktop that does not exist: %+v", m)
	}
}

// TestDesktopViewerLeaseAndSlowReader: a viewer takes and hands back the
// lease, a second is refused it while the first holds it, the page going
// away ends it, and a viewer whose RFB stream is never read is dropped
// after the write timeout.
func TestDesktopViewerLeaseAndSlowReader(t *testing.T) {
	t.Parallel()
	f := &fakeDesktops{path: filepath.Join(t.TempDir(), "rfb"), closed: make(chan struct{})}
	serveRFB(t, f)
	s := start(t, &fakeSessions{}, Options{Desktops: f, WriteTimeout: 300 * time.Millisecond})
	c := login(t, s)
	v1 := wsDial(t, s, c, "/ws/desktop?name=d1")
	m := deskMessage(t, v1)
	if m.Type != "start" || m.Viewer == "" {
		t.Fatalf("first message %+v", m)
	}
	ctx := context.Background()
	v1.Write(ctx, websocket.MessageText, []byte(`{"type":"take"}`))
	if m := deskMessage(t, v1); m.Type != "lease" || !m.Held || !strings.Contains(f.holder(), "view page") {
		t.Fatalf("take: %+v, holder %q", m, f.holder())
	}
	v2 := wsDial(t, s, c, "/ws/desktop?name=d1")
	deskMessage(t, v2)
	v2.Write(ctx, websocket.MessageText, []byte(`{"type":"take"}`))
	if m := deskMessage(t, v2); m.Code != "busy" || !strings.Contains(m.Message, "already took over") {
		t.Errorf("a second take-over: %+v", m)
	}
	v1.Write(ctx, websocket.MessageText, []byte(`{"type":"hand_back"}`))
	if m := deskMessage(t, v1); m.Type != "lease" || m.Held || f.holder() != "" {
		t.Errorf("hand back: %+v, holder %q", m, f.holder())
	}
	v2.Write(ctx, websocket.MessageText, []byte(`{"type":"take"}`))
	if m := deskMessage(t, v2); !m.Held {
		t.Fatalf("take after hand back: %+v", m)
	}
	v2.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(5 * time.Second)
	for f.holder() != "" {
		if time.Now().After(deadline) {
			t.Fatal("the lease outlived its page")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The RFB stream: a handshake, then the page stops reading.
	rfb := wsDial(t, s, c, "/ws/rfb?name=d1&viewer="+url.QueryEscape(m.Viewer))
	nc := websocket.NetConn(ctx, rfb, websocket.MessageBinary)
	r := bufio.NewReader(nc)
	io.ReadFull(r, make([]byte, 12))
	nc.Write([]byte("RFB 003.008\n"))
	io.ReadFull(r, make([]byte, 2))
	nc.Write([]byte{1})
	io.ReadFull(r, make([]byte, 4))
	nc.Write([]byte{1})
	if _, err := io.ReadFull(r, make([]byte, 24)); err != nil {
		t.Fatalf("ServerInit through the view: %v", err)
	}
	select {
	case <-f.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("a viewer that never reads was not dropped")
	}
}

// TestShippedNoVNCIsThePinnedRelease: static/novnc holds the release
// assets/novnc.sh pins (version and integrity), every file byte for byte
// as VERSION records it, and nothing VERSION does not list.
func TestShippedNoVNCIsThePinnedRelease(t *testing.T) {
	script, err := os.ReadFile("assets/novnc.sh")
	if err != nil {
		t.Fatal(err)
	}
	pin := func(key string) string {
		for _, l := range strings.Split(string(script), "\n") {
			if v, ok := strings.CutPrefix(l, key+"="); ok {
				return v
			}
		}
		return ""
	}
	ver, err := static.ReadFile("static/novnc/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ver)), "\n")
	if want := "@novnc/novnc " + pin("version") + " " + pin("integrity"); lines[0] != want {
		t.Fatalf("VERSION says %q, the script pins %q: run go generate ./pkg/view", lines[0], want)
	}
	listed := map[string]bool{}
	for _, l := range lines[1:] {
		sum, name, _ := strings.Cut(l, "  ")
		name = strings.TrimPrefix(name, "./")
		listed[name] = true
		b, err := static.ReadFile("static/novnc/" + name)
		if err != nil {
			t.Errorf("VERSION lists %s, missing from the build: %v", name, err)
			continue
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
			t.Errorf("static/novnc/%s differs from the release VERSION records: run go generate ./pkg/view", name)
		}
	}
	for _, must := range []string{"core/rfb.js", "LICENSE.txt", "docs/LICENSE.MPL-2.0", "vendor/pako/LICENSE"} {
		if !listed[must] {
			t.Errorf("VERSION does not list %s", must)
		}
	}
	fs.WalkDir(static, "static/novnc", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != "static/novnc/VERSION" && !listed[strings.TrimPrefix(p, "static/novnc/")] {
			t.Errorf("%s is shipped but not in VERSION", p)
		}
		return nil
	})
}
