package test

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// attachFloodLine is what the flooding program prints, over and over.
const attachFloodLine = "0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// BenchmarkAttachCatThroughDaemon is the attach throughput as a client
// sees it: a session prints 100 MB once it reads a line, and an attacher on
// agentd's socket (the raw upgrade, input as attach frames, as agentctl
// attach sends it) reads it. The baseline, in the same run: the same
// program in a bare PTY read by this process. Both are timed from the first
// byte after the line to the last. An attacher that falls behind gets
// repaints instead of what it missed, so %-received says how much of the
// output itself arrived (over 100 is repaints counted too). Run it with
// -benchtime 3x.
func BenchmarkAttachCatThroughDaemon(b *testing.B) {
	const size = 100 << 20
	h := newHomeTB(b)
	h.startDaemon([]string{"--log-level", "info"})
	var bare, attach, got float64
	for i := 0; b.Loop(); i++ {
		n, d := barePTYRead(b, "yes "+attachFloodLine+" | head -c "+strconv.Itoa(size))
		bare += float64(n) / d.Seconds()
		r, k := attachThroughDaemon(b, h, "cat"+strconv.Itoa(i), size)
		attach, got = attach+r, got+k
	}
	n := float64(b.N)
	b.ReportMetric(bare/n/1e6, "MB/s-bare")
	b.ReportMetric(attach/n/1e6, "MB/s-attach")
	b.ReportMetric(100*attach/bare, "%-of-bare")
	b.ReportMetric(100*got/n/size, "%-received")
}

// attachThroughDaemon spawns a session that prints size bytes once it reads
// a line, attaches to it through the daemon, sends the line and reads to
// the end; it returns the rate and the bytes that reached the attacher.
func attachThroughDaemon(b *testing.B, h *home, name string, size int) (float64, float64) {
	ctx := context.Background()
	c, err := wire.Dial(ctx, h.socket, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	argv := []string{"sh", "-c", fmt.Sprintf("read x; yes %s | head -c %d", attachFloodLine, size)}
	if _, err := c.Spawn(ctx, wire.SpawnParams{Name: name, Argv: argv, Cwd: "/"}); err != nil {
		b.Fatal(err)
	}
	defer c.Rm(ctx, wire.RmParams{Name: name, Force: true})
	conn, _, err := wire.DialAttach(ctx, h.socket, wire.AttachParams{Name: name, FramedInput: true})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	// The repaint comes first; the flood only after the line.
	buf := make([]byte, 64<<10)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(buf); err != nil {
		b.Fatalf("the repaint: %v", err)
	}
	conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	for {
		if _, err := conn.Read(buf); err != nil {
			break // drained what the repaint left
		}
	}
	conn.SetReadDeadline(time.Time{})
	if _, err := wire.NewAttachWriter(conn).Write([]byte("\r")); err != nil {
		b.Fatal(err)
	}
	// Read to the end: the session ends and the daemon closes the stream.
	n, first, last := readTimed(conn)
	if n == 0 {
		b.Fatal("nothing reached the attacher")
	}
	return float64(n) / last.Sub(first).Seconds(), float64(n)
}

// barePTYRead runs script with sh in a pseudo-terminal of this process and
// reads it to the end: the ceiling for attach's throughput.
func barePTYRead(b *testing.B, script string) (int, time.Duration) {
	master, slave := openTestPTY(b)
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); slave.Close(); close(done) }()
	// Read to the end: EIO once the program and its terminal are gone.
	n, first, last := readTimed(master)
	<-done
	return n, last.Sub(first)
}

// readTimed reads r until an error and returns how many bytes came and
// when the first and the last of them did.
func readTimed(r io.Reader) (n int, first, last time.Time) {
	buf := make([]byte, 64<<10)
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if n == 0 {
				first = time.Now()
			}
			n += k
			last = time.Now()
		}
		if err != nil {
			return n, first, last
		}
	}
}
