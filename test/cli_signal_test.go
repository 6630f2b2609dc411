package test

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCLISignalAsTheFirstRequestArrives sends SIGINT to agentctl the moment
// its first request reaches the socket, the earliest a script's interrupt
// can matter: a verb that catches signals (one that can take long) must
// already catch it and end with its envelope, never be killed by it. A
// fake server stands in for agentd, so the signal lands at that exact
// point; the race shows only now and then, so each verb runs many times.
func TestCLISignalAsTheFirstRequestArrives(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "sig") // short: the path must fit in sun_path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	signalled := make(chan int, 1) // the pid to signal, from the test
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			pid := <-signalled
			go func() {
				defer c.Close()
				var n [4]byte
				if _, err := io.ReadFull(c, n[:]); err != nil {
					return
				}
				if _, err := io.CopyN(io.Discard, c, int64(binary.LittleEndian.Uint32(n[:]))); err != nil {
					return
				}
				syscall.Kill(pid, syscall.SIGINT)
				io.Copy(io.Discard, c) // never answer: wait for the client to leave
			}()
		}
	}()
	for i := range 60 {
		tc := []struct{ command, args string }{
			{"channel listen", "channel listen"}, {"ask", "ask s1 question"}, {"wait", "wait s1 --exit"},
		}[i%3]
		cmd := exec.Command(bin.agentctl, append([]string{"--socket", sock, "--json"}, strings.Fields(tc.args)...)...)
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		signalled <- cmd.Process.Pid
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("run %d: agentctl %s did not end after SIGINT", i, tc.command)
		}
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			t.Fatalf("run %d: agentctl %s was killed by %v as its first request arrived; it must catch the signal before it sends (stdout %q)", i, tc.command, ws.Signal(), out.String())
		}
		if !strings.Contains(out.String(), `"command":"`+tc.command+`"`) {
			t.Fatalf("run %d: exit %d without an envelope: %q", i, ws.ExitStatus(), out.String())
		}
	}
}
