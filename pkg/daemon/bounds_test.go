package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/session"
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
	// The flood: 2*limit goroutines, each opening a raw connection and
	// waiting for its refusal (each waits for the share, then is refused)
	// before opening the next, so the limit is always passed while the
	// other process connects. A flood that closed its connections without
	// waiting could outrun a loaded machine's accept loop by the whole
	// listen backlog (somaxconn), and the other process's connect would
	// fail with EAGAIN in the kernel, before agentd sees it: that measured
	// the load, not the refusals.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 * limit {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				io.Copy(io.Discard, c)
				c.Close()
			}
		}()
	}
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

// pageSessions is a session component whose every log holds events of
// eventBytes of output each.
type pageSessions struct {
	fakeSessions
	eventBytes int
}

func (p pageSessions) Logs(ctx context.Context, req session.LogsRequest, fn func(session.Event) error) error {
	data := []byte(strings.Repeat("o", p.eventBytes))
	for i := uint64(0); ; i++ {
		if err := fn(session.Event{Seq: req.FromSeq + i, TS: time.Now(), Type: session.EventOutput, Data: data}); err != nil {
			return err
		}
	}
}

// startDaemonWith is startDaemon with the session component given.
func startDaemonWith(t *testing.T, cfg Config, sessions Sessions) *testDaemon {
	t.Helper()
	cfg.SocketPath = filepath.Join(shortTempDir(t), "run", "agentd.sock")
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	d := NewWith(cfg, Components{Sessions: sessions})
	d.vouch = func(context.Context, string, Peer, string) error { return nil }
	return serveDaemon(t, d, cfg.SocketPath)
}

// TestPipelinedLogsStayInTheBudget: connections that pipeline 256
// agent.logs pages each (limit 60, about 200 KiB apiece, under the old
// large-answer threshold) and read none hold about the memory budget, not
// every page: issue 21's D1 took a daemon to 962 MiB against 256 MiB so.
// Once they read, the budget is given back. Not parallel: it measures the
// heap.
func TestPipelinedLogsStayInTheBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("measures the heap; the race detector's shadow memory distorts it")
	}
	const (
		budget   = 16 << 20
		conns    = 8
		pipeline = 256
	)
	td := startDaemonWith(t, Config{MemoryBudget: budget, MaxConnections: 64}, pageSessions{eventBytes: 3000})
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	heapGrown := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapInuse) - int64(before.HeapInuse)
	}
	var raws []net.Conn
	for range conns {
		c, err := net.Dial("unix", td.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		raws = append(raws, c)
		for i := range pipeline {
			body := fmt.Sprintf(`{"id":%d,"method":"agent.logs","params":{"name":"s","limit":60}}`, i+1)
			if err := rpc.WriteFrame(c, []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	limit := int64(2*budget + 16<<20)
	var peak int64
	deadline := time.Now().Add(3 * time.Second) // past the budget's wait, the refusals are made
	for time.Now().Before(deadline) {
		peak = max(peak, heapGrown())
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("live heap: peak %d MiB with %d unread pages pipelined (budget %d MiB)", peak>>20, conns*pipeline, budget>>20)
	if peak > limit {
		t.Errorf("live heap grew %d MiB holding unread pages, want at most %d MiB (twice the budget and some)", peak>>20, limit>>20)
	}
	// Read everything: each call is answered, a page or busy.
	pages, busy := 0, 0
	for _, c := range raws {
		fr := rpc.NewFrameReader(c)
		for range pipeline {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			body, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("reading the answers: %v", err)
			}
			resp, err := rpc.DecodeIncoming(body)
			if err != nil || resp.Response == nil {
				t.Fatalf("answer %.100s: %v", body, err)
			}
			switch e := resp.Response.Error; {
			case e == nil:
				pages++
			case e.Code == wire.CodeBusy && strings.Contains(e.Message, "memory_budget"):
				busy++
			default:
				t.Fatalf("answer: %v, want a page or busy naming memory_budget", e)
			}
		}
	}
	t.Logf("%d pages, %d busy", pages, busy)
	if pages == 0 {
		t.Errorf("no page was answered")
	}
	await(t, 10*time.Second, "the budget back to zero", func() bool { return td.budget.InUse() == 0 })
}

// TestChannelQueuesStayInTheBudget: one listener holding many channels
// that reads none of its messages (issue 21's D2: 128 channels took the
// daemon to 1,130 MiB) holds about the memory budget, not every channel's
// queue: queued messages count in memory_budget, and past it pushes are
// busy naming it. When the listener leaves, every byte goes back. Not
// parallel: it measures the heap.
func TestChannelQueuesStayInTheBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("measures the heap; the race detector's shadow memory distorts it")
	}
	const (
		budget   = 16 << 20
		channels = 32
	)
	td := startDaemon(t, Config{MemoryBudget: budget})
	ctx := context.Background()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	heapGrown := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapInuse) - int64(before.HeapInuse)
	}
	// The listener registers its channels, reading only those answers.
	listener, err := net.Dial("unix", td.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	fr := rpc.NewFrameReader(listener)
	var ids []string
	for i := range channels {
		body := fmt.Sprintf(`{"id":%d,"method":"channel.register_channel","params":{"session":"q%d"}}`, i+1, i)
		if err := rpc.WriteFrame(listener, []byte(body)); err != nil {
			t.Fatal(err)
		}
		answer, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		in, err := rpc.DecodeIncoming(answer)
		if err != nil || in.Response == nil || in.Response.Error != nil {
			t.Fatalf("register %d: %s %v", i, answer, err)
		}
		var res wire.RegisterChannelResult
		json.Unmarshal(in.Response.Result, &res)
		ids = append(ids, res.ChannelID)
	}
	// Push 64 KiB messages to every channel until each is busy.
	pusher := td.client(t)
	msg, _ := json.Marshal(strings.Repeat("m", 64<<10-16))
	queued, busyBudget := 0, 0
	for _, id := range ids {
		for {
			_, err := pusher.PushToChannel(ctx, wire.PushParams{ChannelID: id, Message: msg})
			if err == nil {
				queued++
				continue
			}
			if !errors.Is(err, wire.ErrBusy) {
				t.Fatalf("push: %v, want queued or busy", err)
			}
			if strings.Contains(err.Error(), "memory_budget") {
				busyBudget++
			}
			break
		}
	}
	held := heapGrown()
	t.Logf("%d messages queued, %d channels refused on the budget; live heap grew %d MiB (budget %d MiB)", queued, busyBudget, held>>20, budget>>20)
	if limit := int64(2*budget + 16<<20); held > limit {
		t.Errorf("live heap grew %d MiB with an unread listener's queues, want at most %d MiB", held>>20, limit>>20)
	}
	if busyBudget == 0 {
		t.Errorf("no push was refused naming memory_budget")
	}
	// The listener leaves: the budget is given back whole, and the heap.
	listener.Close()
	await(t, 10*time.Second, "the budget back to zero", func() bool { return td.budget.InUse() == 0 })
	if after := heapGrown(); after > 8<<20 {
		t.Errorf("live heap %d MiB over the start after the listener left, want its queues freed", after>>20)
	}
}
