// Package test runs the real agentd and agentctl binaries against real
// sockets, processes and (for the screen) Xvfb. TestMain builds the
// binaries once; every test gets its own runtime and state directories.
package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testhome"
	"github.com/agentd/agentd/pkg/wire"
)

// bin holds the binaries TestMain built.
var bin struct {
	dir      string
	agentd   string
	agentctl string
}

func TestMain(m *testing.M) {
	// The whole suite runs in a private home (HOME, XDG directories,
	// TMPDIR): the binaries are built there, the programs sessions run keep
	// their history there, and all of it is removed after; testhome fails
	// the run if anything appeared in the real HOME or temp directory.
	os.Exit(testhome.Run(func() int { return runSuite(m) }))
}

// runSuite builds the binaries once and runs the tests.
func runSuite(m *testing.M) int {
	dir, err := os.MkdirTemp("", "agentd-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin.dir = dir
	bin.agentd = filepath.Join(dir, "agentd")
	bin.agentctl = filepath.Join(dir, "agentctl")
	out, err := exec.Command("go", "build", "-o", dir, "../cmd/agentd").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		return 1
	}
	// The clients as the Makefile builds them: static, without cgo, which
	// halves agentctl's start-up.
	clients := exec.Command("go", "build", "-o", dir, "../cmd/agentctl", "../cmd/agentctl-mcp")
	clients.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := clients.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	if n := killStrays(dir); n > 0 {
		fmt.Fprintf(os.Stderr, "test: killed %d processes still running from %s after the tests\n", n, dir)
	}
	return code
}

// killStrays kills processes running a binary from dir (workers whose
// sessions a failed test left behind) and their process groups.
func killStrays(dir string) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err != nil || !strings.HasPrefix(exe, dir+"/") {
			continue
		}
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGKILL)
		n++
	}
	return n
}

// home is one test's private runtime and state directories.
type home struct {
	t       testing.TB
	runtime string // XDG_RUNTIME_DIR
	state   string // XDG_STATE_HOME
	config  string // XDG_CONFIG_HOME
	socket  string
	// start starts the daemon's process; nil is cmd.Start. A test sets it
	// to start agentd elsewhere, e.g. in a network namespace of its own.
	start func(cmd *exec.Cmd) error
}

func newHome(t *testing.T) *home { return newHomeTB(t) }

// newHomeTB is newHome for tests and benchmarks alike.
func newHomeTB(t testing.TB) *home {
	t.Helper()
	// Short: the session sockets under it must fit in sun_path.
	rt := testhome.ShortDir(t)
	base := t.TempDir()
	return &home{t: t, runtime: rt, state: filepath.Join(base, "state"), config: filepath.Join(base, "config"),
		socket: filepath.Join(rt, "agentd", "agentd.sock")}
}

// env is the environment for processes of this home.
func (h *home) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "AGENTD_SOCKET", "NOTIFY_SOCKET",
			"WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "DISPLAY":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "XDG_RUNTIME_DIR="+h.runtime, "XDG_STATE_HOME="+h.state, "XDG_CONFIG_HOME="+h.config)
	return append(env, extra...)
}

// daemonProc is a running agentd process.
type daemonProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// startDaemon starts agentd with args and waits until it answers hello. At
// the end of the test it must stop cleanly on SIGTERM with exit status 0.
func (h *home) startDaemon(args []string, extraEnv ...string) *daemonProc {
	h.t.Helper()
	d := h.spawnDaemon(args, extraEnv...)
	await(h.t, 10*time.Second, "agentd serving", func() bool {
		select {
		case <-d.done:
			h.t.Fatalf("agentd exited at start: %v\n%s", d.err, d.stderr)
		default:
		}
		return h.hello() == nil
	})
	h.t.Cleanup(func() {
		if h.t.Failed() {
			h.t.Logf("agentd's log:\n%s", d.stderr)
		}
		if d.exited() {
			return
		}
		// Sessions outlive the daemon by design; a test's must not
		// outlive the test.
		h.stopAll()
		d.cmd.Process.Signal(syscall.SIGTERM)
		if err := d.wait(10 * time.Second); err != nil {
			h.t.Errorf("agentd did not stop cleanly on SIGTERM: %v\n%s", err, d.stderr)
		}
	})
	return d
}

// spawnDaemon starts agentd without waiting for it.
func (h *home) spawnDaemon(args []string, extraEnv ...string) *daemonProc {
	h.t.Helper()
	cmd := exec.Command(bin.agentd, append([]string{"--log-format", "json", "--log-level", "debug"}, args...)...)
	cmd.Env = h.env(extraEnv...)
	d := &daemonProc{t: h.t, cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = d.stderr
	start := cmd.Start
	if h.start != nil {
		start = func() error { return h.start(cmd) }
	}
	if err := start(); err != nil {
		h.t.Fatal(err)
	}
	go func() { d.err = cmd.Wait(); close(d.done) }()
	h.t.Cleanup(func() {
		if !d.exited() {
			d.cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

func (d *daemonProc) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// wait waits for the process to exit and returns its error (nil for 0).
func (d *daemonProc) wait(timeout time.Duration) error {
	select {
	case <-d.done:
		return d.err
	case <-time.After(timeout):
		return fmt.Errorf("still running after %s", timeout)
	}
}

// hello reaches the home's daemon once.
func (h *home) hello() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, h.socket, wire.ClientOptions{})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Hello(ctx, wire.HelloParams{})
	return err
}

// agentctl runs agentctl with args and returns stdout, stderr and the exit status.
func (h *home) agentctl(stdin string, args ...string) (string, string, int) {
	h.t.Helper()
	cmd := exec.Command(bin.agentctl, args...)
	cmd.Env = h.env()
	cmd.Stdin = strings.NewReader(stdin)
	return h.runCmd(cmd)
}

// runCmd runs cmd and returns its stdout, stderr and exit status; failing
// to start it fails the test.
func (h *home) runCmd(cmd *exec.Cmd) (string, string, int) {
	h.t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// await polls cond until it holds or the deadline passes.
func await(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
