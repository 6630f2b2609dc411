package rpc

import (
	"context"
	"encoding/json"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPipelinedAnswersStayInTheBudget: connections that pipeline many
// calls with answers under a frame's size and never read them (issue 21's
// D1: 16 connections of 256 agent.logs took the daemon to 962 MiB against
// 256 MiB) hold about the budget, not every answer: each answer counts
// while it waits to be written, and those that find no room are answered
// busy. Once the clients read, every byte is given back.
func TestPipelinedAnswersStayInTheBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("measures the heap; the race detector's shadow memory distorts it")
	}
	// Answers built first and counted when they are to be written, and
	// answers reserved before they are built (as agentd's large ones).
	for _, reserve := range []bool{false, true} {
		t.Run(map[bool]string{false: "built", true: "reserved"}[reserve], func(t *testing.T) { pipelinedAnswers(t, reserve) })
	}
}

func pipelinedAnswers(t *testing.T, reserve bool) {
	const (
		budget   = 8 << 20
		conns    = 8
		pipeline = 256
		answer   = 200 << 10
	)
	b := NewBudget(budget)
	var calls atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	var raws []net.Conn
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for range conns {
		pair, err := socketpair()
		if err != nil {
			t.Fatal(err)
		}
		sc := NewServerConn(pair[0], ServeOptions{Budget: b})
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc.Serve(ctx, func(ctx context.Context, req *Request) (any, error) {
				defer calls.Add(1)
				if !reserve {
					return json.RawMessage(`"` + strings.Repeat("a", answer) + `"`), nil
				}
				l, err := Reserve(ctx, answer)
				if err != nil {
					return nil, err
				}
				return WithLease(json.RawMessage(`"`+strings.Repeat("a", answer)+`"`), l), nil
			})
		}()
		// Raw frames, written and not read.
		for i := range pipeline {
			body := `{"id":` + strconv.Itoa(i+1) + `,"method":"page"}`
			if err := WriteFrame(pair[1], []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
		raws = append(raws, pair[1])
		defer pair[1].Close()
	}
	heapGrown := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapInuse) - int64(before.HeapInuse)
	}
	limit := int64(2*budget + 8<<20)
	var peak int64
	for calls.Load() < conns*pipeline {
		peak = max(peak, heapGrown())
		if used := b.InUse(); used > budget+conns*pipeline*Tiny {
			t.Errorf("budget in use %d, over its %d and the tiny answers' slack", used, budget)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Reserved answers are bounded while they are built too; answers
	// built first are counted once built, so what they pin is bounded
	// once the answers that found no room have been refused (after
	// budgetWait at most).
	if reserve && peak > limit {
		t.Errorf("live heap peaked %d MiB while answers were built, want at most %d MiB", peak>>20, limit>>20)
	}
	time.Sleep(budgetWait + budgetWait/2)
	held := heapGrown()
	t.Logf("live heap: peak %d MiB while building, %d MiB held for %d unread answers of %d KiB (budget %d MiB)",
		peak>>20, held>>20, conns*pipeline, answer>>10, budget>>20)
	if held > limit {
		t.Errorf("live heap grew %d MiB holding unread answers, want at most %d MiB (twice the budget and some)", held>>20, limit>>20)
	}
	// The clients read: every answer (or its refusal) arrives, and the
	// budget is given back whole.
	for _, raw := range raws {
		c := NewClient(raw, ClientOptions{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() { defer wg.Done(); c.Call(ctx, "page", nil, nil) }()
		}
		wg.Wait()
	}
	await(t, 10*time.Second, "the budget back to zero", func() bool { return b.InUse() == 0 })

}
