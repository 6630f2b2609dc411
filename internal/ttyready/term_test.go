package ttyready

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// term is a program started by a test on a terminal of its own, in a new
// session with the terminal as its controlling terminal.
type term struct {
	t      testing.TB
	master *os.File
	probe  *Probe
	cmd    *exec.Cmd

	mu  sync.Mutex
	out bytes.Buffer // what the program printed, when drained
}

// openPTY opens a pseudo-terminal pair; the master stays non-blocking.
func openPTY(t testing.TB) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := control(master, func(fd int) (err error) {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return err
		}
		if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: 80, Row: 24}); err != nil {
			return err
		}
		n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// start runs argv on a new terminal. With drain, a goroutine reads
// everything the program prints (as a worker would), so that its output
// does not stay pending; without, the test reads the master itself.
func start(t testing.TB, drain bool, argv ...string) *term {
	t.Helper()
	return startEnv(t, drain, nil, argv...)
}

// startEnv is start with more environment variables.
func startEnv(t testing.TB, drain bool, env []string, argv ...string) *term {
	t.Helper()
	if _, err := exec.LookPath(argv[0]); err != nil {
		t.Skipf("%s is not installed: %v", argv[0], err)
	}
	master, slave := openPTY(t)
	tm := &term{t: t, master: master}
	p, err := New(master)
	if err != nil {
		t.Fatal(err)
	}
	tm.probe = p
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = append(append(os.Environ(), "TERM=xterm-256color", "PS1=$ ", "PYTHONSTARTUP="), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	tm.cmd = cmd
	done := make(chan struct{})
	if drain {
		go func() {
			defer close(done)
			buf := make([]byte, 4096)
			for {
				n, err := tm.probe.Read(buf)
				tm.mu.Lock()
				tm.out.Write(buf[:n])
				tm.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	} else {
		close(done)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		cmd.Wait()
		master.Close()
		<-done
	})
	return tm
}

func (tm *term) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

func (tm *term) write(s string) {
	tm.t.Helper()
	if _, err := tm.master.Write([]byte(s)); err != nil {
		tm.t.Fatal(err)
	}
}

// await looks every millisecond until cond holds, and fails the test with
// the last look when it does not within the timeout.
func (tm *term) await(what string, timeout time.Duration, cond func(State) bool) State {
	tm.t.Helper()
	deadline := time.Now().Add(timeout)
	var s State
	for {
		s = tm.probe.Look()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("%s: not within %v; last look: %s\noutput: %q", what, timeout, describe(s), tm.output())
		}
		time.Sleep(time.Millisecond)
	}
}

// awaitOutput waits until the drained output contains want.
func (tm *term) awaitOutput(want string, timeout time.Duration) {
	tm.t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(tm.output(), want) {
		if time.Now().After(deadline) {
			tm.t.Fatalf("output never showed %q within %v: %q", want, timeout, tm.output())
		}
		time.Sleep(time.Millisecond)
	}
}

// describe shows every field of a look, for test failures.
func describe(s State) string {
	return fmt.Sprintf("{Known:%v Pgrp:%d Reading:%v How:%q Reader:%+v Timed:%v Timeout:%v InputQueued:%d OutputPending:%d MasterRead:%d Canonical:%v Echo:%v Ready:%v Reason:%q}",
		s.Known, s.Pgrp, s.Reading, s.How, s.Reader, s.Timed, s.Timeout, s.InputQueued, s.OutputPending, s.MasterRead, s.Canonical, s.Echo, s.Ready, s.Reason)
}

func ready(s State) bool { return s.Ready }
