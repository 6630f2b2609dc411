// Package xvfbtest starts private Xvfb servers for tests.
//
// Each server gets a display number nobody else on the machine is using: the
// number is reserved with an flock on /tmp/xvfbtest-<n>.lock, removed after (so parallel tests
// and parallel test binaries never pick the same one) and checked against the
// X server's own /tmp/.X<n>-lock and /tmp/.X11-unix/X<n>. The server is killed
// in t.Cleanup. Tests are skipped, with the reason, only when Xvfb is not
// installed.
//
// It imports nothing from agentd.
package xvfbtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// StartTimeout bounds how long Start waits for the X socket to appear; Xvfb
// starts in well under a second, but CI machines under -race can be slow.
const StartTimeout = 15 * time.Second

// firstDisplay and lastDisplay bound the display numbers tried, above the
// numbers a real desktop or a developer's Xvfb usually take.
const (
	firstDisplay = 40
	lastDisplay  = 900
)

// Options describe the screen of the server; zero fields take the defaults
// 1280x800x24.
type Options struct {
	Width, Height, Depth int
}

// Server is a running Xvfb.
type Server struct {
	// Display is the DISPLAY value, such as ":42".
	Display string
	// Num is the display number.
	Num int
	// Width, Height and Depth describe the screen.
	Width, Height, Depth int

	lock *os.File
	cmd  *exec.Cmd
	done chan struct{}
}

// Installed reports whether Xvfb can be found on $PATH.
func Installed() bool {
	_, err := exec.LookPath("Xvfb")
	return err == nil
}

// Start starts Xvfb on a free display and registers its shutdown with
// tb.Cleanup. It skips the test when Xvfb is not installed.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if !Installed() {
		tb.Skip("Xvfb is not installed (apt-get install xvfb); these tests need a real X server")
	}
	if opts.Width == 0 {
		opts.Width, opts.Height = 1280, 800
	}
	if opts.Depth == 0 {
		opts.Depth = 24
	}
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		n, lock, err := reserve()
		if err != nil {
			lastErr = err
			continue
		}
		s := &Server{Display: ":" + strconv.Itoa(n), Num: n, Width: opts.Width, Height: opts.Height, Depth: opts.Depth, lock: lock}
		if err := s.start(); err != nil {
			release(lock)
			lastErr = err
			continue
		}
		tb.Cleanup(func() {
			s.Stop()
			release(s.lock)
		})
		return s
	}
	tb.Fatalf("xvfbtest: could not start Xvfb: %v", lastErr)
	return nil
}

// SocketPath is the path of the server's unix socket.
func (s *Server) SocketPath() string {
	return filepath.Join("/tmp/.X11-unix", "X"+strconv.Itoa(s.Num))
}

// Env returns os.Environ with DISPLAY set to this server, for child processes
// such as xterm or xdotool.
func (s *Server) Env() []string {
	return append(os.Environ(), "DISPLAY="+s.Display)
}

// Command returns an exec.Cmd with DISPLAY set to this server.
func (s *Server) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = s.Env()
	return cmd
}

// Stop kills the server and waits until it has exited and its socket is gone.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server ignores SIGTERM
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	// A killed server may leave its files behind; they are ours (we hold the
	// number's lock), so remove them for the next start on this number.
	_ = os.Remove(s.SocketPath())
	_ = os.Remove(fmt.Sprintf("/tmp/.X%d-lock", s.Num))
}

// Pause stops the server with SIGSTOP: its socket stays and the kernel
// still accepts connections, but nothing is answered, like a hung server.
// Resume continues it.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Restart stops the server and starts a new one on the same display number.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		tb.Fatalf("xvfbtest: restart %s: %v", s.Display, err)
	}
}

func (s *Server) start() error {
	cmd := exec.Command("Xvfb", s.Display,
		"-screen", "0", fmt.Sprintf("%dx%dx%d", s.Width, s.Height, s.Depth),
		"-nolisten", "tcp", "-noreset")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start Xvfb: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	deadline := time.NewTimer(StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		// The socket file appears at bind, a moment before the server
		// accepts: wait for a connection to succeed.
		if c, err := net.Dial("unix", s.SocketPath()); err == nil {
			c.Close()
			s.cmd, s.done = cmd, done
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("Xvfb %s exited during start-up", s.Display)
		case <-deadline.C:
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("Xvfb %s did not create %s within %v", s.Display, s.SocketPath(), StartTimeout)
		case <-tick.C:
		}
	}
}

// reserve picks a display number, locks it and checks no server uses it.
func reserve() (int, *os.File, error) {
	for range 200 {
		n := firstDisplay + rand.IntN(lastDisplay-firstDisplay)
		if exists(fmt.Sprintf("/tmp/.X%d-lock", n)) || exists(fmt.Sprintf("/tmp/.X11-unix/X%d", n)) {
			continue
		}
		f, err := os.OpenFile(fmt.Sprintf("/tmp/xvfbtest-%d.lock", n), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return 0, nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		// The holder before us removes the file before unlocking it
		// (release), so a lock on a file no longer at the path is stale.
		if !samePath(f) {
			f.Close()
			continue
		}
		// Check again under the lock: another process may have started a
		// server between the first check and the lock.
		if exists(fmt.Sprintf("/tmp/.X%d-lock", n)) || exists(fmt.Sprintf("/tmp/.X11-unix/X%d", n)) {
			f.Close()
			continue
		}
		return n, f, nil
	}
	return 0, nil, errors.New("no free display number found")
}

// release unlinks a reservation's lock file and then closes (unlocks) it:
// nothing is left in /tmp, and a process that opened the old file before
// the unlink sees, once it holds the lock, that the path is no longer its
// file (samePath) and tries again.
func release(f *os.File) {
	_ = os.Remove(f.Name())
	f.Close()
}

// samePath reports whether f is still the file at its path.
func samePath(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(f.Name())
	return err == nil && os.SameFile(fi, pi)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
