package desktop

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testhome"
)

// TestMain makes the test binary a desktop worker when a Manager starts it
// (the worker's environment names its directory), or a stand-in X server
// when a test's script runs it so (fakeX).
func TestMain(m *testing.M) {
	if os.Getenv(fakeXEnv) != "" {
		os.Exit(fakeX(os.Args[1:]))
	}
	if len(os.Args) > 1 && os.Args[1] == WorkerArg {
		// openbox's --startup command: the worker's binary, this one.
		os.Exit(RunWorker(context.Background(), os.Args[2:], os.Stderr))
	}
	if os.Getenv("AGENTD_DESKTOP_DIR") != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		code := RunWorker(ctx, nil, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(testhome.Main(m))
}

func needXvfb(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("Xvfb"); err != nil {
		t.Skip("Xvfb is not installed (Debian package xvfb)")
	}
}

// newManager gives a test a Manager on private directories and a display
// range of its own, so parallel tests never race for numbers.
func newManager(t testing.TB, first, last int, edit func(*Options)) *Manager {
	t.Helper()
	rt, err := os.MkdirTemp("", "dsk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	opts := Options{StateDir: t.TempDir(), RuntimeDir: rt, WorkerCommand: []string{os.Args[0]},
		FirstDisplay: first, LastDisplay: last, StartTimeout: 10 * time.Second}
	if edit != nil {
		edit(&opts)
	}
	m, err := NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range m.List() {
			m.Remove(context.Background(), d.Name)
		}
	})
	return m
}

func await(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNewDesktopAnswersAndRmLeavesNothing(t *testing.T) {
	needXvfb(t)
	t.Parallel()
	m := newManager(t, 1300, 1319, nil)
	d, err := m.New(context.Background(), Spec{Name: "d1", WM: WMNone})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != StatusRunning || d.Number < 1300 || d.Number > 1319 || d.Display != ":"+strconv.Itoa(d.Number) {
		t.Fatalf("desktop %+v", d)
	}
	st, err := os.Stat(d.Authority)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("cookie file %s: %v %v", d.Authority, st, err)
	}
	cookie, err := readCookie(d.Authority)
	if err != nil {
		t.Fatal(err)
	}
	if err := probe(d.Number, cookie, time.Second); err != nil {
		t.Fatalf("probe with the cookie: %v", err)
	}
	// Never -ac: a client without the cookie is refused.
	if err := probe(d.Number, nil, time.Second); !errors.Is(err, errNotOurs) {
		t.Fatalf("probe without a cookie: %v, want refused", err)
	}
	if ls := m.List(); len(ls) != 1 || ls[0].Status != StatusRunning {
		t.Fatalf("list %+v", ls)
	}
	// The worker's control socket is its owner's alone, and takes the
	// clipboard's text.
	if st, err := os.Lstat(d.Control); err != nil || st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Fatalf("control socket %q: %v %v, want a socket of mode 0600", d.Control, st, err)
	}
	if err := m.ClipSet(context.Background(), "d1", "from the worker"); err != nil {
		t.Fatalf("clip set: %v", err)
	}
	if err := m.ClipSet(context.Background(), "nope", "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("clip set on no desktop: %v, want ErrNotFound", err)
	}
	// The bus starts when its first client connects: none runs idle, and
	// a client's call is answered.
	if d.Bus != "unix:path="+filepath.Join(m.opts.RuntimeDir, "d1.bus") || d.DBus.PID != 0 {
		t.Errorf("bus %q, pid %d; want the socket's address and no bus yet", d.Bus, d.DBus.PID)
	}
	var bus member
	if _, err := exec.LookPath("dbus-send"); err == nil {
		out, err := exec.Command("dbus-send", "--bus="+d.Bus, "--print-reply", "--dest=org.freedesktop.DBus",
			"/org/freedesktop/DBus", "org.freedesktop.DBus.GetId").CombinedOutput()
		if err != nil {
			t.Fatalf("the desktop's bus does not answer: %v %s", err, out)
		}
		await(t, "the bus recorded in the manifest", 5*time.Second, func() bool {
			nd, err := m.Get("d1")
			bus = nd.DBus
			return err == nil && bus.PID > 0 && bus.alive(d.Worker.PID)
		})
	}
	if err := m.Remove(context.Background(), "d1"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{socketPath(d.Number), lockPath(d.Number), d.Authority, d.Control, filepath.Dir(d.Authority)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after rm (%v)", p, err)
		}
	}
	for _, p := range []member{d.Worker, d.Server, bus} {
		if p.PID > 0 && p.alive(0) {
			t.Errorf("process %d is left after rm", p.PID)
		}
	}
	if _, err := m.Get("d1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after rm: %v", err)
	}
}

