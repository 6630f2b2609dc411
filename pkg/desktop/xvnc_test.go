package desktop

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needXvnc(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("Xvnc"); err != nil {
		t.Skip("Xvnc is not installed (Debian package tigervnc-standalone-server)")
	}
}

// rfbServerInit does a whole RFB 3.8 handshake with security type None on
// the socket and returns the framebuffer's size from ServerInit.
func rfbServerInit(t *testing.T, path string) (w, h int) {
	t.Helper()
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	ver := make([]byte, 12)
	if _, err := io.ReadFull(r, ver); err != nil || string(ver) != "RFB 003.008\n" {
		t.Fatalf("RFB version %q, %v; want \"RFB 003.008\\n\"", ver, err)
	}
	c.Write([]byte("RFB 003.008\n"))
	n, err := r.ReadByte()
	if err != nil || n == 0 {
		t.Fatalf("security types: count %d, %v", n, err)
	}
	types := make([]byte, n)
	io.ReadFull(r, types)
	if !strings.Contains(string(types), "\x01") {
		t.Fatalf("security types %v do not offer None (1)", types)
	}
	c.Write([]byte{1})
	var result uint32
	if err := binary.Read(r, binary.BigEndian, &result); err != nil || result != 0 {
		t.Fatalf("security result %d, %v", result, err)
	}
	c.Write([]byte{1}) // ClientInit: shared
	var init struct {
		W, H   uint16
		Format [16]byte
		Len    uint32
	}
	if err := binary.Read(r, binary.BigEndian, &init); err != nil {
		t.Fatalf("ServerInit: %v", err)
	}
	return int(init.W), int(init.H)
}

// tcpInodes are the socket inodes of every TCP socket (IPv4 and IPv6).
func tcpInodes(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if fs := strings.Fields(line); len(fs) > 9 {
				out[fs[9]] = true
			}
		}
	}
	return out
}

// socketInodes are the socket inodes pid holds open.
func socketInodes(t *testing.T, pid int) []string {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]"))
		}
	}
	return out
}

func TestXvncDesktopServesRFBOnlyOnItsSocket(t *testing.T) {
	needXvnc(t)
	t.Parallel()
	m := newManager(t, 1430, 1444, nil)
	// The default is Xvnc when it is installed.
	d, err := m.New(context.Background(), Spec{Name: "v1", WM: WMNone, Width: 1024, Height: 700})
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind() != ServerXvnc || d.RFB != filepath.Join(m.path("v1"), rfbName) {
		t.Fatalf("desktop %+v, want xvnc with its RFB socket in its directory", d)
	}
	st, err := os.Lstat(d.RFB)
	if err != nil || st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Fatalf("RFB socket %s: %v %v, want a socket of mode 0600", d.RFB, st, err)
	}
	if dst, err := os.Stat(filepath.Dir(d.RFB)); err != nil || dst.Mode().Perm() != 0o700 {
		t.Fatalf("the RFB socket's directory: %v %v, want 0700", dst, err)
	}
	if w, h := rfbServerInit(t, d.RFB); w != 1024 || h != 700 {
		t.Errorf("ServerInit says %dx%d, want 1024x700", w, h)
	}
	// The same X access rules as Xvfb: the cookie, never -ac.
	cookie, err := readCookie(d.Authority)
	if err != nil {
		t.Fatal(err)
	}
	if err := probe(d.Number, cookie, time.Second); err != nil {
		t.Fatalf("probe with the cookie: %v", err)
	}
	if err := probe(d.Number, nil, time.Second); !errors.Is(err, errNotOurs) {
		t.Fatalf("probe without a cookie: %v, want refused", err)
	}
	// No TCP socket at all in the server: neither RFB nor X.
	tcp := tcpInodes(t)
	socks := socketInodes(t, d.Server.PID)
	if len(socks) == 0 {
		t.Fatal("the server holds no sockets; the check would prove nothing")
	}
	for _, s := range socks {
		if tcp[s] {
			t.Errorf("the Xvnc server (pid %d) holds TCP socket inode %s", d.Server.PID, s)
		}
	}
	if ls := m.List(); len(ls) != 1 || ls[0].Status != StatusRunning || ls[0].RFB != d.RFB {
		t.Fatalf("list %+v", ls)
	}
	if err := m.Remove(context.Background(), "v1"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{socketPath(d.Number), lockPath(d.Number), d.Authority, d.RFB, filepath.Dir(d.Authority)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after rm (%v)", p, err)
		}
	}
	for _, p := range []member{d.Worker, d.Server, d.DBus} {
		if p.PID > 0 && p.alive(0) {
			t.Errorf("process %d is left after rm", p.PID)
		}
	}
}

// TestXvncKilledLeavesNoRFBSocket: a server killed by hand (it cannot
// unlink its socket) is noticed and its RFB socket removed.
func TestXvncKilledLeavesNoRFBSocket(t *testing.T) {
	needXvnc(t)
	t.Parallel()
	m := newManager(t, 1445, 1454, nil)
	d, err := m.New(context.Background(), Spec{Name: "v2", WM: WMNone, Server: ServerXvnc})
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(d.Server.PID, syscall.SIGKILL)
	await(t, "the desktop marked dead", 10*time.Second, func() bool {
		g, err := m.Get("v2")
		return err == nil && g.Status == StatusDead
	})
	for _, p := range []string{d.RFB, socketPath(d.Number), lockPath(d.Number), d.Authority} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after the server was killed (%v)", p, err)
		}
	}
}

