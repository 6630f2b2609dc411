package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/wire"
)

func median(lat []time.Duration) time.Duration {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2]
}

// rawFrame encodes one request frame.
func rawFrame(b *testing.B, id uint64, method string, params any) []byte {
	p, err := json.Marshal(params)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := json.Marshal(wire.Request{ID: id, Method: method, Params: p})
	f, err := rpc.AppendFrame(nil, body)
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// BenchmarkChannelPushLatency measures push-to-delivery: from writing a
// push frame to the listener reading the notification, one at a time, and
// agent.hello round trips on the same daemon in the same run. The bar: the
// push median at most 2x the hello median (reported as ratio).
func BenchmarkChannelPushLatency(b *testing.B) {
	sock := benchDaemonSocket(b)
	listener, err := net.Dial("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer listener.Close()
	lr := rpc.NewFrameReader(listener)
	listener.Write(rawFrame(b, 1, wire.MethodRegisterChannel, wire.RegisterChannelParams{ChannelID: "bench"}))
	if _, err := lr.ReadFrame(); err != nil {
		b.Fatal(err)
	}
	pusher, err := net.Dial("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer pusher.Close()
	pr := rpc.NewFrameReader(pusher)
	push := rawFrame(b, 1, wire.MethodPushToChannel, wire.PushParams{ChannelID: "bench", Message: json.RawMessage(`{"kind":"note","text":"hello"}`)})
	once := func() time.Duration {
		start := time.Now()
		if _, err := pusher.Write(push); err != nil {
			b.Fatal(err)
		}
		if _, err := lr.ReadFrame(); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		if _, err := pr.ReadFrame(); err != nil {
			b.Fatal(err)
		}
		return d
	}
	for i := 0; i < 200; i++ { // warm up
		once()
	}
	roundTrips(b, sock, 200)
	b.ResetTimer()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		lat = append(lat, once())
	}
	b.StopTimer()
	hello := roundTrips(b, sock, max(b.N, 1000))
	pm, hm := median(lat), median(hello)
	b.ReportMetric(float64(pm.Nanoseconds()), "push-p50-ns")
	b.ReportMetric(float64(hm.Nanoseconds()), "hello-p50-ns")
	b.ReportMetric(float64(pm)/float64(hm), "ratio")
}

// BenchmarkChannelThroughput pushes b.N messages to one listener from 8
// concurrent callers on 2 connections and checks that the listener got
// every one, in seq order with no gap. It reports messages per second.
func BenchmarkChannelThroughput(b *testing.B) {
	sock := benchDaemonSocket(b)
	ctx := context.Background()
	var got atomic.Int64
	var bad atomic.Value
	var last uint64
	all := make(chan struct{})
	var want atomic.Int64
	listener, err := wire.Dial(ctx, sock, wire.ClientOptions{OnNotification: func(n wire.Notification) {
		var m wire.ChannelMessage
		if err := json.Unmarshal(n.Params, &m); err != nil {
			bad.Store(err.Error())
			return
		}
		if m.Seq != last+1 {
			bad.Store(fmt.Sprintf("seq %d after %d", m.Seq, last))
		}
		last = m.Seq
		if got.Add(1) == want.Load() {
			close(all)
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer listener.Close()
	if _, err := listener.RegisterChannel(ctx, wire.RegisterChannelParams{ChannelID: "tp"}); err != nil {
		b.Fatal(err)
	}
	const callers = 8
	var clients [2]*wire.Client
	for i := range clients {
		if clients[i], err = wire.Dial(ctx, sock, wire.ClientOptions{}); err != nil {
			b.Fatal(err)
		}
		defer clients[i].Close()
	}
	n := max(b.N, callers)
	per := n / callers
	want.Store(int64(per * callers))
	msg := json.RawMessage(`{"kind":"note","text":"a message of ordinary size for a notification"}`)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var undelivered atomic.Int64
	for w := 0; w < callers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			for i := 0; i < per; i++ {
				r, err := c.PushToChannel(ctx, wire.PushParams{ChannelID: "tp", Message: msg})
				if err != nil || !r.Queued {
					undelivered.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		b.Fatalf("listener got %d of %d messages", got.Load(), want.Load())
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if v := bad.Load(); v != nil {
		b.Fatalf("listener saw %v", v)
	}
	if u := undelivered.Load(); u != 0 {
		b.Fatalf("%d pushes failed or were not delivered", u)
	}
	b.ReportMetric(float64(want.Load())/elapsed.Seconds(), "msgs/s")
}

// BenchmarkChannelIdleMemory registers 1000 idle channels and reports the
// heap they hold per channel (the bar: at most 8 KiB).
func BenchmarkChannelIdleMemory(b *testing.B) {
	var per float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sock := benchDaemonSocket(b)
		b.StartTimer()
		per = channelIdleBytes(b, &testDaemon{socket: sock}, 1000)
	}
	b.ReportMetric(per, "bytes/channel")
}