func TestServerKilledByHandIsNoticedAndCleaned(t *testing.T) {
	needXvfb(t)
	t.Parallel()
	m := newManager(t, 1320, 1339, nil)
	d, err := m.New(context.Background(), Spec{Name: "k1", WM: WMNone})
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(d.Server.PID, syscall.SIGKILL)
	await(t, "the desktop to be marked dead", 10*time.Second, func() bool {
		g, err := m.Get("k1")
		return err == nil && g.Status == StatusDead
	})
	g, _ := m.Get("k1")
	if !strings.Contains(g.Reason, "X server exited") {
		t.Errorf("reason %q", g.Reason)
	}
	for _, p := range []string{socketPath(d.Number), lockPath(d.Number), d.Authority} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after the server died (%v)", p, err)
		}
	}
	await(t, "the worker to end", 5*time.Second, func() bool { return !d.Worker.alive(0) })
}

func TestWholeGroupKilledIsNoticedByList(t *testing.T) {
	needXvfb(t)
	t.Parallel()
	m := newManager(t, 1340, 1359, nil)
	d, err := m.New(context.Background(), Spec{Name: "g1", WM: WMNone})
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(-d.Worker.PID, syscall.SIGKILL)
	await(t, "the group to end", 5*time.Second, func() bool { return groupGone(d.Worker.PID) })
	ls := m.List()
	if len(ls) != 1 || ls[0].Status != StatusDead {
		t.Fatalf("list after kill -9 of the group: %+v", ls)
	}
	for _, p := range []string{socketPath(d.Number), lockPath(d.Number), d.Authority} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left (%v)", p, err)
		}
	}
	// A dead desktop does not count against the cap and can be removed.
	if err := m.Remove(context.Background(), "g1"); err != nil {
		t.Fatal(err)
	}
}

func TestCapRefusesOneMore(t *testing.T) {
	needXvfb(t)
	t.Parallel()
	m := newManager(t, 1360, 1379, func(o *Options) { o.MaxDesktops = 2 })
	for _, n := range []string{"c1", "c2"} {
		if _, err := m.New(context.Background(), Spec{Name: n, WM: WMNone}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.New(context.Background(), Spec{Name: "c3", WM: WMNone})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("third desktop over a cap of 2: %v", err)
	}
	if _, serr := os.Lstat(m.path("c3")); !errors.Is(serr, os.ErrNotExist) {
		t.Fatal("a refused desktop left its directory")
	}
}

func TestDisplayRangeExhausted(t *testing.T) {
	needXvfb(t)
	t.Parallel()
	m := newManager(t, 1380, 1380, nil)
	if _, err := m.New(context.Background(), Spec{Name: "r1", WM: WMNone}); err != nil {
		t.Fatal(err)
	}
	_, err := m.New(context.Background(), Spec{Name: "r2", WM: WMNone})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), ":1380-:1380") {
		t.Fatalf("second desktop in a range of one: %v", err)
	}
}

// A number taken by another server between the Manager's check and
// Xvfb's own start (the check cannot see the future) makes Xvfb exit
// before it reports; the worker tries the next candidate.
func TestCollisionIsRetried(t *testing.T) {
	needXvfb(t)
	t.Parallel()
	other := exec.Command("Xvfb", ":1390", "-nolisten", "tcp")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	// SIGTERM: a killed server would leave its socket and lock behind.
	t.Cleanup(func() { other.Process.Signal(syscall.SIGTERM); other.Wait() })
	await(t, "the other server", 10*time.Second, func() bool { return probe(1390, nil, time.Second) == nil })
	xvfb, _ := exec.LookPath("Xvfb")
	w := &worker{spec: workerSpec{Dir: t.TempDir(), Candidates: []int{1390, 1391}, Server: xvfb, Timeout: 10 * time.Second, Grace: time.Second},
		log: io.Discard, d: Desktop{Name: "x1", Width: 640, Height: 480, WM: WMNone, Layout: DefaultLayout}}
	ready := w.start(context.Background())
	t.Cleanup(func() { w.stopAll(); w.cleanup() })
	if !ready.OK || ready.Desktop.Number != 1391 {
		t.Fatalf("got %+v, want display 1391", ready)
	}
	// And when every candidate is taken, the start says busy.
	w2 := &worker{spec: workerSpec{Dir: t.TempDir(), Candidates: []int{1390}, Server: xvfb, Timeout: 10 * time.Second, Grace: time.Second},
		log: io.Discard, d: Desktop{Name: "x2", Width: 640, Height: 480, WM: WMNone, Layout: DefaultLayout}}
	if r := w2.start(context.Background()); r.OK || !r.Busy || !strings.Contains(r.Error, ":1390") {
		t.Fatalf("all taken: %+v", r)
	}
	w2.stopAll()
	w2.cleanup()
	// The other server keeps its socket and lock and still answers (given
	// time: the machine may be loaded).
	for _, p := range []string{socketPath(1390), lockPath(1390)} {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("the other server's %s is gone: %v", p, err)
		}
	}
	await(t, "the other server to answer", 10*time.Second, func() bool {
		err := probe(1390, nil, 5*time.Second)
		return err == nil || errors.Is(err, errNotOurs)
	})
}