func TestServerChoiceAndBadInput(t *testing.T) {
	t.Parallel()
	m := newManager(t, 1455, 1459, func(o *Options) { o.Xvnc = "/nonexistent/Xvnc" })
	if _, err := m.New(context.Background(), Spec{Server: "vnc"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "xvfb or xvnc") {
		t.Errorf("unknown server: %v", err)
	}
	_, err := m.New(context.Background(), Spec{Server: ServerXvnc, WM: WMNone})
	if !errors.Is(err, ErrStartFailed) || !strings.Contains(err.Error(), "tigervnc-standalone-server") {
		t.Errorf("xvnc asked for but not installed: %v, want the package named", err)
	}
	if ls := m.List(); len(ls) != 0 {
		t.Errorf("left behind: %+v", ls)
	}
	// Without Xvnc the default is Xvfb.
	needXvfb(t)
	d, err := m.New(context.Background(), Spec{Name: "f1", WM: WMNone})
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind() != ServerXvfb || d.RFB != "" {
		t.Errorf("desktop %+v, want xvfb without an RFB socket", d)
	}
	// And the config's default overrides the pick.
	m2 := newManager(t, 1460, 1464, func(o *Options) { o.DefaultServer = ServerXvfb })
	if kind, _, err := m2.pickServer(""); err != nil || kind != ServerXvfb {
		t.Errorf("DefaultServer xvfb: %s %v", kind, err)
	}
}

func TestResizeXvncDesktop(t *testing.T) {
	needXvnc(t)
	if _, err := exec.LookPath("xrandr"); err != nil {
		t.Skip("xrandr is not installed (Debian package x11-xserver-utils)")
	}
	t.Parallel()
	m := newManager(t, 1465, 1474, nil)
	d, err := m.New(context.Background(), Spec{Name: "r1", WM: WMNone, Server: ServerXvnc, Width: 800, Height: 600})
	if err != nil {
		t.Fatal(err)
	}
	// An odd size (a new mode) and a built-in one, growing and shrinking.
	for _, sz := range [][2]int{{1000, 700}, {1920, 1080}, {640, 480}} {
		r, err := m.Resize(context.Background(), "r1", sz[0], sz[1])
		if err != nil {
			t.Fatal(err)
		}
		if r.Width != sz[0] || r.Height != sz[1] {
			t.Errorf("resize to %v: %dx%d", sz, r.Width, r.Height)
		}
		if w, h := rfbServerInit(t, d.RFB); w != sz[0] || h != sz[1] {
			t.Errorf("after resize to %v RFB ServerInit says %dx%d", sz, w, h)
		}
		if ls := m.List(); len(ls) != 1 || ls[0].Width != sz[0] || ls[0].Height != sz[1] {
			t.Errorf("list after resize to %v: %+v", sz, ls)
		}
	}
	if _, err := m.Resize(context.Background(), "r1", 100, 100); !errors.Is(err, ErrInvalid) {
		t.Errorf("resize out of range: %v", err)
	}
	if _, err := m.Resize(context.Background(), "nope", 800, 600); !errors.Is(err, ErrNotFound) {
		t.Errorf("resize of an unknown desktop: %v", err)
	}
	needXvfb(t)
	if _, err := m.New(context.Background(), Spec{Name: "fb", WM: WMNone, Server: ServerXvfb}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Resize(context.Background(), "fb", 800, 600); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "--server xvnc") {
		t.Errorf("resize of an Xvfb desktop: %v", err)
	}
}

// TestXvncCollisionIsRetried: a display another server holds makes Xvnc
// exit before it reports; the next candidate is taken, and the other
// server keeps its socket.
func TestXvncCollisionIsRetried(t *testing.T) {
	needXvnc(t)
	needXvfb(t)
	t.Parallel()
	other := exec.Command("Xvfb", ":1475", "-nolisten", "tcp")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Signal(syscall.SIGTERM); other.Wait() })
	await(t, "the other server", 10*time.Second, func() bool { return probe(1475, nil, time.Second) == nil })
	xvnc, _ := exec.LookPath("Xvnc")
	dir := t.TempDir()
	w := &worker{spec: workerSpec{Dir: dir, Candidates: []int{1475, 1476}, Server: xvnc, Timeout: 10 * time.Second, Grace: time.Second},
		log: io.Discard, d: Desktop{Name: "x1", Width: 640, Height: 480, WM: WMNone, Layout: DefaultLayout,
			ServerKind: ServerXvnc, RFB: filepath.Join(dir, rfbName)}}
	ready := w.start(context.Background())
	t.Cleanup(func() { w.stopAll(); w.cleanup() })
	if !ready.OK || ready.Desktop.Number != 1476 {
		t.Fatalf("got %+v, want display 1476", ready)
	}
	if w, h := rfbServerInit(t, ready.Desktop.RFB); w != 640 || h != 480 {
		t.Errorf("RFB ServerInit %dx%d", w, h)
	}
	if _, err := os.Lstat(socketPath(1475)); err != nil {
		t.Fatalf("the other server's socket is gone: %v", err)
	}
}
