package test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// listClients is how many clients list at once in BenchmarkList256, the
// load of the measurement.
const listClients = 50

// BenchmarkList256 starts 256 sessions (sleep, which costs nothing) and
// has 50 clients, each on its own connection, call agent.list as fast as
// it answers; b.N is the number of lists in all. It reports the latency's
// median and 99th percentile and the lists answered per second, twice:
// "received" takes each answer whole off the socket and checks it holds
// 256 rows, which is the daemon's latency; "decoded" also decodes it into
// a wire.ListResult, as agentctl does, which adds the client's own JSON
// decoding (about a millisecond of CPU per answer) to the same two cores
// the daemon runs on. The bar: p50 at most 20 ms. Run it with
// -benchtime 5000x (100 lists a client).
// list256 is how many sessions the list benchmarks run.
const list256 = 256

// list256Daemon runs agentd at the info log level, as a daemon runs by
// default (the harness's debug level logs every request, which would
// measure the log, not the list), with 256 sleeping sessions, and returns
// its home.
func list256Daemon(b *testing.B) *home {
	b.Helper()
	h := newHomeTB(b)
	h.startDaemon([]string{"--log-level", "info"})
	ctx := context.Background()
	c, err := wire.Dial(ctx, h.socket, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for i := range list256 {
		if _, err := c.Spawn(ctx, wire.SpawnParams{Name: fmt.Sprintf("l%03d", i), Argv: []string{"sleep", "3600"}}); err != nil {
			b.Fatal(err)
		}
	}
	return h
}

func BenchmarkList256(b *testing.B) {
	h := list256Daemon(b)
	ctx := context.Background()
	const sessions = list256
	clients := make([]*wire.Client, listClients)
	for i := range clients {
		var err error
		if clients[i], err = wire.Dial(ctx, h.socket, wire.ClientOptions{}); err != nil {
			b.Fatal(err)
		}
		defer clients[i].Close()
	}
	received := func(cl *wire.Client) error {
		raw, err := cl.CallRaw(ctx, wire.MethodList, wire.ListParams{})
		if n := bytes.Count(raw, []byte(`{"name":`)); err != nil || n != sessions {
			return fmt.Errorf("list: %v (%d rows, want %d)", err, n, sessions)
		}
		return nil
	}
	decoded := func(cl *wire.Client) error {
		l, err := cl.List(ctx, wire.ListParams{})
		if err != nil || len(l.Sessions) != sessions {
			return fmt.Errorf("list: %v (%d rows, want %d)", err, len(l.Sessions), sessions)
		}
		return nil
	}
	for _, mode := range []struct {
		name string
		list func(*wire.Client) error
	}{{"received", received}, {"decoded", decoded}} {
		b.Run(mode.name, func(b *testing.B) { benchLists(b, clients, mode.list) })
	}
}

// benchLists has every client call list b.N/len(clients) times at once
// and reports the latency's p50 and p99 and the lists per second.
func benchLists(b *testing.B, clients []*wire.Client, list func(*wire.Client) error) {
	for _, cl := range clients {
		// One list each first, so connections and buffers are warm.
		if err := list(cl); err != nil {
			b.Fatal(err)
		}
	}
	per := max(b.N/len(clients), 1)
	lat := make([][]time.Duration, len(clients))
	errs := make(chan error, len(clients))
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, per)
			for range per {
				t0 := time.Now()
				err := list(cl)
				mine = append(mine, time.Since(t0))
				if err != nil {
					errs <- err
					return
				}
			}
			lat[i] = mine
		}()
	}
	wg.Wait()
	took := time.Since(start)
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(all))/took.Seconds(), "lists/s")
}

// BenchmarkStoppedWorkers20 starts 20 sessions, stops all their workers
// with SIGSTOP, and reports how long until list shows all 20 unresponsive
// (detect-s), then the median time of agent.list and of agent.status on
// one of them over b.N calls, and of agent.stop with force on one
// (stop-force-ms). The bars: list and status answer in a few seconds at
// most, whatever the workers do (before: list 10 s, status 888 s).
func BenchmarkStoppedWorkers20(b *testing.B) {
	h := newHomeTB(b)
	h.startDaemon([]string{"--log-level", "info"})
	ctx := context.Background()
	c, err := wire.Dial(ctx, h.socket, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const n = 20
	var workers []int
	for i := range n {
		s, err := c.Spawn(ctx, wire.SpawnParams{Name: fmt.Sprintf("z%02d", i), Argv: []string{"sleep", "3600"}})
		if err != nil {
			b.Fatal(err)
		}
		workers = append(workers, s.WorkerPID)
	}
	// Registered after the daemon's cleanup, so it runs first.
	b.Cleanup(func() {
		for _, pid := range workers {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	start := time.Now()
	for _, pid := range workers {
		syscall.Kill(pid, syscall.SIGSTOP)
	}
	await(b, 60*time.Second, "all stopped workers listed unresponsive", func() bool {
		l, err := c.List(ctx, wire.ListParams{Status: []wire.Status{wire.StatusUnresponsive}})
		return err == nil && len(l.Sessions) == n
	})
	detect := time.Since(start)
	var list, status []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := c.List(ctx, wire.ListParams{}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		st, err := c.Status(ctx, "z00")
		if err != nil || st.Status != wire.StatusUnresponsive {
			b.Fatalf("status z00: %v, %v", st, err)
		}
		list, status = append(list, t1.Sub(t0)), append(status, time.Since(t1))
	}
	b.StopTimer()
	t0 := time.Now()
	if x, err := c.Stop(ctx, wire.StopParams{Name: "z01", Force: true}); err != nil || x.Status != wire.StatusFailed {
		b.Fatalf("stop --force z01: %v, %v", x, err)
	}
	stopForce := time.Since(t0)
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	b.ReportMetric(detect.Seconds(), "detect-s")
	b.ReportMetric(median(list), "list-ms")
	b.ReportMetric(median(status), "status-ms")
	b.ReportMetric(float64(stopForce.Microseconds())/1000, "stop-force-ms")
}
