package desktop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeXEnv makes the test binary a stand-in X server (TestMain): one that
// leaves the desktop's process group, as a server that outlives its
// launcher does, and ignores SIGTERM, so only a signal by pid ends it.
const fakeXEnv = "AGENTD_TEST_FAKE_X"

// fakeX is that stand-in: it takes display :N from its arguments, holds
// its lock and file socket as an X server does, reports the number on
// -displayfd's descriptor 3, and accepts every connection setup. Killed,
// it leaves its socket and lock behind, as a killed Xvfb does.
func fakeX(args []string) int {
	signal.Ignore(syscall.SIGTERM)
	syscall.Setsid()
	if len(args) == 0 || !strings.HasPrefix(args[0], ":") {
		return 2
	}
	num, err := strconv.Atoi(args[0][1:])
	if err != nil {
		return 2
	}
	if err := os.WriteFile(lockPath(num), []byte(fmt.Sprintf("%10d\n", os.Getpid())), 0o444); err != nil {
		return 1
	}
	os.MkdirAll(socketDir, 0o1777)
	l, err := net.Listen("unix", socketPath(num))
	if err != nil {
		return 1
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	fd3 := os.NewFile(3, "displayfd")
	fmt.Fprintf(fd3, "%d\n", num)
	fd3.Close()
	for {
		c, err := l.Accept()
		if err != nil {
			return 1
		}
		go func() {
			defer c.Close()
			io.ReadFull(c, make([]byte, 12))
			// Success, no further data: "accepted, size unknown".
			c.Write([]byte{1, 0, 11, 0, 0, 0, 0, 0})
			io.Copy(io.Discard, c)
		}()
	}
}

// TestRmEndsAServerThatLeftItsGroup: rm must not report success, or clean,
// while the desktop's X server lives. The stand-in server left the
// desktop's group and ignores SIGTERM, and its worker was killed by hand
// (so nothing else ends it): before rm confirmed the recorded server
// gone, it ended the group (empty of the server), found the server still
// answering, skipped its socket and returned; the server, ended later,
// left its socket and lock.
func TestRmEndsAServerThatLeftItsGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := filepath.Join(dir, "Xvfb")
	os.WriteFile(fake, []byte("#!/bin/sh\n"+fakeXEnv+"=1 exec "+os.Args[0]+" \"$@\"\n"), 0o755)
	m := newManager(t, 1475, 1479, func(o *Options) { o.Server = fake; o.StopGrace = 300 * time.Millisecond })
	d, err := m.New(context.Background(), Spec{Name: "esc", WM: WMNone})
	if err != nil {
		t.Fatal(err)
	}
	if _, pg, ok := procStart(d.Server.PID); !ok || pg == d.Worker.PID {
		t.Fatalf("the stand-in server %d (group %d) did not leave the worker's group %d", d.Server.PID, pg, d.Worker.PID)
	}
	syscall.Kill(d.Worker.PID, syscall.SIGKILL)
	await(t, "the worker to end", 5*time.Second, func() bool { return !d.Worker.alive(0) })
	if err := m.Remove(context.Background(), "esc"); err != nil {
		t.Fatal(err)
	}
	if d.Server.alive(0) {
		syscall.Kill(d.Server.PID, syscall.SIGKILL)
		t.Errorf("rm returned while the X server %d still runs", d.Server.PID)
		await(t, "the stand-in to end", 5*time.Second, func() bool { return !d.Server.alive(0) })
	}
	for _, p := range []string{socketPath(d.Number), lockPath(d.Number), filepath.Dir(d.Authority)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after rm (%v)", p, err)
			os.Remove(p)
		}
	}
}
