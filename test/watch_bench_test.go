package test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWatchLatency is issue 13's figure: how long after a program
// prints a line an `agentctl watch` of its session shows it, against the
// floor of the same program in a terminal of its own read by another
// process (script(1)), in the same run. The program prints a mark each
// time a line is written to its FIFO; the time runs from that write to the
// mark reaching the reader. It reports the medians and the 95th
// percentiles; the bar is 100 ms for ours.
func BenchmarkWatchLatency(b *testing.B) {
	if _, err := exec.LookPath("script"); err != nil {
		b.Skip("script(1) is not installed (apt-get install bsdutils)")
	}
	h := newHomeTB(b)
	h.startDaemon(nil)
	dir := b.TempDir()
	loop := func(fifo string) string {
		// Held open read-write, the FIFO never reads as ended between
		// writers (reopening it per line races with the next writer).
		return "exec 3<> " + fifo + "; while read x <&3; do echo mark-$x; done"
	}
	ours, floor := filepath.Join(dir, "ours"), filepath.Join(dir, "floor")
	for _, f := range []string{ours, floor} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	if out, errOut, code := h.agentctl("", "spawn", "watched", "--", "sh", "-c", loop(ours)); code != 0 {
		b.Fatalf("spawn: %s %s", out, errOut)
	}
	watcher := startReader(b, h, bin.agentctl+" watch watched")
	direct := startReader(b, h, "sh -c '"+loop(floor)+"'")
	var lat, base []time.Duration
	n := 0
	for b.Loop() {
		for _, c := range []struct {
			fifo string
			r    *markReader
			into *[]time.Duration
		}{{ours, watcher, &lat}, {floor, direct, &base}} {
			n++
			mark := "mark-" + strconv.Itoa(n)
			start := time.Now()
			if err := writeFIFO(c.fifo, strconv.Itoa(n)+"\n", 10*time.Second); err != nil {
				out, _, _ := h.agentctl("", "logs", "watched", "--events")
				b.Fatalf("%v\nthe session: %s", err, out)
			}
			if err := c.r.await(mark, 10*time.Second); err != nil {
				out, _, _ := h.agentctl("", "logs", "watched", "--events")
				b.Fatalf("%v\nthe session: %s", err, out)
			}
			*c.into = append(*c.into, time.Since(start))
		}
	}
	b.ReportMetric(medianMS(lat), "watch-p50-ms")
	b.ReportMetric(medianMS(base), "floor-p50-ms")
	b.ReportMetric(percentileMS(lat, 95), "watch-p95-ms")
	b.ReportMetric(percentileMS(base, 95), "floor-p95-ms")
}

// markReader reads a process's terminal output (through script(1)) and
// finds marks in it.
type markReader struct {
	chunks chan []byte
	seen   bytes.Buffer
}

func startReader(b *testing.B, h *home, command string) *markReader {
	cmd := exec.Command("script", "-qfec", command, "/dev/null")
	cmd.Env = h.env("TERM=xterm-256color", "COLUMNS=100", "LINES=30")
	stdin, err := cmd.StdinPipe() // held open: watch quits on EOF
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	m := &markReader{chunks: make(chan []byte, 64)}
	go func() {
		defer close(m.chunks)
		for {
			buf := make([]byte, 4096)
			n, err := out.Read(buf)
			if n > 0 {
				m.chunks <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	b.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return m
}

// await reads until mark (and the next byte, so mark-1 is not mark-12)
// has been seen.
func (m *markReader) await(mark string, timeout time.Duration) error {
	want := []byte(mark)
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		if i := bytes.Index(m.seen.Bytes(), want); i >= 0 && i+len(want) < m.seen.Len() {
			if c := m.seen.Bytes()[i+len(want)]; c < '0' || c > '9' {
				// Keep only what follows, so the next await is not fooled.
				rest := append([]byte(nil), m.seen.Bytes()[i+len(want):]...)
				m.seen.Reset()
				m.seen.Write(rest)
				return nil
			}
		}
		select {
		case chunk, ok := <-m.chunks:
			if !ok {
				return fmt.Errorf("the reader ended before %s; read %q", mark, m.seen.Bytes())
			}
			m.seen.Write(chunk)
		case <-t.C:
			return fmt.Errorf("no %s within %s; read %q", mark, timeout, m.seen.Bytes())
		}
	}
}

// percentileMS is the p-th percentile of d in milliseconds.
func percentileMS(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[(len(s)-1)*p/100]) / 1e6
}

// writeFIFO writes s to a FIFO once its reader has it open, or fails after
// timeout (a reader that has gone would block a plain write forever).
func writeFIFO(path, s string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			_, err = f.WriteString(s)
			f.Close()
			return err
		}
		if !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
			return fmt.Errorf("write to %s: %w", path, err)
		}
		time.Sleep(50 * time.Microsecond)
	}
}
