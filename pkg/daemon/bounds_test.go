package daemon

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

// TestRefusedFloodLeavesRoomForOtherProcesses: a process that holds its
// share and keeps opening connections (each refused) does not lock another
// process out: connections being refused do not count against
// max_connections.
func TestRefusedFloodLeavesRoomForOtherProcesses(t *testing.T) {
	t.Parallel()
	const limit = 8
	td := startDaemon(t, Config{MaxConnections: limit})
	ctx := context.Background()
	for i := 0; i < limit/2; i++ {
		c := td.client(t)
		if _, err := c.Hello(ctx, wire.HelloParams{}); err != nil {
			t.Fatalf("connection %d of this process: %v, want served", i+1, err)
		}
	}
	// The flood: raw connections that never read, opened until told to
	// stop, at most 2*limit outstanding (each waits for the share, then is
	// refused), so the limit is always passed while the other process
	// connects.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var open []net.Conn
		defer func() {
			for _, c := range open {
				c.Close()
			}
		}()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := net.Dial("unix", td.socket)
			if err != nil {
				continue
			}
			open = append(open, c)
			if len(open) > 2*limit {
				open[0].Close()
				open = open[1:]
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for i := 0; i < 3; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHello$", "-test.count=1")
		cmd.Env = append(os.Environ(), helloSocketEnv+"="+td.socket)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "hello-ok") {
			t.Fatalf("another process while this one floods (try %d): %v\n%s", i+1, err, out)
		}
	}
}
