package capture

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// runScreen runs s's connection manager for the rest of the test.
func runScreen(t *testing.T, s *Screen) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestReconnectLeaksNothing restarts the X server twenty times under a
// running Screen and checks that the goroutine count comes back.
func TestReconnectLeaksNothing(t *testing.T) {
	srv := startX(t)
	s := newScreen(t, srv, true)
	runScreen(t, s)
	connected := func() bool { return s.Info(ctxT(t)).Connected }
	await(t, 20*time.Second, "the first connection", connected)
	before := runtime.NumGoroutine()
	for i := range 20 {
		srv.Restart(t)
		await(t, 20*time.Second, "reconnection "+string(rune('A'+i)), connected)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines after 20 reconnections, %d before", after, before)
	}
}
