package ttyready

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkLook measures one look at programs waiting at their prompt (the
// fast path: the group's leader reads), at one waiting in select with a
// timeout (read from its memory with its fd set), at a sleeping program (every
// thread looked at, no reader) and at a pipeline whose reader is not the
// leader (the group's members found through the session).
func BenchmarkLook(b *testing.B) {
	for _, c := range []struct {
		name  string
		argv  []string
		ready bool
	}{
		{"cat", []string{"cat"}, true},
		{"python3", []string{"python3", "-q", "-i"}, true},
		{"node", []string{"node"}, true},
		{"bash", []string{"bash", "--norc", "--noprofile", "-i"}, true},
		{"select-timed", []string{"python3", "-c", "import select, sys; select.select([sys.stdin], [], [], 1000)"}, true},
		{"sleep", []string{"sleep", "100"}, false},
		{"pipeline", []string{"sh", "-c", "cat | cat"}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			tm := start(b, true, c.argv...)
			tm.await(c.name+" settled", long, func(s State) bool {
				return s.Ready == c.ready && (c.ready || s.Known && s.Reason != "" && s.Reason[:7] != "running")
			})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if s := tm.probe.Look(); s.Ready != c.ready {
					b.Fatalf("got %s, want ready %v", describe(s), c.ready)
				}
			}
		})
	}
}

// BenchmarkFlipBuffer measures the kernel's flip-buffer window on this
// machine: a program writes a prompt (stamped with CLOCK_MONOTONIC just
// before its write) and at once blocks in read; the benchmark spins on
// FIONREAD of the master, without the poll that flushes the flip buffer,
// until the prompt shows, and reports how long after the write that was
// (median, p99 and max, µs). It then reports how often a look that does
// not flush says ready while the prompt is still unread (false-ready/op),
// the error the flush in every look prevents.
func BenchmarkFlipBuffer(b *testing.B) {
	tm := startEnv(b, false, []string{helperEnv + "=stamp"}, os.Args[0])
	const plen = 22 // "%020d> "
	buf := make([]byte, plen)
	readPrompt := func() int64 {
		tm.master.SetReadDeadline(time.Now().Add(long))
		for n := 0; n < plen; {
			k, err := tm.master.Read(buf[n:])
			if err != nil {
				b.Fatal(err)
			}
			n += k
		}
		stamp, err := strconv.ParseInt(string(buf[:20]), 10, 64)
		if err != nil {
			b.Fatalf("prompt %q: %v", buf, err)
		}
		return stamp
	}
	pending := func() int {
		var n int
		if err := control(tm.master, func(fd int) (err error) {
			n, err = unix.IoctlGetInt(fd, unix.TIOCINQ)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		return n
	}
	readPrompt()
	tm.await("helper ready", long, ready)
	unflushed, err := New(tm.master)
	if err != nil {
		b.Fatal(err)
	}
	unflushed.noFlush = true
	var delays []time.Duration
	falseReady := 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tm.write("x\n")
		if i%2 == 0 {
			// How long the prompt takes to become readable.
			for pending() < plen {
			}
			var now unix.Timespec
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
			delays = append(delays, time.Duration(now.Nano()-readPrompt()))
			continue
		}
		// What a look without the flush would have said meanwhile.
		seen := false
		for {
			s := unflushed.Look()
			if s.Ready && !seen {
				seen = true
				falseReady++
			}
			if s.Reading && s.InputQueued == 0 && pending() >= plen {
				break
			}
		}
		readPrompt()
	}
	b.StopTimer()
	if len(delays) == 0 {
		return
	}
	slices.Sort(delays)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	b.ReportMetric(us(delays[len(delays)/2]), "µs-p50")
	b.ReportMetric(us(delays[len(delays)*99/100]), "µs-p99")
	b.ReportMetric(us(delays[len(delays)-1]), "µs-max")
	b.ReportMetric(float64(falseReady)/float64(b.N-len(delays)), "false-ready/op")
}
