package test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// BenchmarkLiveSessions100 starts 100 shell sessions and reports the
// daemon's resident memory and the largest worker's. The bars: daemon at
// most 60 MB, each worker at most 15 MB.
func BenchmarkLiveSessions100(b *testing.B) {
	h := newHomeTB(b)
	d := h.startDaemon(nil)
	c, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var workers []int
	for i := 0; i < 100; i++ {
		s, err := c.Spawn(context.Background(), wire.SpawnParams{Name: fmt.Sprintf("s%03d", i), Argv: []string{"sh"}})
		if err != nil {
			b.Fatal(err)
		}
		workers = append(workers, s.WorkerPID)
	}
	// Every session answered once, so its screen and log are in use.
	for i := 0; i < 100; i++ {
		if _, err := c.Ask(context.Background(), wire.AskParams{Name: fmt.Sprintf("s%03d", i), Text: "echo ok", Until: "ok"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var daemonMB, workerMB float64
	for i := 0; i < b.N; i++ {
		daemonMB = rssMB(b, d.cmd.Process.Pid)
		workerMB = 0
		for _, pid := range workers {
			workerMB = max(workerMB, rssMB(b, pid))
		}
	}
	b.ReportMetric(daemonMB, "daemon-MB")
	b.ReportMetric(workerMB, "max-worker-MB")
}

// BenchmarkRestartReattach50 kills the daemon with 50 sessions running,
// starts it again and measures until every session is running under the new
// daemon. The bar: within 1 s of the restart.
func BenchmarkRestartReattach50(b *testing.B) {
	h := newHomeTB(b)
	d := h.startDaemon(nil)
	c, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := c.Spawn(context.Background(), wire.SpawnParams{Name: fmt.Sprintf("r%02d", i), Argv: []string{"sh"}}); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		d.cmd.Process.Kill()
		d.wait(5 * time.Second)
		start := time.Now()
		d = h.startDaemon(nil)
		await(b, 10*time.Second, "all 50 sessions re-attached", func() bool {
			c, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{})
			if err != nil {
				return false
			}
			defer c.Close()
			l, err := c.List(context.Background(), wire.ListParams{Status: []wire.Status{wire.StatusRunning}})
			if err != nil || len(l.Sessions) != 50 {
				return false
			}
			// Re-attached means the new daemon talks to each worker.
			for _, s := range l.Sessions {
				if _, err := c.Snapshot(context.Background(), s.Name); err != nil {
					return false
				}
			}
			return true
		})
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-reattach")
}

// BenchmarkSpawnStopCycles runs spawn, stop and rm cycles through the
// daemon and then checks that no zombie, stray process or file descriptor
// was left behind. Run it with -benchtime 1000x for the 1,000.
func BenchmarkSpawnStopCycles(b *testing.B) {
	h := newHomeTB(b)
	d := h.startDaemon(nil)
	c, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	fds0 := countFDs(b, d.cmd.Process.Pid)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := "cyc" + strconv.Itoa(i%10)
		if _, err := c.Spawn(context.Background(), wire.SpawnParams{Name: name, Argv: []string{"sh", "-c", "sleep 30 & exec sleep 30"}}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Stop(context.Background(), wire.StopParams{Name: name, GraceMS: 200}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Rm(context.Background(), wire.RmParams{Name: name}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if fds := countFDs(b, d.cmd.Process.Pid); fds > fds0+2 {
		b.Errorf("the daemon holds %d file descriptors after %d cycles, %d before", fds, b.N, fds0)
	}
	await(b, 5*time.Second, "no zombie or stray sleep", func() bool {
		z, stray := scanProcs()
		return z == 0 && stray == 0
	})
}

func countFDs(tb testing.TB, pid int) int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

// scanProcs counts zombies anywhere and "sleep 30" processes (what the
// cycles start) still running.
func scanProcs() (zombies, stray int) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			zombies++
		}
		if cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); string(cmd) == "sleep\x0030\x00" {
			stray++
		}
	}
	return zombies, stray
}
