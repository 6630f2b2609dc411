package session

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestWaitGone: waitGone sees a process end (by pidfd, and by the /proc
// fallback), gives up at its deadline on one that runs, and returns at
// once with ctx's error when ctx ends.
func TestWaitGone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		wait func(context.Context, int, uint64, time.Duration) (bool, error)
	}{{"pidfd", waitGone}, {"proc", pollGone}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("sleep", "60")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			reaped := make(chan struct{})
			go func() { cmd.Wait(); close(reaped) }()
			t.Cleanup(func() { cmd.Process.Kill(); <-reaped })
			st, ok := readProcStat(pid)
			if !ok {
				t.Fatal("no /proc entry for a process just started")
			}
			if gone, err := c.wait(context.Background(), pid, st.start, 20*time.Millisecond); gone || err != nil {
				t.Fatalf("a running process: gone %v, err %v; want false, nil", gone, err)
			}
			if gone, err := c.wait(context.Background(), pid, st.start+1, time.Minute); !gone || err != nil {
				t.Fatalf("a pid whose start time differs: gone %v, err %v; want true, nil", gone, err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { _, err := c.wait(ctx, pid, st.start, time.Minute); errc <- err }()
			cancel()
			if err := <-errc; err != context.Canceled {
				t.Fatalf("a canceled wait returned %v, want context.Canceled", err)
			}
			go func() {
				gone, err := c.wait(context.Background(), pid, st.start, time.Minute)
				if !gone || err != nil {
					t.Errorf("a process killed: gone %v, err %v; want true, nil", gone, err)
				}
				errc <- err
			}()
			cmd.Process.Kill()
			<-errc
		})
	}
}
