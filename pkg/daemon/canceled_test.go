package daemon

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/wire"
	"github.com/rs/zerolog"
)

// TestCanceledCallIsItsOwnOutcome: a call whose client hangs up while it
// runs is logged as canceled, with no code: nothing says the daemon is
// stopping, since it is not (it answers the next client).
func TestCanceledCallIsItsOwnOutcome(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	started := make(chan struct{}, 1)
	td := startDaemon(t, Config{SocketPath: filepath.Join(shortTempDir(t), "agentd.sock"), Logger: zerolog.New(logs)},
		Route{Method: "agent.test_block", Mutates: true, Handle: func(ctx context.Context, c *Call) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}})
	c := td.client(t)
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "agent.test_block", nil, nil) }()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not start")
	}
	c.Close()
	<-errc
	var line string
	await(t, 10*time.Second, "the canceled call logged", func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"method":"agent.test_block"`) {
				line = l
				return true
			}
		}
		return false
	})
	if !strings.Contains(line, `"outcome":"canceled"`) || strings.Contains(line, "shutting_down") || strings.Contains(line, `"code"`) {
		t.Errorf("request log of a canceled call: %s\nwant outcome canceled and no code", line)
	}
	if _, err := td.client(t).Hello(context.Background(), wire.HelloParams{}); err != nil {
		t.Errorf("hello after a canceled call: %v", err)
	}

	// What the connection carries after a hang-up (its write side shut,
	// so it can still read): no answer at all, in particular no
	// shutting_down.
	raw, err := net.Dial("unix", td.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := rpc.WriteFrame(raw, []byte(`{"id":7,"method":"agent.test_block"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the raw call did not start")
	}
	raw.(*net.UnixConn).CloseWrite()
	raw.SetReadDeadline(time.Now().Add(20 * time.Second))
	rest, err := io.ReadAll(raw)
	if err != nil {
		t.Fatalf("reading to the end of a hung-up connection: %v (read %q)", err, rest)
	}
	if len(rest) != 0 {
		t.Errorf("a hung-up client's canceled call was answered %q, want nothing", rest)
	}
}
