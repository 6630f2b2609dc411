package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// helloSocketEnv makes TestHelperHello a child process that says hello on
// the socket it names: another peer pid for the fairness test.
const helloSocketEnv = "AGENTD_TEST_HELLO_SOCKET"

// TestHelperHello is not a test: run by TestOnePeerHoldsAtMostHalfTheConnections
// as a child process, it connects to the daemon and says hello.
func TestHelperHello(t *testing.T) {
	socket := os.Getenv(helloSocketEnv)
	if socket == "" {
		t.Skip("a helper process for TestOnePeerHoldsAtMostHalfTheConnections")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, socket, wire.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Hello(ctx, wire.HelloParams{}); err != nil {
		t.Fatalf("hello from pid %d: %v", os.Getpid(), err)
	}
	fmt.Println("hello-ok")
}

func TestOnePeerHoldsAtMostHalfTheConnections(t *testing.T) {
	t.Parallel()
	const limit = 8
	td := startDaemon(t, Config{MaxConnections: limit})
	ctx := context.Background()
	var mine []*wire.Client
	for i := 0; i < limit/2; i++ {
		c := td.client(t)
		if _, err := c.Hello(ctx, wire.HelloParams{}); err != nil {
			t.Fatalf("connection %d of this process: %v, want served", i+1, err)
		}
		mine = append(mine, c)
	}
	over := td.client(t)
	_, err := over.Hello(ctx, wire.HelloParams{})
	wantCode(t, "a connection over the process's share", err, wire.CodeBusy)
	if err != nil && (!strings.Contains(err.Error(), "max_connections") || !strings.Contains(err.Error(), fmt.Sprint(limit)) ||
		!strings.Contains(err.Error(), fmt.Sprint(os.Getpid()))) {
		t.Errorf("refusal %q does not name the limit (%d, max_connections) and the pid", err, limit)
	}

	// Another process still connects.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHello$", "-test.count=1")
	cmd.Env = append(os.Environ(), helloSocketEnv+"="+td.socket)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello-ok") {
		t.Errorf("another process while this one holds its share: %v\n%s", err, out)
	}

	// A slot given back is this process's again.
	mine[0].Close()
	await(t, 10*time.Second, "a connection once one of the share closed", func() bool {
		c, err := wire.Dial(ctx, td.socket, wire.ClientOptions{})
		if err != nil {
			return false
		}
		defer c.Close()
		_, err = c.Hello(ctx, wire.HelloParams{})
		return err == nil
	})
}

