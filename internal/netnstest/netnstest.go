// Package netnstest gives a test a network namespace of its own with only
// the loopback interface up, so that programs a test starts (the real agent
// CLIs, which try to reach outside hosts for updates and plugins) can reach
// a fake server on 127.0.0.1 and nothing else: there is no other interface
// and no route, so a connection elsewhere fails at once, and nothing leaves
// the machine.
//
// The namespace lives on one OS thread of the test process that unshare(2)
// moved into it and that never returns to the Go scheduler. Do runs code on
// that thread: a socket made there (Listen) belongs to the namespace for
// its whole life, whichever goroutine serves it later, and a process
// started there (Start) inherits the namespace, as do its descendants (an
// agentd daemon and every session program it forks, a tmux server and its
// panes). Unix sockets are files, not network addresses, so agentctl and
// tmux clients outside the namespace still reach such a daemon or server.
//
// It needs CAP_SYS_ADMIN (root, as in CI); without it New skips the test,
// or fails it when $CI is set, saying why. It imports nothing from agentd.
package netnstest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// NS is a loopback-only network namespace, alive until the test ends and
// every process and socket made in it is gone.
type NS struct {
	calls chan func()
	quit  chan struct{} // closed by Close
	once  sync.Once
	done  chan struct{} // closed when the thread's loop ends
}

// New makes a namespace for t and removes this process's hold on it when t
// ends (processes started in it keep it alive until they exit).
func New(t testing.TB) *NS {
	t.Helper()
	n, err := Make()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("a network namespace for the test: %v", err)
		}
		t.Skipf("a network namespace for the test: %v (these tests need root, as in CI)", err)
	}
	t.Cleanup(n.Close)
	return n
}

// Make makes a namespace without a test; Close releases it.
func Make() (*NS, error) {
	n := &NS{calls: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error, 1)
	go n.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return n, nil
}

// loop owns the namespace's thread: it moves the thread into a new
// namespace, brings lo up, and runs calls until Close. It returns still
// locked, so the runtime ends the thread instead of reusing it elsewhere.
func (n *NS) loop(ready chan<- error) {
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		if errors.Is(err, unix.EPERM) {
			err = fmt.Errorf("unshare(CLONE_NEWNET): %w: it needs CAP_SYS_ADMIN", err)
		} else {
			err = fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
		}
		runtime.UnlockOSThread() // the thread is unchanged
		close(n.done)
		ready <- err
		return
	}
	if err := loopbackUp(); err != nil {
		close(n.done)
		ready <- fmt.Errorf("bringing lo up in the new namespace: %w", err)
		return
	}
	ready <- nil
	defer close(n.done)
	for {
		select {
		case f := <-n.calls:
			f()
		case <-n.quit:
			return
		}
	}
}

// loopbackUp sets IFF_UP on lo, as `ip link set lo up` does.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// ErrClosed is returned by Do after Close.
var ErrClosed = errors.New("netnstest: the namespace's thread is gone")

// Do runs f on the namespace's thread and returns its error. f must not
// start goroutines that expect to be in the namespace: only f's own
// thread is.
func (n *NS) Do(f func() error) error {
	errc := make(chan error, 1)
	select {
	case <-n.done:
		return ErrClosed
	case n.calls <- func() { errc <- f() }:
	}
	return <-errc
}

// Listen opens a listener inside the namespace, e.g. ("tcp", "127.0.0.1:0").
func (n *NS) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := n.Do(func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// Start starts cmd inside the namespace (cmd.Start on its thread).
func (n *NS) Start(cmd *exec.Cmd) error { return n.Do(cmd.Start) }

// Run runs cmd inside the namespace and waits for it.
func (n *NS) Run(cmd *exec.Cmd) error {
	if err := n.Start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// Close ends the namespace's thread; what was made in the namespace keeps
// it alive until it too is gone.
func (n *NS) Close() {
	n.once.Do(func() { close(n.quit) })
	<-n.done
}
