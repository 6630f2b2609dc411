package test

import (
	"context"
	"fmt"
	"slices"
	"sync"
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
// median and 99th percentile and the lists answered per second. The bar:
// p50 at most 20 ms. Run it with -benchtime 5000x (100 lists a client).
func BenchmarkList256(b *testing.B) {
	h := newHomeTB(b)
	// Info, as a daemon runs by default: the harness's debug level logs
	// every request, which would measure the log, not the list.
	h.startDaemon([]string{"--log-level", "info"})
	ctx := context.Background()
	c, err := wire.Dial(ctx, h.socket, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const sessions = 256
	for i := range sessions {
		if _, err := c.Spawn(ctx, wire.SpawnParams{Name: fmt.Sprintf("l%03d", i), Argv: []string{"sleep", "3600"}}); err != nil {
			b.Fatal(err)
		}
	}
	clients := make([]*wire.Client, listClients)
	for i := range clients {
		if clients[i], err = wire.Dial(ctx, h.socket, wire.ClientOptions{}); err != nil {
			b.Fatal(err)
		}
		defer clients[i].Close()
		// One list each first, so connections and buffers are warm.
		if l, err := clients[i].List(ctx, wire.ListParams{}); err != nil || len(l.Sessions) != sessions {
			b.Fatalf("list: %d sessions, %v; want %d", len(l.Sessions), err, sessions)
		}
	}
	per := max(b.N/listClients, 1)
	lat := make([][]time.Duration, listClients)
	errs := make(chan error, listClients)
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
				l, err := cl.List(ctx, wire.ListParams{})
				mine = append(mine, time.Since(t0))
				if err != nil || len(l.Sessions) != sessions {
					errs <- fmt.Errorf("list: %v (%d sessions)", err, len(l.Sessions))
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
