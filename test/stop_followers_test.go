package test

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
)

// TestStopCancelsLogFollowersThatNeverRead: log followers whose clients
// never read (their socket buffers full, the daemon's writes to them
// blocked) do not hold a stop: SIGTERM cancels them at once, with no wait
// for the grace period (set here to a minute, so a stop that waited for it
// could not pass the test's wait) and no "did not close" in the log.
func TestStopCancelsLogFollowersThatNeverRead(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.writeConfig("shutdown_grace = \"60s\"\nwrite_timeout = \"120s\"\n")
	d := h.startDaemon(nil)
	h.ctl(0, "spawn", "loud", "--", "sh", "-c", "yes 'a line the follower never reads'")
	for i := 0; i < 5; i++ {
		c, err := net.Dial("unix", h.socket)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.(*net.UnixConn).SetReadBuffer(4096)
		body := `{"id":1,"method":"agent.logs","params":{"name":"loud","follow":true}}`
		f, _ := rpc.AppendFrame(nil, []byte(body))
		if _, err := c.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	// Each follower's writes block once its socket is full: the log says
	// nothing of that, so wait for the program's output to pass what the
	// buffers hold many times over.
	c := h.client()
	await(t, 60*time.Second, "the session's log growing past the followers' buffers", func() bool {
		st, err := c.Status(context.Background(), "loud")
		return err == nil && st.Bytes > 8<<20
	})
	c.Close()
	h.stopAll()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatalf("agentd with 5 followers that never read, on SIGTERM: %v\n%s", err, d.stderr)
	}
	log := d.stderr.String()
	for _, bad := range []string{"did not finish in time", "did not close after cancellation"} {
		if strings.Contains(log, bad) {
			t.Errorf("the stop waited for the followers: the log says %q", bad)
		}
	}
}
