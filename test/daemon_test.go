package test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStopsCleanlyOnSignals(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		h := newHome(t)
		d := h.startDaemon(nil)
		d.cmd.Process.Signal(sig)
		if err := d.wait(10 * time.Second); err != nil {
			t.Errorf("%v: agentd exited with %v, want status 0\n%s", sig, err, d.stderr)
		}
		if _, err := os.Lstat(h.socket); !os.IsNotExist(err) {
			t.Errorf("%v: socket still there after a clean stop (%v)", sig, err)
		}
	}
}

func TestSecondDaemonNamesTheFirst(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	first := h.startDaemon(nil)
	second := h.spawnDaemon(nil)
	err := second.wait(5 * time.Second)
	if err == nil {
		t.Fatal("second agentd exited 0, want non-zero")
	}
	pid := first.cmd.Process.Pid
	if !strings.Contains(second.stderr.String(), fmt.Sprintf("already running (pid %d)", pid)) {
		t.Errorf("second agentd said %q, want it to name pid %d", second.stderr, pid)
	}
	if err := h.hello(); err != nil {
		t.Errorf("first daemon disturbed: %v", err)
	}
}

func TestRestartAfterKill9ReplacesStaleSocket(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	d.cmd.Process.Kill()
	d.wait(5 * time.Second)
	if _, err := os.Lstat(h.socket); err != nil {
		t.Fatalf("kill -9 should leave the socket behind: %v", err)
	}
	h.startDaemon(nil)
	if err := h.hello(); err != nil {
		t.Errorf("restarted daemon not reachable: %v", err)
	}
}

func TestUnsafeSocketDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	dir := filepath.Join(h.runtime, "agentd")
	os.Mkdir(dir, 0o755)
	os.Chmod(dir, 0o755)
	d := h.spawnDaemon(nil)
	if err := d.wait(5 * time.Second); err == nil {
		t.Fatal("agentd started on a directory open to others")
	}
	if !strings.Contains(d.stderr.String(), "chmod 700 "+dir) {
		t.Errorf("agentd said %q, want it to say chmod 700 %s", d.stderr, dir)
	}
}

// notifyListener is our own NOTIFY_SOCKET: it collects sd_notify messages.
func notifyListener(t *testing.T) (string, <-chan string) {
	t.Helper()
	dir, _ := os.MkdirTemp("", "nt")
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	msgs := make(chan string, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return path, msgs
}

func next(t *testing.T, msgs <-chan string, timeout time.Duration) (string, bool) {
	t.Helper()
	select {
	case m, ok := <-msgs:
		return m, ok
	case <-time.After(timeout):
		return "", false
	}
}

func TestSystemdReadinessAndWatchdog(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	path, msgs := notifyListener(t)
	d := h.spawnDaemon(nil, "NOTIFY_SOCKET="+path, "WATCHDOG_USEC=200000")
	m, ok := next(t, msgs, 10*time.Second)
	if !ok || !strings.HasPrefix(m, "READY=1") {
		t.Fatalf("first notification %q, want READY=1", m)
	}
	// READY=1 comes only once the daemon serves.
	if err := h.hello(); err != nil {
		t.Fatalf("READY=1 sent but hello failed: %v", err)
	}
	// WATCHDOG=1 at half of WATCHDOG_USEC: about every 100 ms.
	start := time.Now()
	pings := 0
	for pings < 5 {
		m, ok := next(t, msgs, 2*time.Second)
		if !ok {
			t.Fatalf("after %d pings: no more notifications", pings)
		}
		if m == "WATCHDOG=1" {
			pings++
		}
	}
	if took := time.Since(start); took < 350*time.Millisecond || took > 2*time.Second {
		t.Errorf("5 watchdog pings took %s, want about 500ms (period 100ms)", took)
	}
	// A stopped daemon sends no pings.
	d.cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(50 * time.Millisecond) // let a ping already in flight arrive
	for len(msgs) > 0 {
		<-msgs
	}
	if m, ok := next(t, msgs, 400*time.Millisecond); ok {
		t.Errorf("stopped daemon sent %q", m)
	}
	d.cmd.Process.Signal(syscall.SIGCONT)
	d.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.After(10 * time.Second)
	for stopping := false; !stopping; {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("notify socket closed")
			}
			stopping = m == "STOPPING=1"
		case <-deadline:
			t.Fatal("no STOPPING=1 after SIGTERM")
		}
	}
	if err := d.wait(10 * time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
}

func TestSocketActivation(t *testing.T) {
	t.Parallel()
	sa, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Skip("systemd-socket-activate not installed (Debian package systemd)")
	}
	h := newHome(t)
	os.MkdirAll(filepath.Dir(h.socket), 0o700)
	cmd := exec.Command(sa, "-l", h.socket, bin.agentd, "--log-format", "json")
	cmd.Env = h.env()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("systemd-socket-activate did not exit after SIGKILL")
		}
	})
	await(t, 5*time.Second, "systemd-socket-activate listening", func() bool {
		_, err := os.Lstat(h.socket)
		return err == nil
	})
	before, _ := os.Lstat(h.socket)
	// The first connection starts the daemon, which serves it.
	out, errOut, code := h.agentctl("", "--json", "hello")
	if code != 0 {
		t.Fatalf("agentctl hello through activation: %d %s %s\n%s", code, out, errOut, stderr)
	}
	var env struct {
		Result struct{ Socket string } `json:"result"`
	}
	json.Unmarshal([]byte(out), &env)
	if env.Result.Socket != h.socket {
		t.Errorf("daemon reports socket %q, want the activated %q", env.Result.Socket, h.socket)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("activated daemon did not stop")
	}
	after, err := os.Lstat(h.socket)
	if err != nil || !os.SameFile(before, after) {
		t.Errorf("the socket systemd passed was unlinked or re-created (%v)", err)
	}
}

func TestVersionWarnsWhenTheRunningDaemonIsNotInstalled(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	out, errOut, code := h.agentctl("", "version")
	if code != 0 || !strings.Contains(out, "agentd   0.") || strings.Contains(out, "warning") {
		t.Fatalf("version: exit %d, out %q, err %q; want the daemon's version and no warning", code, out, errOut)
	}
	// Install a different build beside a copy of agentctl, as an upgrade
	// would, while the old daemon keeps running.
	dir := t.TempDir()
	build := exec.Command("go", "build", "-ldflags", "-X github.com/agentd/agentd/internal/buildinfo.Version=9.9.9", "-o", dir, "../cmd/agentd")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	// A hard link, or else a copy made by cp: had this process written the
	// file, a child forked meanwhile by a parallel test could still hold
	// the written descriptor, and exec would fail with "text file busy".
	ctl := filepath.Join(dir, "agentctl")
	if err := os.Link(bin.agentctl, ctl); err != nil {
		if b, err := exec.Command("cp", bin.agentctl, ctl).CombinedOutput(); err != nil {
			t.Fatalf("cp agentctl: %v %s", err, b)
		}
	}
	cmd := exec.Command(ctl, "version")
	cmd.Env = h.env()
	b, err := cmd.Output()
	if err != nil || !strings.Contains(string(b), "warning: the running agentd") || !strings.Contains(string(b), "restart") {
		t.Errorf("version beside a newer agentd: %v %q, want a warning to restart", err, b)
	}
}