// TestIdleConnectionsExpire: a connection with nothing to do is closed
// after the idle timeout; one holding a channel, and one with a call in
// flight (a push waiting for its acknowledgement), are kept.
func TestIdleConnectionsExpire(t *testing.T) {
	t.Parallel()
	const idle = 300 * time.Millisecond
	td := startDaemon(t, Config{IdleTimeout: idle})
	ctx := context.Background()

	l := newListener(t, td, false, nil)
	l.register(wire.RegisterChannelParams{ChannelID: "held"})
	pusher := td.client(t)
	pushed := make(chan error, 1)
	go func() {
		_, err := pusher.PushToChannel(ctx, wire.PushParams{ChannelID: "held", Message: json.RawMessage(`1`), Ack: true, TimeoutMS: 120000})
		pushed <- err
	}()
	l.await(1) // the push is in flight, waiting for the ack

	// Two plain connections expire one after the other: the others have
	// been idle by the daemon's clock for at least two timeouts by then.
	for i := 0; i < 2; i++ {
		plain := td.client(t)
		start := time.Now()
		if _, err := plain.Hello(ctx, wire.HelloParams{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-plain.Done():
			if took := time.Since(start); took < idle {
				t.Errorf("plain connection closed after %s, before the idle timeout %s", took, idle)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("a connection idle for 30 s with a %s idle timeout is still open", idle)
		}
	}
	select {
	case <-l.c.Done():
		t.Errorf("the listener's connection was closed as idle: %v", l.c.Err())
	case <-pusher.Done():
		t.Errorf("the connection with a push in flight was closed as idle: %v", pusher.Err())
	case err := <-pushed:
		t.Errorf("the push waiting for its ack ended: %v", err)
	default:
	}
	// Both are still usable; the ack ends the push.
	if _, err := l.c.AckChannel(ctx, "held", 1); err != nil {
		t.Errorf("ack on the listener's connection: %v", err)
	}
	if err := <-pushed; err != nil {
		t.Errorf("push with ack: %v", err)
	}
}

// blockingSessions is a session component whose long calls (a log follow,
// a wait, an attach) run until their context ends, as the real ones do on
// a session that never prints what is waited for.
type blockingSessions struct {
	Sessions
	started chan string
}

func (b blockingSessions) Status(ctx context.Context, name string) (*session.Info, error) {
	return &session.Info{Name: name, Status: session.StatusRunning, Allows: session.Allows{Attach: true}, Cols: 80, Rows: 24}, nil
}

func (b blockingSessions) Reconcile(ctx context.Context) (*session.ReconcileReport, error) {
	return &session.ReconcileReport{}, nil
}

func (blockingSessions) SetTimeouts(session.Timeouts) {}

func (b blockingSessions) Logs(ctx context.Context, req session.LogsRequest, fn func(session.Event) error) error {
	if !req.Follow {
		return nil
	}
	b.started <- "logs"
	<-ctx.Done()
	return nil // a follow ends quietly when its caller goes
}

func (b blockingSessions) Wait(ctx context.Context, req session.WaitRequest) (*session.WaitResult, error) {
	b.started <- "wait"
	<-ctx.Done()
	return nil, ctx.Err()
}

func (b blockingSessions) Attach(ctx context.Context, name string, rw io.ReadWriter) error {
	b.started <- "attach"
	<-ctx.Done()
	return ctx.Err()
}

// TestStopEndsStreamsAtOnce: a stop with a log follow, a wait for text that
// never comes, an attach and a channel listener open ends each at once with
// shutting_down (EOF for the raw attach stream), well inside the grace.
func TestStopEndsStreamsAtOnce(t *testing.T) {
	t.Parallel()
	const grace = 5 * time.Second
	started := make(chan string, 4)
	cfg := Config{SocketPath: filepath.Join(shortTempDir(t), "agentd.sock"), StateDir: filepath.Join(t.TempDir(), "state"), ShutdownGrace: grace}
	td := serveDaemon(t, NewWith(cfg, Components{Sessions: blockingSessions{started: started}, Screen: fakeScreen{}}), cfg.SocketPath)
	ctx := context.Background()

	follow, wait := td.client(t), td.client(t)
	followErr, waitErr := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := follow.Logs(ctx, wire.LogsParams{Name: "w1", Follow: true})
		followErr <- err
	}()
	go func() {
		_, err := wait.Wait(ctx, wire.WaitParams{Name: "w1", Until: "text that never appears"})
		waitErr <- err
	}()
	raw, _, err := rpc.DialUpgrade(ctx, td.socket, wire.MethodAttach, wire.AttachParams{Name: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	l := newListener(t, td, false, nil)
	l.register(wire.RegisterChannelParams{ChannelID: "listening"})
	for range 3 {
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			t.Fatal("the follow, the wait and the attach did not all start")
		}
	}

	start := time.Now()
	td.cancel()
	var runErr error
	select {
	case runErr = <-td.done:
	case <-time.After(2 * grace):
		t.Fatalf("Run did not return within %s of the stop", 2*grace)
	}
	took := time.Since(start)
	td.done <- runErr // for the cleanup's check
	t.Logf("Run returned %s after the stop (grace %s)", took, grace)
	if took >= 4*time.Second {
		t.Errorf("Run took %s to stop with only streams open, want well inside the %s grace", took, grace)
	}
	for name, ch := range map[string]chan error{"log follow": followErr, "wait": waitErr} {
		select {
		case err := <-ch:
			if !errors.Is(err, wire.ErrShuttingDown) {
				t.Errorf("%s at stop: %v, want shutting_down", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s not answered after the stop", name)
		}
	}
	<-l.c.Done()
	if err := l.c.Err(); !errors.Is(err, wire.ErrShuttingDown) {
		t.Errorf("channel listener at stop: %v, want shutting_down", err)
	}
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.Copy(io.Discard, raw); err != nil {
		t.Errorf("attach stream at stop: %v after %d bytes, want EOF", err, n)
	}
}
