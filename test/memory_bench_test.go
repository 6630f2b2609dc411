package test

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssOf reads a process's resident set size in bytes.
func rssOf(tb testing.TB, pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}

// BenchmarkHalfSentFrames is the attack of issue 16: 200 connections each
// announce a 16 MiB frame and send half of it, then hold. It reports the
// daemon's peak RSS during the attack and its RSS 10 s after the
// connections end (bars: 400 MB and 64 MB; the memory budget is 256 MiB).
func BenchmarkHalfSentFrames(b *testing.B) {
	h := newHomeTB(b)
	// AGENTD_BENCH_BUDGET replaces the budget, to compare (a huge one is
	// none at all).
	var args []string
	if v := os.Getenv("AGENTD_BENCH_BUDGET"); v != "" {
		args = []string{"--memory-budget", v}
	}
	d := h.startDaemon(args)
	pid := d.cmd.Process.Pid
	const conns, frame, sent = 200, 16 << 20, 8 << 20
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = 'x'
	}
	var peak, after int64
	for b.Loop() {
		var cs []net.Conn
		for range conns {
			c, err := net.Dial("unix", h.socket)
			if err != nil {
				b.Fatal(err)
			}
			cs = append(cs, c)
			hdr := binary.LittleEndian.AppendUint32(nil, frame)
			c.Write(append(hdr, `{"id":1,"method":"agent.hello","params":{"pad":"`...))
		}
		// Send half of every frame, a megabyte at a time round the
		// connections, noting the daemon's RSS as it grows.
		for range sent >> 20 {
			for _, c := range cs {
				c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
				c.Write(chunk) // a refused frame's bytes are dropped; a held one's are kept
			}
			peak = max(peak, rssOf(b, pid))
		}
		for range 20 {
			peak = max(peak, rssOf(b, pid))
			time.Sleep(100 * time.Millisecond)
		}
		for _, c := range cs {
			c.Close()
		}
		time.Sleep(10 * time.Second)
		after = rssOf(b, pid)
	}
	b.ReportMetric(float64(peak)/1e6, "peak-MB")
	b.ReportMetric(float64(after)/1e6, "after10s-MB")
}

// BenchmarkPipelinedLogs is the other attack of issue 16: 32 agent.logs
// calls pipelined on one connection, on a session whose log is far over a
// frame. Each page is bounded (wire.MaxLogPageBytes), so the daemon holds
// little; it reports the daemon's peak RSS while the answers are read
// slowly and its RSS 10 s after (bars: 400 MB and 64 MB).
func BenchmarkPipelinedLogs(b *testing.B) {
	h := newHomeTB(b)
	d := h.startDaemon(nil)
	pid := d.cmd.Process.Pid
	ctl := func(args ...string) {
		if out, errOut, code := h.agentctl("", args...); code != 0 {
			b.Fatalf("agentctl %v: %d %s %s", args, code, out, errOut)
		}
	}
	ctl("spawn", "big", "--", "sh", "-c", "head -c 31457280 /dev/zero | tr '\\0' 'y'; echo; echo the-end; exec sleep 3600")
	ctl("wait", "big", "--until", "the-end", "--timeout", "300s")
	var peak, after int64
	for b.Loop() {
		c, err := net.Dial("unix", h.socket)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 32 {
			body := `{"id":` + strconv.Itoa(i+1) + `,"method":"agent.logs","params":{"name":"big","limit":10000}}`
			c.Write(append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...))
		}
		// Read the answers slowly, noting the daemon's RSS.
		buf := make([]byte, 64<<10)
		got := 0
		for got < 32 {
			var hdr [4]byte
			c.SetReadDeadline(time.Now().Add(60 * time.Second))
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				b.Fatal(err)
			}
			n := int(binary.LittleEndian.Uint32(hdr[:]))
			for n > 0 {
				m, err := c.Read(buf[:min(n, len(buf))])
				if err != nil {
					b.Fatal(err)
				}
				n -= m
				peak = max(peak, rssOf(b, pid))
				time.Sleep(time.Millisecond)
			}
			got++
		}
		c.Close()
		time.Sleep(10 * time.Second)
		after = rssOf(b, pid)
	}
	b.ReportMetric(float64(peak)/1e6, "peak-MB")
	b.ReportMetric(float64(after)/1e6, "after10s-MB")
}
