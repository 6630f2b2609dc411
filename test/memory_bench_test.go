package test

import (
	"encoding/binary"
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