func TestServerThatNeverReportsIsEndedAtTheDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := filepath.Join(dir, "Xvfb")
	pidFile := filepath.Join(dir, "pid")
	os.WriteFile(fake, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 600\n"), 0o755)
	m := newManager(t, 1400, 1409, func(o *Options) { o.Server = fake; o.StartTimeout = 500 * time.Millisecond })
	_, err := m.New(context.Background(), Spec{Name: "h1", WM: WMNone})
	if !errors.Is(err, ErrStartFailed) || !strings.Contains(err.Error(), "did not report its display number") {
		t.Fatalf("silent server: %v", err)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatal("the fake server never ran")
	}
	await(t, "the silent server to be gone", 5*time.Second, func() bool { _, _, ok := procStart(pid); return !ok })
	if _, serr := os.Lstat(m.path("h1")); !errors.Is(serr, os.ErrNotExist) {
		t.Fatal("the failed desktop left its directory")
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	m := newManager(t, 1410, 1419, nil)
	for _, c := range []struct {
		spec Spec
		kind error
		want string
	}{
		{Spec{Name: "Bad Name"}, ErrInvalid, "not valid"},
		{Spec{Name: "new"}, ErrInvalid, "reserved"},
		{Spec{Width: 100, Height: 800}, ErrInvalid, "320 to 7680"},
		{Spec{Width: 8000, Height: 800}, ErrInvalid, "320 to 7680"},
		{Spec{WM: "kwin"}, ErrInvalid, "openbox or none"},
		{Spec{Layout: "xx-nope"}, ErrInvalid, "unknown"},
		{Spec{Layout: "US"}, ErrInvalid, "not an XKB layout"},
	} {
		_, err := m.New(context.Background(), c.spec)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %v with %q", c.spec, err, c.kind, c.want)
		}
	}
	for _, s := range []string{"1280", "1280x", "x800", "axb", "1280x800x24", "+1280x800", "100x800"} {
		if _, _, err := ParseSize(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseSize(%q): %v", s, err)
		}
	}
	if w, h, err := ParseSize("1024x768"); err != nil || w != 1024 || h != 768 {
		t.Errorf("ParseSize(1024x768) = %d %d %v", w, h, err)
	}
	if _, err := m.Get("nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "desktop ls") {
		t.Errorf("unknown desktop: %v", err)
	}
}

// TestHalfStartedRemainsAreReaped: the directory of a start that died
// before its manifest is removed once older than any start, unless a
// process is still its worker.
func TestHalfStartedRemainsAreReaped(t *testing.T) {
	t.Parallel()
	m := newManager(t, 1420, 1429, func(o *Options) { o.StartTimeout = time.Second; o.StopGrace = time.Second })
	old := time.Now().Add(-time.Hour)
	for _, n := range []string{"dead1", "live1"} {
		os.Mkdir(m.path(n), 0o700)
		os.WriteFile(filepath.Join(m.path(n), "worker.log"), nil, 0o600)
		os.Chtimes(m.path(n), old, old)
	}
	// A process standing for live1's worker.
	w := exec.Command("sleep", "600")
	w.Env = append(os.Environ(), "AGENTD_DESKTOP_DIR="+m.path("live1"))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Process.Kill(); w.Wait() }()
	m.List()
	if _, err := os.Lstat(m.path("dead1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dead1's remains are still there: %v", err)
	}
	if _, err := os.Lstat(m.path("live1")); err != nil {
		t.Errorf("live1, whose worker runs, was removed: %v", err)
	}
}
