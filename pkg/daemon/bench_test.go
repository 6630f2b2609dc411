package daemon

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
)

// The baseline for the daemon's round trip: a bare length-prefixed echo
// server on a Unix socket, with the same client code on the other end.
func startEcho(b *testing.B) string {
	return startEchoServer(b, func(body []byte) []byte { return body })
}

// startJSONEcho is the floor the outside measure uses (wirebench's
// echo): the same framing, but each request decoded and a small result
// encoded with encoding/json, as any JSON daemon must. The bare echo above
// does no JSON at all, so it is the stricter floor of the two.
func startJSONEcho(b *testing.B) string {
	return startEchoServer(b, func(body []byte) []byte {
		var q struct {
			ID     uint64          `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		json.Unmarshal(body, &q)
		out, _ := json.Marshal(map[string]any{"id": q.ID, "result": map[string]any{"version": 1, "methods": []string{q.Method}}})
		return out
	})
}

// startEchoServer serves answer's reply to each frame, one goroutine per
// connection, on a socket of its own.
func startEchoServer(b *testing.B, answer func(body []byte) []byte) string {
	b.Helper()
	sock := filepath.Join(shortTempDir(b), "echo.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fr := rpc.NewFrameReader(c)
				for {
					body, err := fr.ReadFrame()
					if err != nil || rpc.WriteFrame(c, answer(body)) != nil {
						return
					}
				}
			}()
		}
	}()
	return sock
}

// benchTargets are the servers the round-trip benchmarks compare: the two
// floors and the daemon answering agent.hello.
var benchTargets = map[string]func(*testing.B) string{"echo": startEcho, "json-echo": startJSONEcho, "hello": benchDaemonSocket}

var helloFrame, _ = rpc.AppendFrame(nil, []byte(`{"id":1,"method":"agent.hello","params":{"version":1}}`))

// roundTrips sends the hello frame n times on one connection, waiting for
// each answer, and returns each round trip's duration.
func roundTrips(b *testing.B, sock string, n int) []time.Duration {
	c, err := net.Dial("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	fr := rpc.NewFrameReader(c)
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := c.Write(helloFrame); err != nil {
			b.Fatal(err)
		}
		if _, err := fr.ReadFrame(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	return lat
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

func benchDaemonSocket(b *testing.B) string {
	d := New(Config{SocketPath: filepath.Join(shortTempDir(b), "agentd.sock"), StateDir: filepath.Join(b.TempDir(), "state")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	for i := 0; ; i++ {
		if c, err := net.Dial("unix", d.cfg.SocketPath); err == nil {
			c.Close()
			break
		}
		if i > 500 {
			b.Fatal("daemon did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.build() // not part of the measurement
	return d.cfg.SocketPath
}

// BenchmarkRoundTrip compares agent.hello through the daemon with the same
// frame through a bare echo server, in one run. The bar: the
// daemon's median at most 2x the echo's, its p99 at most 3x.
func BenchmarkRoundTrip(b *testing.B) {
	for _, target := range []string{"echo", "json-echo", "hello"} {
		b.Run(target, func(b *testing.B) {
			sock := benchTargets[target](b)
			roundTrips(b, sock, 200) // warm up
			b.ResetTimer()
			lat := roundTrips(b, sock, b.N)
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkThroughput8 measures requests per second with 8 clients, each on
// its own connection, against the echo server and the daemon. The bar: the
// daemon at least 60% of the echo's.
func BenchmarkThroughput8(b *testing.B) {
	const clients = 8
	for _, target := range []string{"echo", "json-echo", "hello"} {
		b.Run(target, func(b *testing.B) {
			sock := benchTargets[target](b)
			per := b.N/clients + 1
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for i := 0; i < clients; i++ {
				wg.Add(1)
				go func() { defer wg.Done(); roundTrips(b, sock, per) }()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(per*clients)/time.Since(start).Seconds(), "req/s")
		})
	}
}
