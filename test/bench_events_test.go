package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// BenchmarkList256Subscribed is BenchmarkList256's "received" with two
// agent.subscribe followers of every session open (as the desktop
// notifier and an MCP server would be): a subscription reads the
// sessions' logs, never the heartbeat's statuses List answers from, so
// the figures must match BenchmarkList256's. Run it with -benchtime
// 5000x.
func BenchmarkList256Subscribed(b *testing.B) {
	h := list256Daemon(b)
	ctx := context.Background()
	const sessions = list256
	subCtx, endSubs := context.WithCancel(ctx)
	defer endSubs()
	for range 2 {
		current := make(chan struct{}, sessions)
		sc, err := wire.Dial(ctx, h.socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
			if n.Method == wire.NotifyStateChange {
				current <- struct{}{}
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		defer sc.Close()
		go sc.Subscribe(subCtx, wire.SubscribeParams{Current: true, Follow: true})
		for range sessions {
			select {
			case <-current:
			case <-time.After(30 * time.Second):
				b.Fatal("a subscriber did not get every session's current state")
			}
		}
	}
	clients := make([]*wire.Client, listClients)
	for i := range clients {
		var err error
		if clients[i], err = wire.Dial(ctx, h.socket, wire.ClientOptions{}); err != nil {
			b.Fatal(err)
		}
		defer clients[i].Close()
	}
	benchLists(b, clients, func(cl *wire.Client) error {
		raw, err := cl.CallRaw(ctx, wire.MethodList, wire.ListParams{})
		if n := bytes.Count(raw, []byte(`{"name":`)); err != nil || n != sessions {
			return fmt.Errorf("list: %v (%d rows, want %d)", err, n, sessions)
		}
		return nil
	})
}

// BenchmarkSubscriberOutputCost is what a subscriber costs the daemon
// while a session writes: agentd's CPU time (/proc/PID/stat) while a
// program writes 64 MB of output, with no subscriber and with two
// following every session (a subscription wakes on each append and skips
// the output records by their head). Reported as daemon-cpu-ms for each.
func BenchmarkSubscriberOutputCost(b *testing.B) {
	for _, subs := range []int{0, 2} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			h := newHomeTB(b)
			d := h.startDaemon([]string{"--log-level", "info"})
			pid := d.cmd.Process.Pid
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for range subs {
				sc, err := wire.Dial(ctx, h.socket, wire.ClientOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer sc.Close()
				go sc.Subscribe(ctx, wire.SubscribeParams{Follow: true})
			}
			c, err := wire.Dial(ctx, h.socket, wire.ClientOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var used time.Duration
			for i := range b.N {
				c0 := procCPU(b, pid)
				name := fmt.Sprintf("out%d", i)
				if _, err := c.Spawn(ctx, wire.SpawnParams{Name: name, Argv: []string{"sh", "-c", "head -c 48000000 /dev/zero | base64"}}); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Wait(ctx, wire.WaitParams{Name: name, Exit: true, TimeoutMS: 120_000}); err != nil {
					b.Fatal(err)
				}
				used += procCPU(b, pid) - c0
			}
			b.ReportMetric(float64(used.Milliseconds())/float64(b.N), "daemon-cpu-ms")
		})
	}
}

// procCPU is pid's user and system CPU time so far.
func procCPU(b *testing.B, pid int) time.Duration {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
	ut, _ := strconv.Atoi(f[11])
	sy, _ := strconv.Atoi(f[12])
	return time.Duration(ut+sy) * time.Second / 100 // USER_HZ
}
