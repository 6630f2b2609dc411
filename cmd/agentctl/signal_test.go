package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/wire"
)

var built struct {
	once sync.Once
	path string
	err  error
}

// agentctlBinary builds agentctl once for the tests that need a real
// process (signals, exit statuses).
func agentctlBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "agentctl-bin")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "agentctl")
		cmd := exec.Command("go", "build", "-o", built.path, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = err
			t.Logf("%s", out)
		}
	})
	if built.err != nil {
		t.Fatalf("build agentctl: %v", built.err)
	}
	return built.path
}

// fakeDaemon serves the socket protocol with handler on a socket in a
// short temporary directory; it stands in for agentd where the test is
// about the client.
func fakeDaemon(t *testing.T, handler func(ctx context.Context, sc *rpc.ServerConn, req *wire.Request) (any, error)) string {
	t.Helper()
	return fakeDaemonWith(t, rpc.ServeOptions{}, handler)
}

// fakeDaemonWith is fakeDaemon serving with opts (MayUpgrade, for one).
func fakeDaemonWith(t *testing.T, opts rpc.ServeOptions, handler func(ctx context.Context, sc *rpc.ServerConn, req *wire.Request) (any, error)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			sc := rpc.NewServerConn(conn, opts)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sc.Serve(ctx, func(ctx context.Context, req *wire.Request) (any, error) { return handler(ctx, sc, req) })
			}()
		}
	}()
	return sock
}

func TestSigintDuringAskCancelsItAndExits130(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{})
	cancelled := make(chan struct{})
	sock := fakeDaemon(t, func(ctx context.Context, _ *rpc.ServerConn, req *wire.Request) (any, error) {
		if req.Method != wire.MethodAsk {
			return nil, wire.Errorf(wire.CodeUnknownMethod, "no")
		}
		close(asked)
		<-ctx.Done() // an ask that would take long; only the client hanging up ends it
		close(cancelled)
		return nil, ctx.Err()
	})
	cmd := exec.Command(agentctlBinary(t), "--socket", sock, "ask", "s1", "a long question")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the ask never reached the daemon")
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("agentctl ask after SIGINT: %v, exit %d, want 130\nstderr: %s", err, code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr %q does not say it was interrupted", stderr.String())
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Error("the daemon's ask was not cancelled: agentctl did not close its connection")
	}
}

func TestDaemonGoneMidCallExits69(t *testing.T) {
	t.Parallel()
	sock := fakeDaemon(t, func(ctx context.Context, sc *rpc.ServerConn, req *wire.Request) (any, error) {
		sc.Conn().Close() // agentd dies while the call is in flight
		<-ctx.Done()
		return nil, ctx.Err()
	})
	for _, args := range [][]string{{"ask", "s1", "q"}, {"list"}, {"--json", "status", "s1"}} {
		var out, errb strings.Builder
		cmd := exec.Command(agentctlBinary(t), append([]string{"--socket", sock}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != wire.ExitUnreachable {
			t.Errorf("agentctl %v with the daemon gone mid-call: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wire.ExitUnreachable, out.String(), errb.String())
		}
		if args[0] == "--json" && !strings.Contains(out.String(), `"code":"unreachable"`) {
			t.Errorf("--json envelope %q, want code unreachable", out.String())
		}
	}
}

// TestSigintDuringQuickVerbEndsItTheDefaultWay: a quick verb installs no
// handler (verb.quick), so Ctrl-C ends it as it would end any program,
// and the daemon still sees the call cancelled.
func TestSigintDuringQuickVerbEndsItTheDefaultWay(t *testing.T) {
	t.Parallel()
	if signal.Ignored(syscall.SIGINT) {
		// A child inherits the ignoring (nohup, a background job of a
		// script): the default way is then no way.
		t.Skip("SIGINT is ignored in this process, and so in agentctl")
	}
	listed := make(chan struct{})
	cancelled := make(chan struct{})
	sock := fakeDaemon(t, func(ctx context.Context, _ *rpc.ServerConn, req *wire.Request) (any, error) {
		close(listed)
		<-ctx.Done() // a daemon that does not answer
		close(cancelled)
		return nil, ctx.Err()
	})
	cmd := exec.Command(agentctlBinary(t), "--socket", sock, "list")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-listed:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the list never reached the daemon")
	}
	cmd.Process.Signal(syscall.SIGINT)
	killed := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	cmd.Wait()
	killed.Stop()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("agentctl list after SIGINT: %v, want ended by SIGINT (a shell's 130)", cmd.ProcessState)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Error("the daemon's list was not cancelled")
	}
}
